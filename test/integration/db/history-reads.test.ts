/**
 * The history readers' seam (src/db/history-reads.ts) on the `history` chunk rows: presence
 * and the entry count of keys with no history, one one-entry chunk, one full chunk, and several
 * chunks of unequal sizes, checked against the entries the chunks were written from, in one
 * statement over every key (as the readers ask them: a correlated subquery per key); and which
 * keys the blocks of a height range touched (a chunk starting in the range), directly and through
 * the Electrum tracker's `keysTouchedByBlocks`. A page's entries (newest first below a bound, with
 * their places and a cursor's hint) and the skip of Coinstack's whole lists, against the entries
 * the chunks were written from and against the statements the readers ran before the seam. Every
 * entry of several keys at once (readHistoryEntries), ascending whatever order the chunks were
 * written in. The newest entries of several keys together (readNewestHistory, a wallet's page),
 * shared entries counted once. And every fragment for an address kept in its bucket
 * (`history_buckets`, four buckets mixing 70 addresses' records) against the same entries kept in
 * chunks: presence, counts, touched ranges, pages (no chunk place), skips, every entry, merges.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHUNK_ENTRIES,
  decodeEntries,
  encodeHistoryChunk,
  historyChunkEntries,
  newestEntries,
  SQL_HISTORY,
  sqlEntryAt,
} from '../../../src/db/history-entries.js';
import {
  readHistoryEntries,
  readNewestHistory,
  sqlHasHistory,
  sqlHasNoHistory,
  sqlHistoryCount,
  sqlHistoryPageEntries,
  sqlHistorySkip,
  sqlHistoryTouched,
} from '../../../src/db/history-reads.js';
import { seekHistory } from '../../../api/queries/address.js';
import { keysTouchedByBlocks } from '../../../src/db/queries/script-hash.js';
import { firstTxNum, txNum } from '../../../src/db/tx-num.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { seedHistory } from '../../support/history-rows.js';

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

/** Keys whose chunks cover the shapes a page meets: none, one entry, per-block chunks, full 1024-entry chunks and a partial one. */
const PAGED = {
  none: [] as bigint[][],
  one: [[7n]],
  perBlock: [run(10, 1), run(20, 2), run(30, 1), run(40, 3), run(50, 1)],
  big: [run(1_000, CHUNK_ENTRIES), run(10_000, CHUNK_ENTRIES), run(20_000, 300)],
  mixed: [run(1, 1), run(50, 2), run(5_000, CHUNK_ENTRIES), run(20_000, 37)],
};
type Place = { f: bigint; i: number; n: bigint };

/** Writes each set's chunks under a new key (in chunk order, or newest chunk first) and gives the keys by set name. */
async function seedSets<T extends Record<string, bigint[][]>>(sets: T, newestFirst = false): Promise<Record<keyof T, string>> {
  const keys = Object.fromEntries(Object.keys(sets).map((name) => [name, randomUUID()])) as Record<keyof T, string>;
  const rows = Object.entries(sets).flatMap(([name, chunks]) =>
    (newestFirst ? [...chunks].reverse() : chunks).map((c) => ({ addr_key: keys[name as keyof T], ...encodeHistoryChunk(c) })),
  );
  await t.db.insertInto('history').values(rows).execute();
  return keys;
}

/** Every entry of `chunks` with its place, newest first. */
const placed = (chunks: bigint[][]): Place[] =>
  chunks.flatMap((c) => c.map((n, i) => ({ f: c[0]!, i, n }))).sort((a, b) => (a.n < b.n ? 1 : a.n > b.n ? -1 : 0));

const MAX = (1n << 62n) - 1n;

/** Bounds at every edge of the key's chunks (a chunk's first entry, one past it, one past its last) and beyond. */
const boundsOf = (chunks: bigint[][]): bigint[] => [
  ...new Set([0n, 1n, MAX, ...chunks.flatMap((c) => [c[0]!, c[0]! + 1n, c[c.length - 1]!, c[c.length - 1]! + 1n, c[c.length >> 1]!])]),
];

