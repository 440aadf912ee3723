// bench/bucket-log.ts, the record formats of history-layout's bucket candidates, against
// straightforward implementations: BigInt arithmetic on hex strings for buckets and tx_nums,
// src/db/packed.ts's encoders and decoders for the parts' outs and ins.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  bucketBits,
  bucketOf,
  histEntries,
  histRecords,
  HIST_RECORD,
  logCut,
  packPart,
  partTx,
  txidMatches,
  txidRecord,
  TXID_RECORD,
} from '../../../bench/bucket-log.js';
import { decodeIns, decodeOuts, encodeIns, encodeOuts } from '../../../src/db/packed.js';

/** tx_num as 5 bytes big-endian, the plain way. */
const fiveBytes = (n: number) => Buffer.from(BigInt(n).toString(16).padStart(10, '0'), 'hex');
const randomTxNum = () => Math.floor(Math.random() * 2 ** 40);

describe('buckets', () => {
  it('takes the top bits of the first 4 bytes', () => {
    for (let i = 0; i < 2000; i++) {
      const key = randomBytes(16);
      const bits = i % 32;
      const want = Number(BigInt(`0x${key.subarray(0, 4).toString('hex')}`) >> BigInt(32 - bits));
      expect(bucketOf(key, bits)).toBe(want);
    }
    expect(bucketOf(Buffer.from('ffffffff', 'hex'), 31)).toBe(2 ** 31 - 1);
  });

  it('chooses bits for about perBucket keys a bucket', () => {
    expect(bucketBits(7_880_000, 16)).toBe(19);
    expect(bucketBits(7_880_000, 8)).toBe(20);
    expect(bucketBits(7_880_000, 32)).toBe(18);
    expect(bucketBits(10, 16)).toBe(0);
    expect(bucketBits(2 ** 40, 1)).toBe(31);
    expect(() => bucketBits(10, 0)).toThrow(RangeError);
  });
});

describe('history records', () => {
  it('are the key bytes 4..11 and the tx_num in 5 bytes', () => {
    const key = randomBytes(16);
    const nums = [0, 1, 255, 2 ** 32 - 1, 2 ** 32, 2 ** 40 - 1, ...Array.from({ length: 50 }, randomTxNum)];
    const got = histRecords(key, nums);
    expect(got.toString('hex')).toBe(nums.map((n) => key.subarray(4, 12).toString('hex') + fiveBytes(n).toString('hex')).join(''));
    expect(() => histRecords(key, [2 ** 40])).toThrow(RangeError);
    expect(() => histRecords(key, [-1])).toThrow(RangeError);
  });

  it('are found again per key among others, in log order', () => {
    const keys = Array.from({ length: 20 }, () => randomBytes(16));
    // A key differing from keys[0] in its last byte of the 8 kept only, and one only outside them.
    keys.push(Buffer.concat([keys[0]!.subarray(0, 11), Buffer.of(keys[0]![11]! ^ 1), keys[0]!.subarray(12)]));
    const outside = Buffer.from(keys[0]!);
    outside[15] = outside[15]! ^ 1;
    const log: Buffer[] = [];
    const want = new Map<string, number[]>();
    for (let i = 0; i < 500; i++) {
      const k = keys[i % keys.length]!;
      const n = i * 1000 + (i % 7);
      log.push(histRecords(k, [n]));
      want.set(k.toString('hex'), [...(want.get(k.toString('hex')) ?? []), n]);
    }
    const all = Buffer.concat(log);
    for (const k of keys) expect(histEntries(all, k)).toEqual(want.get(k.toString('hex')));
    // The 8 bytes kept are what tells keys apart: one differing elsewhere reads as the same address.
    expect(histEntries(all, outside)).toEqual(want.get(keys[0]!.toString('hex')));
    expect(histEntries(all, randomBytes(16))).toEqual([]);
    expect(() => histEntries(all.subarray(1), keys[0]!)).toThrow(RangeError);
  });
});

