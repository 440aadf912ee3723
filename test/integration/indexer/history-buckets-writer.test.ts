/**
 * History buckets on regtest-chain-a, with a small `busy` and base 2 (four buckets mixing every
 * address), transaction parts on (each fold moves the transactions too, each undo below a fold
 * brings them back): blocks applied through the fixture's reorgs, block by block along the final chain,
 * in turns of several blocks, and folding as they go (every 5 blocks, the newest 2 left, as an idle
 * indexer folds: indexer/writer/history-build.ts). Before a fold every address is in chunk rows,
 * as without buckets; folded in part, every reader (whole histories, script-hash histories, the
 * Electrum tracker's touched keys) reads both places as the chunk index; folded, every address's
 * history equals the chunk index's, an address is in `history` exactly when it has more than
 * `busy` entries, and the logs and chunk rows are byte for byte the same whatever way the chain
 * was applied and folded (a log is a function of the folded chain); the params row counts the records.
 * `busy` is chosen so that an address crosses into chunks in the chain's last block: undoing that
 * block once folded gives the histories of a chain without it, and applying and folding it again
 * the rows before; undoing 12 blocks back across several folds gives the histories of the shorter
 * chain, and applying them again, folding in capped slices, the logs before. Built from the chunk index (`buildHistoryBuckets`), the same logs and
 * histories, and the writer follows on from it. The bulk path onto such an index (from the middle
 * of the chain, the crossing address among its blocks) gives the same logs and histories, and
 * into an empty one chooses the bucket count from its records.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, indexChainA, loadChainA, type ChainA } from '../../support/chain-fixture.js';
import { applyBlocks, undoBlock } from '../../../indexer/writer/apply.js';
import { buildHistoryBuckets } from '../../../indexer/writer/history-switch.js';
import { foldHistory, foldHistoryWhenDue } from '../../../indexer/writer/history-build.js';
import { lockTip } from '../../../indexer/writer/chain-rows.js';
import { readHistoryLayout } from '../../../indexer/writer/history-rows.js';
import { runBulk } from '../../../indexer/writer/bulk.js';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { addressToScript } from '../../../src/bitcoin/address.js';
import { sha256 } from '../../../src/bitcoin/hash.js';
import { buildBase, keyCounts } from '../../../src/db/history-buckets.js';
import { createPrefetcher } from '../../../indexer/prefetch.js';
import { readHistoryEntries } from '../../../src/db/history-reads.js';
import { keysTouchedByBlocks, readScriptHistories, scriptRef } from '../../../src/db/queries/script-hash.js';
import type { Database } from '../../../src/db/schema.js';
import { firstTxNum } from '../../../src/db/tx-num.js';
import { silentLogger } from '../../../src/log.js';

describeFixtures('history buckets: written block by block, folded', () => {
  let chain: ChainA;
  let tip: number;
  let busy: number;
  /** The address that crosses into chunks in the last block. */
  let crosser: string;
  let keys: string[];
  const dbs: TestDatabase[] = [];
  let chunked: TestDatabase;
  let reorged: TestDatabase;
  let byBlock: TestDatabase;
  let inTurns: TestDatabase;
  /** Folds as it goes: every 5 blocks, the newest 2 left, as an idle indexer folds them. */
  let folding: TestDatabase;

  const open = async (b: number) => {
    const t = await createMigratedDatabase('hbw');
    dbs.push(t);
    await sql`UPDATE history_bucket_params SET busy = ${b}, base = 2 WHERE id = 1`.execute(t.db);
    // (transaction parts on: every fold below moves transactions too, every undo below a fold moves them back)
    await sql`UPDATE txid_bucket_params SET fold = true WHERE id = 1`.execute(t.db);
    return t;
  };
  const blockAt = (h: number) => ({ block: decodeBlock(chain.blocks.get(chain.main[h]!)!.raw), height: h });
  /** Applies the final chain's blocks 0..upTo, `turn` blocks a call, then `after` (a due fold). */
  const applyMain = async (db: Kysely<Database>, upTo: number, turn = 1, after?: () => Promise<unknown>) => {
    for (let h = 0; h <= upTo; h += turn) {
      const blocks = Array.from({ length: Math.min(turn, upTo + 1 - h) }, (_, i) => blockAt(h + i));
      const r = await applyBlocks(db, blocks);
      expect(r.map((x) => x.kind)).toEqual(blocks.map(() => 'applied'));
      await after?.();
    }
  };
  /** Folds every block up to the tip, or below `toHeight`. */
  const fold = (db: Kysely<Database>, toHeight?: number) =>
    db.transaction().execute(async (trx) => foldHistory(trx, toHeight ?? (await lockTip(trx)).height + 1));
  const logs = async (db: Kysely<Database>) =>
    (await sql<{ bucket: number; log: string }>`SELECT bucket, encode(log, 'hex') AS log FROM history_buckets ORDER BY bucket`.execute(db))
      .rows;
  const chunks = async (db: Kysely<Database>) =>
    (
      await sql<{
        row: string;
      }>`SELECT (addr_key, first_tx_num, encode(rest, 'hex'))::text AS row FROM history ORDER BY addr_key, first_tx_num`.execute(db)
    ).rows.map((r) => r.row);
  const records = async (db: Kysely<Database>) => {
    const r = await sql<{ n: string; counted: string }>`
      SELECT (SELECT coalesce(sum(length(log)), 0) / 13 FROM history_buckets)::text AS n,
             (SELECT records FROM history_bucket_params)::text AS counted`.execute(db);
    return r.rows[0]!;
  };
  const inChunks = async (db: Kysely<Database>) =>
    new Set((await sql<{ k: string }>`SELECT DISTINCT addr_key::text AS k FROM history`.execute(db)).rows.map((r) => r.k));
  const refs = () => Object.keys(chain.expected.addresses).map((a) => scriptRef(sha256(addressToScript(a, 'regtest'))));

  beforeAll(async () => {
    chain = loadChainA();
    tip = chain.main.length - 1;
    chunked = await open(0);
    await indexChainA(chunked.db);
    keys = (await sql<{ k: string }>`SELECT DISTINCT addr_key::text AS k FROM history ORDER BY 1`.execute(chunked.db)).rows.map((r) => r.k);
    // busy: the most entries an address of the last block had before it (and it gained some there).
    const lo = firstTxNum(tip);
    const all = await readHistoryEntries(chunked.db, keys);
    let best = -1;
    all.forEach((e, i) => {
      const before = e.filter((n) => n < lo).length;
      if (before < e.length && before > best && before <= 6) {
        best = before;
        crosser = keys[i]!;
      }
    });
    expect(best).toBeGreaterThanOrEqual(1);
    busy = best;
    reorged = await open(busy);
    await indexChainA(reorged.db);
    byBlock = await open(busy);
    await applyMain(byBlock.db, tip);
    inTurns = await open(busy);
    await applyMain(inTurns.db, tip, 7);
    folding = await open(busy);
    await applyMain(folding.db, tip, 1, () => foldHistoryWhenDue(folding.db, { lag: 2, every: 5 }));
  }, 240_000);
  afterAll(async () => {
    for (const t of dbs) await t.drop();
  });

  it('before the fold every address is in chunk rows; folded in part, the readers read both places as the chunk index', async () => {
    const expected = await readHistoryEntries(chunked.db, keys);
    expect(await logs(byBlock.db)).toEqual([]);
    expect(await chunks(byBlock.db)).toEqual(await chunks(chunked.db));
    // The folding index folded as it went: the newest blocks are chunk rows, the rest in buckets.
    const p = await readHistoryLayout(folding.db);
    expect(p.folded).toBeGreaterThan(tip - 7);
    expect(p.folded).toBeLessThanOrEqual(tip - 1);
    expect((await logs(folding.db)).length).toBe(4);
    const both = keys.filter((k, i) => expected[i]!.length <= busy && expected[i]!.some((n) => n >= firstTxNum(p.folded)));
    expect(both.length).toBeGreaterThan(0);
    expect(await readHistoryEntries(folding.db, keys)).toEqual(expected);
    expect(await readScriptHistories(folding.db, refs(), 10_000)).toEqual(await readScriptHistories(chunked.db, refs(), 10_000));
    for (const from of [tip, tip - 3, p.folded - 2])
      expect(await keysTouchedByBlocks(folding.db, keys, from, tip), `${from}`).toEqual(
        await keysTouchedByBlocks(chunked.db, keys, from, tip),
      );
    const r = await records(folding.db);
    expect(Number(r.counted)).toBe(Number(r.n));
  });

  it('folded: the same histories as in chunks, each address in the place its count says, the same logs however applied and folded', async () => {
    for (const t of [reorged, byBlock, inTurns, folding]) await fold(t.db);
    const expected = await readHistoryEntries(chunked.db, keys);
    for (const t of [reorged, byBlock, inTurns, folding]) expect(await readHistoryEntries(t.db, keys)).toEqual(expected);
    // In chunks exactly the addresses with more than busy entries; the others in their buckets.
    const place = await inChunks(reorged.db);
    expect(place.size).toBeGreaterThan(0);
    keys.forEach((k, i) => expect(place.has(k), k).toBe(expected[i]!.length > busy));
    const l = await logs(reorged.db);
    expect(l.length).toBe(4);
    for (const { log } of l) for (const n of keyCounts(Buffer.from(log, 'hex')).values()) expect(n).toBeLessThanOrEqual(busy);
    for (const t of [byBlock, inTurns, folding]) expect(await logs(t.db)).toEqual(l);
    expect(await chunks(inTurns.db)).toEqual(await chunks(byBlock.db));
    expect(await chunks(reorged.db)).toEqual(await chunks(byBlock.db));
    for (const from of [tip, tip - 3])
      for (const t of [reorged, folding])
        expect(await keysTouchedByBlocks(t.db, keys, from, tip), `${from}`).toEqual(await keysTouchedByBlocks(chunked.db, keys, from, tip));
    expect(await keysTouchedByBlocks(reorged.db, [crosser], tip, tip)).toEqual(new Set([crosser]));
    for (const t of [reorged, byBlock, inTurns, folding]) {
      const r = await records(t.db);
      expect(Number(r.counted)).toBe(Number(r.n));
    }
    // The script-hash histories (Electrum's) are the chunk index's.
    expect(await readScriptHistories(reorged.db, refs(), 10_000)).toEqual(await readScriptHistories(chunked.db, refs(), 10_000));
  });

  it('undoing a folded block (the one an address crossed in): the histories of a chain without it; applied and folded again, the same rows', async () => {
    const before = { logs: await logs(byBlock.db), chunks: await chunks(byBlock.db) };
    expect((await inChunks(byBlock.db)).has(crosser)).toBe(true);
    expect((await readHistoryLayout(byBlock.db)).folded).toBe(tip + 1);
    const node = new FixtureChain(chain.blocks.values());
    expect((await undoBlock(byBlock.db, tip, node)).kind).toBe('undone');
    expect((await readHistoryLayout(byBlock.db)).folded).toBe(tip);
    const without = await open(busy);
    await applyMain(without.db, tip - 1);
    expect(await readHistoryEntries(byBlock.db, keys)).toEqual(await readHistoryEntries(without.db, keys));
    const r = await records(byBlock.db);
    expect(Number(r.counted)).toBe(Number(r.n));
    expect((await applyBlocks(byBlock.db, [blockAt(tip)])).map((x) => x.kind)).toEqual(['applied']);
    await fold(byBlock.db);
    expect({ logs: await logs(byBlock.db), chunks: await chunks(byBlock.db) }).toEqual(before);
    const again = await records(byBlock.db);
    expect(Number(again.counted)).toBe(Number(again.n));
  });

  it('undoing 12 folded blocks across several folds: the histories of the shorter chain; applied again, folding as it goes, the same logs', async () => {
    // (the folding index is folded to its tip by the test before; its folds were 5 blocks each)
    const before = await logs(folding.db);
    const node = new FixtureChain(chain.blocks.values());
    for (let h = tip; h > tip - 12; h--) {
      expect((await undoBlock(folding.db, h, node)).kind).toBe('undone');
      expect((await readHistoryLayout(folding.db)).folded).toBe(h);
    }
    const shorter = await open(0);
    await applyMain(shorter.db, tip - 12);
    expect(await readHistoryEntries(folding.db, keys)).toEqual(await readHistoryEntries(shorter.db, keys));
    expect(await readScriptHistories(folding.db, refs(), 10_000)).toEqual(await readScriptHistories(shorter.db, refs(), 10_000));
    const r = await records(folding.db);
    expect(Number(r.counted)).toBe(Number(r.n));
    // Applied again, folding at most 4 blocks at a time, then to the tip.
    for (let h = tip - 11; h <= tip; h++) {
      expect((await applyBlocks(folding.db, [blockAt(h)])).map((x) => x.kind)).toEqual(['applied']);
      const f = await foldHistoryWhenDue(folding.db, { lag: 1, every: 3, most: 4 });
      if (f) expect(f.records).toBeGreaterThan(0);
    }
    const p = await readHistoryLayout(folding.db);
    expect(p.folded).toBeLessThanOrEqual(tip);
    expect(p.folded).toBeGreaterThan(tip - 6);
    await fold(folding.db);
    expect(await logs(folding.db)).toEqual(before);
    expect(await readHistoryEntries(folding.db, keys)).toEqual(await readHistoryEntries(chunked.db, keys));
  });

  it("a whole chain folded streamed, in one slice or many, with or without extension bits: the general statements' rows", async () => {
    const rows = async (db: Kysely<Database>) => ({ logs: await logs(db), chunks: await chunks(db), records: await records(db) });
    for (const ext of [0, 1]) {
      const [general, one, many] = [await open(busy), await open(busy), await open(busy)];
      for (const t of [general, one, many]) {
        await sql`UPDATE history_bucket_params SET ext = ${ext} WHERE id = 1`.execute(t.db);
        await applyMain(t.db, tip);
      }
      const foldWith = (t: TestDatabase, o: Parameters<typeof foldHistory>[2]) =>
        t.db.transaction().execute(async (trx) => foldHistory(trx, (await lockTip(trx)).height + 1, o));
      const g = await foldWith(general, { stream: false });
      const [a, b] = [await foldWith(one, {}), await foldWith(many, { sliceBytes: 1 })];
      expect(g.records).toBeGreaterThan(0);
      expect(g.busyKeys).toBeGreaterThan(0);
      for (const f of [a, b]) expect({ ...f, ms: {} }).toEqual({ ...g, ms: {} });
      expect(await rows(one.db)).toEqual(await rows(general.db));
      expect(await rows(many.db)).toEqual(await rows(general.db));
      expect(await readHistoryEntries(many.db, keys)).toEqual(await readHistoryEntries(chunked.db, keys));
    }
    // Choosing the base from the records, as the switch does: the same base and rows both ways.
    const [general, streamed] = [await open(busy), await open(busy)];
    for (const t of [general, streamed]) await applyMain(t.db, tip);
    const foldChoosing = (t: TestDatabase, stream: boolean) =>
      t.db.transaction().execute(async (trx) => foldHistory(trx, (await lockTip(trx)).height + 1, { chooseBase: true, stream }));
    const g = await foldChoosing(general, false);
    expect({ ...(await foldChoosing(streamed, true)), ms: {} }).toEqual({ ...g, ms: {} });
    expect(g.base).toBe(buildBase(g.records));
    expect(await rows(streamed.db)).toEqual(await rows(general.db));
  });

  it("built from the chunk index: the fold's logs and histories; the writer follows on from it", async () => {
    const built = await open(0);
    await indexChainA(built.db);
    const chunkRows = await chunks(built.db);
    const b = await buildHistoryBuckets(built.db, { busy, base: 2 });
    expect(b.busyKeys).toBeGreaterThan(0);
    expect(b.keys).toBe(keys.length);
    expect(await logs(built.db)).toEqual(await logs(reorged.db));
    expect(await readHistoryEntries(built.db, keys)).toEqual(await readHistoryEntries(chunked.db, keys));
    // The busy addresses keep their chunk rows as they were.
    const left = await chunks(built.db);
    expect(left.length).toBeGreaterThan(0);
    expect(chunkRows).toEqual(expect.arrayContaining(left));
    const r = await records(built.db);
    expect(Number(r.counted)).toBe(Number(r.n));
    expect(Number(r.n)).toBe(b.records);
    // The writer takes over: the last block undone, applied again and folded.
    const node = new FixtureChain(chain.blocks.values());
    expect((await undoBlock(built.db, tip, node)).kind).toBe('undone');
    expect((await applyBlocks(built.db, [blockAt(tip)])).map((x) => x.kind)).toEqual(['applied']);
    expect(await readHistoryEntries(built.db, keys)).toEqual(await readHistoryEntries(chunked.db, keys));
    await fold(built.db);
    expect(await logs(built.db)).toEqual(await logs(reorged.db));
    // Once only, and onto an index with busy 0 only.
    await expect(buildHistoryBuckets(built.db, { busy })).rejects.toThrow(/on already/);
  });

  /** The final chain as a node for the bulk path's prefetcher. */
  const mainNode = () => {
    const n = new FixtureChain(chain.blocks.values());
    n.setActive(chain.main);
    return n;
  };
  const bulkTo = async (db: TestDatabase, target: number) =>
    runBulk(
      db.db,
      { databaseUrl: db.url, log: silentLogger(), batchTxs: 40 },
      (from) => createPrefetcher(mainNode(), 8).feed(from, target),
      target,
    );
  it('bulk-loaded onto buckets (the crossing address among its blocks): the logs and histories of the block-by-block index', async () => {
    // Up to k block by block (the crossing address has records in its bucket by then), the rest in bulk.
    const crosserEntries = (await readHistoryEntries(chunked.db, [crosser]))[0]!;
    const firstHeight = Number(crosserEntries[0]! >> 20n);
    const k = Math.min(tip - 1, Math.max(firstHeight, tip - 20));
    const t = await open(busy);
    await applyMain(t.db, k);
    await fold(t.db);
    const atK = (await readHistoryEntries(t.db, [crosser]))[0]!.length;
    expect(atK).toBeGreaterThanOrEqual(1);
    expect(atK).toBeLessThanOrEqual(busy);
    expect((await inChunks(t.db)).has(crosser)).toBe(false);
    const r = await bulkTo(t, tip);
    expect(r.tip).toBe(tip);
    expect(await logs(t.db)).toEqual(await logs(byBlock.db));
    const expected = await readHistoryEntries(chunked.db, keys);
    expect(await readHistoryEntries(t.db, keys)).toEqual(expected);
    const place = await inChunks(t.db);
    keys.forEach((key, i) => expect(place.has(key), key).toBe(expected[i]!.length > busy));
    expect(place.has(crosser)).toBe(true);
    const c = await records(t.db);
    expect(Number(c.counted)).toBe(Number(c.n));
    // The writer follows on: the last block (bulk-loaded) undone, applied again and folded.
    expect((await undoBlock(t.db, tip, mainNode())).kind).toBe('undone');
    expect((await applyBlocks(t.db, [blockAt(tip)])).map((x) => x.kind)).toEqual(['applied']);
    await fold(t.db);
    expect(await logs(t.db)).toEqual(await logs(byBlock.db));
    expect(await readHistoryEntries(t.db, keys)).toEqual(expected);
  });

  it('a bulk sync into an empty index with buckets on chooses the base from its records; the same histories', async () => {
    const t = await createMigratedDatabase('hbw');
    dbs.push(t);
    await sql`UPDATE history_bucket_params SET busy = ${busy} WHERE id = 1`.execute(t.db);
    await sql`UPDATE txid_bucket_params SET fold = true WHERE id = 1`.execute(t.db);
    await bulkTo(t, tip);
    const p = (await sql<{ base: number; records: string }>`SELECT base, records::text AS records FROM history_bucket_params`.execute(t.db))
      .rows[0]!;
    expect(p.base).toBe(buildBase(Number(p.records)));
    expect(Number(p.records)).toBeGreaterThan(0);
    const expected = await readHistoryEntries(chunked.db, keys);
    expect(await readHistoryEntries(t.db, keys)).toEqual(expected);
    const place = await inChunks(t.db);
    keys.forEach((key, i) => expect(place.has(key), key).toBe(expected[i]!.length > busy));
    const c = await records(t.db);
    expect(Number(c.counted)).toBe(Number(c.n));
    // The script-hash histories (Electrum's) are the chunk index's.
    expect(await readScriptHistories(t.db, refs(), 10_000)).toEqual(await readScriptHistories(chunked.db, refs(), 10_000));
    // Folded as it was read (in place of the merge): the logs of the same chain applied block by
    // block and folded at the same base, and the same addresses in chunk rows (cut in chunks of
    // 1024 here, one a block there: their entries are compared above).
    expect(p.base).toBeGreaterThan(0);
    const same = await open(busy);
    await sql`UPDATE history_bucket_params SET base = ${p.base} WHERE id = 1`.execute(same.db);
    await applyMain(same.db, tip);
    await fold(same.db);
    expect(await logs(t.db)).toEqual(await logs(same.db));
    expect(await inChunks(t.db)).toEqual(await inChunks(same.db));
  });
});
