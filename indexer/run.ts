/**
 * The sync loop: wait for a wake-up (ZMQ) or the poll tick, then step until idle: plan with
 * `nextStep`, fetch and check the block, apply it (or undo to the fork), and when the chain is
 * at the node's tip bring the mempool up to date, then settle reorged transactions that never
 * came back (reorged.ts). Retryable failures (node down, Postgres restarting, lock session
 * lost) back off and retry; a FatalError ends the loop (the process exits; a restart beats a
 * wedged index). `stop()` lets the current block finish.
 * @module
 */
import type { Kysely, Transaction } from 'kysely';
import { hashToHex } from '../src/bitcoin/hash.js';
import type { Database } from '../src/db/schema.js';
import { FatalError, isRetryable, isTransient } from '../src/errors.js';
import { checkBlock } from './block-check.js';
import { createPrefetcher, type Prefetcher } from './prefetch.js';
import type { Logger } from '../src/log.js';
import type { PhaseListener } from '../src/ops/phases.js';
import { applyBlocks, undoBlock } from './writer/apply.js';
import type { DecodedBlock } from '../src/bitcoin/block.js';
import { readTip, type Tip } from './writer/chain-rows.js';
import type { ChainSource } from './chain-source.js';
import { nextStep, type LocalChain } from './follow.js';
import type { MempoolSync } from './mempool.js';
import type { ReorgedResolver } from './reorged.js';

export interface IndexerMetrics {
  blocksApplied: number;
  blocksUndone: number;
  reorgs: number;
  txsApplied: number;
  /** Blocks the node mined while the indexer ran that no ZMQ message announced within 2 s of their apply (ZMQ dead or lossy). */
  zmqMissedBlocks: number;
  retries: number;
  lastApplyMs: number;
}

export interface IndexerStatus {
  /** `standby`: waiting for the writer lock another indexer holds (INDEXER_STANDBY). */
  mode: 'standby' | 'starting' | 'bulk' | 'following' | 'stopped';
  tip: { height: number; hash: string | null };
  nodeTip: { height: number; hash: string } | null;
  /** Blocks the index is behind the node (null until the node answered). */
  lag: number | null;
  lastError: string | null;
}

/** The initial-sync path the loop hands over to while far behind (bulk.ts). */
export interface BulkPath {
  /**
   * True when the bulk path should run now: an interrupted bulk sync to resume, or far behind
   * on the node's chain (`extendsTip`: the node's next block builds on the tip). A tip the node
   * reorged away is undone block by block first: a bulk sync from it would stop at its first
   * block (the chain changed under it), finish, and begin again at once, forever.
   */
  shouldRun(tip: Tip, nodeHeight: number, extendsTip: boolean): Promise<boolean>;
  /** Syncs in bulk up to near the node's tip; resolves early when `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
}

export interface RunDeps {
  db: Kysely<Database>;
  source: ChainSource;
  log: Logger;
  mempool?: MempoolSync;
  /** Settles reorged transactions that never came back (reorged.ts), after the mempool sync. */
  reorged?: ReorgedResolver;
  bulk?: BulkPath;
  guard?: (trx: Transaction<Database>) => Promise<void>;
  /** Receives the phase times of each block applied or undone (the process's metrics). */
  phases?: PhaseListener;
  pollIntervalMs: number;
  /** Deepest reorg undone automatically; deeper is ERR_REORG_TOO_DEEP. */
  maxReorgDepth: number;
  /** Whether block announcements are expected (ZMQ configured), for the missed-blocks metric. */
  zmqEnabled?: boolean;
  /** The block prefetcher (prefetch.ts), shared with the bulk path; default: 8 blocks ahead. */
  prefetcher?: Prefetcher;
  /** Most blocks applied in one Postgres transaction while behind the node (default 1). */
  catchupBlocks?: number;
}

/** A catch-up transaction stops taking blocks once it holds this many transactions… */
const CATCHUP_MAX_TXS = 4_000;
/** …or once it has been writing for this long (a commit, and so progress, at least this often). */
const CATCHUP_BUDGET_MS = 250;

export interface RunLoop {
  wake(): void;
  /** A ZMQ announcement of a block hash (metrics only). */
  announced(hash: string): void;
  /** Runs until stop() or a fatal error (rejects with it). */
  run(): Promise<void>;
  stop(): Promise<void>;
  status(): IndexerStatus;
  readonly metrics: IndexerMetrics;
}

/** Errors worth retrying: a RetryableError, or Postgres or the network going away. */
const worthRetrying = (err: unknown): boolean => isRetryable(err) || isTransient(err);

