/**
 * The sync loop: wait for a wake-up (ZMQ) or the poll tick, then step until idle: plan with
 * `nextStep`, fetch and check the block, apply it (or undo to the fork), and when the chain is
 * at the node's tip bring the mempool up to date, then settle reorged transactions that never
 * came back (reorged.ts). Retryable failures (node down, Postgres restarting, lock session
 * lost) back off and retry; a FatalError ends the loop (the process exits; a restart beats a
 * wedged index). `stop()` lets the current block finish. Every decision (what a turn does, back-off,
 * missed announcements, progress) is a pure step of run-plan.ts over the loop's explicit state;
 * this module does the I/O.
 * @module
 */
import type { Kysely, Transaction } from 'kysely';
import { hashToHex } from '../src/bitcoin/hash.js';
import type { Database } from '../src/db/schema.js';
import { FatalError, isRetryable, isTransient } from '../src/errors.js';
import { decodeAsked } from './block-check.js';
import { createPrefetcher, type Prefetcher } from './prefetch.js';
import type { Logger } from '../src/log.js';
import type { PhaseListener } from '../src/ops/phases.js';
import { applyBlocks, undoBlock, type BlockToApply } from './writer/apply.js';
import { TxidCache, fillFromIndex } from './writer/txid-cache.js';
import { mergePendingIndexEntries } from './writer/index-upkeep.js';
import { foldHistoryWhenDue } from './writer/history-build.js';
import { moveRecentBlocks, RECENT_BLOCKS_MAX } from './writer/recent-blocks.js';
import { readTip, type Tip } from './writer/chain-rows.js';
import type { ChainSource } from './chain-source.js';
import type { SpentOutput } from './node-rest.js';
import { nextStep, type LocalChain } from './follow.js';
import type { MempoolSync } from './mempool.js';
import type { ReorgedResolver } from './reorged.js';
import {
  announce,
  batchTakesMore,
  blockApplied,
  CATCHUP_BUDGET_MS,
  failed,
  initialRunState,
  nextAction,
  observed,
  prefetchAfter,
  settleReorged,
  statusOf,
  succeeded,
  sweepMissed,
  withMode,
  type IndexerStatus,
  type RunPolicy,
  type RunState,
} from './run-plan.js';

export type { IndexerStatus };

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
  /** How long a catch-up transaction takes more blocks (default CATCHUP_BUDGET_MS). */
  catchupBudgetMs?: number;
  /** How many of the newest blocks keep their undo row (INDEXER_UNDO_BLOCKS; default its minimum). */
  undoBlocks?: number;
  /** How many recent transactions' tx_nums the spend keeps in memory (INDEXER_TXID_CACHE_TXS; default 0, none). */
  txidCacheTxs?: number;
  /** How long no block is applied before the history fold starts (default FOLD_QUIET_MS). */
  foldQuietMs?: number;
}

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

/** After a failed move of the recent blocks' rows, the wait before the next. */
const RECENT_RETRY_MS = 60_000;

/** After a failed fill of the recent transactions' cache, the wait before the next (the blocks go on without it). */
const TXIDS_RETRY_MS = 60_000;

/**
 * How long the chain is quiet (no block applied) before the indexer folds the history buckets:
 * a fold of a day's blocks takes tens of seconds of PostgreSQL's time, which a block arriving
 * meanwhile shares (bench/README.md Results). Mainnet's blocks come ten minutes apart on average.
 */
