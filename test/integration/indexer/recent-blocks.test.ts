/**
 * The newest blocks' rows apart (indexer/writer/recent-blocks.ts) on a real PostgreSQL,
 * regtest-chain-a: blocks whose chunk rows go into `history_recent` and balance changes into
 * `balances_recent`, moved into `history` and `balances` now and then, through the node's 7 reorgs
 * (undo cuts chunk rows in either table, and takes a block's changes back from `balances` wherever
 * they wait), give the index a writer that writes the main tables only gives; so do blocks folded into history buckets as an idle indexer
 * folds them, with rows still waiting in `history_recent` below the fold (the fold moves them), and
 * a bulk sync begun on such an index. A chunk straddling the undone range is cut in the table it
 * is in. A held chunk (the API's row-version check) moved into `history` reads as changed with the
 * same entries. The run loop writes a live block's rows there and moves them when idle; a block
 * behind the node's tip goes to `history`.
 */
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import type { Database } from '../../../src/db/schema.js';
import { applyBlocks, undoBlock, type BlockToApply } from '../../../indexer/writer/apply.js';
import { cutHistory, readTip } from '../../../indexer/writer/chain-rows.js';
import { moveRecentHistory } from '../../../indexer/writer/history-recent.js';
import { moveRecentBlocks, RECENT_BLOCKS_MAX } from '../../../indexer/writer/recent-blocks.js';
import { foldHistoryWhenDue } from '../../../indexer/writer/history-build.js';
import { runBulk } from '../../../indexer/writer/bulk.js';
import { createPrefetcher } from '../../../indexer/prefetch.js';
import { createRunLoop } from '../../../indexer/run.js';
import { HISTORY_ROWS, readHistoryEntries } from '../../../src/db/history-reads.js';
import { encodeEntries } from '../../../src/db/history-entries.js';
import { firstTxNum } from '../../../src/db/tx-num.js';
import { readHistoryChunk } from '../../../api/queries/address.js';
import { silentLogger } from '../../../src/log.js';
import { recordingLogger } from '../../support/log-lines.js';
import { waitFor } from '../../support/wait.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, indexChainA, loadChainA } from '../../support/chain-fixture.js';
import { readHistoryPlaces, snapshotIndex } from '../../support/chain-snapshot.js';

const count = async (db: Kysely<Database>, table: 'history' | 'history_recent' | 'balances_recent') =>
  Number((await sql<{ n: string }>`SELECT count(*)::text AS n FROM ${sql.table(table)}`.execute(db)).rows[0]!.n);
const keysOf = async (db: Kysely<Database>) =>
  (await sql<{ k: string }>`SELECT DISTINCT addr_key::text AS k FROM ${sql.raw(HISTORY_ROWS)} h ORDER BY 1`.execute(db)).rows.map(
    (r) => r.k,
  );