export function createRunLoop(deps: RunDeps): RunLoop {
  const { db, source, log } = deps;
  const metrics: IndexerMetrics = {
    blocksApplied: 0,
    blocksUndone: 0,
    reorgs: 0,
    txsApplied: 0,
    zmqMissedBlocks: 0,
    retries: 0,
    lastApplyMs: 0,
  };
  const status: IndexerStatus = { mode: 'starting', tip: { height: -1, hash: null }, nodeTip: null, lag: null, lastError: null };
  const announced = new Set<string>();
  const prefetch = deps.prefetcher ?? createPrefetcher(source, 8);
  const catchupBlocks = Math.max(1, deps.catchupBlocks ?? 1);
  let wakeUp: (() => void) | null = null;
  let woken = false;
  let stopping = false;
  /** The node's height when the loop first looked: blocks above it should be announced. */
  let firstNodeHeight: number | null = null;
  /** Blocks applied without an announcement yet: hash → when (late announcements still count). */
  const unannounced = new Map<string, number>();
  let running: Promise<void> | null = null;
  /** When reorged transactions were last looked at (reorged.ts). */
  let lastSettled = 0;
  const abort = new AbortController();
  const ctx = { ...(deps.guard ? { guard: deps.guard } : {}), ...(deps.phases ? { phases: deps.phases } : {}), log };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken || stopping) {
        woken = false;
        resolve();
        return;
      }
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        wakeUp = null;
        woken = false;
        resolve();
      }
      wakeUp = done;
    });

  const local = (tip: Tip): LocalChain => ({
    height: tip.height,
    hash: tip.hash === null ? null : hashToHex(tip.hash),
    async hashesAt(heights) {
      if (heights.length === 0) return [];
      const rows = await db
        .selectFrom('blocks')
        .select(['height', 'hash'])
        .where('height', 'in', [...heights])
        .execute();
      const by = new Map(rows.map((r) => [r.height, hashToHex(r.hash)]));
      return heights.map((h) => by.get(h) ?? null);
    },
  });

  /** While catching up block by block: a progress line every 10 s (blocks/s, tx/s, ETA). */
  const prog = { at: performance.now(), blocks: 0, txs: 0 };
  function progress(height: number, nodeHeight: number, txs: number): void {
    prog.blocks++;
    prog.txs += txs;
    const now = performance.now();
    if (now - prog.at < 10_000) return;
    const s = (now - prog.at) / 1000;
    const bps = prog.blocks / s;
    if (nodeHeight - height > 1) {
      log.info(
        {
          height,
          nodeHeight,
          blocksPerSec: Math.round(bps * 10) / 10,
          txPerSec: Math.round(prog.txs / s),
          etaSec: Math.round((nodeHeight - height) / bps),
        },
        'catching up',
      );
    }
    prog.at = now;
    prog.blocks = 0;
    prog.txs = 0;
  }

  /** Blocks still unannounced 2 s after they were applied were missed by ZMQ. */
  function countMissed(): void {
    const now = Date.now();
    for (const [hash, at] of unannounced) {
      if (now - at < 2000) continue;
      unannounced.delete(hash);
      metrics.zmqMissedBlocks++;
      deps.mempool?.requestResync('block not announced by zmq');
    }
  }

  /**
   * The blocks to apply from `height` (whose hash the plan gave): that one alone when it is the
   * node's tip, else up to `catchupBlocks` consecutive active-chain blocks (their hashes from the
   * prefetcher: learned ahead last turn, or one RPC batch). A reorg meanwhile makes one of them
   * not extend the tip: applyBlocks stops there and the next turn re-plans.
   */
  function plan(height: number, hash: string, node: { height: number; bestHash: string }): Promise<{ height: number; hash: string }[]> {
    return prefetch.hashes({ height, hash }, Math.min(node.height, height + catchupBlocks - 1), {
      height: node.height,
      hash: node.bestHash,
    });
  }

  /** One step; true when it did something (so the loop steps again at once). */
  async function turn(): Promise<boolean> {
    const tip = await readTip(db);
    status.tip = { height: tip.height, hash: tip.hash === null ? null : hashToHex(tip.hash) };
    const step = await nextStep(local(tip), source);
    const nodeHeight = step.node.height;
    firstNodeHeight ??= nodeHeight;
    countMissed();
    status.nodeTip = { height: nodeHeight, hash: step.node.bestHash };
    if (deps.bulk && (await deps.bulk.shouldRun(tip, nodeHeight, step.kind === 'apply'))) {
      status.mode = 'bulk';
      await deps.bulk.run(abort.signal);
      status.mode = 'following';
      return !stopping;
    }
    status.mode = 'following';
    if (step.kind === 'apply') {
      const t0 = performance.now();
      const planned = await plan(step.height, step.hash, step.node);
      const batch: { block: DecodedBlock; height: number; hash: string; raw: Uint8Array }[] = [];
      let txs = 0;
      for (let i = 0; i < planned.length && txs < CATCHUP_MAX_TXS; i++) {
        prefetch.ahead(planned.slice(i + 1).map((p) => p.hash));
        const { height, hash } = planned[i]!;
        const raw = await prefetch.get(hash);
        if (raw === null) {
          log.warn({ height, hash }, 'node no longer serves the block it announced; re-planning');
          break;
        }
        const block = checkBlock(raw, hash);
        batch.push({ block, height, hash, raw });
        txs += block.txs.length;
      }
      if (batch.length === 0) return false;
      const last = batch[batch.length - 1]!.height;
      if (nodeHeight > last) prefetch.after(last, nodeHeight);
      const results = await applyBlocks(db, batch, ctx, CATCHUP_BUDGET_MS);
      // Blocks the budget left out: fetched already, kept for the next turn.
      for (const b of batch.slice(results.length)) prefetch.keep(b, b.raw);
      const ms = Math.round(performance.now() - t0);
      results.forEach((r, i) => {
        if (r.kind !== 'applied') return;
        const { height, hash } = batch[i]!;
        progress(height, nodeHeight, r.txs);
        metrics.blocksApplied++;
        metrics.txsApplied += r.txs;
        metrics.lastApplyMs = ms;
        if (deps.zmqEnabled && height > firstNodeHeight! && !announced.delete(hash)) unannounced.set(hash, Date.now());
        log.info({ height, hash, txs: r.txs, events: r.events, ms, ...(batch.length > 1 ? { batch: batch.length } : {}) }, 'block applied');
      });
      return true;
    }
    if (step.kind === 'undo') {
      if (step.forkHeight < 0) {
        throw new FatalError(
          'ERR_NO_COMMON_BLOCK',
          "the node's chain shares no block with the index (another network or a reset regtest node?); re-create the database to follow it",
        );
      }
      const depth = tip.height - step.forkHeight;
      if (depth > deps.maxReorgDepth) {
        throw new FatalError(
          'ERR_REORG_TOO_DEEP',
          `reorg of ${depth} blocks (fork at ${step.forkHeight}) exceeds the limit of ${deps.maxReorgDepth}`,
        );
      }
      log.warn({ fork: step.forkHeight, depth, tip: tip.height }, 'reorg: undoing blocks above the fork');
      metrics.reorgs++;
      for (let h = tip.height; h > step.forkHeight; h--) {
        const r = await undoBlock(db, h, ctx);
        if (r.kind !== 'undone') break;
        metrics.blocksUndone++;
        log.info({ height: h, txs: r.txs, events: r.events }, 'block undone');
      }
      return true;
    }
    let worked = false;
    if (deps.mempool?.pending) worked = await deps.mempool.step();
    // Reorged transactions are settled once the mempool sync is idle, or at least every poll
    // interval after a mempool step (a busy node's stream of hints must not starve them).
    if (deps.reorged && (!deps.mempool?.pending || Date.now() - lastSettled >= deps.pollIntervalMs)) {
      lastSettled = Date.now();
      if (await deps.reorged.step()) worked = true;
    }
    return worked;
  }

  async function loop(): Promise<void> {
    let failures = 0;
    while (!stopping) {
      try {
        const worked = await turn();
        failures = 0;
        status.lastError = null;
        if (!worked && !stopping) {
          await sleep(deps.pollIntervalMs);
          if (!deps.zmqEnabled) deps.mempool?.requestResync('poll');
        }
      } catch (err) {
        if (stopping) break;
        failures++;
        status.lastError = (err as Error).message;
        const transient = worthRetrying(err);
        if (!transient && (err instanceof FatalError || failures > 5)) {
          log.fatal({ err }, 'indexer stopped by an error it cannot recover from');
          throw err;
        }
        metrics.retries++;
        const delay = Math.min(30_000, 250 * 2 ** Math.min(failures, 7));
        log[transient ? 'warn' : 'error'](
          { err, retryInMs: delay, failures },
          transient ? 'indexer waiting for the node or Postgres' : 'indexer step failed; retrying',
        );
        await sleep(delay);
      }
    }
    status.mode = 'stopped';
  }

  return {
    metrics,
    wake() {
      woken = true;
      wakeUp?.();
    },
    announced(hash) {
      if (unannounced.delete(hash)) return;
      if (announced.size > 10_000) announced.clear();
      announced.add(hash);
    },
    run() {
      running ??= loop();
      return running;
    },
    async stop() {
      stopping = true;
      abort.abort();
      wakeUp?.();
      await running?.catch(() => undefined);
    },
    status() {
      return { ...status, lag: status.nodeTip ? status.nodeTip.height - status.tip.height : status.lag };
    },
  };
}