/** The page statement's entries part as the readers ran it before the seam (api/queries/address.ts `historyPagesQuery`). */
const beforeSeam = (key: string, bound: bigint, limit: number, at: { first: bigint; index: number } | null) => sql<Place>`
  SELECT p.f, p.i, p.n
    FROM (SELECT ${key}::uuid AS addr, ${bound}::int8 AS before, ${limit}::int4 AS lim, ${at?.first ?? null}::int8 AS at_first, ${at?.index ?? null}::int4 AS at_index) q
   CROSS JOIN LATERAL (
         SELECT c.f, s.i, s.n
           FROM (SELECT q.before AS v) b,
                LATERAL (SELECT first_tx_num AS f, int8send(first_tx_num) || rest AS e FROM history
                          WHERE addr_key = q.addr AND first_tx_num < b.v ORDER BY first_tx_num DESC LIMIT q.lim) c,
                LATERAL (SELECT g.i, ${sqlEntryAt('c.e', 'g.i')} AS n
                           FROM generate_series(CASE WHEN c.f = q.at_first AND ${sql.raw(SQL_HISTORY.entryBytesAt('c.e', 'q.at_index'))} = ${sql.raw(SQL_HISTORY.entry('b.v'))}
                                                     THEN q.at_index - 1 ELSE length(c.e) / 8 - 1 END, 0, -1) AS g(i)) s
          WHERE s.n < b.v
          LIMIT q.lim) p`;

const PAGE = sqlHistoryPageEntries({ key: 'b.addr', bound: 'b.v', limit: 'b.lim', atFirst: 'b.at_first', atIndex: 'b.at_index' });
const page = (key: string, bound: bigint, limit: number, at: { first: bigint; index: number } | null) => sql<Place>`
  SELECT p.f, p.i, p.n
    FROM (SELECT ${key}::uuid AS addr, ${bound}::int8 AS v, ${limit}::int4 AS lim, ${at?.first ?? null}::int8 AS at_first, ${at?.index ?? null}::int4 AS at_index) b
   CROSS JOIN LATERAL (${PAGE}) p`;

it("cuts a page's entries newest first below any bound, entered at a cursor's place or not", async () => {
  const keys = await seedSets(PAGED);
  let cases = 0;
  let cutByHint = 0;
  for (const [name, chunks] of Object.entries(PAGED)) {
    const key = keys[name as keyof typeof PAGED];
    const all = placed(chunks);
    for (const bound of boundsOf(chunks)) {
      const self = all.find((e) => e.n === bound);
      // No hint; the bound's own place (a cursor's); a stale index; an index past the chunk; another chunk.
      const hints = [
        null,
        ...(self
          ? [
              { first: self.f, index: self.i },
              { first: self.f, index: self.i + 1 },
              { first: self.f, index: 5_000 },
            ]
          : []),
        { first: chunks[0]?.[0] ?? 0n, index: 0 },
      ];
      for (const limit of [1, 3, 25, CHUNK_ENTRIES + 1, 3_000])
        for (const at of hints) {
          const expected = all.filter((e) => e.n < bound).slice(0, limit);
          const got = (await page(key, bound, limit, at).execute(t.db)).rows;
          expect(
            got,
            `${name} below ${bound} limit ${limit} at ${JSON.stringify(at, (_k, x) => (typeof x === 'bigint' ? String(x) : x))}`,
          ).toEqual(expected);
          expect(got).toEqual((await beforeSeam(key, bound, limit, at).execute(t.db)).rows);
          cases++;
          if (at && self && at.index === self.i && self.i > 0) cutByHint++;
        }
    }
  }
  expect(cases).toBeGreaterThan(500);
  // (the cursor's own place was exercised: the walk entered chunks at the hint)
  expect(cutByHint).toBeGreaterThan(20);
  // A page of a 2,348-entry key from its newest entry down, cursor by cursor, lists every entry once.
  const walked: bigint[] = [];
  let bound = MAX;
  let at: { first: bigint; index: number } | null = null;
  for (;;) {
    const got: Place[] = (await page(keys.big, bound, 100, at).execute(t.db)).rows;
    walked.push(...got.map((e) => e.n));
    if (got.length < 100) break;
    const last = got[got.length - 1]!;
    bound = last.n;
    at = { first: last.f, index: last.i };
  }
  expect(walked).toEqual(placed(PAGED.big).map((e) => e.n));
});

