/**
 * The history buckets' format (src/db/history-buckets.ts) against a straightforward model
 * (test/support/bucket-reference.ts: hex strings, bigint tx_nums, plain sorting and filtering) on
 * random logs, with the edges forced: height 0 and 2^24 − 1, positions 0 and 2^16 − 1, keys sharing
 * their record bytes, the empty log, cuts at the first and the last record, bucket ids at the
 * edges of base, ext and split.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  RECORD_BYTES,
  RecordSorter,
  bucketOf,
  bucketsOf,
  buildBase,
  compareRecords,
  frontCut,
  keyCount,
  keyCounts,
  keyEntries,
  keyHas,
  keyTouched,
  keyTxNums,
  mergeLogs,
  prependBlock,
  recordTxNum,
  recordsOf,
  sortRecords,
  splitLog,
  txBound,
  withoutKey,
  writeRecord,
} from '../../../src/db/history-buckets.js';
import { decodeEntries, newestEntries } from '../../../src/db/history-entries.js';
import { txNum } from '../../../src/db/tx-num.js';
import {
  entriesArb,
  heightArb,
  keyArb,
  keysArb,
  paramsArb,
  posArb,
  refBucket,
  refDecode,
  refHex,
  refK8,
  refLog,
  refSort,
  refTxNum,
  type RefRecord,
} from '../../support/bucket-reference.js';

const refOf = (key: Uint8Array, n: number): RefRecord => ({ k8: refK8(key), height: Math.floor(n / 2 ** 20), pos: n % 2 ** 20 });
const refEntries = (entries: readonly [Uint8Array, number][]) => entries.map(([k, n]) => refOf(k, n));

describe('records', () => {
  it('hold the key bytes 4..11, the height in 3 bytes and the position in 2, and give the tx_num back', () => {
    fc.assert(
      fc.property(keyArb, heightArb, posArb, (key, h, p) => {
        const out = new Uint8Array(RECORD_BYTES + 3);
        writeRecord(out, 3, key, Number(txNum(h, p)));
        expect(Buffer.from(out.subarray(3)).toString('hex')).toBe(refHex({ k8: refK8(key), height: h, pos: p }));
        expect(BigInt(recordTxNum(out, 3))).toBe(txNum(h, p));
      }),
    );
  });

  it('refuse what a record cannot hold', () => {
    const key = new Uint8Array(16);
    const out = new Uint8Array(RECORD_BYTES);
    expect(() => writeRecord(out, 0, key, Number(txNum(2 ** 24, 0)))).toThrow('height 16777216 does not fit a record');
    expect(() => writeRecord(out, 0, key, Number(txNum(5, 65_536)))).toThrow('position 65536 does not fit a record');
    expect(() => writeRecord(out, 0, key, -1)).toThrow('non-negative safe integer');
    expect(() => writeRecord(out, 0, key, 1.5)).toThrow('non-negative safe integer');
    expect(() => writeRecord(out, 0, new Uint8Array(15), 0)).toThrow('an address key is 16 bytes, got 15');
    expect(() => keyCount(new Uint8Array(14), key)).toThrow("a history log's length 14 is not a multiple of 13");
  });
});

describe('canonical order', () => {
  it('sorts as plain sorting of (tx field, key bytes) descending', () => {
    fc.assert(
      fc.property(entriesArb, ({ entries }) => {
        const log = recordsOf(entries);
        expect(refDecode(log)).toEqual(refSort(refEntries(entries)));
        expect(sortRecords(refLog(refEntries(entries)))).toEqual(log);
      }),
    );
  });

  it('sorts by insertion up to 64 records and by a comparator above, one sorter reused across sizes', () => {
    // (entriesArb stays below 64 records; these cross the switch both ways on one sorter, as the
    // whole-chain fold reuses one)
    const sorter = new RecordSorter();
    const many = keysArb.chain((keys) =>
      fc
        .array(fc.tuple(fc.nat({ max: keys.length - 1 }), heightArb, posArb), { minLength: 60, maxLength: 200 })
        .map((es) => es.map(([k, h, p]) => [keys[k]!, Number(txNum(h, p))] as [Uint8Array, number])),
    );
    fc.assert(
      fc.property(fc.array(many, { minLength: 1, maxLength: 4 }), (lists) => {
        for (const entries of lists) {
          const log = refLog(refEntries(entries));
          const n = log.length / RECORD_BYTES;
          const out = new Uint8Array(log.length + 5).fill(7);
          sorter.sortInto(log, n, out, 5);
          expect(Buffer.from(out.subarray(5))).toEqual(recordsOf(entries));
          expect([...out.subarray(0, 5)]).toEqual([7, 7, 7, 7, 7]);
          expect(refDecode(out.subarray(5))).toEqual(refSort(refEntries(entries)));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('compares two records as the model does', () => {
    fc.assert(
      fc.property(entriesArb, ({ entries }) => {
        const log = refLog(refEntries(entries));
        for (let i = 0; i + 1 < entries.length; i++) {
          const [a, b] = [refHex(refEntries(entries)[i]!), refHex(refEntries(entries)[i + 1]!)];
          const model =
            a.slice(16) !== b.slice(16) ? (a.slice(16) > b.slice(16) ? -1 : 1) : a.slice(0, 16) === b.slice(0, 16) ? 0 : a < b ? 1 : -1;
          expect(Math.sign(compareRecords(log, i * RECORD_BYTES, log, (i + 1) * RECORD_BYTES))).toBe(model);
        }
      }),
    );
  });

  it('orders equal tx fields by key bytes, and a log of no records is empty', () => {
    const lo = new Uint8Array(16);
    const hi = new Uint8Array(16).fill(0xff);
    const log = recordsOf([
      [lo, 7],
      [hi, 7],
      [lo, 8],
    ]);
    expect(refDecode(log).map((r) => [r.k8, r.pos])).toEqual([
      ['0000000000000000', 8],
      ['ffffffffffffffff', 7],
      ['0000000000000000', 7],
    ]);
    expect(recordsOf([]).length).toBe(0);
  });

  it('prepends a newer block sorted, and refuses one that is not newer', () => {
    fc.assert(
      fc.property(entriesArb, heightArb, ({ entries }, h) => {
        const older = entries.filter(([, n]) => n < Number(txNum(h, 0)));
        const block = entries.filter(([, n]) => n >= Number(txNum(h, 0)));
        const log = recordsOf(older);
        const blockRecords = refLog(refEntries(block));
        expect(prependBlock(log, blockRecords)).toEqual(recordsOf(entries));
        if (block.length > 0 && older.length > 0)
          expect(() => prependBlock(recordsOf(block), refLog(refEntries(older)))).toThrow('must be newer');
      }),
    );
  });

  it('merges two logs into the canonical log of their records', () => {
    fc.assert(
      fc.property(entriesArb, fc.nat(), ({ entries }, cut) => {
        const at = entries.length === 0 ? 0 : cut % (entries.length + 1);
        const merged = mergeLogs(recordsOf(entries.slice(0, at)), recordsOf(entries.slice(at)));
        expect(refDecode(merged)).toEqual(refSort(refEntries(entries)));
      }),
    );
    expect(mergeLogs(new Uint8Array(0), new Uint8Array(0)).length).toBe(0);
  });
});

describe('bucket ids', () => {
  it('equal the model at every base, ext and split', () => {
    fc.assert(
      fc.property(keyArb, paramsArb, (key, p) => {
        const b = bucketOf(key, p);
        expect(b).toBe(refBucket(key, p.base, p.ext, p.split));
        expect(b).toBeLessThan(2 ** (p.base + p.ext) + p.split);
        expect(b).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 2_000 },
    );
  });

  it('equal bucketOf when read in place (bucketsOf), and refuse a key cut short', () => {
    fc.assert(
      fc.property(keyArb, paramsArb, fc.nat({ max: 40 }), (key, p, at) => {
        const bytes = new Uint8Array(at + 16 + 3).fill(0xa5);
        bytes.set(key, at);
        expect(bucketsOf(p)(bytes, at)).toBe(bucketOf(key, p));
      }),
      { numRuns: 1_000 },
    );
    const of = bucketsOf({ base: 4, ext: 1, split: 3 });
    expect(() => of(new Uint8Array(20), 5)).toThrow('an address key is 16 bytes, 15 are left at 5');
    expect(() => bucketsOf({ base: 40, ext: 0, split: 0 })).toThrow('base must be an integer');
  });

  it('split a bucket into itself and itself + 2^(base + ext), as the split of its log by the bit', () => {
    fc.assert(
      fc.property(keyArb, paramsArb, (key, p) => {
        if (p.base + p.ext >= 31) return;
        const before = bucketOf(key, { ...p, split: 0 });
        // The pointer past `before`; past the last bucket it is ext + 1 bits and split 0.
        const n = 2 ** (p.base + p.ext);
        const after =
          before + 1 < n ? bucketOf(key, { ...p, split: before + 1 }) : bucketOf(key, { base: p.base, ext: p.ext + 1, split: 0 });
        expect([before, before + 2 ** (p.base + p.ext)]).toContain(after);
        const { stay, move } = splitLog(recordsOf([[key, 5]]), p.ext);
        expect(after === before ? stay.length : move.length).toBe(RECORD_BYTES);
        // Buckets not yet reached by the split pointer do not move.
        expect(bucketOf(key, { ...p, split: before })).toBe(before);
      }),
      { numRuns: 1_000 },
    );
  });

  it('at the edges: base 0, base 31, all-zero and all-ones keys', () => {
    const ones = new Uint8Array(16).fill(0xff);
    const zero = new Uint8Array(16);
    expect(bucketOf(ones, { base: 0, ext: 0, split: 0 })).toBe(0);
    expect(bucketOf(ones, { base: 31, ext: 0, split: 0 })).toBe(2 ** 31 - 1);
    expect(bucketOf(ones, { base: 0, ext: 31, split: 0 })).toBe(2 ** 31 - 1);
    expect(bucketOf(ones, { base: 16, ext: 2, split: 2 ** 18 - 1 })).toBe(2 ** 18 - 1);
    expect(bucketOf(zero, { base: 16, ext: 2, split: 1 })).toBe(0);
    expect(bucketOf(ones, { base: 3, ext: 0, split: 7 })).toBe(7);
    expect(bucketOf(ones, { base: 3, ext: 0, split: 1 })).toBe(7);
    expect(bucketOf(Uint8Array.of(0, 0, 0, 0, 0x80, ...new Uint8Array(11)), { base: 3, ext: 0, split: 1 })).toBe(8);
  });

  it('refuse parameters an int4 id cannot hold', () => {
    const key = new Uint8Array(16);
    expect(() => bucketOf(key, { base: 32, ext: 0, split: 0 })).toThrow('base must be an integer in [0, 31]');
    expect(() => bucketOf(key, { base: 20, ext: 12, split: 0 })).toThrow('ext must be an integer in [0, 11]');
    expect(() => bucketOf(key, { base: 20, ext: 11, split: 1 })).toThrow('split must be 0 or an integer below 2^31');
    expect(() => bucketOf(key, { base: 4, ext: 0, split: 16 })).toThrow('split must be 0');
    expect(() => bucketOf(key, { base: 4, ext: 0, split: -1 })).toThrow('split must be 0');
    expect(() => splitLog(new Uint8Array(0), 32)).toThrow('the split bit must be an integer in [0, 32)');
  });

  it('split a log into the records filtered by the bit, each half in order', () => {
    fc.assert(
      fc.property(entriesArb, fc.integer({ min: 0, max: 31 }), ({ entries }, ext) => {
        const log = recordsOf(entries);
        const { stay, move } = splitLog(log, ext);
        const bit = (r: RefRecord) => BigInt('0x' + r.k8.slice(0, 8)) & (1n << BigInt(31 - ext));
        expect(refDecode(stay)).toEqual(refDecode(log).filter((r) => bit(r) === 0n));
        expect(refDecode(move)).toEqual(refDecode(log).filter((r) => bit(r) !== 0n));
      }),
    );
  });
});

describe('scans', () => {
  it("give a key's tx_nums below a bound, newest first, at most n; its count and presence", () => {
    fc.assert(
      fc.property(entriesArb, fc.nat(), heightArb, posArb, fc.nat({ max: 70 }), ({ keys, entries }, ki, h, p, limit) => {
        const log = recordsOf(entries);
        const key = keys[ki % keys.length]!;
        const bound = txNum(h, p);
        const mine = refSort(refEntries(entries)).filter((r) => r.k8 === refK8(key));
        const below = mine.filter((r) => refTxNum(r) < bound).map(refTxNum);
        expect(keyTxNums(log, key).map(BigInt)).toEqual(mine.map(refTxNum));
        expect(keyTxNums(log, key, Number(bound)).map(BigInt)).toEqual(below);
        expect(keyTxNums(log, key, Number(bound), limit).map(BigInt)).toEqual(below.slice(0, limit));
        expect(keyCount(log, key)).toBe(mine.length);
        expect(keyHas(log, key)).toBe(mine.length > 0);
      }),
    );
  });

  it('count the records of every key, and take one key out', () => {
    fc.assert(
      fc.property(entriesArb, fc.nat(), ({ keys, entries }, ki) => {
        const log = recordsOf(entries);
        const model = new Map<string, number>();
        for (const r of refEntries(entries)) model.set(r.k8, (model.get(r.k8) ?? 0) + 1);
        expect(keyCounts(log)).toEqual(model);
        const key = keys[ki % keys.length]!;
        expect(refDecode(withoutKey(log, key))).toEqual(refDecode(log).filter((r) => r.k8 !== refK8(key)));
      }),
    );
  });

  it("give a key's entries ascending in the chunks' format, and whether blocks [lo, hi) touched it", () => {
    fc.assert(
      fc.property(entriesArb, fc.nat(), heightArb, heightArb, ({ keys, entries }, ki, h1, h2) => {
        const log = recordsOf(entries);
        const key = keys[ki % keys.length]!;
        const mine = refDecode(log)
          .filter((r) => r.k8 === refK8(key))
          .map(refTxNum);
        const ascending = [...mine].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        expect(decodeEntries(keyEntries(log, key))).toEqual(ascending);
        expect(newestEntries([keyEntries(log, key)], 1n << 62n, 3)).toEqual([...new Set(mine)].slice(0, 3));
        const [lo, hi] = [txNum(Math.min(h1, h2), 0), txNum(Math.max(h1, h2) + 1, 0)];
        expect(keyTouched(log, key, Number(lo), Number(hi))).toBe(mine.some((n) => n >= lo && n < hi));
        expect(keyTouched(log, key, Number(lo), Number(lo))).toBe(false);
      }),
    );
  });

  it('find nothing in the empty log', () => {
    const key = new Uint8Array(16);
    const empty = new Uint8Array(0);
    expect(keyTxNums(empty, key)).toEqual([]);
    expect(keyCount(empty, key)).toBe(0);
    expect(keyHas(empty, key)).toBe(false);
    expect(keyCounts(empty).size).toBe(0);
    expect(frontCut(empty, 0)).toBe(0);
    expect(keyEntries(empty, key).length).toBe(0);
    expect(keyTouched(empty, key, 0, 2 ** 40)).toBe(false);
  });

  it("do not match a key's bytes across two records", () => {
    // Record 1's tx field and record 2's first 3 bytes spell a key's 8 bytes (at offset 8); no record holds it.
    const a = Uint8Array.of(0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0);
    const b = Uint8Array.of(0, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9, 0, 0, 0, 0);
    const log = recordsOf([
      [a, Number(txNum(0x010203, 0x0405))],
      [b, 3],
    ]);
    const straddle = Uint8Array.of(0, 0, 0, 0, 1, 2, 3, 4, 5, 9, 9, 9, 0, 0, 0, 0);
    expect(Buffer.from(log).indexOf(Buffer.from(straddle.subarray(4, 12)))).toBe(8);
    expect(keyHas(log, straddle)).toBe(false);
  });
});

describe('undo', () => {
  it("cuts the log's front at a block's first tx_num: the log of the records below it", () => {
    fc.assert(
      fc.property(entriesArb, heightArb, ({ entries }, h) => {
        const log = recordsOf(entries);
        const first = txNum(h, 0);
        const rs = refDecode(log);
        const keep = rs.findIndex((r) => refTxNum(r) < first);
        const cut = frontCut(log, Number(first));
        expect(cut).toBe((keep < 0 ? rs.length : keep) * RECORD_BYTES);
        expect(log.subarray(cut)).toEqual(recordsOf(entries.filter(([, n]) => n < Number(first))));
      }),
    );
  });

  it('cuts nothing, everything, or exactly the first record at their edges', () => {
    const key = new Uint8Array(16);
    const log = recordsOf([
      [key, Number(txNum(9, 2))],
      [key, Number(txNum(9, 1))],
      [key, Number(txNum(0, 0))],
    ]);
    expect(frontCut(log, Number(txNum(10, 0)))).toBe(0);
    expect(frontCut(log, Number(txNum(9, 2)))).toBe(RECORD_BYTES);
    expect(frontCut(log, Number(txNum(9, 1)))).toBe(2 * RECORD_BYTES);
    expect(frontCut(log, 1)).toBe(2 * RECORD_BYTES);
    expect(frontCut(log, 0)).toBe(3 * RECORD_BYTES);
  });
});

describe('the tx field bound', () => {
  it('compares below a record exactly when its tx_num is below the bound', () => {
    const nArb = fc.oneof(
      fc.tuple(heightArb, fc.oneof(posArb, fc.integer({ min: 65_535, max: 2 ** 20 - 1 }))).map(([h, p]) => txNum(h, p)),
      fc.bigInt({ min: -5n, max: 5n }),
      fc.constantFrom(txNum(2 ** 24, 0), txNum(2 ** 24 - 1, 2 ** 20 - 1), (1n << 63n) - 1n, -(1n << 63n)),
    );
    fc.assert(
      fc.property(keyArb, heightArb, posArb, nArb, (key, h, p, n) => {
        const rec = recordsOf([[key, Number(txNum(h, p))]]);
        expect(Buffer.compare(rec.subarray(8), txBound(n)) < 0).toBe(txNum(h, p) < n);
      }),
      { numRuns: 3_000 },
    );
  });
});

describe('the base of a build', () => {
  it('gives ~47 records a bucket, from 8 to 31 bits', () => {
    for (let b = 8; b <= 31; b++) {
      expect(buildBase(47 * 2 ** b)).toBe(b);
      expect(buildBase(Math.ceil(47 * 2 ** (b + 0.49)))).toBe(b);
    }
    expect(buildBase(24_500_000)).toBe(19); // the 2,000-block corpus's entries: the prototype's 19 bits
    expect(buildBase(0)).toBe(8);
    expect(buildBase(47)).toBe(8);
    expect(buildBase(47 * 2 ** 40)).toBe(31);
    expect(() => buildBase(-1)).toThrow('records must be a non-negative integer');
  });
});
