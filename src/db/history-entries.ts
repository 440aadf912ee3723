/**
 * The history-entry format, JS and SQL. An address's history is stored in chunks (`history`
 * rows) of at most CHUNK_ENTRIES ascending tx_nums; each entry is the tx_num as 8 bytes
 * big-endian, so chunks concatenate and compare as bytes. A row keeps its first entry as
 * `first_tx_num` (the key) and only the others, packed, in `rest`. Every encoder and decoder of
 * entries, in JavaScript or in a statement, is here.
 * @module
 */
import { sql, type RawBuilder } from 'kysely';

/** Entries per history chunk (a row's `first_tx_num` plus up to CHUNK_ENTRIES − 1 in `rest`). */
export const CHUNK_ENTRIES = 1024;
/** Bytes per entry. */
export const ENTRY_BYTES = 8;

/** Writes the entry `n` (a safe integer or a bigint) at byte `at` of `buf`. */
export function writeEntry(buf: Buffer, at: number, n: number | bigint): void {
  if (typeof n === 'bigint') {
    buf.writeBigUInt64BE(n, at);
    return;
  }
  const hi = Math.floor(n / 0x100000000);
  buf.writeUInt32BE(hi, at);
  buf.writeUInt32BE(n - hi * 0x100000000, at + 4);
}

/** The entry at byte `at` of `buf`, as a number (a tx_num is below 2^53). */
export function readEntry(buf: Uint8Array, at: number): number {
  return (
    (((buf[at]! << 24) | (buf[at + 1]! << 16) | (buf[at + 2]! << 8) | buf[at + 3]!) >>> 0) * 2 ** 32 +
    (((buf[at + 4]! << 24) | (buf[at + 5]! << 16) | (buf[at + 6]! << 8) | buf[at + 7]!) >>> 0)
  );
}

/** Entries for strictly ascending `txNums`. */
export function encodeEntries(txNums: readonly (bigint | number)[]): Buffer {
  const out = Buffer.allocUnsafe(txNums.length * ENTRY_BYTES);
  let prev = -1n;
  txNums.forEach((n, i) => {
    if (BigInt(n) <= prev) throw new RangeError('history entries must be strictly ascending');
    prev = BigInt(n);
    writeEntry(out, i * ENTRY_BYTES, n);
  });
  return out;
}

/** A chunk's `rest`: the entries of `nums` after the first (ascending safe integers, unchecked: the indexer's hot path). */
export function restOf(nums: readonly number[]): Buffer {
  const out = Buffer.allocUnsafe((nums.length - 1) * ENTRY_BYTES);
  for (let i = 1; i < nums.length; i++) writeEntry(out, (i - 1) * ENTRY_BYTES, nums[i]!);
  return out;
}

/** A `history` row's columns for ascending `txNums` (at least one). */
export function encodeHistoryChunk(txNums: readonly bigint[]): { first_tx_num: bigint; rest: Buffer } {
  if (txNums.length === 0) throw new RangeError('a history chunk has at least one entry');
  const all = encodeEntries(txNums);
  return { first_tx_num: txNums[0]!, rest: all.subarray(ENTRY_BYTES) };
}

/** Every entry of a `history` row, the first included (what SQL_HISTORY.entries() gives). */
export function historyChunkEntries(firstTxNum: bigint, rest: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(ENTRY_BYTES + rest.length);
  out.writeBigUInt64BE(firstTxNum, 0);
  out.set(rest, ENTRY_BYTES);
  return out;
}

/** The tx_nums of entries `data`. */
export function decodeEntries(data: Uint8Array): bigint[] {
  if (data.length % ENTRY_BYTES !== 0) throw new RangeError(`history entries length ${data.length} is not a multiple of ${ENTRY_BYTES}`);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const out = new Array<bigint>(data.length / ENTRY_BYTES);
  for (let i = 0; i < out.length; i++) out[i] = view.getBigUint64(i * ENTRY_BYTES, false);
  return out;
}

/**
 * The `limit` greatest distinct entries below `bound` of several chunks (each one's entries
 * ascending, as historyChunkEntries gives them), greatest first. A merge from each chunk's end
 * through a max-heap of the chunks: the cost is the chunks plus `limit` steps, not their entries
 * (a page of a wallet whose addresses hold a million entries reads a hundred of them).
 */
