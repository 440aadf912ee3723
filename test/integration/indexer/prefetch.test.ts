/**
 * The one block prefetcher while the run loop catches up block by block (several blocks per
 * transaction, blocks read ahead): the prefetcher asks the node for each height's hash and
 * each block once, whatever the turns' sizes (a full transaction leaves planned blocks for the
 * next turn, the writing budget leaves fetched ones), and the index reaches the node's tip.
 * The loop's own fork check (follow.ts) asks the node through another source and is not
 * counted here. A turn that fails (a transient error, seen once under heavy load) plans again
 * from the node's answer and asks its hashes and blocks again: by design, as they may be stale
 * by then. So a few repeats are allowed (2 % of the heights); a prefetcher whose plans ignored
 * what it learned ahead would repeat nearly every height.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { silentLogger } from '../../../src/log.js';
import type { ChainView } from '../../../indexer/chain-source.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { createPrefetcher } from '../../../indexer/prefetch.js';
import { createRunLoop } from '../../../indexer/run.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, loadChainA, type FixtureBlock } from '../../support/chain-fixture.js';

/** The same chain, counting what it is asked per height and per block. */
class CountingChain extends FixtureChain {
  readonly heights = new Map<number, number>();
  readonly fetched = new Map<string, number>();
  private count(h: number): void {
    this.heights.set(h, (this.heights.get(h) ?? 0) + 1);
  }
  override async getChainView(heights: readonly number[]): Promise<ChainView> {
    for (const h of heights) this.count(h);
    return super.getChainView(heights);
  }
  override async getBlockHash(height: number): Promise<string | null> {
    this.count(height);
    return super.getBlockHash(height);
  }
  override async getBlock(hash: string): Promise<Uint8Array | null> {
    this.fetched.set(hash, (this.fetched.get(hash) ?? 0) + 1);
    return super.getBlock(hash);
  }
}

describeFixtures('block prefetcher', () => {
  let t: TestDatabase;
  let blocks: FixtureBlock[];

  beforeAll(async () => {
    const a = loadChainA();
    blocks = a.main.map((h) => a.blocks.get(h)!);
    t = await createMigratedDatabase('pf');
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('asks each hash and each block once while the loop catches up', async () => {
    const node = new FixtureChain(blocks);
    node.setActive(blocks.map((b) => b.hash));
    const counted = new CountingChain(blocks);
    counted.setActive(blocks.map((b) => b.hash));
    // Turns of up to 5 blocks, 3 read ahead: planned blocks outrun the read-ahead.
    const loop = createRunLoop({
      db: t.db,
      source: node,
      log: silentLogger(),
      pollIntervalMs: 50,
      maxReorgDepth: 100,
      prefetcher: createPrefetcher(counted, 3),
      catchupBlocks: 5,
    });
    const running = loop.run();
    try {
      const last = blocks.length - 1;
      for (let i = 0; i < 2400 && (await readTip(t.db)).height < last; i++) await new Promise((r) => setTimeout(r, 50));
      const tip = await readTip(t.db);
      expect(tip.height).toBe(last);
      expect(hashToHex(tip.hash!)).toBe(blocks[last]!.hash);
    } finally {
      await loop.stop();
      await running.catch(() => undefined);
    }
    expect(counted.heights.size).toBeGreaterThan(blocks.length / 2);
    const allowed = Math.ceil(blocks.length * 0.02);
    const heightRepeats = [...counted.heights].filter(([, n]) => n > 1);
    const blockRepeats = [...counted.fetched].filter(([, n]) => n > 1);
    expect(heightRepeats.length, `heights asked more than once: ${JSON.stringify(heightRepeats)}`).toBeLessThanOrEqual(allowed);
    expect(blockRepeats.length, `blocks fetched more than once: ${JSON.stringify(blockRepeats)}`).toBeLessThanOrEqual(allowed);
  });
});
