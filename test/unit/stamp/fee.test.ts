import { describe, expect, it } from 'vitest';
import { chainDepths } from '../../../stamp/coins.js';
import { btcPerKvBToSatPerKvB, feeFor, rateOf, replacementFee, satPerVbToPerKvB } from '../../../stamp/fee.js';

describe('fee arithmetic', () => {
  it('converts units and rounds fees up as CFeeRate does', () => {
    expect(satPerVbToPerKvB(2)).toBe(2000n);
    expect(satPerVbToPerKvB(0.1)).toBe(100n);
    expect(btcPerKvBToSatPerKvB(0.00001)).toBe(1000n);
    expect(feeFor(1000n, 141)).toBe(141n);
    expect(feeFor(1500n, 141)).toBe(212n);
    expect(feeFor(1n, 10)).toBe(1n);
    expect(rateOf(212n, 141)).toBe(1503n);
  });

  it('a replacement pays rule 3 + rule 4, ≥ 25% more feerate, and the package target', () => {
    const original = { fee: 1000n, vsize: 500 }; // 2 sat/vB
    const noAncestors = { fee: 0n, vsize: 0 };
    // Only the 25% bump applies: 2.5 sat/vB × 500 = 1250; rule 3/4 = 1000 + 0.1 × 500 = 1050.
    expect(replacementFee({ original, vsize: 500, ancestors: noAncestors, targetRatePerKvB: 1000n, incrementalPerKvB: 100n })).toBe(1250n);
    // A high incremental relay fee dominates (rule 4).
    expect(replacementFee({ original, vsize: 500, ancestors: noAncestors, targetRatePerKvB: 1000n, incrementalPerKvB: 1000n })).toBe(1500n);
    // The estimate dominates.
    expect(replacementFee({ original, vsize: 500, ancestors: noAncestors, targetRatePerKvB: 10_000n, incrementalPerKvB: 100n })).toBe(
      5000n,
    );
    // With a cheap parent below it, the child pays for the package at the target.
    const fee = replacementFee({
      original,
      vsize: 500,
      ancestors: { fee: 200n, vsize: 1000 },
      targetRatePerKvB: 4000n,
      incrementalPerKvB: 100n,
    });
    expect(fee).toBe((4000n * 1500n) / 1000n - 200n);
    expect(rateOf(fee + 200n, 1500)).toBeGreaterThanOrEqual(4000n);
  });

  it('chain depths count unconfirmed ancestors, the transaction itself included', () => {
    const parents = new Map<string, string[]>([
      ['a', []],
      ['b', ['a']],
      ['c', ['b', 'x']], // x is not live (confirmed): not counted
      ['d', ['a']],
    ]);
    expect(Object.fromEntries(chainDepths(parents))).toEqual({ a: 1, b: 2, c: 3, d: 2 });
  });
});
