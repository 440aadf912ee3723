/**
 * Wiring only: `startIndexer({ config, log, db, databaseUrl })` takes the writer lock, connects
 * to the node (RPC, REST when served, ZMQ when configured), and runs the sync loop with the
 * mempool sync and the bulk path. The handle stops gracefully (the current block finishes)
 * and reports status (tip, node tip, lag) for /healthz and metrics counters.
 * @module
 */
import { setWalletDeriveThreads } from '../src/db/wallet-derive-pool.js';
import type { Kysely } from 'kysely';
import type { Config } from '../src/config.js';
import type { Database } from '../src/db/schema.js';
import { assertSchemaCurrent } from '../src/db/migrate.js';
import { FatalError } from '../src/errors.js';
import type { Logger } from '../src/log.js';
import { PhaseFeed } from '../src/ops/phases.js';
import { BitcoindClient } from '../src/rpc/bitcoind.js';
import { BitcoindRest } from './node-rest.js';
import { createBulkSync } from './bulk-sync.js';
import { createPrefetcher } from './prefetch.js';
import { createNodeSource, type ChainSource, type MempoolSource } from './chain-source.js';
import { createMempoolSync, type MempoolStats } from './mempool.js';
import { createReorgedResolver, type ReorgedStats } from './reorged.js';
import { startNotifier, type Notifier, type NotifyStats } from './notify.js';
import { createRunLoop, type IndexerMetrics, type IndexerStatus } from './run.js';
import { createWriterLock, type WriterLock } from './writer-lock.js';
import { applyHistoryBusy } from './writer/history-switch.js';
import { applyTxParts } from './writer/tx-parts-fold.js';

export type { IndexerMetrics, IndexerStatus };

export interface IndexerDeps {
  config: Config;
  log: Logger;
  db: Kysely<Database>;
  /** The URL `db` connects to: the lock session and bulk COPY use connections of their own. */
  databaseUrl: string;
  /** Tests: a node other than the one in `config` (e.g. a fixture chain). */
  source?: ChainSource & MempoolSource;
  /** Overrides `config.bitcoindRpcUrl` / `config.bitcoindZmqUrl` (e.g. a devnode started by the caller). */
  rpcUrl?: string;
  zmqUrl?: string | null;
  /**
   * How long after its block was undone a transaction that the node did not put back in its
   * mempool (and nothing confirmed conflicts with) waits before tx.dropped (ms, default 60 s).
   */
  reorgGraceMs?: number;
}

/** ZMQ as the indexer sees it: `silent` when blocks keep arriving that no message announced. */
export type ZmqHealth = { url: string; silent: boolean; messages: number; unannouncedBlocks: number };

/** Blocks applied in a row with no ZMQ message between them before ZMQ counts as silent. */
const SILENT_AFTER_BLOCKS = 2;

export interface IndexerHandle {
  /** Graceful stop: the block being applied finishes, then ZMQ, the lock and the loop close. */
  stop(): Promise<void>;
  status(): IndexerStatus & { zmq: ZmqHealth | null };
  metrics(): IndexerMetrics & { zmq: NotifyStats | null; mempool: MempoolStats; reorged: ReorgedStats };
  /** The phase times of every write (blocks applied and undone, bulk batches, the bulk finish), as they happen. */
  readonly phases: PhaseFeed;
  /** Settles when the indexer stops; rejects with the FatalError that stopped it. */
  readonly done: Promise<void>;
}

/** Interval of a standby's tries for the writer lock. */
const STANDBY_POLL_MS = 1000;

/**
 * Starts the indexer role. With `config.indexerStandby` it resolves at once in mode `standby`
 * while another indexer holds the writer lock, and takes over when that one's lock is freed.
 * @throws FatalError ERR_INDEXER_LOCKED when another indexer runs (and this one is no standby).
 */
export async function startIndexer(deps: IndexerDeps): Promise<IndexerHandle> {
  const log = deps.log.child({ component: 'indexer' });
  setWalletDeriveThreads(deps.config.walletDeriveThreads);
  await assertSchemaCurrent(deps.db);
  const lock = createWriterLock({ databaseUrl: deps.databaseUrl, log });
  const phases = new PhaseFeed();
  if (!deps.config.indexerStandby) {
    await lock.acquire();
    return activate(deps, lock, log, phases);
  }
  return startStandby(deps, lock, log, phases);
}

