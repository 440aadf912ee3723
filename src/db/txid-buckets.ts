/**
 * The txid buckets' format, JS and SQL (docs/lean-layout.md "Transaction parts: the plan"): txid
 * → tx_num for the transactions kept in parts (src/db/tx-parts.ts), which have no row and so no
 * B-tree entry of their own. A bucket row's `log` holds 9-byte records, one per transaction:
 * - bytes 0..3: the txid's bytes 4..7 (internal order; the bucket id comes from its bytes 0..3,
 *   and from bytes 4..7 once the table has grown);
 * - bytes 4..8: the tx field, as the history buckets' records hold it (history-buckets.ts
 *   `writeTxField`: the height in 3 bytes, the position in 2, big-endian; it orders as the
 *   tx_num does).
 * A log is canonical: records by tx field descending (newest first; a tx_num has one record), so
 * that a fold prepends the newer blocks' records and an undo cuts them off the front.
 *
 * Bucket ids are the history buckets' (`bucketOf` of the txid's first 16 bytes: the same linear
 * hashing over bytes 0..7, its own params row). A lookup reads the txid's bucket and returns every
 * record whose 4 bytes match: 49 of the txid's bits at the least, so a txid the index lacks may
 * match by chance and two txids may share a record's bits; the caller settles each candidate
 * against the txid its part holds (tx-reads.ts).
 * @module
 */
import { sql, type RawBuilder } from 'kysely';
import { bucketOf, bucketsOf, frontCutFunction, readTxField, writeTxField, type BucketParams } from './history-buckets.js';

/** Bytes per record. */
export const TXID_RECORD_BYTES = 9;
const TAG_BYTES = 4;
/** Where a record's tx field starts. */
const TX_AT = TAG_BYTES;
const TX_BYTES = 5;
const TXID_BYTES = 32;

function checkTxid(txid: Uint8Array): void {
  if (txid.length !== TXID_BYTES) throw new RangeError(`a txid is ${TXID_BYTES} bytes, got ${txid.length}`);
}

function checkLog(log: Uint8Array): void {
  if (log.length % TXID_RECORD_BYTES !== 0)
    throw new RangeError(`a txid log's length ${log.length} is not a multiple of ${TXID_RECORD_BYTES}`);
}

/** The bucket of `txid` (32 bytes, internal order) under `params`. */
export function txidBucketOf(txid: Uint8Array, params: BucketParams): number {
  checkTxid(txid);
  return bucketOf(txid.subarray(0, 16), params);
}

/** `txidBucketOf` under one `params` for many txids: the bucket of the txid at `bytes[at..at + 32)`, read in place. */
export function txidBucketsOf(params: BucketParams): (bytes: Uint8Array, at: number) => number {
  const of = bucketsOf(params);
  return (bytes, at) => {
    if (at < 0 || at + TXID_BYTES > bytes.length)
      throw new RangeError(`a txid is ${TXID_BYTES} bytes, ${bytes.length - at} are left at ${at}`);
    return of(bytes, at);
  };
}

/** `txidTagOf` of the txid at `bytes[at..at + 32)`, unchecked: its caller takes the same txid's bucket first (`txidBucketsOf`), which checks. */
export function txidTagAt(bytes: Uint8Array, at: number): number {
  return ((bytes[at + 4]! << 24) | (bytes[at + 5]! << 16) | (bytes[at + 6]! << 8) | bytes[at + 7]!) >>> 0;
}

/** The tx_num of the record at byte `at` of `log`. */
function recordTxNum(log: Uint8Array, at: number): number {
  return readTxField(log, at + TX_AT);
}

/** The bytes of `txid` a record holds (its bytes 4..7), as an unsigned 32-bit number. */
function txidTagOf(txid: Uint8Array): number {
  checkTxid(txid);
  return txidTagAt(txid, 0);
}

/** Writes the record of the transaction whose txid has the tag `tag` (`txidTagOf`) at the tx_num `txNum` at byte `at` of `out`. */
export function writeTxidRecord(out: Uint8Array, at: number, tag: number, txNum: number): void {
  out[at] = tag >>> 24;
  out[at + 1] = (tag >>> 16) & 0xff;
  out[at + 2] = (tag >>> 8) & 0xff;
  out[at + 3] = tag & 0xff;
  writeTxField(out, at + TX_AT, txNum);
}

/** A log of the transactions `[txid, txNum]` (any order, distinct tx_nums), canonical. */
export function txidRecordsOf(entries: readonly (readonly [txid: Uint8Array, txNum: number])[]): Buffer {
  const sorted = [...entries].sort((a, b) => b[1] - a[1]);
  const out = Buffer.allocUnsafe(sorted.length * TXID_RECORD_BYTES);
  sorted.forEach(([txid, n], i) => {
    if (i > 0 && n === sorted[i - 1]![1]) throw new RangeError(`tx_num ${n} has two txids`);
    writeTxidRecord(out, i * TXID_RECORD_BYTES, txidTagOf(txid), n);
  });
  return out;
}