it("finds where the skip of a key's newest entries ends, at every chunk edge", async () => {
  const keys = await seedSets(PAGED);
  const skipped = async (key: string, skip: number) =>
    (await sql<{ n: bigint | null }>`SELECT ${sqlHistorySkip(sql`${key}::uuid`, sql`${skip}`)} AS n`.execute(t.db)).rows[0]!.n;
  // The statement seekHistory ran before the seam (no row: null).
  const beforeSeam = async (key: string, skip: number) =>
    (
      await sql<{ n: bigint }>`
    SELECT ${sqlEntryAt(SQL_HISTORY.entries('h'), sql`(c.size - 1 - (${skip}::int8 - (c.cum - c.size)))::int4`)} + 1 AS n
      FROM (SELECT f, size, cum FROM (SELECT first_tx_num AS f, 1 + length(rest)::int8 / 8 AS size,
                                             sum(1 + length(rest)::int8 / 8) OVER (ORDER BY first_tx_num DESC) AS cum
                                        FROM history WHERE addr_key = ${key}) w
             WHERE cum > ${skip} ORDER BY f DESC LIMIT 1) c
      JOIN history h ON h.addr_key = ${key} AND h.first_tx_num = c.f`.execute(t.db)
    ).rows[0]?.n ?? null;
  let cases = 0;
  for (const [name, chunks] of Object.entries(PAGED)) {
    const key = keys[name as keyof typeof PAGED];
    const all = placed(chunks).map((e) => e.n);
    // Every count of newest entries that ends a chunk (newest first), one either side, and past the end.
    const edges = new Set([0, 1, 2, all.length - 1, all.length, all.length + 1, 5_000]);
    let sum = 0;
    for (const c of [...chunks].reverse()) {
      sum += c.length;
      for (const d of [-1, 0, 1]) if (sum + d >= 0) edges.add(sum + d);
    }
    for (const skip of [...edges].filter((s) => s >= 0)) {
      const expected = skip < all.length ? all[skip]! + 1n : null;
      expect(await skipped(key, skip), `${name} skip ${skip}`).toBe(expected);
      expect(await beforeSeam(key, skip)).toBe(expected);
      if (skip > 0) expect(await seekHistory(t.db, key, skip)).toBe(expected);
      cases++;
    }
  }
  expect(cases).toBeGreaterThan(40);
});

it('reads every entry of each key, ascending, in the order the keys are asked', async () => {
  // (written newest chunk first: the answer's order must not be the rows' order)
  const keys = await seedSets(PAGED, true);
  // What the readers ran before the seam: every chunk of the keys, decoded in the order the join gave.
  const beforeSeam = async (asked: string[]) => {
    const r = await sql<{ i: number; first_tx_num: bigint; rest: Buffer }>`
      SELECT q.i::int4 AS i, h.first_tx_num, h.rest
        FROM unnest(${asked}::uuid[]) WITH ORDINALITY AS q(k, i)
        JOIN history h ON h.addr_key = q.k`.execute(t.db);
    const out: bigint[][] = asked.map(() => []);
    for (const c of r.rows) out[c.i - 1]!.push(...decodeEntries(historyChunkEntries(c.first_tx_num, c.rest)));
    return out;
  };
  const asc = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
  const askings: string[][] = [
    [],
    [keys.none],
    [keys.one],
    Object.values(keys),
    [keys.big, keys.none, keys.big, keys.perBlock, randomUUID(), keys.mixed],
  ];
  for (const asked of askings) {
    const got = await readHistoryEntries(t.db, asked);
    const names = asked.map((k) => Object.entries(keys).find(([, v]) => v === k)?.[0] as keyof typeof PAGED | undefined);
    expect(got).toEqual(names.map((n) => (n ? PAGED[n].flat() : [])));
    expect(got).toEqual((await beforeSeam(asked)).map((e) => e.sort(asc)));
  }
  const all = await readHistoryEntries(t.db, [keys.big, keys.mixed]);
  expect(all.map((e) => e.length)).toEqual([2 * CHUNK_ENTRIES + 300, 1 + 2 + CHUNK_ENTRIES + 37]);
  // Inside the caller's transaction: it sees the transaction's own rows.
  await t.db.transaction().execute(async (trx) => {
    const key = randomUUID();
    await trx
      .insertInto('history')
      .values({ addr_key: key, ...encodeHistoryChunk([3n, 9n]) })
      .execute();
    expect(await readHistoryEntries(trx, [key])).toEqual([[3n, 9n]]);
  });
});

