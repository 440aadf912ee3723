/**
 * The history buckets' SQL (src/db/history-buckets.ts: the functions, created here in the test's
 * own database, and the fragments) against the JavaScript functions on the same random logs
 * (test/support/bucket-reference.ts's generators, edges forced): bucket ids, the tx field bound,
 * a key's tx_nums below a bound, its count, presence (with a match across two records made on
 * purpose), and undo's front cut. Each check is one statement over every case.
 */
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uuidTextOfBytes } from '../../../src/db/address-key.js';
import {
  HISTORY_BUCKET_FUNCTIONS,
  bucketOf,
  frontCut,
  keyCount,
  keyHas,
  keyTouched,
  keyTxNums,
  recordsOf,
  RECORD_BYTES,
  SQL_BUCKETS,
  writeRecord,
  txBound,
} from '../../../src/db/history-buckets.js';
import { txNum } from '../../../src/db/tx-num.js';
import { entriesArb, heightArb, keyArb, paramsArb, posArb } from '../../support/bucket-reference.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('hbk');
  for (const text of HISTORY_BUCKET_FUNCTIONS) await sql.raw(text).execute(t.db);
});
afterAll(async () => {
  await t?.drop();
});

const SEED = { seed: 20_261_130 };

/** Random logs, each with a key of its own (present or not), a bound, a limit and a first tx_num to cut at. */
function cases(n: number) {
  const one = fc.tuple(entriesArb, fc.nat(), heightArb, posArb, fc.nat({ max: 30 }), keyArb);
  return fc.sample(one, { numRuns: n, ...SEED }).map(([{ keys, entries }, ki, h, p, limit, stranger]) => ({
    log: recordsOf(entries),
    key: ki % 5 === 4 ? stranger : keys[ki % keys.length]!,
    bound: txNum(h, p),
    limit,
    first: txNum(h, 0),
  }));
}

/** A log in which the 8 bytes of `straddle` start at offset 8 (a tx field and the next record's key), and only later as a record of its own when `present`. */
function straddled(present: boolean) {
  const a = Uint8Array.of(0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0);
  const b = Uint8Array.of(0, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9, 0, 0, 0, 0);
  const straddle = Uint8Array.of(0, 0, 0, 0, 1, 2, 3, 4, 5, 9, 9, 9, 7, 7, 7, 7);
  const entries: [Uint8Array, number][] = [
    [a, Number(txNum(0x010203, 0x0405))],
    [b, Number(txNum(0x010203, 0x0404))],
  ];
  if (present) entries.push([straddle, 1]);
  const log = recordsOf(entries);
  expect(log.indexOf(Buffer.from(straddle.subarray(4, 12)))).toBe(8);
  return { log, key: straddle };
}

it('bw_hist_bucket equals bucketOf at the edges of base, ext and split', async () => {
  const rows = fc.sample(fc.tuple(keyArb, paramsArb), { numRuns: 3_000, ...SEED });
  const r = await sql<{ b: number }>`
    SELECT bw_hist_bucket(u.k, u.base, u.ext, u.split) AS b
      FROM unnest(${rows.map(([k]) => uuidTextOfBytes(k))}::uuid[], ${rows.map(([, p]) => p.base)}::int4[],
                  ${rows.map(([, p]) => p.ext)}::int4[], ${rows.map(([, p]) => p.split)}::int4[]) WITH ORDINALITY AS u(k, base, ext, split, o)
     ORDER BY u.o`.execute(t.db);
  expect(r.rows.map((x) => x.b)).toEqual(rows.map(([k, p]) => bucketOf(k, p)));
});

it('bw_hist_tx equals txBound for tx_nums at and beyond the record edges', async () => {
  const ns = [
    ...fc.sample(
      fc.tuple(heightArb, fc.oneof(posArb, fc.integer({ min: 65_535, max: 2 ** 20 - 1 }))).map(([h, p]) => txNum(h, p)),
      { numRuns: 2_000, ...SEED },
    ),
    0n,
    -1n,
    1n,
    txNum(2 ** 24, 0),
    txNum(2 ** 24 - 1, 65_536),
    txNum(2 ** 24 - 1, 65_535),
    (1n << 63n) - 1n,
    -(1n << 63n),
  ];
  const r = await sql<{ b: Buffer }>`
    SELECT bw_hist_tx(u.n) AS b FROM unnest(${ns.map(String)}::int8[]) WITH ORDINALITY AS u(n, o) ORDER BY u.o`.execute(t.db);
  expect(r.rows.map((x) => x.b.toString('hex'))).toEqual(ns.map((n) => txBound(n).toString('hex')));
});

