/**
 * The bulk finish's txid records built in JavaScript (indexer/writer/txid-records.ts) against the
 * format's own log of the same transactions (src/db/txid-buckets.ts `txidRecordsOf` per
 * `txidBucketOf`): into empty buckets, prepended to buckets holding older records, in one pass and
 * in several under a small budget. bulk.test.ts holds the whole finish to the per-block path's
 * SQL fold, byte for byte.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { sql } from 'kysely';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { recordLoadedTxids, recordPasses } from '../../../indexer/writer/txid-records.js';
import { txidBucketOf, txidRecordsOf } from '../../../src/db/txid-buckets.js';
import { firstTxNum } from '../../../src/db/tx-num.js';
import { PART_TXS, partOf } from '../../../src/db/tx-parts.js';
import type { BucketParams } from '../../../src/db/history-buckets.js';

const PARAMS: BucketParams = { base: 8, ext: 0, split: 0 };

describe('txid records of loaded parts', () => {
  let t: TestDatabase;
  const all: [Buffer, number][] = [];

  /** Writes the parts of blocks `heights` (`sizes[i]` transactions each, random txids). */
  const writeParts = async (heights: readonly number[], sizes: readonly number[]) => {
    for (const [i, h] of heights.entries())
      for (let pos = 0; pos < sizes[i]!; pos += PART_TXS) {
        const n = Math.min(PART_TXS, sizes[i]! - pos);
        const txids = Array.from({ length: n }, () => randomBytes(32));
        const first = Number(firstTxNum(h)) + pos;
        txids.forEach((x, s) => all.push([x, first + s]));
        await sql`INSERT INTO tx_parts (part, txids, ends, outs, ins)
          VALUES (${partOf(BigInt(first)).toString()}::int8, ${Buffer.concat(txids)}, ''::bytea, ''::bytea, ''::bytea)`.execute(t.db);
      }
  };
  /** The buckets as the format's own function writes them for every transaction so far. */
  const expected = () => {
    const by = new Map<number, [Buffer, number][]>();
    for (const e of all) {
      const b = txidBucketOf(e[0], PARAMS);
      by.set(b, [...(by.get(b) ?? []), e]);
    }
    return [...by.entries()].sort((a, b) => a[0] - b[0]).map(([bucket, es]) => ({ bucket, log: txidRecordsOf(es) }));
  };
  const stored = async () =>
    (await sql<{ bucket: number; log: Buffer }>`SELECT bucket, log FROM txid_buckets ORDER BY bucket`.execute(t.db)).rows;
  const counted = async () =>
    Number((await sql<{ n: string }>`SELECT records::text AS n FROM txid_bucket_params`.execute(t.db)).rows[0]!.n);
  /** recordLoadedTxids in a transaction of its own. */
  const record = async (fromHeight: number, txs: number, memoryBytes?: number) => {
    const c = new pg.Client({ connectionString: t.url });
    await c.connect();
    try {
      await c.query('BEGIN');
      const n = await recordLoadedTxids(c, partOf(firstTxNum(fromHeight)), txs, PARAMS, memoryBytes === undefined ? {} : { memoryBytes });
      await c.query('COMMIT');
      return n;
    } catch (err) {
      await c.query('ROLLBACK');
      throw err;
    } finally {
      await c.end();
    }
  };

  beforeAll(async () => {
    t = await createMigratedDatabase('txrec');
    await sql`UPDATE txid_bucket_params SET base = ${PARAMS.base}, ext = 0, split = 0 WHERE id = 1`.execute(t.db);
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('passes: one within the budget, more as the records outgrow it', () => {
    expect(recordPasses(1000, 1 << 20)).toBe(1);
    expect(recordPasses(1000, 0)).toBe(1000);
    expect(recordPasses(1_430_000_000, 2048 * 2 ** 20)).toBe(14);
  });

  it('into empty buckets, in three passes: each bucket its records newest first, counted', async () => {
    await writeParts([3, 4, 5], [130, 1, 700]);
    const n = all.length;
    // (20 bytes a record: a budget of a third of them)
    expect(recordPasses(n, Math.ceil((n * 20) / 3))).toBe(3);
    expect(await record(3, n, Math.ceil((n * 20) / 3))).toBe(n);
    expect(await stored()).toEqual(expected());
    expect(await counted()).toBe(n);
  });

  it('newer parts prepended to buckets holding records, in one pass', async () => {
    const before = all.length;
    await writeParts([9, 10], [64, 2000]);
    expect(await record(9, all.length - before)).toBe(all.length - before);
    expect(await stored()).toEqual(expected());
    expect(await counted()).toBe(all.length);
  });

  it('a count that is not what the parts hold is refused, and nothing is written', async () => {
    const was = await stored();
    await writeParts([12], [10]);
    await expect(record(12, 11)).rejects.toThrow('the loaded parts hold 10 transactions, 11 were counted');
    expect(await stored()).toEqual(was);
    expect(await counted()).toBe(all.length - 10);
  });
});
