/**
 * Bitcoin Core's block files (blocks/blk?????.dat), pure: each record is the network magic,
 * a 4-byte little-endian length and a serialized block. Core ≥ 28 obfuscates the files with the
 * 8-byte key in blocks/xor.dat, applied by file offset (byte i of a file is XORed with
 * key[i % 8]); an all-zero key means none. Core preallocates files, so a file can end in zeros.
 * File I/O lives in indexer/blk-file.ts (the indexer reads Core's blocks directory).
 * @module
 */
import { bytesToHex } from './hash.js';
import { getNetwork, type Network, type NetworkName } from './network.js';
import { MAX_COMPACT_SIZE, ParseError, u32le } from './wire.js';

/** One record of a block file. */
export interface BlkRecord {
  /** Offset of the block bytes in the file (after magic and length), as Core's FlatFilePos. */
  readonly offset: number;
  /** The serialized block (a view into the buffer read). */
  readonly block: Uint8Array;
}

/** Result of parsing a buffer that may end in the middle of a record. */
export interface BlkParseResult {
  readonly records: BlkRecord[];
  /** Bytes of the buffer that were parsed; the rest starts an incomplete record (or is padding). */
  readonly consumed: number;
  /** True when the rest of the buffer is zero padding. */
  readonly padding: boolean;
}

/** The 4 magic bytes of a network (or the bytes given). */
export function blkMagic(network: NetworkName | Network | Uint8Array): Uint8Array {
  if (network instanceof Uint8Array) {
    if (network.length !== 4) throw new TypeError('magic must be 4 bytes');
    return network;
  }
  return getNetwork(network).magic;
}

/**
 * Parses the complete records in `buf`, whose first byte is at `fileOffset` in its file.
 * With `final` (the buffer reaches the end of the file) an incomplete record is an error;
 * otherwise parsing stops before it, and the caller reads more and calls again from `consumed`.
 * A run of zero bytes where a record should start is padding: accepted when only zeros follow.
 * @throws ParseError on a wrong magic, an oversized length or (final) a truncated record.
 */
export function parseBlkRecords(
  buf: Uint8Array,
  fileOffset: number,
  network: NetworkName | Network | Uint8Array,
  final: boolean,
): BlkParseResult {
  const magic = blkMagic(network);
  const records: BlkRecord[] = [];
  const n = buf.length;
  let p = 0;
  while (p < n) {
    if (buf[p] === 0) {
      let z = p;
      while (z < n && buf[z] === 0) z++;
      if (z === n) return { records, consumed: p, padding: true };
      throw new ParseError(
        `non-zero byte 0x${buf[z]!.toString(16).padStart(2, '0')} after zero padding at file offset ${fileOffset + z}`,
        fileOffset + z,
      );
    }
    if (p + 8 > n) {
      if (!final) break;
      throw new ParseError(`truncated record header at file offset ${fileOffset + p}: ${n - p} of 8 bytes`, fileOffset + p);
    }
    if (buf[p] !== magic[0] || buf[p + 1] !== magic[1] || buf[p + 2] !== magic[2] || buf[p + 3] !== magic[3]) {
      throw new ParseError(
        `bad magic ${bytesToHex(buf.subarray(p, p + 4))} at file offset ${fileOffset + p} (expected ${bytesToHex(magic)})`,
        fileOffset + p,
      );
    }
    const len = u32le(buf, p + 4);
    if (len < 81 || len > MAX_COMPACT_SIZE) {
      throw new ParseError(`bad block length ${len} at file offset ${fileOffset + p + 4}`, fileOffset + p + 4);
    }
    if (p + 8 + len > n) {
      if (!final) break;
      throw new ParseError(`truncated block at file offset ${fileOffset + p + 8}: ${n - p - 8} of ${len} bytes`, fileOffset + p + 8);
    }
    records.push({ offset: fileOffset + p + 8, block: new Uint8Array(buf.buffer, buf.byteOffset + p + 8, len) });
    p += 8 + len;
  }
  return { records, consumed: p, padding: false };
}

/** Every record of a whole block file held in memory (already de-obfuscated). */
export function readBlkRecords(file: Uint8Array, network: NetworkName | Network | Uint8Array): BlkRecord[] {
  return parseBlkRecords(file, 0, network, true).records;
}

/**
 * XORs `data`, which starts at `fileOffset` in its file, with the 8-byte obfuscation key, in
 * place (the same operation obfuscates and de-obfuscates). An all-zero key leaves it unchanged.
 */
export function xorBlockData(data: Uint8Array, key: Uint8Array, fileOffset: number): void {
  if (!(key instanceof Uint8Array) || key.length !== 8) throw new TypeError('XOR key must be 8 bytes');
  if (!Number.isSafeInteger(fileOffset) || fileOffset < 0)
    throw new RangeError(`file offset must be a non-negative integer, got ${fileOffset}`);
  if (key.every((b) => b === 0)) return;
  const n = data.length;
  let i = 0;
  // Bytes up to a 4-byte aligned address, then whole 32-bit words, then the tail.
  while (i < n && (data.byteOffset + i) % 4 !== 0) {
    data[i] = data[i]! ^ key[(fileOffset + i) % 8]!;
    i++;
  }
  const words = Math.floor((n - i) / 4);
  if (words > 0) {
    // The key rotated to this position, as two little-endian words (platforms are little-endian in practice; checked below).
    const k = new Uint8Array(8);
    for (let j = 0; j < 8; j++) k[j] = key[(fileOffset + i + j) % 8]!;
    const kw = new Uint32Array(k.buffer);
    if (new Uint8Array(new Uint32Array([1]).buffer)[0] === 1) {
      const w = new Uint32Array(data.buffer, data.byteOffset + i, words);
      const k0 = kw[0]!;
      const k1 = kw[1]!;
      let j = 0;
      for (; j + 1 < words; j += 2) {
        w[j] = w[j]! ^ k0;
        w[j + 1] = w[j + 1]! ^ k1;
      }
      if (j < words) w[j] = w[j]! ^ k0;
      i += words * 4;
    }
  }
  for (; i < n; i++) data[i] = data[i]! ^ key[(fileOffset + i) % 8]!;
}