it('merges the newest entries of several keys below any bound, an entry two keys share once', async () => {
  const shared = { a: [run(100, 5, 10), run(2_000, 3)], b: [run(120, 4, 10), [150n, 2_003n, 2_004n]] };
  const sets = { ...PAGED, ...shared };
  const keys = await seedSets(sets);
  // What listWalletHistory read before the seam: each key's newest `limit` chunks below the bound, merged.
  const beforeSeam = async (asked: string[], bound: bigint, limit: number) => {
    const r = await sql<{ first_tx_num: bigint; rest: Buffer }>`
      SELECT c.first_tx_num, c.rest
        FROM unnest(${asked}::uuid[]) AS k(addr_key)
        CROSS JOIN LATERAL (SELECT first_tx_num, rest FROM history h WHERE h.addr_key = k.addr_key AND h.first_tx_num < ${bound}
                             ORDER BY first_tx_num DESC LIMIT ${limit}) c`.execute(t.db);
    return newestEntries(
      r.rows.map((c) => historyChunkEntries(c.first_tx_num, c.rest)),
      bound,
      limit,
    );
  };
  const wallets: (keyof typeof sets)[][] = [
    [],
    ['none'],
    ['one'],
    ['a', 'b'],
    ['big', 'perBlock', 'a', 'b', 'none'],
    Object.keys(sets) as (keyof typeof sets)[],
  ];
  let cases = 0;
  for (const names of wallets) {
    const asked = names.map((n) => keys[n]);
    const all = [...new Set(names.flatMap((n) => sets[n].flat()))].sort((x, y) => (x < y ? 1 : x > y ? -1 : 0));
    const bounds = new Set([MAX, 0n, ...names.flatMap((n) => boundsOf(sets[n]))]);
    for (const bound of bounds)
      for (const limit of [1, 3, 26, CHUNK_ENTRIES + 1, 3_000]) {
        const got = await readNewestHistory(t.db, asked, bound, limit);
        expect(got, `${names.join('+')} below ${bound} limit ${limit}`).toEqual(all.filter((n) => n < bound).slice(0, limit));
        expect(got).toEqual(await beforeSeam(asked, bound, limit));
        cases++;
      }
  }
  expect(cases).toBeGreaterThan(300);
  // (the shared entries were there to be counted twice)
  expect(await readNewestHistory(t.db, [keys.a, keys.b], 2_004n, 3)).toEqual([2_003n, 2_000n, 150n]);
});