/** The tx_nums of the records of `log` that may be `txid`'s (its bytes 4..7 match), newest first. */
export function txidCandidates(log: Uint8Array, txid: Uint8Array): number[] {
  checkLog(log);
  checkTxid(txid);
  const out: number[] = [];
  for (let at = 0; at < log.length; at += TXID_RECORD_BYTES) {
    let match = true;
    for (let j = 0; j < TAG_BYTES && match; j++) match = log[at + j] === txid[4 + j];
    if (match) out.push(recordTxNum(log, at));
  }
  return out;
}

/** Undo's front cut: the bytes of the log's leading records whose tx_num is at or above `first`. */
export function txidFrontCut(log: Uint8Array, first: number): number {
  checkLog(log);
  let at = 0;
  while (at < log.length && recordTxNum(log, at) >= first) at += TXID_RECORD_BYTES;
  return at;
}

// ---- SQL ----

/**
 * The SQL functions of the format (CREATE OR REPLACE: a migration runs them as they are), on
 * top of the history buckets' (`bw_hist_bucket_at`, `bw_hist_tx`):
 * - `bw_txid_bucket(txid bytea, base, ext, split)`: `txidBucketOf`;
 * - `bw_txid_cut(log, lo bytea)`: `txidFrontCut` with `lo = bw_hist_tx(first)` (PL/pgSQL: it
 *   stops at the first older record).
 */
export const TXID_BUCKET_FUNCTIONS: readonly string[] = [
  `CREATE OR REPLACE FUNCTION bw_txid_bucket(txid bytea, base int4, ext int4, split int4) RETURNS int4
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN bw_hist_bucket_at(txid, base, ext) < split
                      THEN bw_hist_bucket_at(txid, base, ext + 1)
                      ELSE bw_hist_bucket_at(txid, base, ext) END $$`,
  frontCutFunction('bw_txid_cut', TX_AT, TXID_RECORD_BYTES),
];

/**
 * The format's SQL fragments, as text (arguments are SQL text: column references or expressions
 * of the enclosing statement).
 */
export const SQL_TXIDS = {
  /** The bucket id (int4) of the txid `txid` (bytea) under the params row `p` (a `txid_bucket_params` alias). */
  bucketOf: (txid: string, p: string): string => `bw_txid_bucket(${txid}, ${p}.base, ${p}.ext, ${p}.split)`,
  /** The record (bytea, 9 bytes) of the txid `txid` (bytea) at the tx_num `n` (int8). */
  record: (txid: string, n: string): string =>
    `(substring(${txid} FROM 5 FOR ${TAG_BYTES}) || substring(int8send((((${n}) >> 20) << 16) | ((${n}) & 65535)) FROM 4 FOR ${TX_BYTES}))`,
  /** The number of records (int4) of `log`. */
  count: (log: string): string => `(length(${log}) / ${TXID_RECORD_BYTES})`,
  /** The tx_num (int8) of record `i` (an int expression, from 0) of `log`. */
  txNumAt: (log: string, i: string): string => {
    const at = (j: number) => `get_byte(${log}, ${TXID_RECORD_BYTES} * (${i}) + ${j})`;
    return `((${at(4)}::int8 << 36) | (${at(5)}::int8 << 28) | (${at(6)}::int8 << 20) | (${at(7)} << 8) | ${at(8)})`;
  },
  /** The txid bytes (4..7, a bytea) record `i` of `log` holds: a record may be a txid's when they are its `txidTag`. */
  tagAt: (log: string, i: string): string => `substring(${log} FROM ${TXID_RECORD_BYTES} * (${i}) + 1 FOR ${TAG_BYTES})`,
  /** `log` without its records at or above the tx_num `first` (int8): undo's front cut. */
  cut: (log: string, first: string): string => `substring(${log} FROM bw_txid_cut(${log}, bw_hist_tx(${first})) + 1)`,
} as const;

/** The bytes of the txid `txid` (a bytea expression) a record holds (`SQL_TXIDS.tagAt`). */
export function txidTag(txid: RawBuilder<unknown>): RawBuilder<Buffer> {
  return sql<Buffer>`substring((${txid})::bytea FROM 5 FOR ${sql.lit(TAG_BYTES)})`;
}

/** The bucket (int4) of the txid `txid` (a bytea expression) under the params row `p` (a `txid_bucket_params` alias). */
export function txidBucket(txid: RawBuilder<unknown>, p: string): RawBuilder<number> {
  return sql<number>`bw_txid_bucket((${txid})::bytea, ${sql.raw(`${p}.base, ${p}.ext, ${p}.split`)})`;
}
