/**
 * Blocks fetched ahead while the indexer catches up block by block: after applying height h it
 * asks for the next `depth` blocks' hashes and bytes, so the next apply finds its block already
 * on the way. A prefetched block is handed over once; when the chain moves elsewhere the stale
 * ones are dropped with the map (at most 4 × depth are kept).
 * @module
 */
import type { ChainSource } from './chain-source.js';

export interface Prefetcher {
  /** The block `hash`: the prefetched request when there is one, else a fresh fetch. */
  get(hash: string): Promise<Uint8Array | null>;
  /** Starts fetching the blocks above `height`, up to `nodeHeight` and at most `depth` ahead. */
  after(height: number, nodeHeight: number): void;
  /** Starts fetching these blocks (hashes already known), those not on their way yet. */
  ahead(hashes: readonly string[]): void;
  /** Keeps a block fetched but not used yet, for the next `get` of its hash. */
  keep(hash: string, raw: Uint8Array): void;
}

export function createPrefetcher(source: ChainSource, depth: number): Prefetcher {
  const prefetched = new Map<string, Promise<Uint8Array | null>>();
  const fetch = (hash: string) => {
    if (prefetched.has(hash)) return;
    const p = source.getBlock(hash);
    p.catch(() => undefined);
    prefetched.set(hash, p);
  };
  return {
    get(hash) {
      const p = prefetched.get(hash);
      if (p) {
        prefetched.delete(hash);
        return p;
      }
      return source.getBlock(hash);
    },
    after(height, nodeHeight) {
      if (prefetched.size > depth * 4) prefetched.clear();
      for (let h = height + 1; h <= Math.min(nodeHeight, height + depth); h++) {
        void source
          .getBlockHash(h)
          .then((hash) => {
            if (hash !== null) fetch(hash);
          })
          .catch(() => undefined);
      }
    },
    keep(hash, raw) {
      prefetched.set(hash, Promise.resolve(raw));
    },
    ahead(hashes) {
      if (prefetched.size > depth * 4) prefetched.clear();
      for (const hash of hashes.slice(0, depth)) fetch(hash);
    },
  };
}
