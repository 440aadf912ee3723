/**
 * The one block prefetcher: blocks read ahead of the writer (indexer/writer/), whatever the
 * source, so that the next block is on its way while the current one is written.
 * - `prefetchFeed`: a height-ordered feed that keeps a window of reads in flight, over any
 *   `fetch(height)`: the bulk sync's feed from the node (`Prefetcher.feed`) and the import's
 *   feed from blk*.dat files (blk-feed.ts);
 * - `createPrefetcher`: the node's blocks while catching up block by block. The run loop plans a
 *   turn's blocks with `hashes` and takes them with `get`; before writing them it calls `after`,
 *   which asks the node for the hashes of the blocks beyond (one RPC batch) and starts fetching
 *   those blocks, so that the next turn's plan finds its hashes here and its blocks on the way:
 *   no height's hash and no block is asked of the node twice. Hashes learned ahead are taken only
 *   by the next plan, and only when they agree with the node's answer that plan starts from (the
 *   hash at its first height, the node's tip hash when in range); otherwise they are dropped and
 *   asked again. A hash the node replaced in between costs what a reorg during the write costs:
 *   the block applies on the old branch or not at all (`applyBlocks` checks each block extends the
 *   tip), and the next turn's fork search undoes it.
 * A prefetched block is handed over once; a bounded number wait (the oldest dropped).
 * @module
 */
import type { ChainSource } from './chain-source.js';

/** A block of the chain to write, in height order. */
export interface FeedBlock {
  height: number;
  hash: string;
  raw: Uint8Array;
}

/** Blocks in height order from a start height; null at the end. */
export interface BlockFeed {
  next(): Promise<FeedBlock | null>;
  close(): void;
}

/**
 * A feed of heights `from..to` with up to `ahead` blocks requested in advance; `fetch` gives
 * the block at a height (null ends the feed there).
 */
export function prefetchFeed(
  from: number,
  to: number,
  ahead: number,
  fetch: (height: number) => Promise<FeedBlock | null>,
  onClose?: () => void,
): BlockFeed {
  const queue: Promise<FeedBlock | null>[] = [];
  let nextHeight = from;
  let closed = false;
  const fill = () => {
    while (!closed && queue.length < ahead && nextHeight <= to) {
      const p = fetch(nextHeight++);
      p.catch(() => undefined);
      queue.push(p);
    }
  };
  return {
    async next() {
      fill();
      const p = queue.shift();
      if (!p) return null;
      const b = await p;
      fill();
      return b;
    },
    close() {
      closed = true;
      onClose?.();
    },
  };
}

/** A planned block: its height and the node's hash there. */
export interface PlannedBlock {
  height: number;
  hash: string;
}

export interface Prefetcher {
  /**
   * The active chain's blocks from `first` (the plan's start, from the node's latest answer)
   * up to `last`, stopping below the first height the node has no block at: hashes learned
   * ahead by `after` when they agree with `nodeTip`, the others in one RPC batch.
   */
  hashes(first: PlannedBlock, last: number, nodeTip: PlannedBlock): Promise<PlannedBlock[]>;
  /** The block `hash`: the prefetched request when there is one, else a fresh fetch. */
  get(hash: string): Promise<Uint8Array | null>;
  /** Starts fetching these blocks (hashes already known), those not on their way yet. */
  ahead(hashes: readonly string[]): void;
  /**
   * Learns the hashes of the blocks above `height`, up to `nodeHeight` and at most `count` (the
   * next turn's blocks; default and at least `depth`) ahead (one RPC batch), and fetches them,
   * `depth` requests at a time, for the next `hashes`.
   */
  after(height: number, nodeHeight: number, count?: number): void;
  /** Keeps a block fetched but not written yet (and its hash), for the next plan and `get`. */
  keep(block: PlannedBlock, raw: Uint8Array): void;
  /** Blocks `from..to` in height order, at most `inFlight` requests open (the bulk sync's feed). */
  feed(from: number, to: number, inFlight?: number): BlockFeed;
}

/** Blocks that may wait here at most (fetched ahead, or kept from a turn cut short): the oldest go first. */
const waitingBound = (depth: number, reach: number) => Math.max(depth * 4, reach * 2, 64);

/**
 * `depth`: requests to the node open at most (0: nothing is read ahead); `after` reads ahead as
 * far as it is asked (a turn's worth), the requests beyond `depth` waiting their turn.
 */
