/**
 * The history buckets' format, JS and SQL (docs/lean-layout.md "Building the history buckets:
 * the plan"). A bucket row's `log` holds 13-byte records, one per (address, transaction):
 * - bytes 0..7: the address key's bytes 4..11 (the bucket id comes from its bytes 0..3, and from
 *   bytes 4..7 once the table has grown);
 * - bytes 8..10: the height, big-endian (up to 2^24 − 1);
 * - bytes 11..12: the position in the block, big-endian (up to 2^16 − 1: a 4 MWU block holds
 *   fewer than 25,000 transactions). Bytes 8..12, the "tx field", order as the tx_num does.
 *
 * A log is canonical: records sorted by their tx field descending, then by their 8 key bytes
 * descending (newest first), so that a log is a function of the chain and the parameters. A
 * block's records are sorted so and prepended; a merge re-sorts.
 *
 * Bucket ids (linear hashing): with `w0`, `w1` the key's bytes 0..3 and 4..7 big-endian, a bucket
 * at `bits` extension bits is `top(base, w0)` plus, for j < bits, bit j of w1 (counted from its
 * top) times 2^(base + j). So going from `ext` to `ext + 1` bits leaves a bucket `b` where it is
 * or moves it to `b + 2^(base + ext)`, an id no bucket at `ext` bits uses; a bucket below `split`
 * has been split and is looked up with `ext + 1` bits.
 *
 * Every encoder, decoder and scan of a log, in JavaScript or in a statement, is here. The writer
 * fills the buckets at `busy` > 0 (indexer/writer/history-rows.ts block by block,
 * history-build.ts in bulk); the readers read them beside `history` (history-reads.ts).
 * @module
 */
import { ENTRY_BYTES, writeEntry } from './history-entries.js';
import { TX_NUM_SPAN } from './tx-num.js';

/** Bytes per record. */
export const RECORD_BYTES = 13;
const KEY_BYTES = 8;
const TX_AT = 8;
const TX_BYTES = 5;
const MAX_HEIGHT = 2 ** 24 - 1;
const MAX_POSITION = 2 ** 16 - 1;
/** The greatest bucket bits an int4 id holds. */
const MAX_BITS = 31;
/** Records a bucket holds on average after a bulk finish into an empty table (~600-byte rows: bench/bucket-log.ts's 16 addresses a bucket). */
const BUILD_RECORDS_PER_BUCKET = 47;
/** The least `base` a bulk finish chooses. */
const MIN_BUILD_BASE = 8;

/** The bucket parameters (the params row): `base` bits of the key's bytes 0..3, `ext` of its bytes 4..7, `split` buckets split to `ext + 1`. */
export interface BucketParams {
  base: number;
  ext: number;
  split: number;
}

function checkKey(key: Uint8Array): void {
  if (key.length !== 16) throw new RangeError(`an address key is 16 bytes, got ${key.length}`);
}

function checkLog(log: Uint8Array): void {
  if (log.length % RECORD_BYTES !== 0) throw new RangeError(`a history log's length ${log.length} is not a multiple of ${RECORD_BYTES}`);
}

function checkParams(p: BucketParams): void {
  const { base, ext, split } = p;
  if (!Number.isInteger(base) || base < 0 || base > MAX_BITS)
    throw new RangeError(`base must be an integer in [0, ${MAX_BITS}], got ${base}`);
  if (!Number.isInteger(ext) || ext < 0 || base + ext > MAX_BITS)
    throw new RangeError(`ext must be an integer in [0, ${MAX_BITS - base}] (base ${base}), got ${ext}`);
  const limit = base + ext < MAX_BITS ? 2 ** (base + ext) : 0;
  if (!Number.isInteger(split) || split < 0 || (split > 0 && split >= limit))
    throw new RangeError(`split must be 0 or an integer below 2^${base + ext} with base + ext < ${MAX_BITS}, got ${split}`);
}

/** Writes the record of `key` (16 bytes) and `txNum` at `out[at..at + 13)`. */
export function writeRecord(out: Uint8Array, at: number, key: Uint8Array, txNum: number): void {
  checkKey(key);
  writeTxField(out, at + TX_AT, txNum);
  for (let j = 0; j < KEY_BYTES; j++) out[at + j] = key[4 + j]!;
}

/**
 * Writes the tx field of `txNum` (5 bytes: the height in 3, the position in 2, big-endian) at
 * `out[at..at + 5)`: the records' tx field here and in the txid buckets (txid-buckets.ts).
 */