const idleMetrics = (): ReturnType<IndexerHandle['metrics']> => ({
  blocksApplied: 0,
  blocksUndone: 0,
  reorgs: 0,
  txsApplied: 0,
  zmqMissedBlocks: 0,
  retries: 0,
  lastApplyMs: 0,
  zmq: null,
  mempool: { resyncs: 0, added: 0, removed: 0, ignoredHints: 0, drifts: 0 },
  reorged: { replaced: 0, dropped: 0 },
});

/** A handle that waits for the writer lock, then is the active indexer's. */
function startStandby(deps: IndexerDeps, lock: WriterLock, log: Logger, phases: PhaseFeed): IndexerHandle {
  const abort = new AbortController();
  let active: IndexerHandle | null = null;
  let stopped = false;
  const since = Date.now();
  const activated = (async () => {
    await lock.acquire({
      pollMs: STANDBY_POLL_MS,
      signal: abort.signal,
      onWaiting: () => log.info('standby: another indexer holds the writer lock; waiting to take over'),
    });
    if (stopped) {
      await lock.release();
      return null;
    }
    log.info({ waitedMs: Date.now() - since }, 'standby: writer lock taken, taking over');
    active = await activate(deps, lock, log, phases);
    return active;
  })();
  const done = activated.then(
    (a) => a?.done,
    (err: unknown) => {
      if (abort.signal.aborted) return;
      throw err;
    },
  );
  done.catch(() => undefined);
  return {
    done,
    async stop() {
      stopped = true;
      abort.abort(new Error('the standby indexer was stopped'));
      const a = await activated.catch(() => null);
      await a?.stop();
    },
    status: () =>
      active?.status() ?? { mode: 'standby', tip: { height: -1, hash: null }, nodeTip: null, lag: null, lastError: null, zmq: null },
    metrics: () => active?.metrics() ?? idleMetrics(),
    phases,
  };
}

