/**
 * The run loop's decisions (indexer/run.ts), apart from its I/O: an explicit state and pure
 * steps over it, each returning the next state (as indexer/follow.ts `nextStep` plans a block and
 * leaves the applying to its caller). What a turn does with the sync step `nextStep` gave (hand
 * over to the bulk path, apply a catch-up run of blocks, undo down to the fork or refuse a reorg
 * too deep, or tend the mempool and reorged transactions); which block announcements ZMQ missed;
 * when a progress line is due; what a failure means (back off and retry, or stop). Hashes are
 * display hex; times are ms (Date.now()).
 * @module
 */
import type { SyncStep } from './follow.js';

export type RunPolicy = {
  /** Most blocks applied in one Postgres transaction while behind the node (≥ 1). */
  catchupBlocks: number;
  /** Deepest reorg undone automatically; deeper is ERR_REORG_TOO_DEEP. */
  maxReorgDepth: number;
  pollIntervalMs: number;
  /** Whether block announcements are expected (ZMQ configured), for the missed-blocks metric. */
  zmqEnabled: boolean;
};

/** A catch-up transaction stops taking blocks once it holds this many transactions… */
const CATCHUP_MAX_TXS = 4_000;
/** …or once it has been writing for this long (a commit, and so progress, at least this often). */
export const CATCHUP_BUDGET_MS = 250;
/** A block applied without an announcement for this long was missed by ZMQ. */
const ANNOUNCE_WAIT_MS = 2_000;
/** Announcements remembered at most before their blocks are applied (then forgotten all at once). */
const MAX_ANNOUNCED = 10_000;
/** While catching up block by block: a progress line at most this often. */
const PROGRESS_EVERY_MS = 10_000;
/** Non-transient failures in a row that stop the loop. */
const MAX_FAILURES = 5;

export interface IndexerStatus {
  /** `standby`: waiting for the writer lock another indexer holds (INDEXER_STANDBY). */
  mode: 'standby' | 'starting' | 'bulk' | 'following' | 'stopped';
  tip: { height: number; hash: string | null };
  nodeTip: { height: number; hash: string } | null;
  /** Blocks the index is behind the node (null until the node answered). */
  lag: number | null;
  lastError: string | null;
}

type Mode = IndexerStatus['mode'];

export type RunState = {
  readonly mode: Mode;
  readonly tip: { readonly height: number; readonly hash: string | null };
  readonly nodeTip: { readonly height: number; readonly hash: string } | null;
  /** The node's height when the loop first looked: blocks above it should be announced. */
  readonly firstNodeHeight: number | null;
  /** Announced hashes whose blocks are not applied yet. */
  readonly announced: ReadonlySet<string>;
  /** Blocks applied without an announcement yet: hash → when (late announcements still count). */
  readonly unannounced: ReadonlyMap<string, number>;
  /** Failed turns in a row, and the last one's message (null after a turn that succeeded). */
  readonly failures: number;
  readonly lastError: string | null;
  /** When reorged transactions were last looked at (reorged.ts). */
  readonly lastSettled: number;
  /** Blocks and transactions applied since the last progress line, counted from `at`. */
  readonly progress: { readonly at: number; readonly blocks: number; readonly txs: number };
};

export function initialRunState(now: number): RunState {
  return {
    mode: 'starting',
    tip: { height: -1, hash: null },
    nodeTip: null,
    firstNodeHeight: null,
    announced: new Set(),
    unannounced: new Map(),
    failures: 0,
    lastError: null,
    lastSettled: 0,
    progress: { at: now, blocks: 0, txs: 0 },
  };
}

/** The stored tip and the node's, as a turn read them. */
export function observed(s: RunState, tip: RunState['tip'], node: { height: number; hash: string }): RunState {
  return { ...s, tip, nodeTip: node, firstNodeHeight: s.firstNodeHeight ?? node.height };
}

export function withMode(s: RunState, mode: Mode): RunState {
  return s.mode === mode ? s : { ...s, mode };
}

/** What a turn does. */
export type RunAction =
  | { kind: 'bulk' }
  /** Apply from `height` (whose hash the plan gave) up to `to` (≤ the node's height). */
  | { kind: 'apply'; height: number; hash: string; to: number }
  /** Undo every block from `from` down to `fork` + 1. */
  | { kind: 'undo'; from: number; fork: number; depth: number }
  | { kind: 'fatal'; code: 'ERR_NO_COMMON_BLOCK' | 'ERR_REORG_TOO_DEEP'; message: string }
  /** At the node's tip: the mempool sync and the reorged transactions. */
  | { kind: 'idle' };

/**
 * The turn's action for `step` from a tip at `tipHeight`; `bulk`: the bulk path asked to run.
 * An apply takes up to `catchupBlocks` consecutive blocks, never past the node's tip.
 */
export function nextAction(step: SyncStep, tipHeight: number, bulk: boolean, policy: RunPolicy): RunAction {
  if (bulk) return { kind: 'bulk' };
  if (step.kind === 'apply') {
    const to = Math.min(step.node.height, step.height + Math.max(1, policy.catchupBlocks) - 1);
    return { kind: 'apply', height: step.height, hash: step.hash, to };
  }
  if (step.kind === 'idle') return { kind: 'idle' };
  if (step.forkHeight < 0) {
    return {
      kind: 'fatal',
      code: 'ERR_NO_COMMON_BLOCK',
      message:
        "the node's chain shares no block with the index (another network or a reset regtest node?); re-create the database to follow it",
    };
  }
  const depth = tipHeight - step.forkHeight;
  if (depth > policy.maxReorgDepth) {
    return {
      kind: 'fatal',
      code: 'ERR_REORG_TOO_DEEP',
      message: `reorg of ${depth} blocks (fork at ${step.forkHeight}) exceeds the limit of ${policy.maxReorgDepth}`,
    };
  }
  return { kind: 'undo', from: tipHeight, fork: step.forkHeight, depth };
}

