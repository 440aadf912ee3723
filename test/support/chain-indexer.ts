/**
 * Running the real indexer in tests: start it on a test database against a devnode (or any
 * ChainSource), wait for conditions, subscribe addresses (so per-address events are emitted),
 * read events back, and build a reference index of a node's final chain with a fresh indexer,
 * for "equals a fresh index" assertions.
 */
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { testConfig, type Config } from '../../src/config.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { createApiKey } from '../../src/auth/keys.js';
import { insertSubscription } from '../../api/queries/tenancy-subscriptions.js';
import type { Devnode } from '../../devnode/index.js';
import { startIndexer, type IndexerHandle } from '../../indexer/main.js';
import { readTip } from '../../indexer/writer/chain-rows.js';
import { runBulk } from '../../indexer/writer/bulk.js';
import { createPrefetcher } from '../../indexer/prefetch.js';
import { FixtureChain } from './chain-fixture.js';
import { keyOfAddress } from './chain-snapshot.js';
import { createMigratedDatabase, type TestDatabase } from './db.js';
import { waitFor, waitForProgress } from './wait.js';

/** A config for indexer tests: fast polling and mempool checks, the bulk path for catch-ups over 50 blocks, the given overrides. */
export function indexerConfig(overrides: Partial<Config> = {}): Config {
  return testConfig({
    pollIntervalMs: 200,
    mempoolResyncMs: 60_000,
    mempoolCheckMs: 2000,
    indexerBulkThreshold: 50,
    indexerBulkNearTip: 5,
    ...overrides,
  });
}

/** Starts the indexer on `t` following `node` (its ZMQ too unless `zmq: false`). */
export async function startTestIndexer(
  t: TestDatabase,
  node: Devnode,
  opts: { config?: Partial<Config>; zmq?: boolean; log?: Logger } = {},
): Promise<IndexerHandle> {
  return startIndexer({
    config: indexerConfig(opts.config),
    log: opts.log ?? silentLogger(),
    db: t.db,
    databaseUrl: t.url,
    rpcUrl: node.rpcUrl,
    zmqUrl: opts.zmq === false ? null : node.zmqUrl,
  });
}

/**
 * Waits until the index tip is the node's tip: fails when the index has not moved for
 * `stallMs` (a loaded machine catches up slowly, a stuck indexer does not move at all).
 */
export async function waitSynced(db: Kysely<Database>, node: Devnode, stallMs = 30_000): Promise<void> {
  let at = '';
  await waitForProgress(
    `the index to reach the node's tip ${node.tip().height}`,
    async () => {
      const tip = await readTip(db);
      at = `${tip.height} ${tip.hash ? hashToHex(tip.hash) : ''}`;
      return tip.hash !== null && hashToHex(tip.hash) === node.tip().hash;
    },
    () => at,
    stallMs,
  );
}

/** Waits until the indexed mempool holds exactly the node's mempool. */
export async function waitMempoolSynced(db: Kysely<Database>, node: Devnode, timeoutMs = 30_000): Promise<void> {
  await waitFor(
    "the indexed mempool to equal the node's",
    async () => {
      const r = await sql<{ txid: Buffer }>`SELECT txid FROM mempool_txs`.execute(db);
      const ours = r.rows.map((x) => hashToHex(x.txid)).sort();
      const theirs = [...node.mempool()].sort();
      return ours.length === theirs.length && ours.every((t, i) => t === theirs[i]);
    },
    timeoutMs,
  );
}

/** Subscribes `address` (regtest) with a confirmation target, as the API would. */
export async function watchAddress(db: Kysely<Database>, address: string, confirmations = 6): Promise<string> {
  const key = await createApiKey(db, { name: `watch-${randomUUID().slice(0, 8)}` });
  const id = randomUUID();
  await insertSubscription(db, {
    id,
    keyId: key.id,
    kind: 'address',
    address,
    addrKey: keyOfAddress(address, 'regtest'),
    hookId: null,
    confirmations,
  });
  return id;
}

export interface EventRow {
  seq: bigint;
  type: string;
  address: string | null;
  txid: string | null;
  height: number | null;
  block: string | null;
  confirmations: number | null;
  received: bigint | null;
  sent: bigint | null;
  replacedBy: string | null;
}

/** Outbox rows in order (hashes in display hex). */
export async function readEvents(db: Kysely<Database>, types?: readonly string[]): Promise<EventRow[]> {
  const rows = await db.selectFrom('outbox').selectAll().orderBy('seq').execute();
  return rows
    .filter((r) => !types || types.includes(r.type))
    .map((r) => ({
      seq: r.seq,
      type: r.type,
      address: r.address,
      txid: r.txid ? hashToHex(r.txid) : null,
      height: r.height,
      block: r.block_hash ? hashToHex(r.block_hash) : null,
      confirmations: r.confirmations,
      received: r.received,
      sent: r.sent,
      replacedBy: r.replaced_by ? hashToHex(r.replaced_by) : null,
    }));
}

/**
 * A fresh index of `node`'s active chain built by the bulk path on a new database (fast, and
 * independent of undo), `batchTxs` transactions a batch; no mempool. The bulk path equals the
 * per-block path (bulk.test.ts).
 */
export async function freshBulkIndexOf(node: Devnode, batchTxs = 5000): Promise<TestDatabase> {
  const tip = node.tip();
  const hashes = Array.from({ length: tip.height + 1 }, (_, h) => node.blockHash(h));
  const blocks = await Promise.all(
    hashes.map(async (hash) => {
      const res = await fetch(`${node.restUrl}/block/${hash}.bin`);
      if (res.status !== 200) throw new Error(`block ${hash}: HTTP ${res.status}`);
      return { hash, raw: new Uint8Array(await res.arrayBuffer()) };
    }),
  );
  const chain = new FixtureChain(blocks);
  chain.setActive(hashes);
  const t = await createMigratedDatabase('refb');
  await runBulk(
    t.db,
    { databaseUrl: t.url, log: silentLogger(), batchTxs },
    (from) => createPrefetcher(chain, 8).feed(from, tip.height),
    tip.height,
  );
  return t;
}

/** A fresh index of `node`'s current chain and mempool, built by a new indexer on a new database. */
export async function freshIndexOf(node: Devnode): Promise<TestDatabase> {
  const t = await createMigratedDatabase('ref');
  const ix = await startTestIndexer(t, node, { zmq: false });
  try {
    await waitSynced(t.db, node);
    await waitMempoolSynced(t.db, node);
  } finally {
    await ix.stop();
  }
  return t;
}