describe('txid records', () => {
  it('are the txid bytes 4..7 and the tx_num, matched on those bytes', () => {
    const txids = Array.from({ length: 300 }, () => randomBytes(32));
    const nums = txids.map(() => randomTxNum());
    const log = Buffer.concat(txids.map((t, i) => txidRecord(t, nums[i]!)));
    expect(log.length).toBe(TXID_RECORD * txids.length);
    expect(log.subarray(0, TXID_RECORD).toString('hex')).toBe(
      txids[0]!.subarray(4, 8).toString('hex') + fiveBytes(nums[0]!).toString('hex'),
    );
    txids.forEach((t, i) => {
      const want = nums.filter((_, j) => txids[j]!.subarray(4, 8).equals(t.subarray(4, 8)));
      expect(txidMatches(log, t)).toEqual(want);
      expect(want).toContain(nums[i]);
    });
    const twin = Buffer.from(txids[3]!);
    twin[0] = twin[0]! ^ 1;
    twin[31] = twin[31]! ^ 1;
    expect(txidMatches(log, twin)).toEqual(txidMatches(log, txids[3]!));
    expect(() => txidMatches(log.subarray(1), txids[0]!)).toThrow(RangeError);
  });
});

describe('logCut', () => {
  it('cuts before the first record at or above a tx_num, scanning from the end', () => {
    for (const record of [HIST_RECORD, TXID_RECORD]) {
      const nums = Array.from({ length: 40 }, randomTxNum).sort((a, b) => a - b);
      const log = Buffer.concat(
        nums.map((n) => (record === HIST_RECORD ? histRecords(randomBytes(16), [n]) : txidRecord(randomBytes(32), n))),
      );
      for (const first of [0, nums[0]!, nums[17]!, nums[17]! + 1, nums[39]!, nums[39]! + 1, 2 ** 40]) {
        const keep = nums.filter((n) => n < first).length;
        expect(logCut(log, record, first)).toBe(keep * record);
      }
      expect(logCut(Buffer.alloc(0), record, 5)).toBe(0);
    }
  });
});

describe('parts', () => {
  const tx = (i: number) => ({
    txid: randomBytes(32),
    outs: encodeOuts(Array.from({ length: 1 + (i % 5) }, (_, v) => ({ value: BigInt(i * 1000 + v), script: randomBytes(20 + (i % 300)) }))),
    ins:
      i % 9 === 0 ? Buffer.alloc(0) : encodeIns(Array.from({ length: 1 + (i % 4) }, (_, v) => ({ txNum: BigInt(randomTxNum()), vout: v }))),
  });

  it('give back each transaction from the concatenated columns', () => {
    for (const n of [1, 2, 37, 64]) {
      const txs = Array.from({ length: n }, (_, i) => tx(i));
      const part = packPart(txs);
      expect(part.txids).toEqual(Buffer.concat(txs.map((t) => t.txid)));
      expect(part.ins).toEqual(Buffer.concat(txs.map((t) => t.ins)));
      txs.forEach((t, i) => {
        const got = partTx(part, i);
        expect(Buffer.from(got.txid)).toEqual(t.txid);
        expect(decodeOuts(got.outs)).toEqual(decodeOuts(t.outs));
        expect(decodeIns(got.ins)).toEqual(decodeIns(t.ins));
      });
      // The concatenated ins still read as one sequence of input references (the spends GIN's argument).
      expect(decodeIns(part.ins)).toEqual(txs.flatMap((t) => decodeIns(t.ins)));
      expect(() => partTx(part, n)).toThrow(RangeError);
      expect(() => partTx(part, -1)).toThrow(RangeError);
    }
  });

  it('refuse empty or oversized parts, short txids and lengths beyond the columns', () => {
    expect(() => packPart([])).toThrow(RangeError);
    expect(() => packPart(Array.from({ length: 65 }, (_, i) => tx(i)))).toThrow(RangeError);
    expect(() => packPart([{ ...tx(1), txid: randomBytes(31) }])).toThrow(RangeError);
    const part = packPart([tx(1), tx(2)]);
    expect(() => partTx({ ...part, outs: part.outs.subarray(1) }, 1)).toThrow(RangeError);
    expect(() => partTx({ ...part, lens: part.lens.subarray(0, 1) }, 1)).toThrow(RangeError);
  });
});
