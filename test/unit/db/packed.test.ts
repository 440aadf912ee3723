import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { decodeIns, decodeOut, decodeOuts, encodeIns, encodeOuts } from '../../../src/db/packed.js';
import {
  decodeEntries,
  encodeEntries,
  encodeHistoryChunk,
  historyChunkEntries,
  newestEntries,
  readEntry,
} from '../../../src/db/history-entries.js';
import { addressKey } from '../../../src/db/address-key.js';
import { firstTxNum, txNum, txNumHeight, txNumPosition } from '../../../src/db/tx-num.js';

const out = fc.record({ value: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }), script: fc.uint8Array({ maxLength: 200 }) });
const inp = fc.record({ txNum: fc.bigInt({ min: 0n, max: 2n ** 62n }), vout: fc.nat({ max: 100_000 }) });

describe('packed outputs', () => {
  it('round-trips any outputs', () => {
    fc.assert(
      fc.property(fc.array(out, { maxLength: 30 }), (outs) => {
        const decoded = decodeOuts(encodeOuts(outs));
        expect(decoded.map((o) => ({ value: o.value, script: Array.from(o.script) }))).toEqual(
          outs.map((o) => ({ value: o.value, script: Array.from(o.script) })),
        );
        outs.forEach((o, i) => expect(decodeOut(encodeOuts(outs), i)?.value).toBe(o.value));
        expect(decodeOut(encodeOuts(outs), outs.length)).toBeUndefined();
      }),
    );
  });

  it('is compact for a typical P2WPKH output', () => {
    const script = new Uint8Array(22);
    expect(encodeOuts([{ value: 12_345_678n, script }]).length).toBe(4 + 1 + 22);
  });

  it('rejects truncated data', () => {
    const packed = encodeOuts([{ value: 300n, script: new Uint8Array(10) }]);
    expect(() => decodeOuts(packed.subarray(0, packed.length - 1))).toThrow('packed data truncated in a script');
    expect(() => decodeOuts(Uint8Array.of(0x80))).toThrow('packed data truncated in a varint');
  });
});

describe('packed inputs', () => {
  it('round-trips any input references', () => {
    fc.assert(
      fc.property(fc.array(inp, { maxLength: 30 }), (ins) => {
        expect(decodeIns(encodeIns(ins))).toEqual(ins);
      }),
    );
  });
  it('encodes a coinbase (no inputs) as empty', () => {
    expect(encodeIns([]).length).toBe(0);
    expect(decodeIns(new Uint8Array(0))).toEqual([]);
  });
});

describe('history entries', () => {
  it('round-trips ascending tx_nums and concatenates chunks', () => {
    const a = [1n, 5n, 1n << 40n];
    const b = [(1n << 40n) + 1n, 1n << 50n];
    expect(decodeEntries(Buffer.concat([encodeEntries(a), encodeEntries(b)]))).toEqual([...a, ...b]);
  });
  it('reads each entry as a number as decodeEntries reads it as a bigint', () => {
    fc.assert(
      fc.property(fc.array(fc.bigInt({ min: 0n, max: 2n ** 53n - 1n }), { minLength: 1, maxLength: 20 }), (nums) => {
        const e = Buffer.concat(nums.map((n) => encodeEntries([n])));
        const want = decodeEntries(e);
        for (let i = 0; i < nums.length; i++) expect(BigInt(readEntry(e, i * 8))).toBe(want[i]);
      }),
    );
  });
  it('refuses unsorted entries and bad lengths', () => {
    expect(() => encodeEntries([2n, 1n])).toThrow('strictly ascending');
    expect(() => decodeEntries(new Uint8Array(9))).toThrow('not a multiple of 8');
  });
  it('a history row keeps the first entry in first_tx_num and only the others in rest', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.bigInt({ min: 0n, max: 2n ** 62n }), { minLength: 1, maxLength: 40 }), (raw) => {
        const nums = [...raw].sort((x, y) => (x < y ? -1 : 1));
        const row = encodeHistoryChunk(nums);
        expect(row.first_tx_num).toBe(nums[0]);
        expect(row.rest.length).toBe((nums.length - 1) * 8);
        expect(decodeEntries(row.rest)).toEqual(nums.slice(1));
        expect(decodeEntries(historyChunkEntries(row.first_tx_num, row.rest))).toEqual(nums);
      }),
    );
    expect(() => encodeHistoryChunk([])).toThrow('at least one entry');
  });
});

describe('the newest entries of several chunks', () => {
  it('are the greatest distinct entries below the bound, greatest first, as a full sort gives them', () => {
    const chunk = fc.uniqueArray(fc.bigInt({ min: 0n, max: 5000n }), { maxLength: 60 }).map((a) => a.sort((x, y) => (x < y ? -1 : 1)));
    fc.assert(
      fc.property(
        fc.array(chunk, { maxLength: 12 }),
        fc.bigInt({ min: 0n, max: 5100n }),
        fc.integer({ min: 1, max: 80 }),
        (chunks, bound, limit) => {
          const all = [...new Set(chunks.flat())].filter((n) => n < bound).sort((x, y) => (x < y ? 1 : -1));
          expect(
            newestEntries(
              chunks.map((c) => encodeEntries(c)),
              bound,
              limit,
            ),
          ).toEqual(all.slice(0, limit));
        },
      ),
    );
  });
});

describe('tx_num', () => {
  it('packs height and position and orders by chain position', () => {
    const n = txNum(866_342, 4_863);
    expect(txNumHeight(n)).toBe(866_342);
    expect(txNumPosition(n)).toBe(4_863);
    expect(txNum(10, 999_999) < firstTxNum(11)).toBe(true);
    expect(() => txNum(1, 1 << 20)).toThrow('position must be in');
  });
});

describe('address keys', () => {
  it('is the uuid-shaped SHA-256 prefix of the canonical script', () => {
    // sha256("") = e3b0c442 98fc1c14 9afbf4c8 996fb924 ...
    expect(addressKey(new Uint8Array(0))).toBe('e3b0c442-98fc-1c14-9afb-f4c8996fb924');
  });
});