/** Whether a catch-up batch holding `txs` transactions takes another block. */
export const batchTakesMore = (txs: number): boolean => txs < CATCHUP_MAX_TXS;

/** After fetching a batch ending at `last`: the height the prefetcher reads on from, or null at the node's tip. */
export const prefetchAfter = (last: number, nodeHeight: number): number | null => (nodeHeight > last ? last : null);

/** A ZMQ announcement of a block hash. */
export function announce(s: RunState, hash: string): RunState {
  if (s.unannounced.has(hash)) {
    const unannounced = new Map(s.unannounced);
    unannounced.delete(hash);
    return { ...s, unannounced };
  }
  const announced = new Set(s.announced.size > MAX_ANNOUNCED ? [] : s.announced);
  announced.add(hash);
  return { ...s, announced };
}

/**
 * A block applied at `now`: counted toward the progress line (`line`: the figures to log, when
 * one is due while still more than a block behind), and, when announcements are expected for it
 * (ZMQ on, mined after the loop first looked), waiting for its announcement unless it came.
 */
export function blockApplied(
  s: RunState,
  block: { height: number; hash: string; txs: number },
  nodeHeight: number,
  now: number,
  policy: RunPolicy,
): { state: RunState; line: { blocksPerSec: number; txPerSec: number; etaSec: number } | null } {
  let next: RunState = s;
  if (policy.zmqEnabled && block.height > (s.firstNodeHeight ?? Infinity)) {
    if (s.announced.has(block.hash)) {
      const announced = new Set(s.announced);
      announced.delete(block.hash);
      next = { ...next, announced };
    } else {
      next = { ...next, unannounced: new Map(s.unannounced).set(block.hash, now) };
    }
  }
  const blocks = s.progress.blocks + 1;
  const txs = s.progress.txs + block.txs;
  if (now - s.progress.at < PROGRESS_EVERY_MS) return { state: { ...next, progress: { at: s.progress.at, blocks, txs } }, line: null };
  const secs = (now - s.progress.at) / 1000;
  const bps = blocks / secs;
  const line =
    nodeHeight - block.height > 1
      ? {
          blocksPerSec: Math.round(bps * 10) / 10,
          txPerSec: Math.round(txs / secs),
          etaSec: Math.round((nodeHeight - block.height) / bps),
        }
      : null;
  return { state: { ...next, progress: { at: now, blocks: 0, txs: 0 } }, line };
}

/** Blocks still unannounced `ANNOUNCE_WAIT_MS` after they were applied: missed by ZMQ (each a mempool resync). */
export function sweepMissed(s: RunState, now: number): { state: RunState; missed: number } {
  let missed = 0;
  const unannounced = new Map(s.unannounced);
  for (const [hash, at] of s.unannounced) {
    if (now - at < ANNOUNCE_WAIT_MS) continue;
    unannounced.delete(hash);
    missed++;
  }
  return missed === 0 ? { state: s, missed } : { state: { ...s, unannounced }, missed };
}

/**
 * At the node's tip, after the mempool sync stepped (when it had work pending): whether to settle
 * reorged transactions now: once the mempool sync is idle, or at least every poll interval while
 * it is not (a busy node's stream of hints must not starve them).
 */
export function settleReorged(s: RunState, mempoolPending: boolean, now: number, policy: RunPolicy): { state: RunState; settle: boolean } {
  const settle = !mempoolPending || now - s.lastSettled >= policy.pollIntervalMs;
  return { state: settle ? { ...s, lastSettled: now } : s, settle };
}

/** A turn that ended without an error. */
export function succeeded(s: RunState): RunState {
  return s.failures === 0 && s.lastError === null ? s : { ...s, failures: 0, lastError: null };
}

/**
 * A turn that failed: `transient` (Postgres or the network going away, a RetryableError) always
 * backs off and retries; otherwise a FatalError, or more than `MAX_FAILURES` in a row, stops the
 * loop. The back-off doubles from 500 ms up to 30 s.
 */
export function failed(
  s: RunState,
  err: { message: string; transient: boolean; fatal: boolean },
): { state: RunState; verdict: { kind: 'stop' } | { kind: 'retry'; delayMs: number } } {
  const failures = s.failures + 1;
  const state = { ...s, failures, lastError: err.message };
  if (!err.transient && (err.fatal || failures > MAX_FAILURES)) return { state, verdict: { kind: 'stop' } };
  return { state, verdict: { kind: 'retry', delayMs: Math.min(30_000, 250 * 2 ** Math.min(failures, 7)) } };
}

/** What `status()` reports: the lag is the node's height less the tip's (null until the node answered). */
export function statusOf(s: RunState): IndexerStatus {
  return {
    mode: s.mode,
    tip: s.tip,
    nodeTip: s.nodeTip,
    lag: s.nodeTip ? s.nodeTip.height - s.tip.height : null,
    lastError: s.lastError,
  };
}