it("a record made in SQL (key bytes, tx field) equals writeRecord's, at the record edges", async () => {
  const rows = [
    ...fc.sample(fc.tuple(keyArb, heightArb, posArb), { numRuns: 2_000, ...SEED }),
    [new Uint8Array(16), 0, 0] as const,
    [new Uint8Array(16).fill(0xff), 2 ** 24 - 1, 65_535] as const,
  ];
  const r = await sql<{ rec: Buffer }>`
    SELECT ${sql.raw(SQL_BUCKETS.key8('u.k'))} || ${sql.raw(SQL_BUCKETS.txField('u.n'))} AS rec
      FROM unnest(${rows.map(([k]) => uuidTextOfBytes(k))}::uuid[], ${rows.map(([, h, p]) => String(txNum(h, p)))}::int8[])
           WITH ORDINALITY AS u(k, n, o)
     ORDER BY u.o`.execute(t.db);
  expect(r.rows.map((x) => x.rec.toString('hex'))).toEqual(
    rows.map(([k, h, p]) => {
      const rec = Buffer.alloc(RECORD_BYTES);
      writeRecord(rec, 0, k, Number(txNum(h, p)));
      return rec.toString('hex');
    }),
  );
});

it("a key's tx_nums below a bound (newest first, limited), count and presence equal the JavaScript scans", async () => {
  const cs = [
    ...cases(400),
    { ...straddled(false), bound: 1n << 62n, limit: 10, first: 0n },
    { ...straddled(true), bound: 1n << 62n, limit: 10, first: 0n },
  ];
  cs.push({ log: Buffer.alloc(0), key: new Uint8Array(16), bound: 1n << 62n, limit: 10, first: 0n });
  const r = await sql<{ nums: bigint[]; n: number; has: boolean }>`
    SELECT array(SELECT s.tx_num FROM (${sql.raw(SQL_BUCKETS.txNums('u.log', SQL_BUCKETS.key8('u.key'), 'u.bound', 'u.lim'))}) AS s) AS nums,
           ${sql.raw(SQL_BUCKETS.count('u.log', SQL_BUCKETS.key8('u.key')))} AS n,
           ${sql.raw(SQL_BUCKETS.has('u.log', SQL_BUCKETS.key8('u.key')))} AS has
      FROM unnest(${cs.map((c) => c.log)}::bytea[], ${cs.map((c) => uuidTextOfBytes(c.key))}::uuid[],
                  ${cs.map((c) => String(c.bound))}::int8[], ${cs.map((c) => c.limit)}::int4[]) WITH ORDINALITY AS u(log, key, bound, lim, o)
     ORDER BY u.o`.execute(t.db);
  expect(r.rows.map((x) => x.nums.map(Number))).toEqual(cs.map((c) => keyTxNums(c.log, c.key, Number(c.bound), c.limit)));
  expect(r.rows.map((x) => x.n)).toEqual(cs.map((c) => keyCount(c.log, c.key)));
  expect(r.rows.map((x) => x.has)).toEqual(cs.map((c) => keyHas(c.log, c.key)));
  // The cases reach every branch: absent, present at the first match, present after a match across records.
  expect(r.rows.filter((x) => x.has).length).toBeGreaterThan(50);
  expect(r.rows.filter((x) => !x.has).length).toBeGreaterThan(50);
  expect(r.rows.slice(-3).map((x) => x.has)).toEqual([false, true, false]);
});

