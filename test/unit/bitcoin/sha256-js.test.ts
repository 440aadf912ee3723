/**
 * The allocation-free JavaScript SHA-256 against node:crypto: every message length from 0 to
 * 300 bytes (each padding case: the length field in the last block or in an extra one), messages
 * fed in random pieces, ranges of a larger buffer, digests written at an offset, a hasher reused
 * across messages, and the FIPS 180-2 vectors.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Sha256 } from '../../../src/bitcoin/sha256-js.js';
import { seededRandom } from '../../support/chain-crash.js';

const node = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('Sha256 (JavaScript)', () => {
  const h = new Sha256();

  it('matches the FIPS 180-2 vectors', () => {
    const out = new Uint8Array(32);
    h.hashInto(new TextEncoder().encode('abc'), 0, 3, out);
    expect(hex(out)).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const two = new TextEncoder().encode('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq');
    h.hashInto(two, 0, two.length, out);
    expect(hex(out)).toBe('248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1');
    h.hashInto(new Uint8Array(0), 0, 0, out);
    expect(hex(out)).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('equals node:crypto for every length 0–300, whole, in pieces and as a range', () => {
    const rand = seededRandom(256);
    const big = new Uint8Array(randomBytes(400));
    const out = new Uint8Array(40);
    for (let len = 0; len <= 300; len++) {
      const m = new Uint8Array(randomBytes(len));
      const want = node(m);
      h.hashInto(m, 0, len, out, 0);
      expect(hex(out.subarray(0, 32)), `length ${len}`).toBe(want);
      // In random pieces, digest at an offset.
      h.reset();
      for (let p = 0; p < len; ) {
        const q = Math.min(len, p + Math.floor(rand() * 80));
        h.update(m, p, q);
        p = q;
      }
      h.digestInto(out, 5);
      expect(hex(out.subarray(5, 37)), `length ${len} in pieces`).toBe(want);
      // A range of a larger buffer.
      const s = Math.floor(rand() * 100);
      h.hashInto(big, s, s + len, out, 0);
      expect(hex(out.subarray(0, 32)), `range ${s}+${len}`).toBe(node(big.subarray(s, s + len)));
    }
  });

  it('equals node:crypto on long messages (a large transaction)', () => {
    const out = new Uint8Array(32);
    for (const len of [1000, 4096, 100_003]) {
      const m = new Uint8Array(randomBytes(len));
      h.hashInto(m, 0, len, out);
      expect(hex(out)).toBe(node(m));
    }
  });
});
