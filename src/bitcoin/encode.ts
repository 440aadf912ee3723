/**
 * Consensus serialization of transactions, headers and blocks (the inverse of tx.ts/block.ts):
 * decoding then encoding gives back the same bytes. Sizes are computed first and written into
 * one exact-size buffer.
 * @module
 */
import { type BlockHeaderData, HEADER_BYTES } from './block.js';
import type { TxInputData, TxOutput } from './tx.js';
import { compactSizeBytes, writeCompactSize, writeU32le } from './wire.js';

/** A transaction to encode (a DecodedTx is one). */
export interface TxData {
  readonly version: number;
  readonly inputs: readonly TxInputData[];
  readonly outputs: readonly TxOutput[];
  readonly locktime: number;
}

/** Encoding options: `witness: false` gives the non-witness (txid) serialization. */
export interface EncodeOptions {
  readonly witness?: boolean;
}

const INT64_MIN = -(1n << 63n);
const UINT64_LIMIT = 1n << 64n;

function checkU32(v: number, what: string): void {
  if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new RangeError(`${what} must be an integer in [0, 2^32), got ${v}`);
}

function checkI32(v: number, what: string): void {
  if (!Number.isInteger(v) || v < -0x80000000 || v > 0xffffffff) throw new RangeError(`${what} must be a 32-bit integer, got ${v}`);
}

function checkHash(h: Uint8Array, what: string): void {
  if (!(h instanceof Uint8Array) || h.length !== 32) throw new RangeError(`${what} must be 32 bytes`);
}

function hasAnyWitness(tx: TxData): boolean {
  for (const input of tx.inputs) if (input.witness !== undefined && input.witness.length > 0) return true;
  return false;
}

function varBytesSize(b: Uint8Array): number {
  return compactSizeBytes(b.length) + b.length;
}

function txSize(tx: TxData, segwit: boolean): number {
  let n = 8 + compactSizeBytes(tx.inputs.length) + compactSizeBytes(tx.outputs.length);
  for (const input of tx.inputs) n += 40 + varBytesSize(input.scriptSig);
  for (const output of tx.outputs) n += 8 + varBytesSize(output.script);
  if (segwit) {
    n += 2;
    for (const input of tx.inputs) {
      const w = input.witness ?? [];
      n += compactSizeBytes(w.length);
      for (const item of w) n += varBytesSize(item);
    }
  }
  return n;
}

function writeBytes(out: Uint8Array, p: number, b: Uint8Array): number {
  p = writeCompactSize(out, p, b.length);
  out.set(b, p);
  return p + b.length;
}

function writeValue(out: Uint8Array, p: number, value: bigint, what: string): void {
  if (typeof value !== 'bigint' || value < INT64_MIN || value >= UINT64_LIMIT) {
    throw new RangeError(`${what} must be a bigint in [-2^63, 2^64)`);
  }
  const v = BigInt.asUintN(64, value);
  writeU32le(out, p, Number(v & 0xffffffffn));
  writeU32le(out, p + 4, Number(v >> 32n));
}

function writeTx(out: Uint8Array, p: number, tx: TxData, segwit: boolean): number {
  checkI32(tx.version, 'version');
  checkU32(tx.locktime, 'locktime');
  writeU32le(out, p, tx.version);
  p += 4;
  if (segwit) {
    out[p] = 0x00;
    out[p + 1] = 0x01;
    p += 2;
  }
  p = writeCompactSize(out, p, tx.inputs.length);
  tx.inputs.forEach((input, i) => {
    checkHash(input.prevTxid, `input ${i} prevTxid`);
    checkU32(input.vout, `input ${i} vout`);
    checkU32(input.sequence, `input ${i} sequence`);
    out.set(input.prevTxid, p);
    writeU32le(out, p + 32, input.vout);
    p = writeBytes(out, p + 36, input.scriptSig);
    writeU32le(out, p, input.sequence);
    p += 4;
  });
  p = writeCompactSize(out, p, tx.outputs.length);
  tx.outputs.forEach((output, i) => {
    writeValue(out, p, output.value, `output ${i} value`);
    p = writeBytes(out, p + 8, output.script);
  });
  if (segwit) {
    for (const input of tx.inputs) {
      const w = input.witness ?? [];
      p = writeCompactSize(out, p, w.length);
      for (const item of w) p = writeBytes(out, p, item);
    }
  }
  writeU32le(out, p, tx.locktime);
  return p + 4;
}

/**
 * Serializes a transaction. With witness data present (and `witness` not false) it uses the
 * BIP144 form with marker and flag; otherwise the legacy form, whose hash is the txid.
 */
export function encodeTx(tx: TxData, options: EncodeOptions = {}): Uint8Array {
  const segwit = options.witness !== false && hasAnyWitness(tx);
  const out = new Uint8Array(txSize(tx, segwit));
  const end = writeTx(out, 0, tx, segwit);
  if (end !== out.length) throw new RangeError(`internal: encoded ${end} bytes, expected ${out.length}`);
  return out;
}

function writeHeader(out: Uint8Array, p: number, h: BlockHeaderData): void {
  checkI32(h.version, 'header version');
  checkHash(h.prevHash, 'prevHash');
  checkHash(h.merkleRoot, 'merkleRoot');
  checkU32(h.time, 'time');
  checkU32(h.bits, 'bits');
  checkU32(h.nonce, 'nonce');
  writeU32le(out, p, h.version);
  out.set(h.prevHash, p + 4);
  out.set(h.merkleRoot, p + 36);
  writeU32le(out, p + 68, h.time);
  writeU32le(out, p + 72, h.bits);
  writeU32le(out, p + 76, h.nonce);
}

/** Serializes a block header (80 bytes). */
export function encodeHeader(header: BlockHeaderData): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES);
  writeHeader(out, 0, header);
  return out;
}

/** Serializes a block; `witness: false` strips witness data from every transaction. */
export function encodeBlock(
  block: { readonly header: BlockHeaderData; readonly txs: readonly TxData[] },
  options: EncodeOptions = {},
): Uint8Array {
  const forms = block.txs.map((tx) => options.witness !== false && hasAnyWitness(tx));
  let size = HEADER_BYTES + compactSizeBytes(block.txs.length);
  block.txs.forEach((tx, i) => (size += txSize(tx, forms[i]!)));
  const out = new Uint8Array(size);
  writeHeader(out, 0, block.header);
  let p = writeCompactSize(out, HEADER_BYTES, block.txs.length);
  block.txs.forEach((tx, i) => (p = writeTx(out, p, tx, forms[i]!)));
  return out;
}