it("bw_hist_cut gives undo's front cut, at the first record, the last and none", async () => {
  const cs = cases(400);
  const key = new Uint8Array(16);
  const edge = recordsOf([
    [key, Number(txNum(9, 2))],
    [key, Number(txNum(9, 1))],
    [key, 0],
  ]);
  for (const first of [txNum(10, 0), txNum(9, 2), txNum(9, 1), 1n, 0n]) cs.push({ log: edge, key, bound: 0n, limit: 0, first });
  cs.push({ log: Buffer.alloc(0), key, bound: 0n, limit: 0, first: 0n });
  const r = await sql<{ kept: Buffer }>`
    SELECT ${sql.raw(SQL_BUCKETS.cut('u.log', 'u.first'))} AS kept
      FROM unnest(${cs.map((c) => c.log)}::bytea[], ${cs.map((c) => String(c.first))}::int8[]) WITH ORDINALITY AS u(log, first, o)
     ORDER BY u.o`.execute(t.db);
  const kept = cs.map((c) => c.log.subarray(frontCut(c.log, Number(c.first))).toString('hex'));
  expect(r.rows.map((x) => x.kept.toString('hex'))).toEqual(kept);
  expect(kept.slice(-6).map((h) => h.length / 26)).toEqual([3, 2, 1, 1, 0, 0]);
});

it('SQL_BUCKETS.touched equals keyTouched for block ranges around the records', async () => {
  const cs = cases(400).map((c, i) => {
    const lo = i % 3 === 0 ? c.first : txNum(Number(c.first >> 20n) + 1, 0);
    return { ...c, lo, hi: i % 7 === 0 ? lo : lo + (BigInt(i % 40) << 20n) + 1n };
  });
  const r = await sql<{ touched: boolean }>`
    SELECT ${sql.raw(SQL_BUCKETS.touched('u.log', SQL_BUCKETS.key8('u.key'), 'u.lo', 'u.hi'))} AS touched
      FROM unnest(${cs.map((c) => c.log)}::bytea[], ${cs.map((c) => uuidTextOfBytes(c.key))}::uuid[],
                  ${cs.map((c) => String(c.lo))}::int8[], ${cs.map((c) => String(c.hi))}::int8[]) WITH ORDINALITY AS u(log, key, lo, hi, o)
     ORDER BY u.o`.execute(t.db);
  const model = cs.map((c) => keyTouched(c.log, c.key, Number(c.lo), Number(c.hi)));
  expect(r.rows.map((x) => x.touched)).toEqual(model);
  expect(model.filter(Boolean).length).toBeGreaterThan(10);
});

it("a page's lateral over bucket rows: the key's records in log order, with no sort node", async () => {
  await sql`CREATE TABLE hb_rows (bucket int4 PRIMARY KEY, log bytea NOT NULL)`.execute(t.db);
  const cs = cases(200);
  await sql`INSERT INTO hb_rows SELECT o::int4, log FROM unnest(${cs.map((c) => c.log)}::bytea[]) WITH ORDINALITY AS u(log, o)`.execute(
    t.db,
  );
  const q = sql<{ bucket: number; tx_num: bigint }>`
    SELECT b.bucket, s.tx_num
      FROM unnest(${cs.map((c) => uuidTextOfBytes(c.key))}::uuid[], ${cs.map((c) => String(c.bound))}::int8[]) WITH ORDINALITY AS q(key, bound, o)
      JOIN hb_rows b ON b.bucket = q.o
      CROSS JOIN LATERAL (${sql.raw(SQL_BUCKETS.txNums('b.log', SQL_BUCKETS.key8('q.key'), 'q.bound', '25'))}) AS s`;
  const rows = (await q.execute(t.db)).rows;
  const model = cs.flatMap((c, i) => keyTxNums(c.log, c.key, Number(c.bound), 25).map((n) => ({ bucket: i + 1, tx_num: BigInt(n) })));
  expect(model.length).toBeGreaterThan(100);
  // A stable sort by bucket keeps each lateral's own order: the records' order in the log.
  expect([...rows].sort((a, b) => a.bucket - b.bucket)).toEqual(model);
  const plan = await sql<{ 'QUERY PLAN': string }>`EXPLAIN ${q}`.execute(t.db);
  const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
  expect(text).toContain('Function Scan on generate_series');
  expect(text).not.toMatch(/Sort/);
});