describeFixtures('history: the newest blocks’ chunk rows apart', () => {
  const chain = loadChainA();
  const node = new FixtureChain(chain.blocks.values());
  const main = chain.main.map((h) => decodeBlock(chain.blocks.get(h)!.raw));
  const tip = main.length - 1;
  const dbs: TestDatabase[] = [];
  let plain: TestDatabase;
  const open = async (prefix: string, busy = 0) => {
    const t = await createMigratedDatabase(prefix);
    dbs.push(t);
    if (busy > 0) {
      // (64 buckets: short logs, so that a fold's counts stay quick on this chain)
      await sql`UPDATE history_bucket_params SET busy = ${busy}, base = 6 WHERE id = 1`.execute(t.db);
      await sql`UPDATE txid_bucket_params SET fold = true WHERE id = 1`.execute(t.db);
    }
    return t;
  };
  const apply = async (db: Kysely<Database>, b: BlockToApply) => {
    const r = await applyBlocks(db, [b]);
    expect(r[0]!.kind, `apply ${b.height}`).toBe('applied');
  };
  /** Applies the final chain's blocks `from`..`to`, each into history_recent when `recent`, then `after`. */
  const applyMain = async (db: Kysely<Database>, from: number, to: number, recent: boolean, after?: (h: number) => Promise<unknown>) => {
    for (let h = from; h <= to; h++) {
      await apply(db, { block: main[h]!, height: h, recent });
      await after?.(h);
    }
  };

  /** The final chain applied block by block into `history` (what the run loop's tests compare with). */
  let mainRef: TestDatabase;
  /** A new index of the final chain's blocks below `h`, applied into `history`. */
  const below = async (prefix: string, h: number) => {
    const t = await open(prefix);
    await applyMain(t.db, 0, h - 1, false);
    return t;
  };

  beforeAll(async () => {
    plain = await open('hrp');
    await indexChainA(plain.db);
    mainRef = await below('hrm', tip + 1);
  }, 300_000);
  afterAll(async () => {
    await Promise.all(dbs.map((d) => d.drop()));
  });

  it('through the reorgs, moved now and then, gives the index history alone gives', async () => {
    const t = await open('hrr');
    await apply(t.db, { block: main[0]!, height: 0, recent: true });
    let connects = 0;
    let undoneFromRecent = 0;
    let undoneWithChangesWaiting = 0;
    let belowZero = 0;
    let most = 0;
    for (const step of chain.steps) {
      const b = chain.blocks.get(step.hash)!;
      if (step.label === 'C') {
        await apply(t.db, { block: decodeBlock(b.raw), height: b.height, recent: true });
        // (a move after every third block: undos meet rows in both tables)
        if (++connects % 3 === 0) {
          most = Math.max(most, await count(t.db, 'history_recent'));
          await moveRecentBlocks(t.db);
          expect(await count(t.db, 'history_recent')).toBe(0);
          expect(await count(t.db, 'balances_recent')).toBe(0);
        }
      } else {
        const before = await count(t.db, 'history_recent');
        if ((await count(t.db, 'balances_recent')) > 0) undoneWithChangesWaiting++;
        expect((await undoBlock(t.db, b.height, node)).kind).toBe('undone');
        if ((await count(t.db, 'history_recent')) < before) undoneFromRecent++;
        belowZero +=
          (await sql<{ n: string }>`SELECT count(*)::text AS n FROM balances WHERE balance < 0 OR utxo_count < 0`.execute(t.db)).rows[0]!
            .n === '0'
            ? 0
            : 1;
      }
    }
    expect(most).toBeGreaterThan(0);
    expect(undoneFromRecent).toBeGreaterThan(0);
    expect(undoneWithChangesWaiting).toBeGreaterThan(0);
    // (an undo took back a payment still waiting apart: the address's balances row went below zero)
    expect(belowZero).toBeGreaterThan(0);
    expect(await count(t.db, 'history_recent')).toBeGreaterThan(0);
    expect(await count(t.db, 'balances_recent')).toBeGreaterThan(0);
    expect(await snapshotIndex(t.db)).toEqual(await snapshotIndex(plain.db));
    // Moved, the same again, nothing left apart, and `balances` itself is the one history alone writes.
    await moveRecentBlocks(t.db);
    expect(await count(t.db, 'history_recent')).toBe(0);
    expect(await count(t.db, 'balances_recent')).toBe(0);
    expect(await snapshotIndex(t.db)).toEqual(await snapshotIndex(plain.db));
    const rawBalances = (db: Kysely<Database>) =>
      sql<{ k: string; b: string; n: number }>`SELECT addr_key::text AS k, balance::text AS b, utxo_count AS n FROM balances ORDER BY 1`
        .execute(db)
        .then((r) => r.rows);
    expect(await rawBalances(t.db)).toEqual(await rawBalances(plain.db));
  });

  it('folded into buckets as an idle indexer folds, with rows waiting below the fold: the buckets and histories of history alone', async () => {
    const busy = 3;
    const ref = await open('hrfr', busy);
    const t = await open('hrft', busy);
    const foldDue = (db: Kysely<Database>) => foldHistoryWhenDue(db, { lag: 2, every: 5 });
    await applyMain(ref.db, 0, tip, false, () => foldDue(ref.db));
    let foldedWaiting = 0;
    await applyMain(t.db, 0, tip, true, async (h) => {
      const waiting = await count(t.db, 'history_recent');
      const f = await foldDue(t.db);
      // (the fold moved the rows below its height out of history_recent)
      if (f && (await count(t.db, 'history_recent')) < waiting) foldedWaiting++;
      // (the loop's own move only every seventh block: folds meet rows waiting)
      if (h % 7 === 6) await moveRecentBlocks(t.db);
    });
    await moveRecentBlocks(t.db);
    expect(await snapshotIndex(t.db)).toEqual(await snapshotIndex(ref.db));
    // Each entry in the same place (a bucket's record or a chunk row) as history alone puts it.
    expect(await readHistoryPlaces(t.db)).toEqual(await readHistoryPlaces(ref.db));
    expect(foldedWaiting).toBeGreaterThan(0);
    const keys = await keysOf(plain.db);
    expect(await readHistoryEntries(t.db, keys)).toEqual(await readHistoryEntries(plain.db, keys));
  });

  it('a bulk sync begun with rows waiting moves them first: the histories of history alone', async () => {
    const busy = 3;
    const t = await open('hrb', busy);
    const k = tip - 15;
    await applyMain(t.db, 0, k, true);
    expect(await count(t.db, 'history_recent')).toBeGreaterThan(0);
    expect(await count(t.db, 'balances_recent')).toBeGreaterThan(0);
    const r = await runBulk(
      t.db,
      { databaseUrl: t.url, log: silentLogger(), batchTxs: 40 },
      (from) => {
        const n = new FixtureChain(chain.blocks.values());
        n.setActive(chain.main);
        return createPrefetcher(n, 8).feed(from, tip);
      },
      tip,
    );
    expect(r.tip).toBe(tip);
    expect(await count(t.db, 'history_recent')).toBe(0);
    // (the finish computes balances anew from utxos: the changes that waited are in them)
    expect(await count(t.db, 'balances_recent')).toBe(0);
    const keys = await keysOf(plain.db);
    expect(await readHistoryEntries(t.db, keys)).toEqual(await readHistoryEntries(plain.db, keys));
    expect((await snapshotIndex(t.db)).balances).toEqual((await snapshotIndex(plain.db)).balances);
  });

  it('an undo cuts a chunk straddling its range in the table the chunk is in', async () => {
    const t = await open('hrc');
    const key = '0a0b0c0d-0000-4000-8000-000000000001';
    const rows = (table: string) =>
      sql<{ f: string; rest: string }>`SELECT first_tx_num::text AS f, encode(rest, 'hex') AS rest FROM ${sql.table(table)}
        WHERE addr_key = ${key}::uuid ORDER BY first_tx_num`
        .execute(t.db)
        .then((r) => r.rows);
    await sql`INSERT INTO history VALUES (${key}::uuid, 10, ${encodeEntries([20n, 30n])})`.execute(t.db);
    await sql`INSERT INTO history_recent VALUES (${key}::uuid, 40, ${encodeEntries([50n, 60n])}), (${key}::uuid, 70, ''::bytea)`.execute(
      t.db,
    );
    // The newest chunk left (in history_recent) straddles 55: cut there, history untouched.
    await t.db.transaction().execute((trx) => cutHistory(trx, [key], 55));
    expect(await rows('history_recent')).toEqual([{ f: '40', rest: encodeEntries([50n]).toString('hex') }]);
    expect(await rows('history')).toEqual([{ f: '10', rest: encodeEntries([20n, 30n]).toString('hex') }]);
    // From 25: the recent chunk goes, the one in history (now the newest) is cut.
    await t.db.transaction().execute((trx) => cutHistory(trx, [key], 25));
    expect(await rows('history_recent')).toEqual([]);
    expect(await rows('history')).toEqual([{ f: '10', rest: encodeEntries([20n]).toString('hex') }]);
    // The same with the older chunk apart and the newer in history (a move racing nothing: any order is read).
    await sql`INSERT INTO history_recent VALUES (${key}::uuid, 5, ''::bytea)`.execute(t.db);
    expect((await readHistoryEntries(t.db, [key]))[0]).toEqual([5n, 10n, 20n]);
    await t.db.transaction().execute((trx) => cutHistory(trx, [key], 15));
    expect(await rows('history')).toEqual([{ f: '10', rest: '' }]);
    expect(await rows('history_recent')).toEqual([{ f: '5', rest: '' }]);
  });

  it('a held chunk moved into history reads as another version with the same entries; a move below a bound keeps the rest', async () => {
    const t = await open('hrv');
    await applyMain(t.db, 0, 20, true);
    const row = (
      await sql<{ k: string; f: string }>`SELECT addr_key::text AS k, first_tx_num::text AS f FROM history_recent LIMIT 1`.execute(t.db)
    ).rows[0]!;
    const held = (await readHistoryChunk(t.db, row.k, BigInt(row.f)))!;
    expect(held.entries.length).toBeGreaterThan(0);
    const all = await count(t.db, 'history_recent');
    const below = BigInt(row.f) + 1n;
    const moved = await t.db.transaction().execute((trx) => moveRecentHistory(trx, below));
    const left = await count(t.db, 'history_recent');
    expect(moved).toBeGreaterThan(0);
    expect(moved + left).toBe(all);
    const max = (await sql<{ m: string | null }>`SELECT min(first_tx_num)::text AS m FROM history_recent`.execute(t.db)).rows[0]!.m;
    if (max !== null) expect(BigInt(max)).toBeGreaterThanOrEqual(below);
    const again = (await readHistoryChunk(t.db, row.k, BigInt(row.f)))!;
    expect(again.entries).toEqual(held.entries);
    expect(again.txids).toEqual(held.txids);
    expect(again.version).not.toBe(held.version);
  });

  /**
   * Runs the loop on `db` (indexed up to `from` − 1) after its first idle move, then `started`,
   * following the final chain up to its tip: `first` blocks connected at once (all but the last
   * behind the node's tip when applied), then one at a time, `applied` after each. The log's records.
   */
  const follow = async (
    db: Kysely<Database>,
    from: number,
    opts: { first?: number; started?: () => Promise<unknown>; applied?: () => Promise<unknown> } = {},
  ): Promise<Record<string, unknown>[]> => {
    const { log, lines } = recordingLogger('debug');
    const records = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const live = new FixtureChain(chain.blocks.values());
    live.setActive(chain.main.slice(0, from));
    const loop = createRunLoop({ db, source: live, log, pollIntervalMs: 10, maxReorgDepth: 100 });
    const running = loop.run();
    try {
      await waitFor('the first idle move', () => records().some((l) => l.msg === 'recent blocks moved'));
      await opts.started?.();
      for (let height = from - 1 + (opts.first ?? 1), next = from; height <= tip; height++) {
        for (; next <= height; next++) live.connect(chain.main[next]!);
        loop.wake();
        await waitFor(`block ${height} applied`, async () => (await readTip(db)).height >= height);
        await opts.applied?.();
      }
    } finally {
      await loop.stop();
      await running.catch(() => undefined);
    }
    return records();
  };

  it('the run loop writes a live block’s rows apart and moves them when idle; a block behind the tip goes to history', async () => {
    const h = tip - 8;
    const r = await below('hrl', h);
    // Blocks h and h + 1 at once (h behind the node's tip), then one at a time; idle after each, the loop moves them.
    const lines = await follow(r.db, h, {
      first: 2,
      applied: async () => {
        await waitFor('the rows moved', async () => (await count(r.db, 'history_recent')) + (await count(r.db, 'balances_recent')) === 0);
      },
    });
    const moves = lines.filter((l) => l.msg === 'recent blocks moved');
    // The first idle turn's move (of what a previous run may have left: nothing here), then the live blocks'.
    expect(moves.length).toBeGreaterThanOrEqual(2);
    expect(moves.slice(1).every((m) => Number(m.rows) > 0)).toBe(true);
    // Block h was behind the node's tip when applied: its rows went to history directly.
    const inHistory = await sql<{ n: string }>`SELECT count(*)::text AS n FROM history
      WHERE first_tx_num >= ${firstTxNum(h)} AND first_tx_num < ${firstTxNum(h + 1)}`.execute(r.db);
    expect(Number(inHistory.rows[0]!.n)).toBeGreaterThan(0);
    expect(await snapshotIndex(r.db)).toEqual(await snapshotIndex(mainRef.db));
  });

  it('a move that fails loses nothing: the loop warns, goes on applying blocks, their rows wait (up to the bound) or go to history', async () => {
    const h = tip - 10;
    const r = await below('hrx', h);
    // Once the table holds a row, every move fails (as a database error would make it).
    await sql`CREATE TABLE bw_test_refuse (on_ boolean)`.execute(r.db);
    await sql`CREATE FUNCTION bw_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF EXISTS (SELECT 1 FROM bw_test_refuse) THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NULL; END $$`.execute(r.db);
    await sql`CREATE TRIGGER bw_test_refuse AFTER DELETE ON history_recent FOR EACH STATEMENT EXECUTE FUNCTION bw_test_refuse()`.execute(
      r.db,
    );
    // The first idle turn's move succeeds (nothing to move); from then on they fail.
    const lines = await follow(r.db, h, { started: () => sql`INSERT INTO bw_test_refuse VALUES (true)`.execute(r.db) });
    // Warned once (the next try is a minute later), no other move; the first 6 live blocks'
    // rows wait, the others went to history; every block reads as history alone reads it.
    expect(lines.filter((l) => /moving the recent blocks/.test(String(l.msg)))).toHaveLength(1);
    expect(lines.filter((l) => l.msg === 'recent blocks moved')).toHaveLength(1);
    const waiting = await sql<{ n: string }>`SELECT count(DISTINCT first_tx_num >> 20)::text AS n FROM history_recent`.execute(r.db);
    expect(Number(waiting.rows[0]!.n)).toBe(RECENT_BLOCKS_MAX);
    expect(await count(r.db, 'balances_recent')).toBeGreaterThan(0);
    const inHistory = await sql<{
      n: string;
    }>`SELECT count(*)::text AS n FROM history WHERE first_tx_num >= ${firstTxNum(h + RECENT_BLOCKS_MAX)}`.execute(r.db);
    expect(Number(inHistory.rows[0]!.n)).toBeGreaterThan(0);
    expect(await snapshotIndex(r.db)).toEqual(await snapshotIndex(mainRef.db));
  });
});
