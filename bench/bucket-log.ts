/**
 * The record formats of bench/history-layout's bucket candidates (docs/lean-layout.md "Bucket
 * logs"): many entries per row, keyed by a hash prefix, appended in chain order.
 * - a bucket is the first `bits` bits of a key (an address key's or a txid's first 4 bytes, big
 *   endian), `bits` chosen from the number of keys so that a bucket holds about `perBucket`;
 * - a history record (HIST_RECORD, 13 bytes): the address key's bytes 4..11, then the tx_num as 5
 *   bytes big-endian;
 * - a txid record (TXID_RECORD, 9 bytes): the txid's bytes 4..7 (internal order), then its tx_num
 *   as 5 bytes big-endian;
 * - a part (`bw_tx_parts`): the txids of 64 consecutive tx_nums back to back, `lens` = per
 *   transaction LEB128(outs length) LEB128(ins length), and the packed outs and ins of its
 *   transactions concatenated (`ins` stays a sequence of input references, so that
 *   `spent_tx_groups(ins)` reads a whole part).
 * @module
 */
import { PackedWriter } from '../src/db/packed.js';

export const HIST_RECORD = 13;
export const TXID_RECORD = 9;
/** The transactions of a part: tx_num >> PART_SHIFT names it. */
export const PART_SHIFT = 6;
const TX_NUM_BYTES = 5;
const MAX_TX_NUM = 2 ** 40;

/** Bucket bits for `count` keys at about `perBucket` a bucket (0..31). */
export function bucketBits(count: number, perBucket: number): number {
  if (!(perBucket > 0)) throw new RangeError(`keys per bucket must be positive, got ${perBucket}`);
  if (count <= perBucket) return 0;
  return Math.min(31, Math.round(Math.log2(count / perBucket)));
}

/** The bucket of a key (its first 4 bytes, big-endian, top `bits` bits). */
export function bucketOf(key: Uint8Array, bits: number): number {
  if (bits === 0) return 0;
  const top = ((key[0]! << 24) | (key[1]! << 16) | (key[2]! << 8) | key[3]!) >>> 0;
  return top >>> (32 - bits);
}

function writeTxNum(out: Uint8Array, at: number, txNum: number): void {
  if (!Number.isSafeInteger(txNum) || txNum < 0 || txNum >= MAX_TX_NUM) throw new RangeError(`tx_num ${txNum} does not fit 5 bytes`);
  const hi = Math.floor(txNum / 2 ** 32);
  const lo = txNum >>> 0;
  out[at] = hi;
  out[at + 1] = lo >>> 24;
  out[at + 2] = (lo >>> 16) & 0xff;
  out[at + 3] = (lo >>> 8) & 0xff;
  out[at + 4] = lo & 0xff;
}

function readTxNum(b: Uint8Array, at: number): number {
  return b[at]! * 2 ** 32 + ((b[at + 1]! << 24) >>> 0) + (b[at + 2]! << 16) + (b[at + 3]! << 8) + b[at + 4]!;
}

/** The history records of one address key (16 bytes) for ascending `txNums`. */
export function histRecords(key: Uint8Array, txNums: readonly number[]): Buffer {
  const out = Buffer.allocUnsafe(HIST_RECORD * txNums.length);
  txNums.forEach((n, i) => {
    out.set(key.subarray(4, 12), i * HIST_RECORD);
    writeTxNum(out, i * HIST_RECORD + 8, n);
  });
  return out;
}

/** The tx_nums, in log order, of the records of `key` (16 bytes) in a history log. */
export function histEntries(log: Uint8Array, key: Uint8Array): number[] {
  if (log.length % HIST_RECORD !== 0) throw new RangeError(`history log length ${log.length} is not a multiple of ${HIST_RECORD}`);
  const out: number[] = [];
  const k0 = key[4]!;
  for (let at = 0; at < log.length; at += HIST_RECORD) {
    if (log[at] !== k0) continue;
    let same = true;
    for (let j = 1; j < 8 && same; j++) same = log[at + j] === key[4 + j];
    if (same) out.push(readTxNum(log, at + 8));
  }
  return out;
}

/** The txid record of a transaction. */
export function txidRecord(txid: Uint8Array, txNum: number): Buffer {
  const out = Buffer.allocUnsafe(TXID_RECORD);
  out.set(txid.subarray(4, 8), 0);
  writeTxNum(out, 4, txNum);
  return out;
}

/** The tx_nums whose records in a txid log match `txid` (more than one: two txids share 4 + bucket bytes; the part says which). */
export function txidMatches(log: Uint8Array, txid: Uint8Array): number[] {
  if (log.length % TXID_RECORD !== 0) throw new RangeError(`txid log length ${log.length} is not a multiple of ${TXID_RECORD}`);
  const out: number[] = [];
  for (let at = 0; at < log.length; at += TXID_RECORD)
    if (log[at] === txid[4] && log[at + 1] === txid[5] && log[at + 2] === txid[6] && log[at + 3] === txid[7])
      out.push(readTxNum(log, at + 4));
  return out;
}

/** The length of a log cut before its first record whose tx_num is ≥ `first` (records in chain order: undo of the blocks from `first` on). */
export function logCut(log: Uint8Array, record: number, first: number): number {
  let at = log.length;
  while (at > 0 && readTxNum(log, at - TX_NUM_BYTES) >= first) at -= record;
  return at;
}

export interface PartTx {
  txid: Uint8Array;
  outs: Uint8Array;
  ins: Uint8Array;
}

export interface Part {
  txids: Buffer;
  lens: Buffer;
  outs: Buffer;
  ins: Buffer;
}

/** A part's columns from its transactions (at most 2^PART_SHIFT, consecutive tx_nums). */
export function packPart(txs: readonly PartTx[]): Part {
  if (txs.length === 0 || txs.length > 2 ** PART_SHIFT)
    throw new RangeError(`a part holds 1..${2 ** PART_SHIFT} transactions, got ${txs.length}`);
  const lens = new PackedWriter(4 * txs.length);
  for (const t of txs) {
    if (t.txid.length !== 32) throw new RangeError(`a txid is 32 bytes, got ${t.txid.length}`);
    lens.uleb(t.outs.length);
    lens.uleb(t.ins.length);
  }
  return {
    txids: Buffer.concat(txs.map((t) => t.txid)),
    lens: lens.finish(),
    outs: Buffer.concat(txs.map((t) => t.outs)),
    ins: Buffer.concat(txs.map((t) => t.ins)),
  };
}

/** Transaction `i` of a part (its txid, packed outs and ins: views of the columns). */
export function partTx(part: Part, i: number): PartTx {
  const n = part.txids.length / 32;
  if (!(Number.isInteger(i) && i >= 0 && i < n)) throw new RangeError(`a part of ${n} transactions has no transaction ${i}`);
  let p = 0;
  const uleb = () => {
    let v = 0;
    let mul = 1;
    for (;;) {
      if (p >= part.lens.length) throw new RangeError('part lengths truncated');
      const b = part.lens[p++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
  };
  let outAt = 0;
  let inAt = 0;
  for (let j = 0; j < i; j++) {
    outAt += uleb();
    inAt += uleb();
  }
  const outLen = uleb();
  const inLen = uleb();
  if (outAt + outLen > part.outs.length || inAt + inLen > part.ins.length) throw new RangeError('part lengths exceed its columns');
  return {
    txid: part.txids.subarray(i * 32, i * 32 + 32),
    outs: part.outs.subarray(outAt, outAt + outLen),
    ins: part.ins.subarray(inAt, inAt + inLen),
  };
}
