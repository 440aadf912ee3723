import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';
import { ripemd160 as nobleRipemd160 } from '@noble/hashes/legacy.js';
import { describe, expect, it } from 'vitest';
import {
  bytesToHex,
  equalBytes,
  hash160,
  hashesToHex,
  hashToHex,
  hexToBytes,
  hexToHash,
  reverseBytes,
  sha256,
  sha256d,
  sha256Into,
  sha256dParts,
  taggedHash,
} from '../../../src/bitcoin/hash.js';

const GENESIS_HEADER =
  '0100000000000000000000000000000000000000000000000000000000000000000000003ba3edfd7a7b12b27ac72c3e67768f617fc81bc3888a51323a9fb8aa4b1e5e4a29ab5f49ffff001d1dac2b7c';
const GENESIS_HASH = '000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f';

describe('hash', () => {
  it('sha256 matches the FIPS 180-2 "abc" vector', () => {
    expect(bytesToHex(sha256(new TextEncoder().encode('abc')))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('sha256d of the genesis header is the genesis block hash (display order reversed)', () => {
    const h = sha256d(hexToBytes(GENESIS_HEADER));
    expect(hashToHex(h)).toBe(GENESIS_HASH);
    expect(reverseBytes(h)).toEqual(hexToBytes(GENESIS_HASH));
    expect(h).toEqual(hexToHash(GENESIS_HASH));
  });

  it('sha256dParts equals sha256d of the concatenation', () => {
    const a = hexToBytes(GENESIS_HEADER.slice(0, 40));
    const b = hexToBytes(GENESIS_HEADER.slice(40));
    expect(sha256dParts([a, b])).toEqual(sha256d(hexToBytes(GENESIS_HEADER)));
  });

  it('hash160 is RIPEMD160(SHA256(x)) and gives the Satoshi P2PK key hash', () => {
    // Genesis coinbase output key; its P2PKH address is 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa.
    const key = hexToBytes(
      '04678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f',
    );
    expect(bytesToHex(hash160(key))).toBe('62e907b15cbf27d5425399ebf6f0fb50ebb88f18');
    expect(hash160(key)).toEqual(nobleRipemd160(nobleSha256(key)));
  });

  it('taggedHash follows BIP340 and matches the BIP341 TapLeaf construction', () => {
    const msg = hexToBytes('c0' + '01' + '51'); // leaf version 0xc0, script OP_TRUE
    const tag = nobleSha256(new TextEncoder().encode('TapLeaf'));
    const expected = nobleSha256(new Uint8Array([...tag, ...tag, ...msg]));
    expect(taggedHash('TapLeaf', msg)).toEqual(expected);
    expect(taggedHash('TapLeaf', msg.subarray(0, 1), msg.subarray(1))).toEqual(expected);
  });

  it('results are plain Uint8Arrays whose slice copies', () => {
    const h = sha256d(new Uint8Array(1));
    expect(Object.getPrototypeOf(h)).toBe(Uint8Array.prototype);
    const s = h.slice(0, 4);
    s[0] = s[0]! ^ 0xff;
    expect(s[0]).not.toBe(h[0]);
  });
});

describe('hex and byte order', () => {
  it('round-trips hex in both cases', () => {
    expect(bytesToHex(hexToBytes('00ff10AbCd'))).toBe('00ff10abcd');
    expect(hexToBytes('')).toEqual(new Uint8Array(0));
  });

  it('rejects malformed hex with exact messages', () => {
    expect(() => hexToBytes('abc')).toThrow(new TypeError('hex has an odd length (3)'));
    expect(() => hexToBytes('zz')).toThrow(new TypeError('hex contains a character outside 0-9a-fA-F'));
    expect(() => hexToBytes('0 ')).toThrow(TypeError);
  });

  it('hashToHex / hexToHash reverse and validate', () => {
    const internal = new Uint8Array(32).map((_, i) => i);
    const display = hashToHex(internal);
    expect(display.startsWith('1f1e1d')).toBe(true);
    expect(display.endsWith('020100')).toBe(true);
    expect(hexToHash(display)).toEqual(internal);
    expect(hexToHash(display.toUpperCase())).toEqual(internal);
    expect(() => hashToHex(new Uint8Array(31))).toThrow(new RangeError('hash must be 32 bytes, got 31'));
    expect(() => hexToHash('00')).toThrow(new TypeError('hash must be 64 hex characters'));
    expect(() => hexToHash('g'.repeat(64))).toThrow(new TypeError('hash must be 64 hex characters'));
  });

  it('hashesToHex is hashToHex of each packed hash', () => {
    const hashes = [0, 1, 2, 255].map((k) => new Uint8Array(32).map((_, i) => (i * 7 + k) & 255));
    const packed = new Uint8Array(32 * hashes.length);
    hashes.forEach((h, k) => packed.set(h, 32 * k));
    expect(hashesToHex(packed)).toEqual(hashes.map(hashToHex));
    expect(hashesToHex(new Uint8Array(0))).toEqual([]);
    expect(() => hashesToHex(new Uint8Array(33))).toThrow(new RangeError('packed hashes must be a multiple of 32 bytes, got 33'));
  });

  it('equalBytes compares content and length', () => {
    expect(equalBytes(hexToBytes('0102'), new Uint8Array([1, 2]))).toBe(true);
    expect(equalBytes(hexToBytes('0102'), new Uint8Array([1, 3]))).toBe(false);
    expect(equalBytes(hexToBytes('01'), new Uint8Array([1, 0]))).toBe(false);
  });
});

describe('sha256Into', () => {
  it('writes sha256 (or its first n bytes) at an offset, for every length 0–300', () => {
    const out = new Uint8Array(40);
    for (let len = 0; len <= 300; len++) {
      const m = new Uint8Array(len).map((_, i) => (i * 31 + len) & 0xff);
      const want = sha256(m);
      sha256Into(m, out, 3);
      expect(bytesToHex(out.subarray(3, 35))).toBe(bytesToHex(want));
      out.fill(0);
      sha256Into(m, out, 5, 16);
      expect(bytesToHex(out.subarray(5, 21))).toBe(bytesToHex(want.subarray(0, 16)));
      expect(out[21]).toBe(0);
    }
  });
});
