/**
 * How a reorged transaction's story ends (indexer/reorged.ts), on the devnode with the running
 * indexer and real Postgres: double-spent in the winning branch → tx.reorged then tx.replaced
 * naming the double spend; back in the mempool → tx.reorged then tx.unconfirmed and nothing
 * more; gone (its parent was double-spent) → tx.dropped once the grace period has passed; and
 * the pending row written by the undo outlives the indexer process, a new one settles it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { addressToScript, segwitAddress } from '../../../src/bitcoin/address.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import type { Database } from '../../../src/db/schema.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { silentLogger } from '../../../src/log.js';
import { startIndexer, type IndexerHandle } from '../../../indexer/main.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { createMetrics } from '../../../cli/ops/metrics.js';
import { indexerConfig, readEvents, waitMempoolSynced, waitSynced, watchAddress } from '../../support/chain-indexer.js';
import { waitFor } from '../../support/wait.js';

const GRACE_MS = 1500;

describe('reorged transactions that do not come back', () => {
  let node: Devnode;
  let t: TestDatabase;
  /** Watched, not the wallet's. */
  let addr: string;
  const dbs: TestDatabase[] = [];
  const handles: IndexerHandle[] = [];

  const start = async (db: TestDatabase, reorgGraceMs: number) => {
    // The grace period through the setting operators use (INDEXER_REORG_GRACE_MS).
    const h = await startIndexer({
      config: indexerConfig({ indexerReorgGraceMs: reorgGraceMs }),
      log: silentLogger(),
      db: db.db,
      databaseUrl: db.url,
      rpcUrl: node.rpcUrl,
      zmqUrl: node.zmqUrl,
    });
    handles.push(h);
    return h;
  };
  const eventsOf = async (db: Kysely<Database>, txid: string, who: string) =>
    (await readEvents(db)).filter((e) => e.txid === txid && e.address === who);
  const typesOf = async (db: Kysely<Database>, txid: string, who: string) => (await eventsOf(db, txid, who)).map((e) => e.type);
  const pendingOf = async (db: Kysely<Database>) =>
    (await sql<{ txid: Buffer }>`SELECT txid FROM reorged_txs`.execute(db)).rows.map((r) => hashToHex(r.txid));
  const txidOfHex = (hex: string) => hashToHex(decodeTx(Buffer.from(hex, 'hex')).txid);
  const coinsOf = async (txid: string) => decodeTx(await fetchRaw(node, txid)).inputs.map((i) => `${hashToHex(i.prevTxid)}:${i.vout}`);
  const voutTo = async (txid: string, address: string) => {
    const script = Buffer.from(addressToScript(address, 'regtest')).toString('hex');
    return decodeTx(await fetchRaw(node, txid)).outputs.findIndex((o) => Buffer.from(o.script).toString('hex') === script);
  };

  /**
   * A parent paying the wallet and a child of it paying `to`, both mined in one block; then a
   * longer branch from below that block confirms a double spend of the parent, so the child
   * can never come back. Returns the child's txid and the orphaned block.
   */
  const orphanChild = async (to: string, db: Kysely<Database>) => {
    const mid = node.wallet.newAddress('p2wpkh').address!;
    const parent = await node.wallet.send(mid, 300_000n, { includeUnconfirmed: false });
    const child = await node.wallet.send(to, 120_000n, { from: [`${parent}:${await voutTo(parent, mid)}`] });
    const conflict = node.wallet.createTx(node.wallet.newAddress('p2tr').address!, 20_000n, { from: await coinsOf(parent) });
    await waitFor('tx.unconfirmed of the child', async () => (await eventsOf(db, child, to)).length === 1);
    // The two alone: a transaction of another test waiting in the mempool stays there.
    const rawHex = async (txid: string) => Buffer.from(await fetchRaw(node, txid)).toString('hex');
    const [block] = await node.mine(1, { txs: [await rawHex(parent), await rawHex(child)], includeMempool: false });
    await waitSynced(db, node);
    await node.mineOn(node.blockHash(node.tip().height - 1), 2, { txs: [conflict] });
    expect(node.tip().hash).not.toBe(block);
    return { child, block: block! };
  };

  /**
   * The sentinel for "nothing more once the grace period has passed": a transaction orphaned
   * after the one under test (to an address of its own) and dropped once ITS grace period has
   * passed. The resolver settles every due row in one step, so when the sentinel's tx.dropped is
   * in the outbox, the grace period of everything undone before it has ended and the resolver
   * has run past it: whatever it would add for an earlier transaction is there already.
   */
  const pastGrace = async () => {
    const who = segwitAddress(0, randomBytes(20), 'regtest');
    await watchAddress(t.db, who, 1);
    const { child } = await orphanChild(who, t.db);
    await waitSynced(t.db, node);
    await waitFor('the sentinel tx.dropped', async () => (await typesOf(t.db, child, who)).includes('tx.dropped'), 30_000);
  };

  beforeAll(async () => {
    node = await startDevnode({ initialBlocks: 101 });
    t = await createMigratedDatabase('rgd');
    dbs.push(t);
    await start(t, GRACE_MS);
    await waitSynced(t.db, node);
    addr = segwitAddress(0, randomBytes(20), 'regtest');
    await watchAddress(t.db, addr, 1);
  });
  afterAll(async () => {
    for (const h of handles) await h.stop();
    await node?.stop();
    await Promise.all(dbs.map((d) => d.drop()));
  });

  it('double spend confirmed by the winning branch: tx.reorged, then tx.replaced by it', async () => {
    const txid = await node.wallet.send(addr, 40_000n);
    await waitFor('tx.unconfirmed', async () => (await eventsOf(t.db, txid, addr)).length === 1);
    const conflict = node.wallet.createTx(node.wallet.newAddress('p2tr').address!, 9_000n, { from: await coinsOf(txid) });
    const [block] = await node.mine(1);
    await waitSynced(t.db, node);
    const connected = await node.mineOn(node.blockHash(node.tip().height - 1), 2, { txs: [conflict] });
    await waitSynced(t.db, node);
    await waitFor('tx.replaced', async () => (await eventsOf(t.db, txid, addr)).length === 4);
    const evs = await eventsOf(t.db, txid, addr);
    expect(evs.map((e) => [e.type, e.block, e.replacedBy])).toEqual([
      ['tx.unconfirmed', null, null],
      ['tx.confirmed', block, null],
      ['tx.reorged', block, null],
      ['tx.replaced', null, txidOfHex(conflict)],
    ]);
    expect(evs[3]).toMatchObject({ confirmations: 0, received: 40_000n, sent: 0n });
    expect(node.mempool()).not.toContain(txid);
    expect(connected).toHaveLength(2);
    await waitFor('no pending row', async () => (await pendingOf(t.db)).length === 0);
    // Nothing more after the grace period.
    await pastGrace();
    expect(await typesOf(t.db, txid, addr)).toEqual(['tx.unconfirmed', 'tx.confirmed', 'tx.reorged', 'tx.replaced']);
    expect(handles[0]!.metrics().reorged).toEqual({ replaced: 1, dropped: 1 });
  });

  it('back in the mempool: tx.reorged, tx.unconfirmed, neither dropped nor replaced', async () => {
    const txid = await node.wallet.send(addr, 30_000n);
    await waitFor('tx.unconfirmed', async () => (await eventsOf(t.db, txid, addr)).length === 1);
    const [block] = await node.mine(1);
    await waitSynced(t.db, node);
    await node.reorg(1, { newBlocks: 2, keepTxs: false });
    await waitSynced(t.db, node);
    await waitMempoolSynced(t.db, node);
    expect(node.mempool()).toContain(txid);
    await waitFor('tx.unconfirmed again', async () => (await eventsOf(t.db, txid, addr)).length === 4);
    await waitFor('the pending row forgotten', async () => (await pendingOf(t.db)).length === 0);
    await pastGrace();
    const evs = await eventsOf(t.db, txid, addr);
    expect(evs.map((e) => [e.type, e.block])).toEqual([
      ['tx.unconfirmed', null],
      ['tx.confirmed', block],
      ['tx.reorged', block],
      ['tx.unconfirmed', null],
    ]);
    const [again] = await node.mine(1);
    await waitSynced(t.db, node);
    await waitFor('tx.confirmed again', async () => (await eventsOf(t.db, txid, addr)).length === 5);
    expect((await eventsOf(t.db, txid, addr)).map((e) => [e.type, e.block]).slice(4)).toEqual([['tx.confirmed', again]]);
    expect(handles[0]!.metrics().reorged).toEqual({ replaced: 1, dropped: 2 });
  });

  it('gone for good (its parent was double-spent): tx.dropped after the grace period', async () => {
    const { child, block } = await orphanChild(addr, t.db);
    await waitSynced(t.db, node);
    await waitFor('tx.dropped', async () => (await eventsOf(t.db, child, addr)).length === 4, 30_000);
    const evs = await eventsOf(t.db, child, addr);
    expect(evs.map((e) => [e.type, e.block, e.replacedBy])).toEqual([
      ['tx.unconfirmed', null, null],
      ['tx.confirmed', block, null],
      ['tx.reorged', block, null],
      ['tx.dropped', null, null],
    ]);
    expect(evs[3]).toMatchObject({ confirmations: 0, received: 120_000n, sent: 0n });
    expect(node.mempool()).not.toContain(child);
    // Not before the grace period: the outbox times are the two transactions' start times.
    const times = await sql<{ type: string; created_at: Date }>`
      SELECT type, created_at FROM outbox WHERE seq = ANY(${evs.slice(2).map((e) => e.seq.toString())}::int8[]) ORDER BY seq`.execute(t.db);
    expect(times.rows[1]!.created_at.getTime() - times.rows[0]!.created_at.getTime()).toBeGreaterThanOrEqual(GRACE_MS);
    expect(await pendingOf(t.db)).toEqual([]);
    expect(handles[0]!.metrics().reorged).toEqual({ replaced: 1, dropped: 3 });
    // …and on /metrics as blockwire start serves it.
    const metrics = createMetrics({ db: t.db, log: silentLogger(), roles: ['indexer'], processMetrics: false });
    metrics.track({ indexer: handles[0]! });
    const text = await metrics.render();
    expect(text).toContain('blockwire_indexer_reorged_txs_ended_total{outcome="replaced"} 1');
    expect(text).toContain('blockwire_indexer_reorged_txs_ended_total{outcome="dropped"} 3');
  });

  it('the pending row outlives the indexer: a new instance on the same database settles it', async () => {
    const t2 = await createMigratedDatabase('rgd2');
    dbs.push(t2);
    const first = await start(t2, 3_600_000);
    await waitSynced(t2.db, node);
    const who = segwitAddress(0, randomBytes(20), 'regtest');
    await watchAddress(t2.db, who, 1);
    const { child, block } = await orphanChild(who, t2.db);
    await waitSynced(t2.db, node);
    await waitFor('tx.reorged', async () => (await eventsOf(t2.db, child, who)).length === 3);
    expect(await pendingOf(t2.db)).toEqual([child]);
    await first.stop();
    // The process is gone before the grace period ended: the row is what remains of the story.
    expect(await pendingOf(t2.db)).toEqual([child]);
    expect(await typesOf(t2.db, child, who)).toEqual(['tx.unconfirmed', 'tx.confirmed', 'tx.reorged']);
    await start(t2, 200);
    await waitFor('tx.dropped by the new instance', async () => (await eventsOf(t2.db, child, who)).length === 4);
    expect((await eventsOf(t2.db, child, who)).map((e) => [e.type, e.block])).toEqual([
      ['tx.unconfirmed', null],
      ['tx.confirmed', block],
      ['tx.reorged', block],
      ['tx.dropped', null],
    ]);
    expect(await pendingOf(t2.db)).toEqual([]);
  });
});

async function fetchRaw(node: Devnode, txid: string): Promise<Uint8Array> {
  const res = await fetch(`${node.restUrl}/tx/${txid}.bin`);
  if (res.status !== 200) throw new Error(`tx ${txid}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}