export function newestEntries(chunks: readonly Uint8Array[], bound: bigint, limit: number): bigint[] {
  type Cursor = { view: DataView; i: number; v: bigint };
  const at = (c: Cursor) => c.view.getBigUint64(c.i * ENTRY_BYTES, false);
  const heap: Cursor[] = [];
  for (const data of chunks) {
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    // The number of entries below the bound (binary search: entries ascend).
    let lo = 0;
    let hi = data.length / ENTRY_BYTES;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (view.getBigUint64(mid * ENTRY_BYTES, false) < bound) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) heap.push({ view, i: lo - 1, v: view.getBigUint64((lo - 1) * ENTRY_BYTES, false) });
  }
  const down = (k: number) => {
    for (;;) {
      const l = 2 * k + 1;
      const r = l + 1;
      let top = k;
      if (l < heap.length && heap[l]!.v > heap[top]!.v) top = l;
      if (r < heap.length && heap[r]!.v > heap[top]!.v) top = r;
      if (top === k) return;
      [heap[k], heap[top]] = [heap[top]!, heap[k]!];
      k = top;
    }
  };
  for (let k = (heap.length >>> 1) - 1; k >= 0; k--) down(k);
  const out: bigint[] = [];
  while (heap.length > 0 && out.length < limit) {
    const c = heap[0]!;
    if (out.length === 0 || out[out.length - 1] !== c.v) out.push(c.v);
    if (c.i > 0) {
      c.i -= 1;
      c.v = at(c);
    } else {
      heap[0] = heap[heap.length - 1]!;
      heap.pop();
    }
    down(0);
  }
  return out;
}

/** Ascending tx_nums per address key cut into chunks of at most CHUNK_ENTRIES. */
export function historyChunks(history: ReadonlyMap<string, readonly number[]>): { key: string; first: number; entries: number[] }[] {
  const out: { key: string; first: number; entries: number[] }[] = [];
  for (const [key, nums] of history) {
    for (let i = 0; i < nums.length; i += CHUNK_ENTRIES) {
      const part = nums.slice(i, i + CHUNK_ENTRIES);
      out.push({ key, first: part[0]!, entries: part });
    }
  }
  return out;
}

/**
 * The same format in SQL, as text to splice into statements (`sql.raw(…)` in kysely, as is in
 * the bulk finish's DDL). Arguments are SQL expressions: a bytea of entries `e`, integer `i`.
 */
export const SQL_HISTORY = {
  /** Every entry of a `history` row (columns `first_tx_num`, `rest` of `table` when given). */
  entries: (table?: string): string => (table ? `int8send(${table}.first_tx_num) || ${table}.rest` : 'int8send(first_tx_num) || rest'),
  /** The int8 `n` as an entry. */
  entry: (n: string): string => `int8send(${n})`,
  /** The bytes of entry `i` (0-based) of `e`. */
  entryBytesAt: (e: string, i: string): string => `substring(${e} FROM (${i}) * ${ENTRY_BYTES} + 1 FOR ${ENTRY_BYTES})`,
  /** Entry `i` (0-based) of `e`, as int8. */
  entryAt: (e: string, i: string): string =>
    `('x' || encode(substring(${e} FROM (${i}) * ${ENTRY_BYTES} + 1 FOR ${ENTRY_BYTES}), 'hex'))::bit(64)::int8`,
  /**
   * Entry `i` (0-based) of `e`, as int8, from its bytes with `get_byte` (an entry is below 2^63):
   * what a statement that decodes every entry of many rows uses, at a fraction of `entryAt`'s
   * text cast.
   */
  txNumAt: (e: string, i: string): string =>
    [0, 1, 2, 3, 4, 5, 6, 7].map((j) => `(get_byte(${e}, (${i}) * ${ENTRY_BYTES} + ${j})::int8 << ${8 * (7 - j)})`).join(' | '),
  /** The last entry of a non-empty `e`, as int8. */
  lastEntry: (e: string): string => `('x' || encode(substring(${e} FROM length(${e}) - ${ENTRY_BYTES - 1}), 'hex'))::bit(64)::int8`,
  /** `count` entries of `e` from entry `from` (0-based). */
  slice: (e: string, from: string, count: string): string =>
    `substring(${e} FROM ((${from}) * ${ENTRY_BYTES} + 1)::int4 FOR ((${count}) * ${ENTRY_BYTES})::int4)`,
  /** The number of entries of `e`. */
  count: (e: string): string => `(length(${e}) / ${ENTRY_BYTES})`,
} as const;

type SqlArg = string | RawBuilder<unknown>;

/** SQL_HISTORY.entryAt as a kysely fragment, for arguments that carry parameters. */
export function sqlEntryAt(e: SqlArg, i: SqlArg): RawBuilder<bigint> {
  const args: Record<string, SqlArg> = { '\u0000E': e, '\u0000I': i };
  const parts = SQL_HISTORY.entryAt('\u0000E', '\u0000I').split(/(\u0000[EI])/);
  return sql.join(
    parts.map((p) => {
      const a = args[p];
      return a === undefined ? sql.raw(p) : typeof a === 'string' ? sql.raw(a) : a;
    }),
    sql.raw(''),
  ) as RawBuilder<bigint>;
}
