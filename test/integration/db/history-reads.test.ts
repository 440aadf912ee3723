/**
 * The history readers' seam (src/db/history-reads.ts) on today's `history` chunk rows: presence
 * and the entry count of keys with no history, one one-entry chunk, one full chunk, and several
 * chunks of unequal sizes, checked against the entries the chunks were written from, in one
 * statement over every key (as the readers ask them: a correlated subquery per key); and which
 * keys the blocks of a height range touched (a chunk starting in the range), directly and through
 * the Electrum tracker's `keysTouchedByBlocks`.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CHUNK_ENTRIES, encodeHistoryChunk } from '../../../src/db/history-entries.js';
import { sqlHasHistory, sqlHistoryCount, sqlHistoryTouched } from '../../../src/db/history-reads.js';
import { keysTouchedByBlocks } from '../../../src/db/queries/script-hash.js';
import { firstTxNum } from '../../../src/db/tx-num.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createMigratedDatabase('hrd');
});
afterAll(async () => {
  await t?.drop();
});

/** Ascending tx_nums `from, from + step, …`, `n` of them. */
const run = (from: number, n: number, step = 3): bigint[] => Array.from({ length: n }, (_, i) => BigInt(from + i * step));

it('counts and finds every entry of a key, over any number of chunks', async () => {
  // Per key, its chunks (each ascending, chunks in ascending order of their first entry).
  const keys: { key: string; chunks: bigint[][] }[] = [
    { key: randomUUID(), chunks: [] },
    { key: randomUUID(), chunks: [run(7, 1)] },
    { key: randomUUID(), chunks: [run(100, CHUNK_ENTRIES)] },
    { key: randomUUID(), chunks: [run(10, 1), run(50, 2), run(5_000, CHUNK_ENTRIES), run(20_000, 37)] },
  ];
  const rows = keys.flatMap(({ key, chunks }) => chunks.map((c) => ({ addr_key: key, ...encodeHistoryChunk(c) })));
  await t.db.insertInto('history').values(rows).execute();

  const r = await sql<{ k: string; has: boolean; n: string }>`
    SELECT q.k::text AS k, ${sqlHasHistory(sql.ref('q.k'))} AS has, ${sqlHistoryCount(sql.ref('q.k'))}::text AS n
      FROM unnest(${keys.map((k) => k.key)}::uuid[]) AS q(k)`.execute(t.db);
  const got = new Map(r.rows.map((x) => [x.k, { has: x.has, n: Number(x.n) }]));
  for (const { key, chunks } of keys) {
    const n = chunks.reduce((a, c) => a + c.length, 0);
    expect(got.get(key), key).toEqual({ has: n > 0, n });
  }
  expect(got.get(keys[3]!.key)!.n).toBe(1 + 2 + CHUNK_ENTRIES + 37);
});

it('takes the key as a bind parameter too', async () => {
  const key = randomUUID();
  await t.db
    .insertInto('history')
    .values([run(1, 3), run(40, 4)].map((c) => ({ addr_key: key, ...encodeHistoryChunk(c) })))
    .execute();
  const asked = (k: string) =>
    sql<{
      has: boolean;
      n: string;
    }>`SELECT ${sqlHasHistory(sql`${k}::uuid`)} AS has, ${sqlHistoryCount(sql`${k}::uuid`)}::text AS n`.execute(t.db);
  expect((await asked(key)).rows[0]).toEqual({ has: true, n: '7' });
  expect((await asked(randomUUID())).rows[0]).toEqual({ has: false, n: '0' });
});

it("finds the keys whose chunks the blocks of a height range wrote, at the range's edges", async () => {
  const at = (height: number, pos = 0) => firstTxNum(height) + BigInt(pos);
  // One chunk per (address, block), as the per-block path writes them.
  const keys = {
    before: { key: randomUUID(), chunks: [[at(9, 5)]] },
    first: { key: randomUUID(), chunks: [[at(5, 1)], [at(10, 0), at(10, 7)]] },
    last: { key: randomUUID(), chunks: [[at(12, 65_535)]] },
    after: { key: randomUUID(), chunks: [[at(13, 0)]] },
    none: { key: randomUUID(), chunks: [] as bigint[][] },
  };
  const rows = Object.values(keys).flatMap(({ key, chunks }) => chunks.map((c) => ({ addr_key: key, ...encodeHistoryChunk(c) })));
  await t.db.insertInto('history').values(rows).execute();
  const touched = async (from: number, to: number) => {
    const r = await sql<{ k: string }>`
      SELECT q.k::text AS k FROM unnest(${Object.values(keys).map((k) => k.key)}::uuid[]) AS q(k)
       WHERE ${sqlHistoryTouched(sql.ref('q.k'), sql`${firstTxNum(from)}::int8`, sql`${firstTxNum(to + 1)}::int8`)}`.execute(t.db);
    return new Set(r.rows.map((x) => x.k));
  };
  const expected = new Set([keys.first.key, keys.last.key]);
  expect(await touched(10, 12)).toEqual(expected);
  expect(
    await keysTouchedByBlocks(
      t.db,
      Object.values(keys).map((k) => k.key),
      10,
      12,
    ),
  ).toEqual(expected);
  expect(await touched(13, 13)).toEqual(new Set([keys.after.key]));
  expect(await keysTouchedByBlocks(t.db, [keys.none.key, keys.before.key], 10, 13)).toEqual(new Set());
});
