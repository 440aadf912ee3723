/**
 * Bech32 (BIP173) and bech32m (BIP350) for segwit addresses: a fast encoder for the sync hot
 * path, and a decoder that reports what is wrong in the words Core uses (mixed case, missing
 * separator, invalid character, invalid checksum…). Tested against the BIP vectors and @scure/base.
 * @module
 */

const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const CHARSET_REV = new Int8Array(128).fill(-1);
for (let i = 0; i < CHARSET.length; i++) CHARSET_REV[CHARSET.charCodeAt(i)] = i;

const GENERATOR = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
/** Final checksum constant of each variant. */
const CONST = { bech32: 1, bech32m: 0x2bc830a3 } as const;
export type Bech32Variant = keyof typeof CONST;

/** BIP173's limit on the whole string, which Core also applies to addresses. */
const BECH32_MAX_LENGTH = 90;

function polymodStep(chk: number, v: number): number {
  const top = chk >>> 25;
  chk = ((chk & 0x1ffffff) << 5) ^ v;
  for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= GENERATOR[i]!;
  return chk;
}

function hrpChecksumState(hrp: string): number {
  let chk = 1;
  for (let i = 0; i < hrp.length; i++) chk = polymodStep(chk, hrp.charCodeAt(i) >> 5);
  chk = polymodStep(chk, 0);
  for (let i = 0; i < hrp.length; i++) chk = polymodStep(chk, hrp.charCodeAt(i) & 31);
  return chk;
}

/**
 * Segwit address of `program` with witness `version` (bech32 for v0, bech32m from v1), given a
 * lower-case HRP. No validation of sizes here: callers pass programs they classified.
 */
export function encodeSegwit(hrp: string, version: number, program: Uint8Array): string {
  let chk = polymodStep(hrpChecksumState(hrp), version);
  let out = hrp + '1' + CHARSET[version]!;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < program.length; i++) {
    acc = ((acc << 8) | program[i]!) & 0xfff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      const w = (acc >>> bits) & 31;
      chk = polymodStep(chk, w);
      out += CHARSET[w]!;
    }
  }
  if (bits > 0) {
    const w = (acc << (5 - bits)) & 31;
    chk = polymodStep(chk, w);
    out += CHARSET[w]!;
  }
  for (let i = 0; i < 6; i++) chk = polymodStep(chk, 0);
  chk ^= version === 0 ? CONST.bech32 : CONST.bech32m;
  for (let i = 0; i < 6; i++) out += CHARSET[(chk >>> (5 * (5 - i))) & 31]!;
  return out;
}

/** A decoded bech32/bech32m string: lower-case HRP and 5-bit data words (checksum removed). */
export interface Bech32Decoded {
  readonly variant: Bech32Variant;
  readonly hrp: string;
  readonly words: Uint8Array;
}

/** Decodes a bech32 or bech32m string; returns an error message (Core's wording) when invalid. */
export function decodeBech32(text: string, maxLength = BECH32_MAX_LENGTH): Bech32Decoded | string {
  let lower = false;
  let upper = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 33 || c > 126) return 'Invalid character or mixed case';
    if (c >= 97 && c <= 122) lower = true;
    else if (c >= 65 && c <= 90) upper = true;
  }
  if (lower && upper) return 'Invalid character or mixed case';
  if (text.length > maxLength) return 'Bech32 string too long';
  const s = text.toLowerCase();
  const sep = s.lastIndexOf('1');
  if (sep === -1) return 'Missing separator';
  if (sep === 0 || sep + 7 > s.length) return 'Invalid separator position';
  const hrp = s.slice(0, sep);
  const words = new Uint8Array(s.length - sep - 1);
  for (let i = 0; i < words.length; i++) {
    const v = CHARSET_REV[s.charCodeAt(sep + 1 + i)] ?? -1;
    if (v < 0) return 'Invalid Base 32 character';
    words[i] = v;
  }
  let chk = hrpChecksumState(hrp);
  for (const w of words) chk = polymodStep(chk, w);
  const variant: Bech32Variant | null = chk === CONST.bech32 ? 'bech32' : chk === CONST.bech32m ? 'bech32m' : null;
  if (variant === null) return 'Invalid checksum';
  return { variant, hrp, words: words.subarray(0, words.length - 6) };
}

/** 5-bit words to bytes (BIP173 convertbits without padding); null when the padding is invalid. */
export function wordsToBytes(words: Uint8Array): Uint8Array | null {
  const out = new Uint8Array(Math.floor((words.length * 5) / 8));
  let acc = 0;
  let bits = 0;
  let o = 0;
  for (const w of words) {
    acc = ((acc << 5) | w) & 0xfff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >>> bits) & 0xff;
    }
  }
  if (bits >= 5 || ((acc << (8 - bits)) & 0xff) !== 0) return null;
  return out;
}
