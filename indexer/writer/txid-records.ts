/**
 * The bulk finish's txid records (tx-parts-fold.ts `foldLoadedTxParts`): the txids of the parts
 * the batches wrote go into the txid buckets (src/db/txid-buckets.ts) from here rather than from
 * one SQL statement, which computed each transaction's bucket and record in SQL and sorted them
 * all by bucket (31 s of one core for 5.3 M transactions on the bench VM, the finish's longest
 * step). The parts' txids are read by binary COPY in part order (tx_num ascending); each
 * transaction's bucket is computed here (`txidBucketOf`), a counting sort by bucket filled from
 * each bucket's end gives every log newest first (the canonical order), and the logs go back by
 * binary COPY: straight into `txid_buckets` when it is empty, else through a scratch table whose
 * logs are prepended to the buckets' (the loaded transactions are newer than every record).
 * Under a memory budget the buckets are taken in passes (bucket mod passes), each reading every
 * loaded part again. In the caller's transaction.
 * @module
 */
import type pg from 'pg';
import { BinaryCopy, CopyRowReader, copyIn } from './copy-binary.js';
import { copyOutInto } from './copy-out.js';
import { txidBucketsOf, txidTagAt, writeTxidRecord, TXID_RECORD_BYTES } from '../../src/db/txid-buckets.js';
import type { BucketParams } from '../../src/db/history-buckets.js';
import { txNumAtSlot } from '../../src/db/tx-parts.js';
import { grown } from './bulk-batch.js';

const TXID_BYTES = 32;
/** What one transaction's record costs while it is sorted: its bucket, tag and tx_num, and its place in the order. */
const BYTES_PER_RECORD = 4 + 4 + 8 + 4;
/** The records' memory when no budget is given. */
const DEFAULT_BUDGET = 1024 * 2 ** 20;
/** Bytes of bucket rows a COPY sends at once. */
const FLUSH_BYTES = 16 * 2 ** 20;

/** The passes a budget of `budgetBytes` needs for `txs` records (at least 1). */
export function recordPasses(txs: number, budgetBytes: number): number {
  return Math.max(1, Math.ceil((txs * BYTES_PER_RECORD) / Math.max(budgetBytes, BYTES_PER_RECORD)));
}

/**
 * Records the txids of the parts from `fromPart` up (`txs` transactions in all: what the caller
 * counted, checked here) into the buckets under `params`, and counts them in the params row.
 * Returns how many it recorded.
 */
export async function recordLoadedTxids(
  client: pg.ClientBase,
  fromPart: bigint,
  txs: number,
  params: BucketParams,
  opts: { memoryBytes?: number } = {},
): Promise<number> {
  if (txs === 0) return 0;
  const passes = recordPasses(txs, opts.memoryBytes ?? DEFAULT_BUDGET);
  const empty = (await client.query('SELECT 1 FROM txid_buckets LIMIT 1')).rows.length === 0;
  const target = empty ? 'txid_buckets (bucket, log)' : 'txid_records_loaded (bucket, log)';
  if (!empty) await client.query('CREATE TEMP TABLE txid_records_loaded (bucket int4 NOT NULL, log bytea NOT NULL) ON COMMIT DROP');
  const query = `SELECT part, txids || ''::bytea FROM tx_parts WHERE part >= ${fromPart.toString()}::int8 ORDER BY part`;
  let recorded = 0;
  for (let pass = 0; pass < passes; pass++) {
    const taken = await takePass(client, query, params, pass, passes, Math.ceil((txs / passes) * 1.05) + 1024);
    recorded += taken.count;
    const out = new BinaryCopy(1 << 20);
    const flush = async (min: number) => {
      if (out.rows > 0 && out.length >= min) {
        await copyIn(client, target, out.finish());
        out.reset();
      }
    };
    for (const [bucket, log] of taken.logs()) {
      out.row(2).int4(bucket).bytea(log);
      await flush(FLUSH_BYTES);
    }
    await flush(0);
  }
  if (recorded !== txs) throw new Error(`the loaded parts hold ${recorded} transactions, ${txs} were counted`);
  if (!empty)
    await client.query(`INSERT INTO txid_buckets (bucket, log) SELECT bucket, log FROM txid_records_loaded
      ON CONFLICT (bucket) DO UPDATE SET log = excluded.log || txid_buckets.log`);
  await client.query('UPDATE txid_bucket_params SET records = records + $1 WHERE id = 1', [recorded]);
  return recorded;
}

/** The records of one pass: the buckets `b` with `b % passes = pass`, each one's log newest first. */
async function takePass(
  client: pg.ClientBase,
  query: string,
  params: BucketParams,
  pass: number,
  passes: number,
  expected: number,
): Promise<{ count: number; logs: () => Generator<[number, Buffer]> }> {
  // (sized for the pass's share of the records: the buckets are hashes, spread evenly)
  let cap = expected;
  let buckets = new Int32Array(cap);
  let tags = new Uint32Array(cap);
  let nums = new Float64Array(cap);
  let n = 0;
  let top = -1;
  const bucketAt = txidBucketsOf(params);
  const reader = new CopyRowReader(2, (data, at, len) => {
    const part = Number(data.readBigInt64BE(at[0]!));
    const start = at[1]!;
    const slots = len[1]! / TXID_BYTES;
    for (let s = 0; s < slots; s++) {
      const txid = start + s * TXID_BYTES;
      const b = bucketAt(data, txid);
      if (b % passes !== pass) continue;
      if (n === cap) {
        cap *= 2;
        buckets = grown(buckets, cap);
        tags = grown(tags, cap);
        nums = grown(nums, cap);
      }
      buckets[n] = b;
      tags[n] = txidTagAt(data, txid);
      nums[n] = txNumAtSlot(part, s);
      if (b > top) top = b;
      n++;
    }
  });
  await copyOutInto(client, query, reader);
  // Counting sort by bucket; each bucket's segment filled from its end, so that its records,
  // read in tx_num order, come out newest first.
  const slots = Math.floor(top / passes) + 1;
  const ends = new Uint32Array(slots + 1);
  for (let i = 0; i < n; i++) ends[Math.floor(buckets[i]! / passes) + 1]!++;
  for (let j = 1; j <= slots; j++) ends[j]! += ends[j - 1]!;
  const starts = ends.slice(0, slots);
  const fill = ends.slice(1);
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[--fill[Math.floor(buckets[i]! / passes)]!] = i;
  return {
    count: n,
    *logs() {
      for (let j = 0; j < slots; j++) {
        const from = starts[j]!;
        const to = ends[j + 1]!;
        if (from === to) continue;
        const log = Buffer.allocUnsafe((to - from) * TXID_RECORD_BYTES);
        for (let k = from; k < to; k++) {
          const i = order[k]!;
          writeTxidRecord(log, (k - from) * TXID_RECORD_BYTES, tags[i]!, nums[i]!);
        }
        yield [j * passes + pass, log];
      }
    },
  };
}
