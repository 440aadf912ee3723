/**
 * The block prefetcher's hashes learned ahead are the current turn's only: after the node's
 * chain changed above the plan, a later plan gives the node's new hashes, not those an earlier
 * plan learned (a turn of one block in between included). Reading ahead a whole turn of blocks
 * (more than its request depth) keeps at most `depth` requests open and hands the next plan its
 * hashes and blocks without asking the node again.
 */
import { describe, expect, it } from 'vitest';
import { createPrefetcher } from '../../../indexer/prefetch.js';
import type { ChainView } from '../../../indexer/chain-source.js';
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

  it('reads a whole turn ahead with at most depth requests open', async () => {
    /** Counts hash batches and block requests; blocks are answered only when released. */
    class SlowChain extends FixtureChain {
      views = 0;
      fetched: string[] = [];
      open = 0;
      maxOpen = 0;
      private waiting: (() => void)[] = [];
      override async getChainView(heights: readonly number[]): Promise<ChainView> {
        this.views++;
        return super.getChainView(heights);
      }
      override async getBlock(hash: string): Promise<Uint8Array | null> {
        this.fetched.push(hash);
        this.maxOpen = Math.max(this.maxOpen, ++this.open);
        await new Promise<void>((r) => this.waiting.push(r));
        this.open--;
        return new TextEncoder().encode(hash);
      }
      /** Answers the requests open now; resolves once the prefetcher has reacted. */
      async release(): Promise<number> {
        const now = this.waiting.splice(0);
        for (const r of now) r();
        await new Promise((r) => setImmediate(r));
        return now.length;
      }
    }
    const node = new SlowChain();
    const main = Array.from({ length: 41 }, (_, h) => hashAt('a', h));
    node.setActive(main);
    const p = createPrefetcher(node, 3);
    const tip = () => ({ height: node.height, hash: node.active[node.height]! });
    await p.hashes({ height: 5, hash: main[5]! }, 10, tip());
    const views = node.views;
    // The turn wrote 5..10: the next turn's 20 blocks are read while it writes.
    p.after(10, node.height, 20);
    await new Promise((r) => setImmediate(r));
    while ((await node.release()) > 0) expect(node.open).toBeLessThanOrEqual(3);
    expect(node.maxOpen).toBe(3);
    expect(node.fetched).toEqual(main.slice(11, 31));
    const next = await p.hashes({ height: 11, hash: main[11]! }, 30, tip());
    expect(next.map((b) => b.hash)).toEqual(main.slice(11, 31));
    // One batch for the 20 hashes ahead, none for the plan; every block handed over as fetched.
    expect(node.views).toBe(views + 1);
    for (const b of next) expect(new TextDecoder().decode((await p.get(b.hash))!)).toBe(b.hash);
    expect(node.fetched).toHaveLength(20);
  });
});