export function writeTxField(out: Uint8Array, at: number, txNum: number): void {
  if (!Number.isSafeInteger(txNum) || txNum < 0) throw new RangeError(`tx_num must be a non-negative safe integer, got ${txNum}`);
  const height = Math.floor(txNum / TX_NUM_SPAN);
  const pos = txNum - height * TX_NUM_SPAN;
  if (height > MAX_HEIGHT) throw new RangeError(`tx_num ${txNum}: height ${height} does not fit a record (at most ${MAX_HEIGHT})`);
  if (pos > MAX_POSITION) throw new RangeError(`tx_num ${txNum}: position ${pos} does not fit a record (at most ${MAX_POSITION})`);
  out[at] = height >>> 16;
  out[at + 1] = (height >>> 8) & 0xff;
  out[at + 2] = height & 0xff;
  out[at + 3] = pos >>> 8;
  out[at + 4] = pos & 0xff;
}

/** The tx_num of the tx field at byte `at` of `log`. */
export function readTxField(log: Uint8Array, at: number): number {
  const height = (log[at]! << 16) | (log[at + 1]! << 8) | log[at + 2]!;
  return height * TX_NUM_SPAN + ((log[at + 3]! << 8) | log[at + 4]!);
}

/** The tx_num of the record at byte `at` of `log`. */
export function recordTxNum(log: Uint8Array, at: number): number {
  return readTxField(log, at + TX_AT);
}

/** Canonical order of the records at `a[ai..]` and `b[bi..]`: negative when `a`'s comes first (tx field, then key bytes, both descending). */
export function compareRecords(a: Uint8Array, ai: number, b: Uint8Array, bi: number): number {
  for (let j = TX_AT; j < RECORD_BYTES; j++) if (a[ai + j] !== b[bi + j]) return b[bi + j]! - a[ai + j]!;
  for (let j = 0; j < KEY_BYTES; j++) if (a[ai + j] !== b[bi + j]) return b[bi + j]! - a[ai + j]!;
  return 0;
}

/** Up to this many records `RecordSorter` sorts by insertion. */
const INSERTION_MAX = 64;

/**
 * Typed arrays `sortRecordsInto` reuses from one call to the next (the whole-chain fold sorts
 * hundreds of thousands of buckets: history-build.ts).
 */
export class RecordSorter {
  private tx = new Float64Array(64);
  private k0 = new Uint32Array(64);
  private k1 = new Uint32Array(64);
  private order = new Uint32Array(64);

  /**
   * Writes the `n` records at `records[0..13n)` (any order) in canonical order to `out` from
   * `outAt`. Each record's tx field and key words are read once into typed arrays, so a
   * comparison is at most three number subtractions: the order `compareRecords` gives, which the
   * unit tests hold it to.
   */
  sortInto(records: Uint8Array, n: number, out: Uint8Array, outAt = 0): void {
    if (this.order.length < n) {
      const size = 2 ** Math.ceil(Math.log2(n));
      this.tx = new Float64Array(size);
      this.k0 = new Uint32Array(size);
      this.k1 = new Uint32Array(size);
      this.order = new Uint32Array(size);
    }
    const { tx, k0, k1 } = this;
    for (let i = 0, at = 0; i < n; i++, at += RECORD_BYTES) {
      k0[i] = ((records[at]! << 24) | (records[at + 1]! << 16) | (records[at + 2]! << 8) | records[at + 3]!) >>> 0;
      k1[i] = ((records[at + 4]! << 24) | (records[at + 5]! << 16) | (records[at + 6]! << 8) | records[at + 7]!) >>> 0;
      tx[i] =
        ((records[at + 8]! << 16) | (records[at + 9]! << 8) | records[at + 10]!) * 65_536 + ((records[at + 11]! << 8) | records[at + 12]!);
      this.order[i] = i;
    }
    const order = this.order.subarray(0, n);
    if (n <= INSERTION_MAX) {
      // A bucket's few dozen records: an insertion sort, inline, costs less than a sort calling
      // a comparator (the whole-chain fold sorts one per bucket).
      for (let i = 1; i < n; i++) {
        const o = order[i]!;
        const t = tx[o]!;
        const a = k0[o]!;
        const b = k1[o]!;
        let j = i - 1;
        for (; j >= 0; j--) {
          const p = order[j]!;
          const d = tx[p]! - t || k0[p]! - a || k1[p]! - b;
          if (d >= 0) break;
          order[j + 1] = p;
        }
        order[j + 1] = o;
      }
    } else order.sort((x, y) => tx[y]! - tx[x]! || k0[y]! - k0[x]! || k1[y]! - k1[x]!);
    for (let i = 0, w = outAt; i < n; i++)
      for (let r = order[i]! * RECORD_BYTES, end = r + RECORD_BYTES; r < end;) out[w++] = records[r++]!;
  }
}

