/**
 * The batcher's decisions (stamp/batcher.ts), apart from its I/O: pure steps. When the next
 * batch starts (a window after the stamp that woke it, or after the last batch under steady
 * load); which coins pay for a transaction (shallowest first, until they cover its fee and a
 * change output); the coin pool after a transaction (its inputs gone, its change in, shallowest
 * and then largest first); how the claimed stamps are cut into transactions (`perTx` each,
 * halved when a group cannot be paid for, as many as can be).
 * @module
 */
import type { Coin } from './build.js';
import { coinKey } from './coins.js';

/**
 * How long a batch woken by a request waits before it starts: under steady load batches follow
 * one another a window apart (stamps that came during a batch go into the next one); after a
 * quiet spell (two windows without a batch) the first stamp opens a whole window.
 */
export function windowWaitMs(now: number, lastStart: number, windowMs: number): number {
  const since = now - lastStart;
  return since < 2 * windowMs ? Math.max(0, windowMs - since) : windowMs;
}

/**
 * The coins, shallowest first as the pool is kept, that pay `need(chosen)` (the fee of a
 * transaction spending them, and a change output's dust); coins `maxChain` deep are left out.
 * Null when the pool cannot pay.
 */
export function chooseCoins(pool: readonly Coin[], maxChain: number, need: (chosen: readonly Coin[]) => bigint): Coin[] | null {
  const chosen: Coin[] = [];
  let total = 0n;
  for (const c of pool) {
    if (c.depth >= maxChain) continue;
    chosen.push(c);
    total += c.value;
    if (total >= need(chosen)) return chosen;
  }
  return null;
}

/** The pool after a transaction spent `spent` and created `change`: shallowest first, then largest. */
export function poolAfter(pool: readonly Coin[], spent: readonly Coin[], change: readonly Coin[]): Coin[] {
  const used = new Set(spent.map(coinKey));
  return [...pool.filter((c) => !used.has(coinKey(c))), ...change].sort(
    (a, b) => a.depth - b.depth || (a.value > b.value ? -1 : a.value < b.value ? 1 : 0),
  );
}

/** Where the cutting of claimed stamps into transactions stands: the next stamp, the group size. */
export type Cut = { next: number; size: number };

/**
 * The cut after the group starting at `cut.next` (`length` stamps) was paid for or not: on to the
 * next group, or the same stamps in groups half as large; null when a single stamp cannot be
 * paid (the rest are left unfunded).
 */
export function nextCut(cut: Cut, length: number, paid: boolean): Cut | null {
  if (paid) return { next: cut.next + length, size: cut.size };
  return length > 1 ? { next: cut.next, size: Math.floor(length / 2) } : null;
}
