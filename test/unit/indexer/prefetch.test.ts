/**
 * The block prefetcher's hashes learned ahead are the current turn's only: after the node's
 * chain changed above the plan, a later plan gives the node's new hashes, not those an earlier
 * plan learned (a turn of one block in between included).
 */
import { describe, expect, it } from 'vitest';
import { createPrefetcher } from '../../../indexer/prefetch.js';
import { FixtureChain } from '../../support/chain-fixture.js';

const hashAt = (branch: string, h: number) => `${branch}${h.toString(16).padStart(8, '0')}`.padEnd(64, '0');

describe('block prefetcher', () => {
  it('plans on the node’s chain after it changed above an earlier plan', async () => {
    const node = new FixtureChain();
    const main = Array.from({ length: 31 }, (_, h) => hashAt('a', h));
    node.setActive(main);
    const p = createPrefetcher(node, 3);
    const tip = () => ({ height: node.height, hash: node.active[node.height]! });

    expect((await p.hashes({ height: 10, hash: main[10]! }, 20, tip())).map((b) => b.hash)).toEqual(main.slice(10, 21));
    // The node reorganizes from height 15 on.
    const other = [...main.slice(0, 15), ...Array.from({ length: 16 }, (_, i) => hashAt('b', 15 + i))];
    node.setActive(other);
    // A turn of one block (the plan's first is the node's own answer), then the read-ahead.
    expect(await p.hashes({ height: 12, hash: other[12]! }, 12, tip())).toEqual([{ height: 12, hash: other[12] }]);
    p.after(12, node.height);
    expect((await p.hashes({ height: 13, hash: other[13]! }, 20, tip())).map((b) => b.hash)).toEqual(other.slice(13, 21));
  });
});
