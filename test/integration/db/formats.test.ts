/**
 * Each storage format's SQL fragments read what its JS codec writes: tx_num (height, position,
 * first tx_num of a height) and history entries (entry at an index, the last entry, a slice, the
 * count, a row's entries), on values near the formats' edges.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlFirstTxNum, sqlTxNumHeight, sqlTxNumPosition, txNum, txNumHeight, txNumPosition } from '../../../src/db/tx-num.js';
import { encodeEntries, encodeHistoryChunk, historyChunkEntries, SQL_HISTORY } from '../../../src/db/history-entries.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';

describe('storage formats: SQL fragments agree with the JS codecs', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('formats');
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('tx_num: height, position and first tx_num', async () => {
    const cases: [number, number][] = [
      [0, 0],
      [1, 1],
      [840_000, 4_999],
      [2 ** 31 - 1, 2 ** 20 - 1],
      [123_456, 0],
    ];
    for (const [h, p] of cases) {
      const n = txNum(h, p);
      const r = await sql<{ h: number; p: number; f: string }>`
        SELECT ${sqlTxNumHeight(sql`${n.toString()}::int8`)} AS h, ${sqlTxNumPosition(sql`${n.toString()}::int8`)} AS p, ${sqlFirstTxNum(sql`${h}::int4`)}::text AS f`.execute(
        t.db,
      );
      expect(r.rows[0]).toEqual({ h: txNumHeight(n), p: txNumPosition(n), f: txNum(h, 0).toString() });
      expect([txNumHeight(n), txNumPosition(n)]).toEqual([h, p]);
    }
  });

  it('history entries: entry at, last, slice, count and a row’s entries', async () => {
    const nums = [0n, 1n, 255n, 256n, 2n ** 32n - 1n, 2n ** 32n, txNum(2 ** 31 - 1, 2 ** 20 - 1)];
    const e = encodeEntries(nums);
    // The safe-integer encoder writes the same bytes as the bigint one.
    expect(encodeEntries(nums.map(Number).filter((n) => Number.isSafeInteger(n)))).toEqual(e);
    const one = async (frag: string) =>
      (await sql<{ v: unknown }>`SELECT (${sql.raw(frag)}) AS v FROM (SELECT ${e}::bytea AS e) x`.execute(t.db)).rows[0]!.v;
    for (let i = 0; i < nums.length; i++) {
      expect(BigInt(String(await one(SQL_HISTORY.entryAt('x.e', String(i)))))).toBe(nums[i]);
      expect(BigInt(String(await one(SQL_HISTORY.txNumAt('x.e', `${i + 1} - 1`))))).toBe(nums[i]);
    }
    expect(await one(SQL_HISTORY.entryBytesAt('x.e', '2'))).toEqual(e.subarray(16, 24));
    expect(BigInt(String(await one(SQL_HISTORY.lastEntry('x.e'))))).toBe(nums[nums.length - 1]);
    expect(await one(SQL_HISTORY.slice('x.e', '1', '3'))).toEqual(e.subarray(8, 32));
    // Any integer type: a count(*) is int8.
    expect(await one(SQL_HISTORY.slice('x.e', '1::int8', '3::int8'))).toEqual(e.subarray(8, 32));
    expect(await one(SQL_HISTORY.count('x.e'))).toBe(nums.length);
    expect(await one(SQL_HISTORY.entry(`${(2n ** 32n).toString()}::int8`))).toEqual(encodeEntries([2n ** 32n]));
    const row = encodeHistoryChunk(nums);
    const r = await sql<{
      v: Buffer;
    }>`SELECT ${sql.raw(SQL_HISTORY.entries('h'))} AS v FROM (SELECT ${row.first_tx_num.toString()}::int8 AS first_tx_num, ${row.rest}::bytea AS rest) h`.execute(
      t.db,
    );
    expect(r.rows[0]!.v).toEqual(historyChunkEntries(row.first_tx_num, row.rest));
    expect(r.rows[0]!.v).toEqual(e);
  });
});
