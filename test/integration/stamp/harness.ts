/**
 * Stamping under test on the real parts: the devnode (regtest stand-in) or, with `{ core: true }`,
 * a real regtest bitcoind (Bitcoin Core 30, its wallet paying), the indexer following
 * it into an isolated Postgres database, the stamper with a fresh wallet key, and the API built
 * with `buildApi` (requests through `app.inject`). `fund` pays the wallet from the devnode's
 * wallet and waits for the index; `mine` mines and waits for the index.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { buildApi } from '../../../api/app.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { encodeWif } from '../../../src/bitcoin/wif.js';
import { testConfig, type Config } from '../../../src/config.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { startBitcoind, type Bitcoind } from '../../support/bitcoind.js';
import { silentLogger, createLogger, type Logger } from '../../../src/log.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { startStamper, type Stamper, type StamperDeps } from '../../../stamp/stamper.js';
import { startIndexer, type IndexerHandle } from '../../../indexer/main.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { randomBytes } from 'node:crypto';
import { waitFor } from '../../support/wait.js';

export type StampHarness = {
  t: TestDatabase;
  /** The devnode (throws when the harness runs on Core). */
  node: Devnode;
  /** The real bitcoind when the harness runs on Core, else null. */
  core: Bitcoind | null;
  /** The node's RPC URL (credentials in it), for processes started by a test. */
  rpcUrl: string;
  rpc: BitcoindClient;
  indexer: IndexerHandle;
  config: Config;
  wif: string;
  log: Logger;
  stamper: Stamper | null;
  app: FastifyInstance;
  key: string;
  keyId: bigint;
  newKey(): Promise<{ key: string; id: bigint }>;
  /** Starts (or restarts) the in-process stamper and rebuilds the API around it. */
  startStamper(extra?: Partial<StamperDeps>): Promise<Stamper>;
  stopStamper(): Promise<void>;
  /** Pays `count` outputs of `sats` to the wallet's P2WPKH address, mines them, waits for the index. */
  fund(count: number, sats: bigint): Promise<void>;
  /**
   * Mines `n` blocks and waits for the index. `includeMempool: false` leaves the mempool out (a
   * miner that does not take the stamps), `txs` (raw hex) go into the first block: Core's
   * `generateblock`, the devnode's `mine`.
   */
  mine(n?: number, opts?: { includeMempool?: boolean; txs?: string[] }): Promise<string[]>;
  /** The node's mempool txids. */
  mempool(): Promise<string[]>;
  /**
   * Replaces the top `depth` blocks by `depth + 1` blocks without their transactions, which go
   * back to the mempool (Core: `invalidateblock` then empty `generateblock`s), and waits for the index.
   */
  reorg(depth: number): Promise<void>;
  /** Waits until the index holds the node's tip and has read its mempool. */
  synced(): Promise<void>;
  post(hash: string, opts?: { key?: string; idem?: string }): Promise<LightMyRequestResponse>;
  get(id: string, key?: string): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
};

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const randomHash = () => randomBytes(32).toString('hex');