const FOLD_QUIET_MS = 30_000;

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
  const policy: RunPolicy = {
    catchupBlocks: Math.max(1, deps.catchupBlocks ?? 1),
    maxReorgDepth: deps.maxReorgDepth,
    pollIntervalMs: deps.pollIntervalMs,
    zmqEnabled: deps.zmqEnabled ?? false,
  };
  /** The loop's state (run-plan.ts): every decision below is a pure step over it. */
  let state: RunState = initialRunState(Date.now());
  const prefetch = deps.prefetcher ?? createPrefetcher(source, 8);
  let wakeUp: (() => void) | null = null;
  let woken = false;
  let stopping = false;
  let running: Promise<void> | null = null;
  /** Blocks were applied since the last index upkeep; the database refused it once. */
  let upkeepDue = false;
  /** The recent transactions' cache was filled from the index (once per run, and after a bulk sync). */
  let txidsFilled = false;
  /** Bumped by what makes a fill begun before it wrong (an undo, a bulk sync): that fill is dropped. */
  let txidsEpoch = 0;
  /** The fill under way, if any; after a failed one, none before `txidsRetryAt`. */
  let txidsFill: Promise<void> | null = null;
  let txidsRetryAt = 0;
  let upkeepRefused = false;
  /** Blocks were applied since the last fold was started, the last one at this time. */
  let foldDue = false;
  let lastAppliedAt = 0;
  const foldQuietMs = deps.foldQuietMs ?? FOLD_QUIET_MS;
  /**
   * The blocks whose rows may wait in `history_recent` and `balances_recent` (writer/recent-blocks.ts):
   * a live block goes there while fewer than RECENT_BLOCKS_MAX do, and an idle turn moves them.
   * Unknown when the loop starts (a previous run may have left some): full until the first move.
   */
  let recentBlocks = RECENT_BLOCKS_MAX;
  /** After a failed move, none before this time (the blocks meanwhile go to `history`). */
  let recentRetryAt = 0;
  /** The history fold under way beside the loop (it never holds the chain: blocks go on being applied), and a fatal error it met. */
  let folding: Promise<void> | null = null;
  let foldFatal: FatalError | null = null;
  const abort = new AbortController();
  const ctx = {
    ...(deps.guard ? { guard: deps.guard } : {}),
    ...(deps.phases ? { phases: deps.phases } : {}),
    ...(deps.undoBlocks !== undefined ? { undoBlocks: deps.undoBlocks } : {}),
    // One per run loop: empty when the indexer starts or a standby takes over the writer lock.
    txids: new TxidCache(deps.txidCacheTxs ?? 0),
    log,
  };

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

  /** Whether live blocks take their spent outputs from the node (off after the node and the index disagreed on one). */
  let spentFromNode = source.getSpentTxOuts !== undefined;
  /** The outputs block `hash` spent, from the node's REST interface; null when it does not give them (or fails: the spend then returns them). */
  const spentOf = (hash: string): Promise<SpentOutput[][] | null> =>
    source.getSpentTxOuts!(hash, { restOnly: true }).catch((err: unknown) => {
      log.debug({ err, hash }, "the node's spent outputs of a live block: not given; the index returns them");
      return null;
    });

  /**
   * Applies the blocks from `height` (whose hash the plan gave) up to `to`: their hashes from the
   * prefetcher (learned ahead last turn, or one RPC batch), fetched and checked until the batch is
   * full. A reorg meanwhile makes one of them not extend the tip: applyBlocks stops there and the
   * next turn re-plans.
   */
  async function apply(height: number, hash: string, to: number, node: { height: number; bestHash: string }): Promise<boolean> {
    const t0 = performance.now();
    const planned = await prefetch.hashes({ height, hash }, to, { height: node.height, hash: node.bestHash });
    const batch: (BlockToApply & { hash: string; raw: Uint8Array })[] = [];
    let txs = 0;
    for (let i = 0; i < planned.length && batchTakesMore(txs); i++) {
      prefetch.ahead(planned.slice(i + 1).map((p) => p.hash));
      const { height, hash } = planned[i]!;
      // A block at the node's tip (a live one) also takes the outputs it spends from the node,
      // asked beside the block: the spend then returns no scripts (writer/apply.ts `BlockToApply`).
      const spent = height === node.height && spentFromNode ? spentOf(hash) : null;
      const raw = await prefetch.get(hash);
      if (raw === null) {
        log.warn({ height, hash }, 'node no longer serves the block it announced; re-planning');
        break;
      }
      // Its Merkle root is checked by the writer, before the commit (block-check.ts).
      const block = decodeAsked(raw, hash);
      const given = spent ? await spent : null;
      // (its chunk rows and balance changes wait apart for the next idle turn:
      // writer/recent-blocks.ts; a block written with others, in a turn, goes to the main tables)
      const recent = planned.length === 1 && height === node.height && recentBlocks < RECENT_BLOCKS_MAX;
      batch.push({ block, height, hash, raw, unchecked: true, recent, ...(given ? { spent: given } : {}) });
      txs += block.txs.length;
    }
    if (batch.length === 0) return false;
    // The time the turn waited for the node: its hashes and blocks (the rest is the write).
    const waitMs = Math.round(performance.now() - t0);
    // The next turn's blocks are read while these are written.
    const from = prefetchAfter(batch[batch.length - 1]!.height, node.height);
    if (from !== null) prefetch.after(from, node.height, policy.catchupBlocks);
    const results = await applyBlocks(db, batch, ctx, deps.catchupBudgetMs ?? CATCHUP_BUDGET_MS);
    // Blocks the budget left out: fetched already, kept for the next turn.
    for (const b of batch.slice(results.length)) prefetch.keep(b, b.raw);
    const ms = Math.round(performance.now() - t0);
    // Blocks committed together (the budget may have cut the batch fetched).
    const together = results.filter((r) => r.kind === 'applied').length;
    results.forEach((r, i) => {
      if (r.kind !== 'applied') return;
      const { height, hash } = batch[i]!;
      const done = blockApplied(state, { height, hash, txs: r.txs }, node.height, Date.now(), policy);
      state = done.state;
      if (done.line) log.info({ height, nodeHeight: node.height, ...done.line }, 'catching up');
      metrics.blocksApplied++;
      metrics.txsApplied += r.txs;
      metrics.lastApplyMs = ms;
      upkeepDue = true;
      foldDue = true;
      if (batch[i]!.recent) recentBlocks++;
      lastAppliedAt = Date.now();
      log.info({ height, hash, txs: r.txs, events: r.events, ms, waitMs, ...(together > 1 ? { batch: together } : {}) }, 'block applied');
    });
    // The committed blocks' transactions go into the recent transactions' cache after the block
    // is out (its events are committed): while the loop waits for the next one, else as it
    // reads the cache first.
    const txids = ctx.txids;
    setImmediate(() => txids.flush());
    return true;
  }

  /**
   * Fills the recent transactions' cache from the index in the background, once per run and
   * after a bulk sync (txid-cache.ts): into a new cache, which then takes the blocks committed
   * meanwhile and replaces the one the writer uses. Blocks are applied meanwhile, without it.
   * One fill at a time; a failed one is tried again a minute later.
   */
  function fillTxids(): void {
    if (txidsFilled || txidsFill !== null || ctx.txids.limit === 0 || Date.now() < txidsRetryAt || stopping) return;
    const fresh = new TxidCache(ctx.txids.limit);
    const epoch = txidsEpoch;
    const t0 = performance.now();
    txidsFill = fillFromIndex(db, fresh)
      .then(
        (n) => {
          const ms = Math.round(performance.now() - t0);
          if (epoch !== txidsEpoch) {
            log.info({ txs: n, ms }, 'recent transactions read from the index dropped: blocks were undone or bulk-synced meanwhile');
            return;
          }
          fresh.addNewer(ctx.txids);
          ctx.txids = fresh;
          txidsFilled = true;
          log.info({ txs: n, ms }, 'recent transactions read from the index');
        },
        (err: unknown) => {
          txidsRetryAt = Date.now() + TXIDS_RETRY_MS;
          if (!stopping) log.warn({ err, retryInMs: TXIDS_RETRY_MS }, 'reading the recent transactions from the index failed');
        },
      )
      .finally(() => {
        txidsFill = null;
      });
  }

  /** One step; true when it did something (so the loop steps again at once). */
  async function turn(): Promise<boolean> {
    const tip = await readTip(db);
    const tipHex = { height: tip.height, hash: tip.hash === null ? null : hashToHex(tip.hash) };
    state = { ...state, tip: tipHex };
    const step = await nextStep(local(tip), source);
    state = observed(state, tipHex, { height: step.node.height, hash: step.node.bestHash });
    const swept = sweepMissed(state, Date.now());
    state = swept.state;
    for (let i = 0; i < swept.missed; i++) {
      metrics.zmqMissedBlocks++;
      deps.mempool?.requestResync('block not announced by zmq');
    }
    const bulk = deps.bulk ? await deps.bulk.shouldRun(tip, step.node.height, step.kind === 'apply') : false;
    const action = nextAction(step, tip.height, bulk, policy);
    state = withMode(state, action.kind === 'bulk' ? 'bulk' : 'following');
    // (Not for a bulk sync: it empties the cache and writes without it.)
    if (action.kind !== 'bulk') fillTxids();
    switch (action.kind) {
      case 'bulk':
        await foldDone();
        // The bulk path writes and undoes blocks without the recent transactions' cache.
        ctx.txids.clear();
        txidsFilled = false;
        txidsEpoch++;
        await deps.bulk!.run(abort.signal);
        state = withMode(state, 'following');
        return !stopping;
      case 'apply':
        return apply(action.height, action.hash, action.to, step.node);
      case 'fatal':
        throw new FatalError(action.code, action.message);
      case 'undo': {
        // (an undo below the fold's height cuts the buckets the fold writes: one after the other)
        await foldDone();
        log.warn({ fork: action.fork, depth: action.depth, tip: action.from }, 'reorg: undoing blocks above the fork');
        metrics.reorgs++;
        txidsEpoch++;
        for (let h = action.from; h > action.fork; h--) {
          const r = await undoBlock(db, h, source, ctx);
          if (r.kind !== 'undone') break;
          metrics.blocksUndone++;
          log.info({ height: h, txs: r.txs, events: r.events }, 'block undone');
        }
        return true;
      }
      case 'idle': {
        let worked = false;
        if (deps.mempool?.pending) worked = await deps.mempool.step();
        if (deps.reorged) {
          const due = settleReorged(state, deps.mempool?.pending ?? false, Date.now(), policy);
          state = due.state;
          if (due.settle && (await deps.reorged.step())) worked = true;
        }
        // (after a mempool step too: a busy mempool must not keep the live blocks' rows waiting)
        if (recentBlocks > 0 && !folding && Date.now() >= recentRetryAt) {
          await moveRecent();
          worked = true;
        }
        if (!worked && upkeepDue) {
          upkeepDue = false;
          await upkeep();
          worked = true;
        }
        if (foldDue && !folding && Date.now() - lastAppliedAt >= foldQuietMs) {
          foldDue = false;
          fold();
        }
        return worked;
      }
    }
  }

  /**
   * Moves the live blocks' history chunk rows into `history` and their balance changes into
   * `balances` (writer/recent-blocks.ts), on the writer's connection between blocks (not while a
   * fold runs: it moves the chunk rows it folds itself). A failure is logged and tried again a minute later; a lost writer lock stops the loop.
   */
  async function moveRecent(): Promise<void> {
    const t0 = performance.now();
    try {
      const rows = await moveRecentBlocks(db, ctx.guard);
      log.debug({ blocks: recentBlocks, rows, ms: Math.round(performance.now() - t0) }, 'recent blocks moved');
      recentBlocks = 0;
    } catch (err) {
      if (err instanceof FatalError) throw err;
      recentRetryAt = Date.now() + RECENT_RETRY_MS;
      log.warn(
        { err, retryInMs: RECENT_RETRY_MS },
        "moving the recent blocks' rows failed; live blocks write into history and balances meanwhile",
      );
    }
  }

  /**
   * The index upkeep after applied blocks (writer/index-upkeep.ts), once nothing else is due.
   * It never stops the loop: a failure is logged and the next applied block tries again, and
   * a role that may not run it (not the tables' owner) is told once and stops trying.
   */
  async function upkeep(): Promise<void> {
    if (upkeepRefused) return;
    const t0 = performance.now();
    try {
      const pages = await mergePendingIndexEntries(db);
      log.debug({ pages, ms: Math.round(performance.now() - t0) }, 'pending index entries merged');
    } catch (err) {
      if ((err as { code?: string }).code === '42501') {
        upkeepRefused = true;
        log.warn({ err }, 'the database role may not merge pending index entries (not the owner of txs): blocks merge them as they go');
      } else log.warn({ err }, 'merging pending index entries failed; the next applied block tries again');
    }
  }

  /**
   * The history buckets' fold (writer/history-build.ts), when enough blocks have gathered, once
   * no block has been applied for `foldQuietMs` (FOLD_QUIET_MS: the fold's seconds of PostgreSQL
   * work go in the quiet between blocks, not beside a burst of them), started beside the loop on
   * a connection of its own: it holds the buckets' params row, not the chain, so a block arriving
   * meanwhile is applied at once, sharing the machine with it (an undo or a bulk sync waits for it:
   * `foldDone`). A failure is logged and the next idle turn
   * after a block tries again; a fatal one (the writer lock lost) stops the loop at its next turn.
   */
  function fold(): void {
    if (folding || stopping) return;
    const t0 = performance.now();
    folding = foldHistoryWhenDue(db, ctx.guard ? { guard: ctx.guard } : {})
      .then((f) => {
        if (!f) return;
        log.info({ ...f, totalMs: Math.round(performance.now() - t0) }, 'history folded into buckets');
        // (more may be due, after a long catch-up: the next quiet idle turn asks again)
        foldDue = true;
      })
      .catch((err: unknown) => {
        if (err instanceof FatalError) foldFatal = err;
        else log.warn({ err }, 'folding the history into buckets failed; the next applied block tries again');
      })
      .finally(() => {
        folding = null;
      });
  }

  /** Waits for the fold under way, if any; throws the fatal error a fold met. */
  async function foldDone(): Promise<void> {
    await folding;
    if (foldFatal) throw foldFatal;
  }

  async function loop(): Promise<void> {
    while (!stopping) {
      try {
        if (foldFatal) throw foldFatal;
        const worked = await turn();
        state = succeeded(state);
        if (!worked && !stopping) {
          await sleep(deps.pollIntervalMs);
          if (!policy.zmqEnabled) deps.mempool?.requestResync('poll');
        }
      } catch (err) {
        if (stopping) break;
        if ((err as { code?: string }).code === 'ERR_SPENT_MISMATCH' && spentFromNode) {
          spentFromNode = false;
          log.warn({ err }, "the node's spent outputs and the index disagree: live blocks take them from the index from now on");
        }
        const transient = worthRetrying(err);
        const { state: next, verdict } = failed(state, { message: (err as Error).message, transient, fatal: err instanceof FatalError });
        state = next;
        if (verdict.kind === 'stop') {
          log.fatal({ err }, 'indexer stopped by an error it cannot recover from');
          throw err;
        }
        metrics.retries++;
        log[transient ? 'warn' : 'error'](
          { err, retryInMs: verdict.delayMs, failures: state.failures },
          transient ? 'indexer waiting for the node or Postgres' : 'indexer step failed; retrying',
        );
        await sleep(verdict.delayMs);
      }
    }
    state = withMode(state, 'stopped');
  }

  return {
    metrics,
    wake() {
      woken = true;
      wakeUp?.();
    },
    announced(hash) {
      state = announce(state, hash);
    },
    run() {
      // (a fold under way ends before the loop's promise settles: the writer lock is released
      // after it, main.ts)
      running ??= loop().finally(() => folding);
      return running;
    },
    async stop() {
      stopping = true;
      abort.abort();
      wakeUp?.();
      await running?.catch(() => undefined);
      await txidsFill;
      await folding;
    },
    status() {
      return statusOf(state);
    },
  };
}
