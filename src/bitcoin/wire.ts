/**
 * Consensus wire format basics shared by the decoders and encoders: the ParseError type, bounds
 * checked little-endian and compact size reads, and compact size writes. Every read checks its
 * bounds first, so malformed input ends in a ParseError naming the offset, never in an
 * out-of-bounds read, a hang or an allocation sized by an attacker-controlled count.
 * @module
 */

/** Malformed consensus data. `offset` is the byte position (in the input given) of the problem. */
export class ParseError extends RangeError {
  override name = 'ParseError';
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** Core's MAX_SIZE: the largest compact size a serialized vector may declare. */
export const MAX_COMPACT_SIZE = 0x02000000;

/** "1 byte", "2 bytes": for error messages. */
export function byteCount(n: number): string {
  return n === 1 ? '1 byte' : `${n} bytes`;
}

/** Throws unless `n` bytes are available at `pos` (before `end`). */
export function need(pos: number, n: number, end: number, what: string): void {
  if (pos + n > end) {
    throw new ParseError(`truncated ${what}: needs ${byteCount(n)} at offset ${pos}, ${end - pos} left`, pos);
  }
}

/** Unsigned 32-bit little-endian at `p` (bounds checked by the caller). */
export function u32le(b: Uint8Array, p: number): number {
  return (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
}

/** Size in bytes of the compact size whose first byte is `first`. */
export function compactSizeLength(first: number): number {
  return first < 0xfd ? 1 : first === 0xfd ? 3 : first === 0xfe ? 5 : 9;
}

/**
 * Reads a canonical compact size at `p` as Core's ReadCompactSize does: non-canonical encodings
 * and values above MAX_SIZE are errors. Advance by `compactSizeLength(b[p])`.
 */
export function readCompactSize(b: Uint8Array, p: number, end: number, what: string): number {
  need(p, 1, end, what);
  const first = b[p]!;
  if (first < 0xfd) return first;
  let v: number;
  if (first === 0xfd) {
    need(p, 3, end, what);
    v = b[p + 1]! | (b[p + 2]! << 8);
    if (v < 0xfd) throw new ParseError(`non-canonical compact size for ${what} at offset ${p}`, p);
    return v;
  }
  if (first === 0xfe) {
    need(p, 5, end, what);
    v = u32le(b, p + 1);
    if (v < 0x10000) throw new ParseError(`non-canonical compact size for ${what} at offset ${p}`, p);
  } else {
    // 0xff: an 8-byte value, canonical only from 2^32 up, which is always above MAX_SIZE.
    need(p, 9, end, what);
    if (u32le(b, p + 5) === 0) throw new ParseError(`non-canonical compact size for ${what} at offset ${p}`, p);
    throw new ParseError(`compact size for ${what} too large at offset ${p}`, p);
  }
  if (v > MAX_COMPACT_SIZE) throw new ParseError(`compact size for ${what} too large at offset ${p}`, p);
  return v;
}

/** Bytes needed to encode `n` as a compact size. */
export function compactSizeBytes(n: number): number {
  return n < 0xfd ? 1 : n <= 0xffff ? 3 : n <= 0xffffffff ? 5 : 9;
}

/** Writes `n` (a safe non-negative integer) as a compact size at `p`; returns the new position. */
export function writeCompactSize(out: Uint8Array, p: number, n: number): number {
  if (n < 0xfd) {
    out[p] = n;
    return p + 1;
  }
  if (n <= 0xffff) {
    out[p] = 0xfd;
    out[p + 1] = n & 0xff;
    out[p + 2] = n >>> 8;
    return p + 3;
  }
  if (n <= 0xffffffff) {
    out[p] = 0xfe;
    writeU32le(out, p + 1, n);
    return p + 5;
  }
  out[p] = 0xff;
  writeU32le(out, p + 1, n % 0x100000000);
  writeU32le(out, p + 5, Math.floor(n / 0x100000000));
  return p + 9;
}

/** Writes a 32-bit value little-endian at `p` (the low 32 bits of `v`, signed or not). */
export function writeU32le(out: Uint8Array, p: number, v: number): void {
  out[p] = v & 0xff;
  out[p + 1] = (v >>> 8) & 0xff;
  out[p + 2] = (v >>> 16) & 0xff;
  out[p + 3] = (v >>> 24) & 0xff;
}
