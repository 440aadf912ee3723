/**
 * The batcher's pure steps (stamp/batch-plan.ts), case by case: when a woken batch starts, which
 * coins pay, the pool after a transaction, and how claimed stamps are cut into transactions.
 */
import { describe, expect, it } from 'vitest';
import { chooseCoins, nextCut, poolAfter, windowWaitMs, type Cut } from '../../../stamp/batch-plan.js';
import type { Coin } from '../../../stamp/build.js';

const coin = (n: number, value: bigint, depth = 0): Coin => ({
  txid: Buffer.alloc(32, n),
  vout: 0,
  value,
  script: Buffer.from([0x51]),
  depth,
});
const ids = (coins: readonly Coin[] | null) => coins?.map((c) => c.txid[0]) ?? null;

describe('windowWaitMs', () => {
  it.each([
    // [now, lastStart, window, wait]
    [10_000, 9_800, 500, 300, 'steady load: a window after the last batch started'],
    [10_000, 9_200, 500, 0, 'a batch that ran longer than a window: at once'],
    [10_000, 8_000, 500, 500, 'after a quiet spell: a whole window'],
    [10_000, 0, 500, 500, 'the first batch: a whole window'],
  ])('now %i, last start %i, window %i: waits %i (%s)', (now, last, window, wait) => {
    expect(windowWaitMs(now, last, window)).toBe(wait);
  });
});

describe('chooseCoins', () => {
  // A fee of 100 per coin spent, plus 50 of change dust.
  const need = (chosen: readonly Coin[]) => 100n * BigInt(chosen.length) + 50n;
  it.each([
    ['the first coin when it pays', [coin(1, 1000n), coin(2, 5000n)], 25, [1]],
    ['as many as it takes, in pool order', [coin(1, 100n), coin(2, 100n), coin(3, 200n)], 25, [1, 2, 3]],
    ['coins at the chain limit left out', [coin(1, 1000n, 25), coin(2, 1000n, 3)], 25, [2]],
    ['null when the pool cannot pay', [coin(1, 100n), coin(2, 120n)], 25, null],
    ['null from an empty pool', [], 25, null],
  ] as const)('%s', (_, pool, maxChain, expected) => {
    expect(ids(chooseCoins(pool, maxChain, need))).toEqual(expected);
  });
});

describe('poolAfter', () => {
  it('drops the spent coins, adds the change, shallowest and then largest first', () => {
    const pool = [coin(1, 500n), coin(2, 900n), coin(3, 700n, 1)];
    const after = poolAfter(pool, [pool[0]!], [coin(9, 300n, 2), coin(8, 800n, 1)]);
    expect(ids(after)).toEqual([2, 8, 3, 9]);
    expect(ids(pool)).toEqual([1, 2, 3]);
  });
});

describe('nextCut', () => {
  it.each([
    ['a paid group: on to the next', { next: 0, size: 4 }, 4, true, { next: 4, size: 4 }],
    ['a short last group paid', { next: 8, size: 4 }, 2, true, { next: 10, size: 4 }],
    ['an unpaid group: the same stamps, half as many', { next: 4, size: 4 }, 4, false, { next: 4, size: 2 }],
    ['an unpaid odd group: rounded down', { next: 0, size: 5 }, 5, false, { next: 0, size: 2 }],
    ['a single unpaid stamp: the rest are unfunded', { next: 6, size: 1 }, 1, false, null],
  ] as const)('%s', (_, cut, length, paid, expected) => {
    expect(nextCut(cut as Cut, length, paid)).toEqual(expected);
  });

  it('cuts ten stamps that only pay by two into transactions of two', () => {
    // (a group pays when it holds at most two stamps)
    const sizes: number[] = [];
    let cut: Cut | null = { next: 0, size: 8 };
    while (cut && cut.next < 10) {
      const length = Math.min(cut.size, 10 - cut.next);
      if (length <= 2) sizes.push(length);
      cut = nextCut(cut, length, length <= 2);
    }
    expect(sizes).toEqual([2, 2, 2, 2, 2]);
    expect(cut).toEqual({ next: 10, size: 2 });
  });
});
