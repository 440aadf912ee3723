/**
 * A uuid's 16 bytes from its 8-4-4-4-12 text (as addressKey and PostgreSQL print it), read digit
 * by digit into a buffer: no string without its dashes, no call into the runtime, nothing for
 * the garbage collector. The per-block writer encodes a block's ~16,000 address keys this way,
 * for its binary COPYs (indexer/writer/copy-binary.ts) and its binary array parameters
 * (pg-array.ts).
 * @module
 */

/** The value of each hex digit's character code, -1 for other characters. */
const HEX = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) {
  HEX['0123456789abcdef'.charCodeAt(i)] = i;
  HEX['0123456789ABCDEF'.charCodeAt(i)] = i;
}

/** Writes the 16 bytes of the 8-4-4-4-12 `text` into `buf` at `p`; false (some written) when it is not one. */
export function writeUuidBytes(buf: Uint8Array, p: number, text: string): boolean {
  if (text.length !== 36) return false;
  let c = 0;
  for (let i = 0; i < 16; i++) {
    // the dashes before bytes 4, 6, 8 and 10
    if (i === 4 || i === 6 || i === 8 || i === 10) {
      if (text.charCodeAt(c) !== 0x2d) return false;
      c++;
    }
    const a = text.charCodeAt(c);
    const b = text.charCodeAt(c + 1);
    const hi = a < 128 ? HEX[a]! : -1;
    const lo = b < 128 ? HEX[b]! : -1;
    if ((hi | lo) < 0) return false;
    buf[p + i] = (hi << 4) | lo;
    c += 2;
  }
  return true;
}

/**
 * The value of a uuid text's first 8 hex digits (its first 4 bytes as a big-endian number: the
 * same order as PostgreSQL's uuid order of those bytes), -1 when they are not hex digits.
 */
export function uuidHead(text: string): number {
  let v = 0;
  for (let i = 0; i < 8; i++) {
    const c = text.charCodeAt(i);
    const d = c < 128 ? HEX[c]! : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}