/** The indexer proper, once `lock` is held. */
async function activate(deps: IndexerDeps, lock: WriterLock, log: Logger, phases: PhaseFeed): Promise<IndexerHandle> {
  const { config, db } = deps;
  let source = deps.source;
  if (!source) {
    const url = deps.rpcUrl ?? config.bitcoindRpcUrl;
    if (!url) {
      await lock.release();
      throw new FatalError('ERR_CONFIG', 'the indexer needs BITCOIND_RPC_URL (or a devnode started by `blockwire start`)');
    }
    const rpc = new BitcoindClient({ url, ...(config.bitcoindCookieFile ? { cookieFile: config.bitcoindCookieFile } : {}), log });
    source = createNodeSource({ rpc, rest: new BitcoindRest({ url }), restMode: config.bitcoindRest });
  }
  const guard = lock.guard;
  try {
    const layout = await applyHistoryBusy(db, config.historyBusy, { guard });
    if (await applyTxParts(db, config.txParts)) log.info({ txParts: config.txParts }, 'transaction parts switched by TX_PARTS');
    if (layout.applied) log.info({ busy: layout.busy }, 'empty index: history buckets on at HISTORY_BUSY');
    else if (layout.busy !== config.historyBusy)
      log.info(
        { busy: layout.busy, historyBusy: config.historyBusy },
        'the index keeps its history layout: HISTORY_BUSY applies to an empty index (`blockwire history-buckets` switches one with blocks from 0)',
      );
  } catch (err) {
    await lock.release();
    throw err;
  }
  const zmqUrl = deps.zmqUrl === undefined ? config.bitcoindZmqUrl : (deps.zmqUrl ?? undefined);
  const mempool = createMempoolSync({
    db,
    source,
    log: deps.log.child({ component: 'indexer.mempool' }),
    guard,
    checkMs: zmqUrl ? config.mempoolCheckMs : null,
  });
  const reorged = createReorgedResolver({
    db,
    source,
    log: deps.log.child({ component: 'indexer.reorged' }),
    guard,
    graceMs: deps.reorgGraceMs ?? config.indexerReorgGraceMs,
    nodeHolds: () => mempool.requestResync('the node holds a reorged transaction'),
  });
  // One block prefetcher for both modes of the writer: blocks read ahead of the bulk load and of the per-block catch-up.
  const blocks = createPrefetcher(source, config.indexerPrefetch);
  const bulk = createBulkSync({
    config,
    db,
    databaseUrl: deps.databaseUrl,
    blocks,
    log: deps.log.child({ component: 'indexer.bulk' }),
    guardClient: lock.guardClient,
    phases: phases.emit,
  });
  const loop = createRunLoop({
    db,
    source,
    log: deps.log.child({ component: 'indexer.run' }),
    mempool,
    reorged,
    bulk,
    guard,
    phases: phases.emit,
    pollIntervalMs: config.pollIntervalMs,
    maxReorgDepth: config.indexerMaxReorgDepth,
    zmqEnabled: zmqUrl !== undefined,
    prefetcher: blocks,
    catchupBlocks: config.indexerCatchupBlocks,
    undoBlocks: config.indexerUndoBlocks,
    txidCacheTxs: config.indexerTxidCacheTxs,
  });

  let notifier: Notifier | null = null;
  if (zmqUrl) {
    notifier = await startNotifier({
      url: zmqUrl,
      log: deps.log.child({ component: 'indexer.notify' }),
      handlers: {
        wake: () => loop.wake(),
        announced: (hash) => loop.announced(hash),
        sequence: (hint) => mempool.hint(hint),
        gap: (topic) => {
          if (topic === 'sequence') mempool.requestResync('zmq sequence gap');
          loop.wake();
        },
        reset: () => {
          mempool.requestResync('zmq counter reset');
          loop.wake();
        },
      },
    });
  }
  const resyncTimer = zmqUrl ? setInterval(() => mempool.requestResync('periodic'), config.mempoolResyncMs) : null;
  resyncTimer?.unref();

  // A ZMQ endpoint that never speaks (a wrong port, bitcoind without -zmqpub…) costs only latency
  // (the poll finds every block), so it is easy to miss: warn once it has let blocks pass.
  let zmq: ZmqHealth | null = zmqUrl ? { url: zmqUrl, silent: false, messages: 0, unannouncedBlocks: 0 } : null;
  let missedAtLastMessage = 0;
  const checkZmq = () => {
    if (!zmq || !notifier) return zmq;
    const missed = loop.metrics.zmqMissedBlocks;
    if (notifier.stats.messages !== zmq.messages) missedAtLastMessage = missed;
    const unannounced = missed - missedAtLastMessage;
    const silent = unannounced >= SILENT_AFTER_BLOCKS;
    if (silent && !zmq.silent)
      log.warn(
        { setting: 'BITCOIND_ZMQ_URL', url: zmqUrl, blocks: unannounced, messages: notifier.stats.messages },
        `ZMQ at ${zmqUrl} is silent: ${unannounced} blocks arrived that no message announced. Check BITCOIND_ZMQ_URL against bitcoind's -zmqpubsequence/-zmqpubhashblock; meanwhile blocks are found by polling every ${config.pollIntervalMs} ms`,
      );
    if (!silent && zmq.silent) log.info({ url: zmqUrl }, 'ZMQ speaks again');
    zmq = { url: zmqUrl!, silent, messages: notifier.stats.messages, unannouncedBlocks: unannounced };
    return zmq;
  };
  const zmqTimer = zmqUrl ? setInterval(checkZmq, 1000) : null;
  zmqTimer?.unref();

  let closed: Promise<void> | null = null;
  const close = () =>
    (closed ??= (async () => {
      if (resyncTimer) clearInterval(resyncTimer);
      if (zmqTimer) clearInterval(zmqTimer);
      await notifier?.stop();
      await lock.release();
    })());
  const done = loop.run().finally(close);
  done.catch(() => undefined);
  log.info({ zmq: zmqUrl ?? null, pollIntervalMs: config.pollIntervalMs }, 'indexer started');

  return {
    done,
    async stop() {
      await loop.stop();
      await close();
    },
    status: () => ({ ...loop.status(), zmq: checkZmq() }),
    metrics: () => ({
      ...loop.metrics,
      zmq: notifier ? { ...notifier.stats } : null,
      mempool: { ...mempool.stats },
      reorged: { ...reorged.stats },
    }),
    phases,
  };
}