/** `core`: run on a real bitcoind (`txindex`: with -txindex, so getrawtransaction finds confirmed transactions). */
export async function createStampHarness(
  configOverrides: Partial<Config> = {},
  opts: { core?: boolean; txindex?: boolean } = {},
): Promise<StampHarness> {
  const level = process.env.BLOCKWIRE_TEST_LOG as 'debug' | 'info' | undefined;
  const log = level ? createLogger({ level, name: 'stamp-test' }) : silentLogger();
  const devnode = opts.core ? null : await startDevnode({ initialBlocks: 101 });
  const core = opts.core ? await startBitcoind({ funded: true, txindex: opts.txindex }) : null;
  const node = {
    rpcUrl: devnode?.rpcUrl ?? core!.rpcUrl,
    zmqUrl: devnode?.zmqUrl ?? core!.zmqUrl,
    tip: async () => (devnode ? devnode.tip() : core!.tip()),
    mempool: async () => (devnode ? devnode.mempool() : core!.call<string[]>('getrawmempool')),
    stop: () => (devnode ? devnode.stop() : core!.stop()),
  };
  const t = await createMigratedDatabase('stamp');
  const wif = encodeWif(randomBytes(32), 'regtest');
  const config = testConfig({
    network: 'regtest',
    bitcoindRpcUrl: node.rpcUrl,
    bitcoindZmqUrl: node.zmqUrl,
    databaseUrl: t.url,
    pollIntervalMs: 100,
    stampWalletWif: wif,
    stampBatchWindowMs: 200,
    stampPollMs: 100,
    stampLeaseMs: 2000,
    stampAnswerTimeoutMs: 20_000,
    ...configOverrides,
  });
  const indexer = await startIndexer({ config, log, db: t.db, databaseUrl: t.url, rpcUrl: node.rpcUrl, zmqUrl: node.zmqUrl });
  const rpc = new BitcoindClient({ url: node.rpcUrl });
  const created = await createApiKey(t.db, { name: 'stamp-test' });

  const synced = async () => {
    await waitFor('the index to reach the node', async () => {
      const tip = await node.tip();
      const r = await sql<{ height: number; hash: Buffer | null }>`SELECT height, hash FROM chain_tip WHERE id = 1`.execute(t.db);
      const row = r.rows[0];
      if (!row || row.height !== tip.height || !row.hash || hashToHex(row.hash) !== tip.hash) return false;
      const pool = await node.mempool();
      if (pool.length === 0) return true;
      const seen = await sql<{ n: string }>`SELECT count(*)::text AS n FROM mempool_txs`.execute(t.db);
      return Number(seen.rows[0]!.n) >= pool.length;
    });
  };

  const h: StampHarness = {
    t,
    get node(): Devnode {
      if (!devnode) throw new Error('this stamp harness runs on a real bitcoind (h.core)');
      return devnode;
    },
    core,
    rpcUrl: node.rpcUrl,
    rpc,
    indexer,
    config,
    wif,
    log,
    stamper: null,
    app: await buildApi({ db: t.db, log, network: 'regtest' }),
    key: created.key,
    keyId: created.id,
    async newKey() {
      const k = await createApiKey(t.db, { name: 'other' });
      return { key: k.key, id: k.id };
    },
    async startStamper(extra = {}) {
      await h.stopStamper();
      h.stamper = await startStamper({ db: t.db, log, config, network: 'regtest', node: rpc, rebroadcastMs: 1000, ...extra });
      await h.app.close();
      h.app = await buildApi({ db: t.db, log, network: 'regtest', stamps: h.stamper.service });
      return h.stamper;
    },
    async stopStamper() {
      if (h.stamper) await h.stamper.stop();
      h.stamper = null;
    },
    async fund(count, sats) {
      const addr = h.stamper?.addresses[0];
      if (!addr) throw new Error('start the stamper first');
      if (devnode) {
        const outputs = Array.from({ length: count - 1 }, () => ({ to: addr, sats }));
        await devnode.wallet.send(addr, sats, { outputs });
      } else {
        // Core's wallet pays an address once per transaction.
        for (let i = 0; i < count; i++) await core!.call('sendtoaddress', [addr, Number(sats) / 1e8], core!.wallet!);
      }
      await h.mine(1);
    },
    async mine(n = 1, opts = {}) {
      let hashes: string[];
      if (devnode) hashes = await devnode.mine(n, opts);
      else if (opts.includeMempool !== false && !opts.txs) hashes = await core!.mine(n);
      else {
        if (opts.includeMempool !== false) throw new Error('on Core, mine chosen transactions with includeMempool: false');
        hashes = [];
        const address = await core!.call<string>('getnewaddress', [], core!.wallet!);
        for (let i = 0; i < n; i++)
          hashes.push((await core!.call<{ hash: string }>('generateblock', [address, i === 0 ? (opts.txs ?? []) : []])).hash);
      }
      await synced();
      return hashes;
    },
    mempool: () => node.mempool(),
    async reorg(depth) {
      if (devnode) await devnode.reorg(depth, { keepTxs: false });
      else {
        const tip = await core!.tip();
        await core!.call('invalidateblock', [await core!.call<string>('getblockhash', [tip.height - depth + 1])]);
        await h.mine(depth + 1, { includeMempool: false });
      }
      await synced();
    },
    synced,
    post: (hash, opts = {}) =>
      h.app.inject({
        method: 'POST',
        url: '/v1/stamps',
        headers: { apiKey: opts.key ?? h.key, 'content-type': 'application/json', ...(opts.idem ? { 'idempotency-key': opts.idem } : {}) },
        payload: { hash },
      }),
    get: (id, key) => h.app.inject({ method: 'GET', url: `/v1/stamps/${id}`, headers: { apiKey: key ?? h.key } }),
    async close() {
      await h.stopStamper().catch(() => undefined);
      await h.app.close().catch(() => undefined);
      await indexer.stop().catch(() => undefined);
      await node.stop().catch(() => undefined);
      await t.drop();
    },
  };
  await synced();
  return h;
}
