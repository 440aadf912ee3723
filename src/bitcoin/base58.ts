/**
 * Base58Check (addresses, WIF). Encoding is on the sync hot path (every P2PKH/P2SH output), so
 * it works in limbs of 58^5 instead of digit by digit; decoding uses @scure/base. The checksum
 * is the first 4 bytes of SHA256d(payload).
 * @module
 */
import { base58 } from '@scure/base';
import { sha256d } from './hash.js';

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const LIMB = 58 ** 5; // 656,356,768: limb × 256 + carry stays below 2^53

/** Base58 of `bytes` (no checksum). */
export function base58Encode(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  // Little-endian limbs of base 58^5.
  const limbs: number[] = [];
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i]!;
    for (let j = 0; j < limbs.length; j++) {
      const x = limbs[j]! * 256 + carry;
      carry = Math.floor(x / LIMB);
      limbs[j] = x - carry * LIMB;
    }
    while (carry > 0) {
      const q = Math.floor(carry / LIMB);
      limbs.push(carry - q * LIMB);
      carry = q;
    }
  }
  let out = '';
  for (let j = 0; j < limbs.length; j++) {
    let limb = limbs[j]!;
    const last = j === limbs.length - 1;
    for (let k = 0; k < 5 && (!last || limb > 0); k++) {
      out = ALPHABET[limb % 58]! + out;
      limb = Math.floor(limb / 58);
    }
  }
  return '1'.repeat(zeros) + out;
}

/** Base58Check of `payload` (payload || first 4 bytes of SHA256d(payload)). */
export function base58CheckEncode(payload: Uint8Array): string {
  const buf = new Uint8Array(payload.length + 4);
  buf.set(payload, 0);
  buf.set(sha256d(payload).subarray(0, 4), payload.length);
  return base58Encode(buf);
}

/** Why a Base58Check string did not decode. */
export type Base58CheckFailure = 'encoding' | 'checksum';

/**
 * Payload of a Base58Check string, or the reason it is not one: `encoding` for a character
 * outside the alphabet (or an empty string), `checksum` for a bad checksum or under 4 bytes.
 */
export function base58CheckDecode(text: string): Uint8Array | Base58CheckFailure {
  let bytes: Uint8Array;
  try {
    bytes = base58.decode(text);
  } catch {
    return 'encoding';
  }
  if (text.length === 0) return 'encoding';
  if (bytes.length < 4) return 'checksum';
  const payload = bytes.subarray(0, bytes.length - 4);
  const check = sha256d(payload);
  for (let i = 0; i < 4; i++) if (check[i] !== bytes[payload.length + i]) return 'checksum';
  return payload.slice();
}
