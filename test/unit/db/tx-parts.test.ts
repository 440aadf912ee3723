/**
 * The transaction parts' format (src/db/tx-parts.ts): a part gives back each transaction's txid,
 * outs and ins byte for byte, in slot order, for every count from 1 to 64, empty columns (a
 * coinbase's ins) included; its ends widen to 4 bytes once a concatenation passes 64 KB and no
 * sooner; a slot past the part's transactions is undefined; bad parts are refused.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodePart, decodePartTx, encodePart, PART_TXS, partCount, partOf, slotOf, type PartTx } from '../../../src/db/tx-parts.js';
import { encodeIns } from '../../../src/db/packed.js';

/** A seeded generator (xorshift32), so a failure repeats. */
function rng(seed: number): () => number {
  let x = seed || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

function tx(rand: () => number, outsBytes?: number): PartTx {
  const nIns = Math.floor(rand() * 4);
  return {
    txid: randomBytes(32),
    outs: randomBytes(outsBytes ?? 2 + Math.floor(rand() * 60)),
    ins: encodeIns(Array.from({ length: nIns }, () => ({ txNum: BigInt(Math.floor(rand() * 2 ** 40)), vout: Math.floor(rand() * 3) }))),
  };
}

const same = (a: PartTx | undefined, b: PartTx) => {
  expect(a).toBeDefined();
  expect(Buffer.from(a!.txid).equals(Buffer.from(b.txid))).toBe(true);
  expect(Buffer.from(a!.outs).equals(Buffer.from(b.outs))).toBe(true);
  expect(Buffer.from(a!.ins).equals(Buffer.from(b.ins))).toBe(true);
};

describe('transaction parts', () => {
  it('give back every transaction, for every count from 1 to 64', () => {
    const rand = rng(7);
    for (let n = 1; n <= PART_TXS; n++) {
      const txs = Array.from({ length: n }, () => tx(rand));
      const p = encodePart(txs);
      expect(partCount(p)).toBe(n);
      expect(p.ends[0]).toBe(2);
      expect(p.ends.length).toBe(1 + n * 4);
      txs.forEach((t, slot) => same(decodePartTx(p, slot), t));
      const all = decodePart(p);
      expect(all.length).toBe(n);
      all.forEach((t, slot) => same(t, txs[slot]!));
      expect(decodePartTx(p, n)).toBeUndefined();
      expect(decodePartTx(p, -1)).toBeUndefined();
      expect(decodePartTx(p, 0.5)).toBeUndefined();
    }
  });

  it('keeps empty columns (a coinbase has no ins)', () => {
    const rand = rng(3);
    const txs = [{ ...tx(rand), ins: Buffer.alloc(0) }, tx(rand), { ...tx(rand), ins: Buffer.alloc(0) }];
    const p = encodePart(txs);
    txs.forEach((t, slot) => same(decodePartTx(p, slot), t));
    expect(decodePartTx(p, 0)!.ins.length).toBe(0);
  });

  it('widens its ends to 4 bytes once a concatenation passes 64 KB, and not before', () => {
    const rand = rng(11);
    const under = encodePart([tx(rand, 40_000), tx(rand, 2 ** 16 - 1 - 40_000)]);
    expect(under.ends[0]).toBe(2);
    const at = encodePart([tx(rand, 40_000), tx(rand, 2 ** 16 - 40_000)]);
    expect(at.ends[0]).toBe(4);
    expect(decodePartTx(at, 1)!.outs.length).toBe(2 ** 16 - 40_000);
    // an end past 2^24 (the width's fourth byte)
    const huge = [tx(rand, 2 ** 24 + 5), tx(rand)];
    const hp = encodePart(huge);
    huge.forEach((t, slot) => same(decodePartTx(hp, slot), t));
    const txs = [tx(rand), tx(rand, 70_000), tx(rand)];
    const p = encodePart(txs);
    expect(p.ends[0]).toBe(4);
    expect(p.ends.length).toBe(1 + 3 * 8);
    txs.forEach((t, slot) => same(decodePartTx(p, slot), t));
  });

  it('refuses an empty part, one of more than 64, and a txid that is not 32 bytes', () => {
    const rand = rng(5);
    expect(() => encodePart([])).toThrow(RangeError);
    expect(() => encodePart(Array.from({ length: PART_TXS + 1 }, () => tx(rand)))).toThrow(RangeError);
    expect(() => encodePart([{ ...tx(rand), txid: randomBytes(31) }])).toThrow(RangeError);
  });

  it('names a part and a slot from a tx_num', () => {
    const n = (1234n << 20n) | 130n;
    expect(partOf(n)).toBe((1234n << 14n) | 2n);
    expect(slotOf(n)).toBe(2);
    expect(partOf(0n)).toBe(0n);
    expect(slotOf(63n)).toBe(63);
    expect(slotOf(64n)).toBe(0);
  });
});
