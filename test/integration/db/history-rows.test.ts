/**
 * The tests' history writer (test/support/history-rows.ts): the chunks it writes are the ones the
 * per-block path or the bulk finish would (one per block, cut at CHUNK_ENTRIES; or CHUNK_ENTRIES
 * each), the readers' seam reads back exactly the entries given, later blocks add to a key's
 * history, and entries out of order or not after the key's are refused with nothing written; a key
 * kept in its bucket likewise.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CHUNK_ENTRIES, decodeEntries, historyChunkEntries } from '../../../src/db/history-entries.js';
import { readHistoryEntries, sqlHistoryCount } from '../../../src/db/history-reads.js';
import { txNum } from '../../../src/db/tx-num.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { seedHistory } from '../../support/history-rows.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createMigratedDatabase('hrows');
});
afterAll(async () => {
  await t?.drop();
});

/** The key's chunks as stored: each one's entries, in key order. */
const chunksOf = async (key: string) =>
  (
    await sql<{
      first_tx_num: bigint;
      rest: Buffer;
    }>`SELECT first_tx_num, rest FROM history WHERE addr_key = ${key}::uuid ORDER BY first_tx_num`.execute(t.db)
  ).rows.map((c) => decodeEntries(historyChunkEntries(c.first_tx_num, c.rest)));

/** `n` tx_nums of block `height` from position `from`. */
const block = (height: number, n: number, from = 0) => Array.from({ length: n }, (_, p) => txNum(height, from + p));

it('cuts entries as the per-block path does: a chunk per block, a block of more than CHUNK_ENTRIES in several', async () => {
  const key = randomUUID();
  const nums = [...block(1, 2), ...block(2, 1, 7), ...block(5, CHUNK_ENTRIES + 476)];
  await seedHistory(t.db, key, nums);
  expect(await chunksOf(key)).toEqual([block(1, 2), block(2, 1, 7), block(5, CHUNK_ENTRIES), block(5, 476, CHUNK_ENTRIES)]);
  expect(await readHistoryEntries(t.db, [key])).toEqual([nums]);
  const n = await sql<{ n: string }>`SELECT ${sqlHistoryCount(sql`${key}::uuid`)}::text AS n`.execute(t.db);
  expect(Number(n.rows[0]!.n)).toBe(nums.length);
});

it('cuts entries as the bulk finish does: chunks of CHUNK_ENTRIES across blocks', async () => {
  const key = randomUUID();
  const nums = Array.from({ length: 26 }, (_, h) => block(h + 1, 100)).flat();
  await seedHistory(t.db, key, nums, 'bulk');
  const chunks = await chunksOf(key);
  expect(chunks.map((c) => c.length)).toEqual([CHUNK_ENTRIES, CHUNK_ENTRIES, 2_600 - 2 * CHUNK_ENTRIES]);
  expect(chunks.flat()).toEqual(nums);
  expect(await readHistoryEntries(t.db, [key])).toEqual([nums]);
});

it("adds a later block's entries to a key's history; one entry; none", async () => {
  const key = randomUUID();
  await seedHistory(t.db, key, []);
  expect(await readHistoryEntries(t.db, [key])).toEqual([[]]);
  await seedHistory(t.db, key, [txNum(3, 1)]);
  await seedHistory(t.db, key, [txNum(3, 4), txNum(4, 0)]);
  expect(await chunksOf(key)).toEqual([[txNum(3, 1)], [txNum(3, 4)], [txNum(4, 0)]]);
  expect(await readHistoryEntries(t.db, [key])).toEqual([[txNum(3, 1), txNum(3, 4), txNum(4, 0)]]);
});

it("refuses entries out of order, repeated, or not after the key's newest, writing nothing", async () => {
  const key = randomUUID();
  await seedHistory(t.db, key, [txNum(2, 0), txNum(2, 9)]);
  await expect(seedHistory(t.db, key, [txNum(5, 1), txNum(5, 0)])).rejects.toThrow(/strictly ascending/);
  await expect(seedHistory(t.db, key, [txNum(5, 1), txNum(5, 1)])).rejects.toThrow(/strictly ascending/);
  // (the newest chunk starts below txNum(2, 5) but ends above it)
  await expect(seedHistory(t.db, key, [txNum(2, 5), txNum(6, 0)])).rejects.toThrow(/already reaches/);
  await expect(seedHistory(t.db, key, [txNum(2, 9)])).rejects.toThrow(/already reaches/);
  expect(await readHistoryEntries(t.db, [key])).toEqual([[txNum(2, 0), txNum(2, 9)]]);
  // Another key is not in the way.
  const other = randomUUID();
  await seedHistory(t.db, other, [txNum(1, 0)]);
  expect(await readHistoryEntries(t.db, [other])).toEqual([[txNum(1, 0)]]);
});

it("keeps a key's entries in its bucket: read back through the seam, later blocks merged in, older refused", async () => {
  const key = randomUUID();
  const nums = [...block(3, 2), ...block(7, 1, 4)];
  await seedHistory(t.db, key, nums, 'bucket');
  await seedHistory(t.db, randomUUID(), block(5, 3), 'bucket');
  await seedHistory(t.db, key, block(9, 2), 'bucket');
  expect(await chunksOf(key)).toEqual([]);
  expect(await readHistoryEntries(t.db, [key])).toEqual([[...nums, ...block(9, 2)]]);
  await expect(seedHistory(t.db, key, [txNum(9, 1)], 'bucket')).rejects.toThrow(/already reaches/);
  // The records are counted in the params row, and the chunk path sees the bucket's entries.
  const p = await sql<{ records: string }>`SELECT records::text FROM history_bucket_params WHERE id = 1`.execute(t.db);
  expect(Number(p.rows[0]!.records)).toBeGreaterThanOrEqual(8);
  await expect(seedHistory(t.db, key, [txNum(8, 0)])).rejects.toThrow(/already reaches/);
});
