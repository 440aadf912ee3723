/**
 * nextStep against a fake node (FixtureChain over synthetic hashes, no block bodies needed):
 * empty index, in sync, behind, ahead (node shorter: reorg to a lower height), reorgs of depth
 * 1..200 found at the right fork height with few round trips, and chains sharing no block.
 */
import { describe, expect, it } from 'vitest';
import { findForkHeight, nextStep, type LocalChain } from '../../../indexer/follow.js';
import { FixtureChain } from '../../support/chain-fixture.js';

const hashOf = (branch: string, h: number) => `${branch}${String(h).padStart(8, '0')}`.padEnd(64, '0');
const chain = (branch: string, n: number, forkAt = -1, base = 'a') =>
  Array.from({ length: n }, (_, h) => hashOf(h <= forkAt ? base : branch, h));

function localOf(hashes: readonly string[]): LocalChain {
  return {
    height: hashes.length - 1,
    hash: hashes[hashes.length - 1] ?? null,
    async hashesAt(heights) {
      return heights.map((h) => hashes[h] ?? null);
    },
  };
}

function nodeOf(hashes: readonly string[]): FixtureChain {
  const n = new FixtureChain();
  n.setActive(hashes);
  return n;
}

describe('nextStep', () => {
  it('applies genesis to an empty index', async () => {
    expect(await nextStep(localOf([]), nodeOf(chain('a', 3)))).toMatchObject({ kind: 'apply', height: 0, hash: hashOf('a', 0) });
  });

  it('is idle when the tips agree', async () => {
    const c = chain('a', 10);
    expect((await nextStep(localOf(c), nodeOf(c))).kind).toBe('idle');
  });

  it('applies the next block when behind', async () => {
    const c = chain('a', 10);
    const step = await nextStep(localOf(c.slice(0, 4)), nodeOf(c));
    expect(step).toMatchObject({ kind: 'apply', height: 4, hash: c[4] });
    expect(step.node.height).toBe(9);
  });

  it('undoes to the node tip when the node is shorter on the same chain (lower height)', async () => {
    const c = chain('a', 10);
    expect(await nextStep(localOf(c), nodeOf(c.slice(0, 7)))).toMatchObject({ kind: 'undo', forkHeight: 6 });
  });

  for (const depth of [1, 2, 6, 10, 100, 200]) {
    it(`finds the fork of a ${depth}-block reorg`, async () => {
      const mine = chain('a', 300);
      const theirs = chain('b', 300 + 1, 299 - depth);
      const node = nodeOf(theirs);
      const step = await nextStep(localOf(mine), node);
      expect(step).toMatchObject({ kind: 'undo', forkHeight: 299 - depth });
      expect(node.calls).toBeLessThanOrEqual(12);
    });
  }

  it('reports -1 when the chains share no block', async () => {
    expect(await findForkHeight(localOf(chain('a', 50)), nodeOf(chain('b', 50)), 49)).toBe(-1);
  });
});
