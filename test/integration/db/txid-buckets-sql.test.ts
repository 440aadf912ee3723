/**
 * The txid buckets' SQL (src/db/txid-buckets.ts `TXID_BUCKET_FUNCTIONS`, `SQL_TXIDS`) equals its
 * JavaScript, on real PostgreSQL: a txid's bucket under several params (with extension bits and a
 * split), a record, a log's candidates for a txid (two txids sharing the record's bytes both
 * found), its front cut at every record boundary, and the parts' `seen` column read in SQL as
 * `seenAt` reads it. The JavaScript refuses a wrong txid or log length.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { SQL_TXIDS, TXID_RECORD_BYTES, txidBucketOf, txidCandidates, txidFrontCut, txidRecordsOf } from '../../../src/db/txid-buckets.js';
import { encodeSeen, seenAt, SQL_PARTS } from '../../../src/db/tx-parts.js';
import { firstTxNum } from '../../../src/db/tx-num.js';

describe('txid buckets: SQL equals JavaScript', () => {
  let t: TestDatabase;
  const txids = Array.from({ length: 300 }, () => randomBytes(32));
  // (a txid sharing another's bytes 4..7: one tag in a log)
  txids.push(Buffer.concat([randomBytes(4), txids[0]!.subarray(4, 8), randomBytes(24)]));
  const nums = txids.map((_, i) => Number(firstTxNum(100 + (i % 7))) + i * 3);

  beforeAll(async () => {
    t = await createMigratedDatabase('txidb');
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('a bucket under base, extension bits and a split', async () => {
    for (const p of [
      { base: 2, ext: 0, split: 0 },
      { base: 8, ext: 0, split: 0 },
      { base: 8, ext: 3, split: 0 },
      { base: 10, ext: 2, split: 700 },
      { base: 20, ext: 0, split: 123_456 },
    ]) {
      const r = await sql<{ b: number }>`
        SELECT bw_txid_bucket(x, ${p.base}, ${p.ext}, ${p.split}) AS b FROM unnest(${txids}::bytea[]) WITH ORDINALITY AS u(x, i) ORDER BY i`.execute(
        t.db,
      );
      const js = txids.map((x) => txidBucketOf(x, p));
      expect(r.rows.map((x) => x.b)).toEqual(js);
      expect(new Set(js).size).toBeGreaterThan(1);
    }
  });

  it('records, candidates and the front cut', async () => {
    const log = txidRecordsOf(txids.map((x, i) => [x, nums[i]!] as const));
    expect(log.length).toBe(txids.length * TXID_RECORD_BYTES);
    const sqlLog = await sql<{ log: Buffer }>`
      SELECT string_agg(${sql.raw(SQL_TXIDS.record('x', 'n'))}, ''::bytea ORDER BY n DESC) AS log
        FROM unnest(${txids}::bytea[], ${nums.map(String)}::int8[]) AS u(x, n)`.execute(t.db);
    expect(sqlLog.rows[0]!.log).toEqual(log);
    for (const x of [txids[0]!, txids[1]!, txids.at(-1)!, randomBytes(32)]) {
      const js = txidCandidates(log, x);
      const r = await sql<{ n: string }>`
        SELECT ${sql.raw(SQL_TXIDS.txNumAt('l', 'g.i'))}::text AS n
          FROM (SELECT ${log}::bytea AS l) q CROSS JOIN generate_series(0, ${sql.raw(SQL_TXIDS.count('l'))} - 1) AS g(i)
         WHERE ${sql.raw(SQL_TXIDS.tagAt('l', 'g.i'))} = substring(${x}::bytea FROM 5 FOR 4) ORDER BY g.i`.execute(t.db);
      expect(r.rows.map((row) => Number(row.n))).toEqual(js);
    }
    expect(txidCandidates(log, txids[0]!).sort()).toEqual([nums[0]!, nums.at(-1)!].sort());
    expect(txidCandidates(log, randomBytes(32)).length).toBeLessThanOrEqual(1);
    const sorted = [...nums].sort((a, b) => b - a);
    for (const first of [sorted[0]! + 1, sorted[0]!, sorted[5]!, sorted[5]! - 1, sorted.at(-1)!, 0]) {
      const r = await sql<{ cut: number; rest: Buffer }>`
        SELECT bw_txid_cut(${log}::bytea, bw_hist_tx(${first}::int8)) AS cut, ${sql.raw(SQL_TXIDS.cut('l', `${first}::int8`))} AS rest
          FROM (SELECT ${log}::bytea AS l) q`.execute(t.db);
      const cut = txidFrontCut(log, first);
      expect(r.rows[0]!.cut).toBe(cut);
      expect(r.rows[0]!.rest).toEqual(log.subarray(cut));
      expect(cut).toBe(sorted.filter((n) => n >= first).length * TXID_RECORD_BYTES);
    }
  });

  it("the parts' seen column in SQL", async () => {
    const seen = encodeSeen([
      [0, 1_700_000_000_123_456n],
      [17, 1_700_000_001_000_000n],
      [63, 1n],
    ]);
    const r = await sql<{ s: number; at: Date | null }>`
      SELECT g.s, ${sql.raw(SQL_PARTS.seenAt('p', 'g.s'))} AS at
        FROM (SELECT ${seen}::bytea AS seen) p CROSS JOIN generate_series(0, 63) AS g(s) ORDER BY g.s`.execute(t.db);
    for (const row of r.rows) {
      const us = seenAt(seen, row.s);
      expect(row.at === null ? null : BigInt(row.at.getTime()) * 1000n).toEqual(us === null ? null : (us / 1000n) * 1000n);
    }
    expect(r.rows.filter((x) => x.at !== null).length).toBe(3);
    expect(seenAt(null, 0)).toBeNull();
    expect(encodeSeen([])).toBeNull();
    expect(() => encodeSeen([[64, 1n]])).toThrow(RangeError);
  });

  it('refuses a txid of the wrong length and a log cut mid-record', () => {
    expect(() => txidBucketOf(randomBytes(31), { base: 8, ext: 0, split: 0 })).toThrow(RangeError);
    expect(() => txidCandidates(randomBytes(10), randomBytes(32))).toThrow(RangeError);
    expect(() => txidFrontCut(randomBytes(8), 0)).toThrow(RangeError);
    expect(() =>
      txidRecordsOf([
        [randomBytes(32), 5],
        [randomBytes(32), 5],
      ]),
    ).toThrow(/two txids/);
  });
});