export function createPrefetcher(source: ChainSource, depth: number): Prefetcher {
  const blocks = new Map<string, Promise<Uint8Array | null>>();
  /** Blocks to fetch ahead once a request slot is free, in the order asked. */
  const queued = new Set<string>();
  let open = 0;
  /** The farthest `after` was asked to read ahead (blocks), for the waiting bound. */
  let reach = depth;
  /** Hashes learned since the last plan (by `after`, `keep`), by height, for the next plan only. */
  let known = new Map<number, string>();
  /** The last plan's hashes by height (and those learned beyond it): `after` takes those it needs from here. */
  let lastPlan = new Map<number, string>();
  /** `after`'s RPC batch, until its hashes are in `known`. */
  let learning: Promise<void> | null = null;
  const hold = (hash: string, p: Promise<Uint8Array | null>) => {
    if (blocks.size >= waitingBound(depth, reach)) blocks.delete(blocks.keys().next().value!);
    blocks.set(hash, p);
  };
  const pump = () => {
    for (const hash of queued) {
      if (open >= depth) return;
      queued.delete(hash);
      open++;
      const p = source.getBlock(hash).finally(() => {
        open--;
        pump();
      });
      p.catch(() => undefined);
      hold(hash, p);
    }
  };
  const fetch = (hash: string) => {
    if (blocks.has(hash) || queued.has(hash)) return;
    queued.add(hash);
    pump();
  };
  const get = (hash: string) => {
    const p = blocks.get(hash);
    if (p) {
      blocks.delete(hash);
      return p;
    }
    // Wanted now: no longer worth a slot of the read-ahead.
    queued.delete(hash);
    return source.getBlock(hash);
  };
  return {
    async hashes(first, last, nodeTip) {
      if (learning) await learning;
      const have = known;
      known = new Map();
      // Learned before the node's latest answer: kept only when they start at the plan's first
      // block as that answer gives it (not after an undo, a reorg there) and agree with its tip.
      if (have.get(first.height) !== first.hash || (have.has(nodeTip.height) && have.get(nodeTip.height) !== nodeTip.hash)) have.clear();
      const planned = [first];
      lastPlan = new Map([[first.height, first.hash]]);
      if (last <= first.height) return planned;
      const missing: number[] = [];
      for (let h = first.height + 1; h <= last; h++) if (!have.has(h)) missing.push(h);
      if (missing.length > 0) {
        const view = await source.getChainView(missing);
        missing.forEach((h, i) => {
          const hash = view.hashes[i];
          if (hash !== null && hash !== undefined) have.set(h, hash);
        });
      }
      for (let h = first.height + 1; h <= last; h++) {
        const hash = have.get(h);
        if (hash === undefined) break;
        planned.push({ height: h, hash });
      }
      lastPlan = new Map(planned.map((b) => [b.height, b.hash]));
      // Learned beyond this plan (a turn cut short reads on from below them): agreed with the same
      // answer, so `after` keeps them too.
      for (const [h, hash] of have) if (h > last) lastPlan.set(h, hash);
      return planned;
    },
    get,
    ahead(hashes) {
      for (const hash of hashes.slice(0, depth)) fetch(hash);
    },
    after(height, nodeHeight, count = depth) {
      const ahead = depth === 0 ? 0 : Math.max(depth, count);
      reach = Math.max(reach, ahead);
      // The plan's blocks this turn did not take (a full transaction) stay known, the nearest fetched.
      for (const [h, hash] of lastPlan) if (h > height) known.set(h, hash);
      const heights: number[] = [];
      for (let h = height + 1; h <= Math.min(nodeHeight, height + ahead); h++) {
        const hash = known.get(h);
        if (hash === undefined) heights.push(h);
        else fetch(hash);
      }
      if (heights.length === 0) return;
      const p: Promise<void> = source
        .getChainView(heights)
        .then((view) => {
          heights.forEach((h, i) => {
            const hash = view.hashes[i];
            if (hash === null || hash === undefined) return;
            known.set(h, hash);
            fetch(hash);
          });
        })
        // A failed batch only means the next plan asks again.
        .catch(() => undefined)
        .finally(() => {
          if (learning === p) learning = null;
        });
      learning = p;
    },
    keep(block, raw) {
      known.set(block.height, block.hash);
      hold(block.hash, Promise.resolve(raw));
    },
    feed(from, to, inFlight = 8) {
      return prefetchFeed(from, to, inFlight, async (height) => {
        const hash = await source.getBlockHash(height);
        if (hash === null) return null;
        const raw = await get(hash);
        return raw === null ? null : { height, hash, raw };
      });
    },
  };
}
