/**
 * Decides the next sync step by comparing the stored tip with the node's active chain
 * (blockbook's loop): idle when they agree, apply the next block when the tip is on the node's
 * chain, otherwise undo down to the fork point, the highest height where both chains hold the
 * same block. One node round trip in the common cases (tip, hash at our height and the next);
 * the fork search asks for a window of heights at once, then bisects. Reads only; the caller
 * applies or undoes. Hashes are display hex.
 * @module
 */
import type { ChainSource, ChainView } from './chain-source.js';

export type SyncStep =
  | { kind: 'idle'; node: ChainView }
  | { kind: 'apply'; height: number; hash: string; node: ChainView }
  /** Undo every block above `forkHeight` (-1: the chains share no block at all). */
  | { kind: 'undo'; forkHeight: number; node: ChainView };

/** The index's side: its tip and the hash it stores at a height. */
export interface LocalChain {
  height: number;
  hash: string | null;
  /** Stored main-chain hashes at `heights` (≤ tip), null where none. */
  hashesAt(heights: readonly number[]): Promise<(string | null)[]>;
}

export type NodeChain = Pick<ChainSource, 'getChainView'>;

/** Heights below the tip compared in the first fork-search round trip. */
const WINDOW = 8;

/**
 * The highest height ≤ `below` where the node's block equals the stored one, or -1. Relies on
 * agreement being true up to the fork and false above it; a node that moves meanwhile is
 * caught by the next turn, which re-plans from the stored tip.
 */
export async function findForkHeight(local: LocalChain, node: NodeChain, below: number): Promise<number> {
  const agreeAll = async (heights: number[]): Promise<boolean[]> => {
    const [mine, theirs] = await Promise.all([local.hashesAt(heights), node.getChainView(heights)]);
    return heights.map((_, i) => mine[i] !== null && mine[i] === theirs.hashes[i]);
  };
  const window: number[] = [];
  for (let h = below; h >= 0 && window.length < WINDOW; h--) window.push(h);
  if (window.length === 0) return -1;
  const agree = await agreeAll(window);
  const hit = agree.indexOf(true);
  if (hit >= 0) return window[hit]!;
  // Bisect [lo, hi]: agreement at lo unknown (-1 = none), false above hi.
  let lo = -1;
  let hi = window[window.length - 1]! - 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi + 1) / 2);
    if ((await agreeAll([mid]))[0]) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The next step to bring the index to the node's best chain. */
export async function nextStep(local: LocalChain, node: NodeChain): Promise<SyncStep> {
  if (local.height < 0) {
    const view = await node.getChainView([0]);
    const genesis = view.hashes[0] ?? null;
    return genesis === null ? { kind: 'idle', node: view } : { kind: 'apply', height: 0, hash: genesis, node: view };
  }
  const view = await node.getChainView([local.height, local.height + 1]);
  if (local.hash === view.bestHash) return { kind: 'idle', node: view };
  const [theirs, next] = view.hashes;
  if (theirs !== null && theirs === local.hash) {
    // No block above ours although the best differs: the node is mid-reorg; look again next turn.
    return next === null || next === undefined
      ? { kind: 'idle', node: view }
      : { kind: 'apply', height: local.height + 1, hash: next, node: view };
  }
  return { kind: 'undo', forkHeight: await findForkHeight(local, node, local.height - 1), node: view };
}
