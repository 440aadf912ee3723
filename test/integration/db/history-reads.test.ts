/**
 * The history readers' seam (src/db/history-reads.ts) on today's `history` chunk rows: presence
 * and the entry count of keys with no history, one one-entry chunk, one full chunk, and several
 * chunks of unequal sizes, checked against the entries the chunks were written from, in one
 * statement over every key (as the readers ask them: a correlated subquery per key).
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CHUNK_ENTRIES, encodeHistoryChunk } from '../../../src/db/history-entries.js';
import { sqlHasHistory, sqlHistoryCount } from '../../../src/db/history-reads.js';
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
