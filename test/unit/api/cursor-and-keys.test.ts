/**
 * Paging cursors round-trip and refuse anything forged; API keys have the documented format,
 * a checksum, and the format check reads the whole input.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { decodeCursor, encodeCursor, type Cursor } from '../../../api/cursor.js';
import { ServiceError } from '../../../src/errors.js';
import { digestApiKey, generateApiKey, isWellFormedApiKey, KEY_LENGTH } from '../../../src/auth/api-key.js';

describe('cursors', () => {
  it('round-trip both phases and both kinds', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('h' as const, 'u' as const),
        fc.bigInt({ min: 0n, max: (1n << 62n) - 1n }),
        fc.nat(0x7fffffff),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.boolean(),
        fc.option(fc.record({ first: fc.bigInt({ min: 0n, max: (1n << 62n) - 1n }), index: fc.nat(1_000_000) }), { nil: undefined }),
        (kind, n, vout, txid, chain, chunk) => {
          const c: Cursor = chain
            ? { kind, phase: 'c', txNum: n, vout, ...(chunk ? { chunk } : {}) }
            : { kind, phase: 'm', firstSeenUs: n, txid: Buffer.from(txid), vout };
          expect(decodeCursor(encodeCursor(c), kind)).toEqual(c);
          expect(() => decodeCursor(encodeCursor(c), kind === 'h' ? 'u' : 'h')).toThrow(ServiceError);
        },
      ),
    );
  });
  it('anything else is ERR_INVALID_CURSOR', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => {
        try {
          decodeCursor(s, 'h');
        } catch (err) {
          expect(err).toBeInstanceOf(ServiceError);
          expect((err as ServiceError).code).toBe('ERR_INVALID_CURSOR');
        }
      }),
    );
  });
});

describe('api keys', () => {
  it('have the documented shape and verify their checksum', () => {
    const k = generateApiKey();
    expect(k).toMatch(/^bw_[A-Za-z0-9_-]{49}$/);
    expect(k.length).toBe(KEY_LENGTH);
    expect(isWellFormedApiKey(k)).toBe(true);
    for (let i = 3; i < k.length; i++) {
      const c = k[i] === 'A' ? 'B' : 'A';
      expect(isWellFormedApiKey(k.slice(0, i) + c + k.slice(i + 1))).toBe(false);
    }
    expect(isWellFormedApiKey(k.slice(0, -1))).toBe(false);
    expect(isWellFormedApiKey('xx' + k.slice(2))).toBe(false);
    expect(digestApiKey(k)).toHaveLength(32);
    expect(generateApiKey()).not.toBe(k);
  });
});