/** The records of `records` (any order, a multiple of 13 bytes) in canonical order, as a new buffer. */
export function sortRecords(records: Uint8Array): Buffer {
  checkLog(records);
  const out = Buffer.allocUnsafe(records.length);
  new RecordSorter().sortInto(records, records.length / RECORD_BYTES, out);
  return out;
}

/** A log of the entries `[key, txNum]` (any order), canonical. */
export function recordsOf(entries: readonly (readonly [key: Uint8Array, txNum: number])[]): Buffer {
  const out = Buffer.allocUnsafe(entries.length * RECORD_BYTES);
  entries.forEach(([key, n], i) => writeRecord(out, i * RECORD_BYTES, key, n));
  return sortRecords(out);
}

/**
 * `log` with a block's records in front: `block` (any order) sorted canonically, then `log`
 * unchanged. Every tx_num of the block must be above the log's newest (the block is the chain's
 * next); otherwise the records belong in a merge.
 */
export function prependBlock(log: Uint8Array, block: Uint8Array): Buffer {
  checkLog(log);
  const sorted = sortRecords(block);
  if (sorted.length > 0 && log.length > 0 && recordTxNum(sorted, sorted.length - RECORD_BYTES) <= recordTxNum(log, 0))
    throw new RangeError(
      `a block's records must be newer than the log's (tx_num ${recordTxNum(sorted, sorted.length - RECORD_BYTES)} ≤ ${recordTxNum(log, 0)})`,
    );
  return Buffer.concat([sorted, log]);
}

/** Two logs' records as one canonical log. */
export function mergeLogs(a: Uint8Array, b: Uint8Array): Buffer {
  checkLog(a);
  checkLog(b);
  return sortRecords(Buffer.concat([a, b]));
}

/** The bucket of `key` at `bits` extension bits. */
function bucketAt(key: Uint8Array, base: number, bits: number, at = 0): number {
  const w0 = ((key[at]! << 24) | (key[at + 1]! << 16) | (key[at + 2]! << 8) | key[at + 3]!) >>> 0;
  let b = base === 0 ? 0 : w0 >>> (32 - base);
  for (let j = 0; j < bits; j++) if ((key[at + 4 + (j >>> 3)]! >>> (7 - (j & 7))) & 1) b += 2 ** (base + j);
  return b;
}

/**
 * `bucketOf` under one `params`, checked once, for many keys: the bucket of the 16 bytes at
 * `bytes[at..at + 16)`, read in place (a loop over millions of keys makes no view per key).
 */
export function bucketsOf(params: BucketParams): (bytes: Uint8Array, at: number) => number {
  checkParams(params);
  const { base, ext, split } = params;
  return (bytes, at) => {
    if (at < 0 || at + 16 > bytes.length) throw new RangeError(`an address key is 16 bytes, ${bytes.length - at} are left at ${at}`);
    const b = bucketAt(bytes, base, ext, at);
    return b < split ? bucketAt(bytes, base, ext + 1, at) : b;
  };
}

/** The bucket id of `key` (16 bytes) under `params`. */
export function bucketOf(key: Uint8Array, params: BucketParams): number {
  checkKey(key);
  checkParams(params);
  const b = bucketAt(key, params.base, params.ext);
  return b < params.split ? bucketAt(key, params.base, params.ext + 1) : b;
}

/**
 * A bucket's log split by the bit `ext` adds (bit `ext` of the key's bytes 4..7 from its top,
 * held by every record): `stay` the records where it is 0, `move` the others (to the bucket
 * `b + 2^(base + ext)`), both in the log's order.
 */
export function splitLog(log: Uint8Array, ext: number): { stay: Buffer; move: Buffer } {
  checkLog(log);
  if (!Number.isInteger(ext) || ext < 0 || ext >= 32) throw new RangeError(`the split bit must be an integer in [0, 32), got ${ext}`);
  const stay: Uint8Array[] = [];
  const move: Uint8Array[] = [];
  for (let at = 0; at < log.length; at += RECORD_BYTES)
    ((log[at + (ext >>> 3)]! >>> (7 - (ext & 7))) & 1 ? move : stay).push(log.subarray(at, at + RECORD_BYTES));
  return { stay: Buffer.concat(stay), move: Buffer.concat(move) };
}

