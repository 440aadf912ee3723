/**
 * The writer's idle index upkeep (indexer/writer/index-upkeep.ts): the pending entries of
 * `txs_spent_groups` merged into the GIN lose nothing (the spenders every output finds through
 * the index are the same before and after), leave the list empty, and a missing index (a bulk
 * sync under way) is nothing to do; the run loop merges the list once it has applied blocks and
 * has nothing else to do, and a role that may not merge it (not the tables' owner) indexes the
 * chain all the same and says so once. With history buckets on, the run loop folds the history
 * of all but the newest blocks into them once enough have gathered (indexer/writer/history-build.ts).
 * Real PostgreSQL, regtest-chain-a.
 */
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { createDb } from '../../../src/db/connect.js';
import type { Database } from '../../../src/db/schema.js';
import { spendsKeysSql, sqlSpentGroupOf } from '../../../src/db/spent-groups.js';
import { silentLogger } from '../../../src/log.js';
import { applyBlock } from '../../../indexer/writer/apply.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { mergePendingIndexEntries } from '../../../indexer/writer/index-upkeep.js';
import { FOLD_BLOCKS, FOLD_LAG } from '../../../indexer/writer/history-build.js';
import { readHistoryLayout } from '../../../indexer/writer/history-rows.js';
import { firstTxNum } from '../../../src/db/tx-num.js';
import { readHistoryEntries } from '../../../src/db/history-reads.js';
import { createRunLoop } from '../../../indexer/run.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, loadChainA, type FixtureBlock } from '../../support/chain-fixture.js';
import { recordingLogger } from '../../support/log-lines.js';

/** The GIN's pending list (pgstattuple). */
async function pending(db: Kysely<Database>): Promise<{ pages: number; tuples: number }> {
  await sql`CREATE EXTENSION IF NOT EXISTS pgstattuple`.execute(db);
  const r = await sql<{ pending_pages: number; pending_tuples: string }>`
    SELECT pending_pages, pending_tuples FROM pgstatginindex('txs_spent_groups')`.execute(db);
  return { pages: Number(r.rows[0]!.pending_pages), tuples: Number(r.rows[0]!.pending_tuples) };
}

/** Every transaction's spenders as the GIN finds them (sequential scans off), as "tx_num:spender" lines. */
async function spendersByIndex(db: Kysely<Database>): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    await sql`SET LOCAL enable_seqscan = off`.execute(trx);
    const r = await sql<{ t: string; s: string }>`
      SELECT t.tx_num::text AS t, s.tx_num::text AS s FROM txs t
        JOIN txs s ON ${sql.raw(spendsKeysSql('s'))} @> ARRAY[${sqlSpentGroupOf('t.tx_num')}] AND length(s.ins) > 0
       ORDER BY t.tx_num, s.tx_num`.execute(trx);
    const plan = await sql<{ 'QUERY PLAN': string }>`
      EXPLAIN SELECT 1 FROM txs t JOIN txs s ON ${sql.raw(spendsKeysSql('s'))} @> ARRAY[${sqlSpentGroupOf('t.tx_num')}] AND length(s.ins) > 0`.execute(
      trx,
    );
    expect(plan.rows.map((x) => x['QUERY PLAN']).join('\n')).toMatch(/txs_spent_groups/);
    return r.rows.map((x) => `${x.t}:${x.s}`);
  });
}

