/**
 * The outcome writer's waiting room (streams/due-queues.ts): one FIFO per window, the first due
 * read from the FIFOs' heads, items taken first due first across windows.
 */
import { describe, expect, it } from 'vitest';
import { DueQueues } from '../../../streams/due-queues.js';

describe('due queues', () => {
  it('knows the first due across windows, and takes the first due first', () => {
    const q = new DueQueues<string>();
    expect(q.firstDue()).toBe(Infinity);
    expect(q.take(5)).toEqual([]);
    q.push('batch-a', 200, 1000); // due 1200
    q.push('own-a', 10, 1100); // due 1110
    q.push('batch-b', 200, 1150); // due 1350
    q.push('own-b', 10, 1300); // due 1310
    expect(q.size).toBe(4);
    expect(q.firstDue()).toBe(1110);
    expect(q.take(2)).toEqual(['own-a', 'batch-a']);
    expect(q.firstDue()).toBe(1310);
    expect(q.take(10)).toEqual(['own-b', 'batch-b']);
    expect(q.size).toBe(0);
    expect(q.firstDue()).toBe(Infinity);
  });

  it('takes runs of one window up to the next head of another, and stops at n inside a run', () => {
    const q = new DueQueues<string>();
    for (const [v, at] of [
      ['a1', 0],
      ['a2', 1],
      ['a3', 2],
      ['a4', 50],
    ] as const)
      q.push(v, 100, at); // due 100, 101, 102, 150
    for (const [v, at] of [
      ['b1', 0],
      ['b2', 10],
      ['b3', 15],
    ] as const)
      q.push(v, 101, at); // due 101, 111, 116
    for (const [v, at] of [['c1', 0]] as const) q.push(v, 140, at); // due 140
    expect(q.take(2)).toEqual(['a1', 'a2']);
    expect(q.firstDue()).toBe(101);
    expect(q.take(Infinity)).toEqual(['b1', 'a3', 'b2', 'b3', 'c1', 'a4']);
    expect(q.size).toBe(0);
  });

  it('keeps each window in the order pushed through many pushes and takes (its array compacted on the way)', () => {
    const q = new DueQueues<number>();
    const taken: number[] = [];
    let next = 0;
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 300; i++) q.push(next++, i % 3 === 0 ? 0 : 200, round * 1000 + i);
      taken.push(...q.take(250));
      // (the first due: the smallest due among what waits, read from the heads alone)
      expect(q.firstDue()).toBe(Math.min(...[0, 200].map((w) => firstDueOf(next, taken, w))));
    }
    taken.push(...q.take(Infinity));
    expect(taken.sort((a, b) => a - b)).toEqual(Array.from({ length: next }, (_, i) => i));
    expect(q.size).toBe(0);
  });
});

/** The due of the first item of window `w` (i % 3 === 0: window 0) not yet taken, Infinity if none; item i was pushed at (i / 300 | 0) * 1000 + i % 300. */
function firstDueOf(next: number, taken: readonly number[], w: number): number {
  const gone = new Set(taken);
  for (let i = 0; i < next; i++) {
    if ((i % 300) % 3 === 0 ? w !== 0 : w !== 200) continue;
    if (!gone.has(i)) return Math.floor(i / 300) * 1000 + (i % 300) + w;
  }
  return Infinity;
}