function isKeyAt(log: Uint8Array, at: number, key: Uint8Array): boolean {
  for (let j = 0; j < KEY_BYTES; j++) if (log[at + j] !== key[4 + j]) return false;
  return true;
}

/**
 * The tx_nums of `key`'s records (16 bytes; its bytes 4..11 match) below `bound`, newest first
 * (the log's order), at most `limit`: a page of the address's history.
 */
export function keyTxNums(log: Uint8Array, key: Uint8Array, bound = Number.POSITIVE_INFINITY, limit = Number.POSITIVE_INFINITY): number[] {
  checkLog(log);
  checkKey(key);
  const out: number[] = [];
  for (let at = 0; at < log.length && out.length < limit; at += RECORD_BYTES) {
    if (!isKeyAt(log, at, key)) continue;
    const n = recordTxNum(log, at);
    if (n < bound) out.push(n);
  }
  return out;
}

/** The number of `key`'s records in `log`. */
export function keyCount(log: Uint8Array, key: Uint8Array): number {
  checkLog(log);
  checkKey(key);
  let n = 0;
  for (let at = 0; at < log.length; at += RECORD_BYTES) if (isKeyAt(log, at, key)) n++;
  return n;
}

/** Whether `log` holds a record of `key`. */
export function keyHas(log: Uint8Array, key: Uint8Array): boolean {
  return keyTxNums(log, key, Number.POSITIVE_INFINITY, 1).length > 0;
}

/**
 * `key`'s tx_nums in `log` as history entries (8 bytes big-endian each, ascending: the chunks'
 * format, src/db/history-entries.ts), so that `newestEntries` merges them as one more chunk.
 */
export function keyEntries(log: Uint8Array, key: Uint8Array): Buffer {
  const nums = keyTxNums(log, key);
  const out = Buffer.allocUnsafe(nums.length * ENTRY_BYTES);
  nums.forEach((n, i) => writeEntry(out, (nums.length - 1 - i) * ENTRY_BYTES, n));
  return out;
}

/** Whether `log` holds a record of `key` with its tx_num in `[lo, hi)` (the blocks `lo..hi` touched the key). */
export function keyTouched(log: Uint8Array, key: Uint8Array, lo: number, hi: number): boolean {
  return keyTxNums(log, key, hi).some((n) => n >= lo);
}

/** The records per key in `log`, by the hex of their 8 key bytes (the crossing check: which key passed `busy`). */
export function keyCounts(log: Uint8Array): Map<string, number> {
  checkLog(log);
  const out = new Map<string, number>();
  for (let at = 0; at < log.length; at += RECORD_BYTES) {
    const k = Buffer.from(log.buffer, log.byteOffset + at, KEY_BYTES).toString('hex');
    out.set(k, (out.get(k) ?? 0) + 1);
  }
  return out;
}

/** `log` without `key`'s records, in order (a key that crossed into the busy chunks). */
export function withoutKey(log: Uint8Array, key: Uint8Array): Buffer {
  checkLog(log);
  checkKey(key);
  const kept: Uint8Array[] = [];
  for (let at = 0; at < log.length; at += RECORD_BYTES) if (!isKeyAt(log, at, key)) kept.push(log.subarray(at, at + RECORD_BYTES));
  return Buffer.concat(kept);
}

/**
 * Undo's front cut: the bytes of the log's leading records whose tx_num is at or above `first`
 * (the undone blocks' first tx_num). The log after the undo is `log.subarray(frontCut(log, first))`.
 */
export function frontCut(log: Uint8Array, first: number): number {
  checkLog(log);
  let at = 0;
  while (at < log.length && recordTxNum(log, at) >= first) at += RECORD_BYTES;
  return at;
}

/**
 * The bytes that a record's tx field (5 bytes) compares below exactly when its tx_num is below
 * `n`, for any integer `n` (what `bw_hist_tx(n)` gives in SQL): empty for `n` ≤ 0, six 0xff
 * bytes above every record, else the field of (height, min(position, 2^16)).
 */
