/**
 * Block decoding: the 80-byte header, the block hash, every transaction (zero-copy, see tx.ts),
 * sizes and weight (BIP141), and the BIP34 height carried by the coinbase.
 * @module
 */
import { sha256d } from './hash.js';
import { asPlainBytes, type DecodedTx, decodeTxAt } from './tx.js';
import { byteCount, compactSizeLength, need, ParseError, readCompactSize, u32le } from './wire.js';

/** Serialized header size. */
export const HEADER_BYTES = 80;

/** The serialized fields of a block header. Hashes are in internal byte order. */
export interface BlockHeaderData {
  /** nVersion (signed 32-bit). */
  readonly version: number;
  readonly prevHash: Uint8Array;
  readonly merkleRoot: Uint8Array;
  /** Unix time in seconds. */
  readonly time: number;
  /** Compact target (nBits). */
  readonly bits: number;
  readonly nonce: number;
}

/** A decoded block header with its hash. */
export interface BlockHeader extends BlockHeaderData {
  /** Block hash: double SHA-256 of the 80 header bytes (internal byte order). */
  readonly hash: Uint8Array;
}

/** A decoded block; `txs[i].offset` is the byte offset of transaction i in `bytes`. */
export interface DecodedBlock {
  readonly header: BlockHeader;
  /** Same as `header.hash`. */
  readonly hash: Uint8Array;
  readonly txs: readonly DecodedTx[];
  /** Height from the coinbase (BIP34) when the block carries one, else null. */
  readonly height: number | null;
  /** Serialized size in bytes, witness included. */
  readonly size: number;
  /** Size without witness data. */
  readonly strippedSize: number;
  /** BIP141 weight: 3 × strippedSize + size. */
  readonly weight: number;
  /** The whole serialized block (the bytes given to the decoder). */
  readonly bytes: Uint8Array;
}

/** Smallest serialized transaction: version, empty input and output counts, locktime. */
const MIN_TX_BYTES = 10;

/**
 * Decodes the 80-byte header at `offset` in `bytes` and computes its hash.
 * @throws ParseError when fewer than 80 bytes are left.
 */
export function decodeHeader(bytes: Uint8Array, offset = 0): BlockHeader {
  const b = asPlainBytes(bytes, 'header');
  need(offset, HEADER_BYTES, b.length, 'block header');
  const p = offset;
  return {
    version: u32le(b, p) | 0,
    prevHash: b.subarray(p + 4, p + 36),
    merkleRoot: b.subarray(p + 36, p + 68),
    time: u32le(b, p + 68),
    bits: u32le(b, p + 72),
    nonce: u32le(b, p + 76),
    hash: sha256d(b.subarray(p, p + HEADER_BYTES)),
  };
}

/**
 * Decodes a serialized block that fills `bytes` exactly (as `getblock <hash> 0` or REST
 * `/rest/block/<hash>.bin` return it).
 * @throws ParseError on malformed, truncated or trailing data; TypeError if `bytes` is not bytes.
 */
export function decodeBlock(bytes: Uint8Array): DecodedBlock {
  const b = asPlainBytes(bytes, 'block');
  const header = decodeHeader(b, 0);
  let p = HEADER_BYTES;
  const end = b.length;
  const n = readCompactSize(b, p, end, 'transaction count');
  p += compactSizeLength(b[p]!);
  if (n * MIN_TX_BYTES > end - p) {
    throw new ParseError(`transaction count ${n} needs at least ${byteCount(n * MIN_TX_BYTES)} at offset ${p}, ${end - p} left`, p);
  }
  const txs = new Array<DecodedTx>(n);
  let stripped = p;
  for (let i = 0; i < n; i++) {
    const tx = decodeTxAt(b, p, end);
    txs[i] = tx;
    p += tx.size;
    stripped += tx.baseSize;
  }
  if (p !== end) throw new ParseError(`${byteCount(end - p)} of trailing data after the last transaction at offset ${p}`, p);
  const coinbase = txs[0];
  return {
    header,
    hash: header.hash,
    txs,
    height: coinbase === undefined ? null : bip34Height(header.version, coinbase),
    size: end,
    strippedSize: stripped,
    weight: stripped * 3 + end,
    bytes: b,
  };
}

/**
 * The height a coinbase commits to under BIP34: the first push of its scriptSig read as a
 * minimally encoded script number (OP_0, OP_1..OP_16, or a 1–4 byte push). Null for version-1
 * blocks (which predate BIP34 and often start with other pushes), a non-coinbase, or a first push
 * that is not a non-negative minimal number.
 */
function bip34Height(blockVersion: number, coinbase: DecodedTx): number | null {
  if (blockVersion >= 0 && blockVersion < 2) return null;
  if (!coinbase.isCoinbase) return null;
  const s = coinbase.inputs[0]!.scriptSig;
  if (s.length === 0) return null;
  const op = s[0]!;
  if (op === 0x00) return 0;
  if (op >= 0x51 && op <= 0x60) return op - 0x50;
  if (op < 0x01 || op > 0x04 || s.length < 1 + op) return null;
  const last = s[op]!;
  if (last & 0x80) return null; // negative
  if (last === 0 && (op === 1 || (s[op - 1]! & 0x80) === 0)) return null; // not minimal
  let h = 0;
  for (let i = op; i >= 1; i--) h = h * 256 + s[i]!;
  return h;
}

/** Difficulty of a compact target as Core's GetDifficulty computes it (a double). */
export function bitsToDifficulty(bits: number): number {
  let shift = (bits >>> 24) & 0xff;
  let diff = 0x0000ffff / (bits & 0x00ffffff);
  while (shift < 29) {
    diff *= 256.0;
    shift++;
  }
  while (shift > 29) {
    diff /= 256.0;
    shift--;
  }
  return diff;
}
