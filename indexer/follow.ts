/**
 * Decides the next sync step by comparing the stored tip with the node's active chain
 * (blockbook's loop): idle when they agree, apply the next block when the tip is on the node's
 * chain, otherwise undo down to the fork point, the highest height where both chains hold the
 * same block. Reads only; the caller applies or undoes. Hashes are display hex.
 * @module
 */
import type { ChainSource } from './chain-source.js';

export type SyncStep =
  | { kind: 'idle' }
  | { kind: 'apply'; height: number; hash: string }
  /** Undo every block above `forkHeight` (-1: the chains share no block at all). */
  | { kind: 'undo'; forkHeight: number };

/** The index's side: its tip and the hash it stores at a height. */
export interface LocalChain {
  height: number;
  hash: string | null;
  /** Stored main-chain hash at `height` (≤ tip), or null. */
  hashAt(height: number): Promise<string | null>;
}

export type NodeChain = Pick<ChainSource, 'getBestBlockHash' | 'getBlockHash'>;

/** Heights below the tip compared one by one before switching to a binary search. */
const LINEAR_STEPS = 8;

/**
 * The highest height ≤ `below` where the node's block equals the stored one, or -1. Relies on
 * agreement being true up to the fork and false above it; a node that moves meanwhile is
 * caught by the next turn, which re-plans from the stored tip.
 */
export async function findForkHeight(local: LocalChain, node: NodeChain, below: number): Promise<number> {
  const agree = async (h: number) => {
    const [mine, theirs] = await Promise.all([local.hashAt(h), node.getBlockHash(h)]);
    return mine !== null && mine === theirs;
  };
  let h = below;
  for (let i = 0; i < LINEAR_STEPS && h >= 0; i++, h--) {
    if (await agree(h)) return h;
  }
  if (h < 0) return -1;
  // Binary search in [lo, hi]: agree(lo) is unknown (maybe -1 = none), agree(hi + 1) is false.
  let lo = -1;
  let hi = h;
  while (lo < hi) {
    const mid = Math.floor((lo + hi + 1) / 2);
    if (await agree(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The next step to bring the index to the node's best chain. */
export async function nextStep(local: LocalChain, node: NodeChain): Promise<SyncStep> {
  const best = await node.getBestBlockHash();
  if (local.height >= 0 && local.hash === best) return { kind: 'idle' };
  if (local.height < 0) {
    const genesis = await node.getBlockHash(0);
    return genesis === null ? { kind: 'idle' } : { kind: 'apply', height: 0, hash: genesis };
  }
  const theirs = await node.getBlockHash(local.height);
  if (theirs !== null && theirs === local.hash) {
    const next = await node.getBlockHash(local.height + 1);
    // No block above ours although the best differs: the node is mid-reorg; look again next turn.
    return next === null ? { kind: 'idle' } : { kind: 'apply', height: local.height + 1, hash: next };
  }
  return { kind: 'undo', forkHeight: await findForkHeight(local, node, local.height - 1) };
}