describe('an address kept in its bucket', () => {
  // The same entry lists under a key kept in chunks and a key kept in its bucket; with base 2
  // (four buckets) and filler keys, each log mixes many addresses.
  const LISTS: Record<string, bigint[]> = {
    none: [],
    one: [txNum(3, 7)],
    perBlock: [txNum(10, 1), txNum(10, 5), txNum(11, 0), txNum(15, 65_535), txNum(20, 2)],
    deep: Array.from({ length: 300 }, (_, i) => txNum(100 + i, i % 7)),
    wide: Array.from({ length: 1_100 }, (_, i) => txNum(1_000 + Math.floor(i / 3), (i % 3) * 100)),
  };
  const inChunks: Record<string, string> = {};
  const inBucket: Record<string, string> = {};
  /** The older half in the bucket, the newer in chunk rows: a fold's work, with blocks since. */
  const inBoth: Record<string, string> = {};
  const asc = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);

  beforeAll(async () => {
    // (the bits change only while the buckets are empty: this test is the first to fill them)
    const moved = await sql`UPDATE history_bucket_params SET base = 2 WHERE id = 1 AND NOT EXISTS (SELECT 1 FROM history_buckets)`.execute(
      t.db,
    );
    expect(Number(moved.numAffectedRows)).toBe(1);
    for (const [name, nums] of Object.entries(LISTS)) {
      inChunks[name] = randomUUID();
      inBucket[name] = randomUUID();
      await seedHistory(t.db, inChunks[name]!, nums);
      await seedHistory(t.db, inBucket[name]!, nums, 'bucket');
      inBoth[name] = randomUUID();
      const half = Math.ceil(nums.length / 2);
      await seedHistory(t.db, inBoth[name]!, nums.slice(0, half), 'bucket');
      await seedHistory(t.db, inBoth[name]!, nums.slice(half));
    }
    for (let i = 0; i < 60; i++)
      await seedHistory(
        t.db,
        randomUUID(),
        Array.from({ length: 1 + (i % 4) }, (_, j) => txNum(7 + i * 11 + j * 5, j)),
        'bucket',
      );
    const b = await sql<{ n: string; big: string }>`
      SELECT count(*)::text AS n, max(length(log) / 13)::text AS big FROM history_buckets`.execute(t.db);
    expect(Number(b.rows[0]!.n)).toBe(4);
    expect(Number(b.rows[0]!.big)).toBeGreaterThan(1_100);
  });

  const pair = (name: string) => [inChunks[name]!, inBucket[name]!, inBoth[name]!] as const;

  it('has, counts and every entry as in chunks; read together with chunk keys', async () => {
    const all = [...Object.values(inChunks), ...Object.values(inBucket), ...Object.values(inBoth), randomUUID()];
    const r = await sql<{ k: string; has: boolean; none: boolean; n: string }>`
      SELECT q.k::text AS k, ${sqlHasHistory(sql.ref('q.k'))} AS has, ${sqlHasNoHistory(sql.ref('q.k'))} AS none,
             ${sqlHistoryCount(sql.ref('q.k'))}::text AS n
        FROM unnest(${all}::uuid[]) AS q(k)`.execute(t.db);
    for (const x of r.rows) expect(x.none, x.k).toBe(!x.has);
    const got = new Map(r.rows.map((x) => [x.k, { has: x.has, n: Number(x.n) }]));
    const entries = await readHistoryEntries(t.db, all);
    for (const [name, nums] of Object.entries(LISTS)) {
      for (const key of pair(name)) {
        expect(got.get(key), `${name} ${key}`).toEqual({ has: nums.length > 0, n: nums.length });
        expect(entries[all.indexOf(key)], name).toEqual(nums);
      }
    }
    expect(entries[all.length - 1]).toEqual([]);
    // As a bind parameter too.
    const one = await sql<{ has: boolean; n: string }>`
      SELECT ${sqlHasHistory(sql`${inBucket.perBlock!}::uuid`)} AS has, ${sqlHistoryCount(sql`${inBucket.perBlock!}::uuid`)}::text AS n`.execute(
      t.db,
    );
    expect(one.rows[0]).toEqual({ has: true, n: '5' });
  });

  it('finds the keys a height range touched', async () => {
    for (const [from, to] of [
      [10, 10],
      [11, 14],
      [15, 15],
      [12, 14],
      [0, 3],
      [21, 99],
      [100, 100],
      [1_300, 1_400],
    ] as const) {
      const touched = async (keys: Record<string, string>) => {
        const r = await sql<{ k: string }>`
          SELECT q.k::text AS k FROM unnest(${Object.values(keys)}::uuid[]) AS q(k)
           WHERE ${sqlHistoryTouched(sql.ref('q.k'), sql`${firstTxNum(from)}::int8`, sql`${firstTxNum(to + 1)}::int8`)}`.execute(t.db);
        return Object.keys(keys)
          .filter((name) => r.rows.some((x) => x.k === keys[name]))
          .sort();
      };
      const expected = Object.keys(LISTS)
        .filter((name) => LISTS[name]!.some((n) => n >= firstTxNum(from) && n < firstTxNum(to + 1)))
        .sort();
      expect(await touched(inBucket), `${from}..${to}`).toEqual(expected);
      expect(await touched(inBoth), `both ${from}..${to}`).toEqual(expected);
      expect([...(await keysTouchedByBlocks(t.db, Object.values(inBucket), from, to))].sort()).toEqual(
        expected.map((name) => inBucket[name]!).sort(),
      );
    }
  });

  it("pages: the newest entries below any bound with no chunk place, and a cursor's hint is ignored", async () => {
    let cases = 0;
    for (const [name, nums] of Object.entries(LISTS)) {
      const newest = [...nums].reverse();
      const bounds = [1n << 62n, ...newest.filter((_, i) => i % 97 === 0 || i === newest.length - 1), 0n, 1n];
      for (const bound of bounds)
        for (const limit of [1, 3, 25, 3_000]) {
          const expected = newest.filter((n) => n < bound).slice(0, limit);
          const got = (await page(inBucket[name]!, bound, limit, null).execute(t.db)).rows;
          expect(got, `${name} below ${bound} limit ${limit}`).toEqual(expected.map((n) => ({ f: -1n, i: -1, n })));
          // (a made-up hint names no chunk of a bucket key)
          expect((await page(inBucket[name]!, bound, limit, { first: 0n, index: 3 }).execute(t.db)).rows).toEqual(got);
          expect((await page(inChunks[name]!, bound, limit, null).execute(t.db)).rows.map((p) => p.n)).toEqual(expected);
          expect((await page(inBoth[name]!, bound, limit, null).execute(t.db)).rows.map((p) => p.n)).toEqual(expected);
          cases++;
        }
    }
    expect(cases).toBeGreaterThan(60);
  });

  it("skips a key's newest entries as in chunks", async () => {
    for (const [name, nums] of Object.entries(LISTS)) {
      const newest = [...nums].reverse();
      for (const skip of [0, 1, 2, 99, 299, 300, 301, 1_099, 1_100, 5_000]) {
        const expected = skip < newest.length ? newest[skip]! + 1n : null;
        for (const key of pair(name)) {
          const r = await sql<{ n: bigint | null }>`SELECT ${sqlHistorySkip(sql`${key}::uuid`, sql`${skip}`)} AS n`.execute(t.db);
          expect(r.rows[0]!.n, `${name} skip ${skip}`).toBe(expected);
          if (skip > 0) expect(await seekHistory(t.db, key, skip)).toBe(expected);
        }
      }
    }
  });

  it('an identity shared by a busy address and a bucket one: its pages list both, whatever their size', async () => {
    // (built to share the bucket's bits and the record's 8 key bytes: bytes 0..11 of the key)
    const a = randomUUID();
    await seedHistory(t.db, a, LISTS.perBlock!);
    const b = `${a.slice(0, 28)}${a[28] === '0' ? '1' : '0'}${a.slice(29)}`;
    const bNums = [txNum(12, 3), txNum(13, 1), txNum(21, 0), txNum(22, 9)];
    await seedHistory(t.db, b, bNums, 'bucket');
    const merged = [...LISTS.perBlock!, ...bNums].sort(asc).reverse();
    for (const limit of [1, 2, 3, 5, 9, 20]) {
      const seen: bigint[] = [];
      for (let bound = 1n << 62n; ;) {
        const got = (await page(a, bound, limit, null).execute(t.db)).rows.map((p) => p.n);
        seen.push(...got);
        if (got.length < limit) break;
        bound = got[got.length - 1]!;
      }
      expect(seen, `limit ${limit}`).toEqual(merged);
    }
  });

  it('merges the newest entries of bucket and chunk keys together', async () => {
    for (const names of [['perBlock'], ['deep', 'wide'], Object.keys(LISTS)]) {
      const all = [...new Set(names.flatMap((n) => LISTS[n]!))].sort(asc).reverse();
      for (const bound of [1n << 62n, all[5] ?? 0n, all[200] ?? 0n])
        for (const limit of [1, 25, 500]) {
          const expected = all.filter((n) => n < bound).slice(0, limit);
          // Each address once in its bucket and once in chunks: its entries are shared, counted once.
          expect(
            await readNewestHistory(
              t.db,
              names.map((n) => inBucket[n]!),
              bound,
              limit,
            ),
          ).toEqual(expected);
          expect(
            await readNewestHistory(
              t.db,
              names.flatMap((n) => pair(n)),
              bound,
              limit,
            ),
          ).toEqual(expected);
        }
    }
  });
});