async function waitFor(what: string, done: () => Promise<boolean>, ms = 60_000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describeFixtures('index upkeep', () => {
  let blocks: FixtureBlock[];
  const dbs: TestDatabase[] = [];
  const roleDbs: Kysely<Database>[] = [];

  beforeAll(() => {
    const a = loadChainA();
    blocks = a.main.map((h) => a.blocks.get(h)!);
  });
  afterAll(async () => {
    await Promise.all(roleDbs.map((d) => d.destroy()));
    await Promise.all(dbs.map((d) => d.drop()));
  });

  it('merges the pending entries without losing any; a missing index is nothing to do', async () => {
    const t = await createMigratedDatabase('upk');
    dbs.push(t);
    // (autovacuum's ANALYZE of txs would empty the pending list too, between the count and the merge)
    await sql`ALTER TABLE txs SET (autovacuum_enabled = off)`.execute(t.db);
    for (const b of blocks) expect((await applyBlock(t.db, decodeBlock(b.raw), b.height)).kind).toBe('applied');
    const before = await pending(t.db);
    expect(before.tuples).toBeGreaterThan(0);
    const spenders = await spendersByIndex(t.db);
    expect(spenders.length).toBeGreaterThan(100);

    expect(await mergePendingIndexEntries(t.db)).toBe(before.pages);
    expect(await pending(t.db)).toEqual({ pages: 0, tuples: 0 });
    expect(await spendersByIndex(t.db)).toEqual(spenders);
    expect(await mergePendingIndexEntries(t.db)).toBe(0);

    await sql`DROP INDEX txs_spent_groups`.execute(t.db);
    expect(await mergePendingIndexEntries(t.db)).toBeNull();
  });

  it('the run loop merges them once it has applied blocks and nothing else is due', async () => {
    const t = await createMigratedDatabase('upl');
    dbs.push(t);
    const node = new FixtureChain(blocks);
    node.setActive(blocks.map((b) => b.hash));
    const loop = createRunLoop({ db: t.db, source: node, log: silentLogger(), pollIntervalMs: 50, maxReorgDepth: 100 });
    const running = loop.run();
    try {
      await waitFor('the tip', async () => (await readTip(t.db)).height === blocks.length - 1);
      await waitFor('an empty pending list', async () => (await pending(t.db)).tuples === 0);
      expect(loop.metrics.blocksApplied).toBe(blocks.length);
    } finally {
      await loop.stop();
      await running;
    }
  });

  it('with history buckets on, the run loop folds all but the newest blocks once enough have gathered', async () => {
    const t = await createMigratedDatabase('upf');
    dbs.push(t);
    await sql`UPDATE history_bucket_params SET busy = 3 WHERE id = 1`.execute(t.db);
    const node = new FixtureChain(blocks);
    node.setActive(blocks.map((b) => b.hash));
    const loop = createRunLoop({ db: t.db, source: node, log: silentLogger(), pollIntervalMs: 50, maxReorgDepth: 100, foldQuietMs: 3000 });
    const running = loop.run();
    const tip = blocks.length - 1;
    expect(tip - FOLD_LAG + 1).toBeGreaterThanOrEqual(FOLD_BLOCKS);
    // (slices of FOLD_BLOCKS, one after the other while the chain is quiet; fewer wait for more blocks)
    const upTo = FOLD_BLOCKS * Math.floor((tip - FOLD_LAG + 1) / FOLD_BLOCKS);
    try {
      await waitFor('the tip', async () => (await readTip(t.db)).height === tip);
      // (not while blocks are being applied: once the chain has been quiet for foldQuietMs)
      expect((await readHistoryLayout(t.db)).folded).toBe(0);
      await waitFor('the fold', async () => (await readHistoryLayout(t.db)).folded === upTo);
    } finally {
      await loop.stop();
      await running;
    }
    const r = await sql<{ n: string; counted: string }>`
      SELECT (SELECT coalesce(sum(length(log)), 0) / 13 FROM history_buckets)::text AS n,
             (SELECT records FROM history_bucket_params)::text AS counted`.execute(t.db);
    expect(Number(r.rows[0]!.n)).toBeGreaterThan(100);
    expect(r.rows[0]!.counted).toBe(r.rows[0]!.n);
    // A chunk row below the fold's height is a busy address's: more than busy entries below it.
    const to = firstTxNum(upTo);
    const below = (
      await sql<{ k: string }>`SELECT DISTINCT addr_key::text AS k FROM history WHERE first_tx_num < ${to.toString()}::int8`.execute(t.db)
    ).rows.map((x) => x.k);
    expect(below.length).toBeGreaterThan(0);
    for (const [i, e] of (await readHistoryEntries(t.db, below)).entries())
      expect(e.filter((n) => n < to).length, below[i]).toBeGreaterThan(3);
    // And an address with fewer keeps those entries in its bucket: fewer chunk rows than addresses.
    const keys = Number(
      (
        await sql<{
          n: string;
        }>`SELECT count(DISTINCT addr_key)::text AS n FROM history WHERE first_tx_num >= ${to.toString()}::int8`.execute(t.db)
      ).rows[0]!.n,
    );
    expect(keys).toBeGreaterThan(0);
  });

  it('a role that may not merge them indexes the chain all the same and says so once', async () => {
    const t = await createMigratedDatabase('upr');
    dbs.push(t);
    // (autovacuum's analyze of txs also empties the pending list: only the blocks may here)
    await sql`ALTER TABLE txs SET (autovacuum_enabled = off)`.execute(t.db);
    const role = `upk_${Date.now().toString(36)}`;
    await sql`CREATE ROLE ${sql.id(role)} LOGIN PASSWORD 'upkeep'`.execute(t.db);
    await sql`GRANT ALL ON ALL TABLES IN SCHEMA public TO ${sql.id(role)}`.execute(t.db);
    await sql`GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ${sql.id(role)}`.execute(t.db);
    const url = new URL(t.url);
    url.username = role;
    url.password = 'upkeep';
    const db = createDb(url.toString(), { max: 4 });
    roleDbs.push(db);
    await expect(mergePendingIndexEntries(db)).rejects.toMatchObject({ code: '42501' });

    const { log, lines } = recordingLogger('warn');
    const node = new FixtureChain(blocks);
    node.setActive(blocks.slice(0, 100).map((b) => b.hash));
    const loop = createRunLoop({ db, source: node, log, pollIntervalMs: 50, maxReorgDepth: 100 });
    const running = loop.run();
    try {
      await waitFor('the first tip', async () => (await readTip(t.db)).height === 99);
      await waitFor('the warning', async () => lines.some((l) => l.includes('may not merge pending index entries')));
      node.setActive(blocks.map((b) => b.hash));
      loop.wake();
      await waitFor('the tip', async () => (await readTip(t.db)).height === blocks.length - 1);
      // Idle again after more blocks: no second warning, and the list was left to the blocks.
      await new Promise((r) => setTimeout(r, 500));
      expect(lines.filter((l) => l.includes('pending index entries')).length).toBe(1);
      expect((await pending(t.db)).tuples).toBeGreaterThan(0);
    } finally {
      await loop.stop();
      await running;
      await db.destroy();
      roleDbs.length = 0;
      // (roles are the cluster's, not the database's)
      await sql`DROP OWNED BY ${sql.id(role)}`.execute(t.db);
      await sql`DROP ROLE ${sql.id(role)}`.execute(t.db);
    }
  });
});