export function txBound(n: bigint): Buffer {
  if (n <= 0n) return Buffer.alloc(0);
  const height = n >> 20n;
  const pos = n & BigInt(TX_NUM_SPAN - 1);
  const v = (height << 16n) + (pos < 65536n ? pos : 65536n);
  if (v >= 1n << 40n) return Buffer.alloc(6, 0xff);
  const out = Buffer.allocUnsafe(8);
  out.writeBigUInt64BE(v);
  return out.subarray(3);
}

/**
 * The `base` a bulk finish into an empty table chooses for `records` records (of the addresses
 * not busy): round(log2(records / 47)), so that a bucket holds ~47 records (~600 bytes), at least
 * 8 and at most 31.
 */
export function buildBase(records: number): number {
  if (!Number.isSafeInteger(records) || records < 0) throw new RangeError(`records must be a non-negative integer, got ${records}`);
  if (records <= BUILD_RECORDS_PER_BUCKET) return MIN_BUILD_BASE;
  return Math.min(MAX_BITS, Math.max(MIN_BUILD_BASE, Math.round(Math.log2(records / BUILD_RECORDS_PER_BUCKET))));
}

// ---- SQL ----

const REV8 = Buffer.from(
  Array.from({ length: 256 }, (_, i) => Number.parseInt(i.toString(2).padStart(8, '0').split('').reverse().join(''), 2)),
);

/** SQL: the bucket at `bits` extension bits of the key bytes `k` (16), from bytes 0..3 and the bit-reversed bytes 4..7 (a 256-byte table). */
const BUCKET_AT = `(((get_byte(k, 0)::int8 << 24) | (get_byte(k, 1) << 16) | (get_byte(k, 2) << 8) | get_byte(k, 3)) >> (32 - base))
      + (((get_byte('\\x${REV8.toString('hex')}'::bytea, get_byte(k, 4))::int8
         | (get_byte('\\x${REV8.toString('hex')}'::bytea, get_byte(k, 5))::int8 << 8)
         | (get_byte('\\x${REV8.toString('hex')}'::bytea, get_byte(k, 6))::int8 << 16)
         | (get_byte('\\x${REV8.toString('hex')}'::bytea, get_byte(k, 7))::int8 << 24))
         & ((1::int8 << bits) - 1)) << base)`;

/**
 * SQL: `name(log, lo bytea) RETURNS int4`, the bytes of the leading records of `log` (records of
 * `recordBytes`, a 5-byte tx field at `txAt`: `writeTxField`) whose tx field is at or above `lo`
 * (`bw_hist_tx(first)`): undo's front cut of a newest-first log (PL/pgSQL: it stops at the first
 * older record).
 */
export function frontCutFunction(name: string, txAt: number, recordBytes: number): string {
  return `CREATE OR REPLACE FUNCTION ${name}(log bytea, lo bytea) RETURNS int4
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    DECLARE
      at int4 := 0;
      n int4 := length(log);
    BEGIN
      WHILE at < n AND substring(log FROM at + ${txAt + 1} FOR ${TX_BYTES}) >= lo LOOP
        at := at + ${recordBytes};
      END LOOP;
      RETURN at;
    END $$`;
}

/**
 * The SQL functions of the format, in creation order (CREATE OR REPLACE: a migration runs them
 * as they are):
 * - `bw_hist_bucket_at(k bytea, base, bits)`: the bucket of the key bytes `k` at `bits` extension bits;
 * - `bw_hist_bucket(key uuid, base, ext, split)`: `bucketOf`;
 * - `bw_hist_tx(n int8)`: `txBound`, the bytes a record's tx field compares below when its tx_num is below `n`;
 * - `bw_hist_cut(log, lo bytea)`: `frontCut` with `lo = bw_hist_tx(first)` (PL/pgSQL: it stops at the first older record).
 */
export const HISTORY_BUCKET_FUNCTIONS: readonly string[] = [
  `CREATE OR REPLACE FUNCTION bw_hist_bucket_at(k bytea, base int4, bits int4) RETURNS int4
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT (${BUCKET_AT})::int4 $$`,
  `CREATE OR REPLACE FUNCTION bw_hist_bucket(key uuid, base int4, ext int4, split int4) RETURNS int4
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN bw_hist_bucket_at(uuid_send(key), base, ext) < split
                      THEN bw_hist_bucket_at(uuid_send(key), base, ext + 1)
                      ELSE bw_hist_bucket_at(uuid_send(key), base, ext) END $$`,
  `CREATE OR REPLACE FUNCTION bw_hist_tx(n int8) RETURNS bytea
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN n <= 0 THEN '\\x'::bytea
                      WHEN ((n >> 20) << 16) + least(n & 1048575, 65536) >= 1099511627776 THEN '\\xffffffffffff'::bytea
                      ELSE substring(int8send(((n >> 20) << 16) + least(n & 1048575, 65536)) FROM 4 FOR 5) END $$`,
  frontCutFunction('bw_hist_cut', TX_AT, RECORD_BYTES),
];

/** SQL: the record indexes (0-based, `g.i`) of `log` whose key bytes are `k8`, in log order (a FROM item and its WHERE). */
const recordScan = (log: string, k8: string): string =>
  `generate_series(0, length(${log}) / ${RECORD_BYTES} - 1) AS g(i)
    WHERE substring(${log} FROM ${RECORD_BYTES} * g.i + 1 FOR ${KEY_BYTES}) = ${k8}`;
/** SQL: the tx field (5 bytes) of record `g.i` of `log`. */
const txField = (log: string): string => `substring(${log} FROM ${RECORD_BYTES} * g.i + ${TX_AT + 1} FOR ${TX_BYTES})`;

/**
 * The format's SQL fragments, as text (arguments are SQL text: column references or
 * expressions of the enclosing statement), so that a statement built once keeps them in one
 * piece of text, as `SQL_HISTORY` (history-entries.ts) does for the chunks.
 */
export const SQL_BUCKETS = {
  /** The 8 key bytes (bytea) a record holds of the uuid `key`. */
  key8: (key: string): string => `substring(uuid_send(${key}) FROM 5 FOR ${KEY_BYTES})`,
  /**
   * The tx field (bytea, 5 bytes) a record holds of the tx_num `n` (int8): the height in 3 bytes
   * and the position in 2, `writeRecord`'s bytes 8..12 for a tx_num it takes.
   */
  txField: (n: string): string => `substring(int8send((((${n}) >> 20) << 16) | ((${n}) & 65535)) FROM 4 FOR ${TX_BYTES})`,
  /** The bucket id (int4) of the uuid `key` under the params row `p` (a `history_bucket_params` alias). */
  bucketOf: (key: string, p: string): string => `bw_hist_bucket(${key}, ${p}.base, ${p}.ext, ${p}.split)`,
  /**
   * A subquery of the tx_nums (int8 column `tx_num`) of `k8`'s records in `log` below the tx_num
   * `bound` (int8), newest first, at most `limit`: `keyTxNums`, for a `LATERAL`. The order is the
   * function scan's (the series' order, kept by the filter): no sort node.
   */
  txNums: (log: string, k8: string, bound: string, limit: string): string => {
    const at = (j: number) => `get_byte(${log}, ${RECORD_BYTES} * g.i + ${j})`;
    return `SELECT (${at(8)}::int8 << 36) | (${at(9)}::int8 << 28) | (${at(10)}::int8 << 20) | (${at(11)} << 8) | ${at(12)} AS tx_num
    FROM ${recordScan(log, k8)}
     AND ${txField(log)} < bw_hist_tx(${bound})
    LIMIT ${limit}`;
  },
  /** The number (int4) of `k8`'s records in `log` (`keyCount`). */
  count: (log: string, k8: string): string => `(SELECT count(*)::int4 FROM ${recordScan(log, k8)})`,
  /**
   * Whether `log` holds a record of `k8` (`keyHas`): `position`, trusted when the match starts a
   * record; a match at another offset (8 bytes across two records) falls back to the scan.
   */
  has: (log: string, k8: string): string => `(SELECT CASE WHEN p.p = 0 THEN false
                 WHEN (p.p - 1) % ${RECORD_BYTES} = 0 THEN true
                 ELSE EXISTS (SELECT 1 FROM ${recordScan(log, k8)}) END
     FROM (SELECT position(${k8} IN ${log}) AS p) AS p)`,
  /** Whether `log` holds a record of `k8` with its tx_num in `[lo, hi)` (int8 tx_nums; `keyTouched`). */
  touched: (log: string, k8: string, lo: string, hi: string): string =>
    `EXISTS (SELECT 1 FROM ${recordScan(log, k8)} AND ${txField(log)} >= bw_hist_tx(${lo}) AND ${txField(log)} < bw_hist_tx(${hi}))`,
  /** `log` without its records at or above the tx_num `first` (int8): undo's front cut. */
  cut: (log: string, first: string): string => `substring(${log} FROM bw_hist_cut(${log}, bw_hist_tx(${first})) + 1)`,
} as const;
