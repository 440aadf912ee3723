/**
 * Prometheus metrics of one Blockwire process. `createMetrics(deps)` makes a registry of its own
 * (never prom-client's global one) whose values are read at scrape time: process-local counters
 * from the role handles this process runs (`track()`), and deployment-wide state from Postgres
 * (index tip, indexer heartbeat, outbox backlog, deliveries, stamps) — the same from every
 * process, so any one of them can be scraped. The API serves `render()` at /metrics, the ops
 * listener (ops-server.ts) on BLOCKWIRE_METRICS_PORT. Names and meanings: docs/operations.md.
 * @module
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import type { Logger } from '../../src/log.js';
import { readDeploymentState, type DeploymentState } from '../../src/ops/state.js';
import type { PhaseListener } from '../../src/ops/phases.js';

/** What metrics read from the indexer role (indexer/main.ts IndexerHandle, structurally). */
export type IndexerSource = {
  status(): { mode: string; tip: { height: number }; nodeTip: { height: number } | null; lag: number | null };
  metrics(): {
    blocksApplied: number;
    blocksUndone: number;
    reorgs: number;
    txsApplied: number;
    zmqMissedBlocks: number;
    retries: number;
    lastApplyMs: number;
    zmq: { messages: number; gaps: number; resets: number } | null;
    reorged?: { replaced: number; dropped: number };
  };
  /** The phase times of the indexer's writes as they happen (src/ops/phases.ts). */
  phases?: { on(listener: PhaseListener): unknown };
};

/** What metrics read from the streams role (streams/main.ts StreamsHandle, structurally). */
export type StreamsSource = {
  stats(): { connections: number; live: number; sent: number; slowConsumerDisconnects: number; heartbeatTimeouts: number };
  relay: { readonly active: boolean; readonly relayed: number } | undefined;
};

/** A delivery worker's events, one per delivery attempt that ends (streams/delivery-worker.ts), structurally. */
export type WorkerEvents = {
  on(event: 'completed', listener: () => void): unknown;
  on(event: 'failed', listener: (job: unknown, err: Error) => void): unknown;
  on(event: 'deferred', listener: (reason: string) => void): unknown;
  on(event: 'breaker', listener: (hook: string, state: string) => void): unknown;
};

/**
 * The delivery workers of the worker role, each with its transport name, and the circuit
 * breakers of its hooks that are not closed (streams/fair-share.ts).
 */
export type WorkerSource = { transport: string; events: WorkerEvents; breakers?: () => ReadonlyMap<string, { state: string }> }[];

export type MetricSources = {
  indexer?: IndexerSource | undefined;
  streams?: StreamsSource | undefined;
  worker?: WorkerSource | undefined;
};

export type MetricsDeps = {
  db: Kysely<Database>;
  log: Logger;
  /** Roles this process runs, as a label of `blockwire_process_info`. */
  roles: readonly string[];
  /** Process-level metrics (CPU, memory, event loop lag); default true. */
  processMetrics?: boolean;
  /** Window of the blocks/s gauge in milliseconds (default 60 s). */
  rateWindowMs?: number;
};

/** The registry of a process. */
export type Metrics = {
  readonly registry: Registry;
  /** Content type of `render()` (Prometheus text format 0.0.4). */
  readonly contentType: string;
  /** The text exposition (reads Postgres and the tracked handles). */
  render(): Promise<string>;
  /** Records one API request (route pattern, not the URL: bounded label values). */
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  /** Records one history page: from a chunk the API held, or cut by Postgres. */
  countHistoryPage(source: 'held' | 'cut'): void;
  /** Starts reading these role handles (call once the roles have started). */
  track(sources: MetricSources): void;
};

/**
 * Buckets of the indexer's phase histogram, in seconds: 1 ms (a block's small phases) to 30 min
 * (a bulk finish's index builds on mainnet).
 */
const PHASE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];

/** Buckets of the API latency histogram, in seconds (1 ms … 10 s). */
const API_LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Sets a counter to an absolute total (the handles keep totals; prom-client counters only add). */
function setTotal(c: Counter, value: number, labels?: Record<string, string>): void {
  if (labels) {
    c.remove(labels);
    c.inc(labels, value);
  } else {
    c.reset();
    c.inc(value);
  }
}

/** Creates the metrics of one process; nothing is read until a scrape. */
export function createMetrics(deps: MetricsDeps): Metrics {
  const registry = new Registry();
  const log = deps.log.child({ component: 'ops.metrics' });
  if (deps.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'blockwire_' });
  const sources: MetricSources = {};
  const windowMs = deps.rateWindowMs ?? 60_000;
  const samples: { at: number; blocks: number }[] = [];

  new Gauge({
    name: 'blockwire_process_info',
    help: 'Always 1; labels tell the roles this process runs.',
    labelNames: ['roles'],
    registers: [registry],
  }).set({ roles: [...deps.roles].sort().join(',') }, 1);

  // Deployment-wide, from Postgres (one read per scrape, shared by the gauges below).
  let pending: Promise<DeploymentState | null> | null = null;
  const state = (): Promise<DeploymentState | null> =>
    (pending ??= readDeploymentState(deps.db)
      .catch((err: unknown) => {
        log.warn({ err }, 'metrics: cannot read the deployment state from Postgres');
        return null;
      })
      .finally(() => setTimeout(() => (pending = null), 0)));
  // prom-client reads the metrics of a scrape concurrently: every gauge below waits for the
  // same read (one query per scrape), then finds its value set.
  let filling: Promise<void> | null = null;
  const fill = (): Promise<void> =>
    (filling ??= collectDeployment().finally(() => {
      setTimeout(() => (filling = null), 0);
    }));
  const dbUp = new Gauge({
    name: 'blockwire_database_up',
    help: '1 when Postgres answered the last scrape, 0 otherwise.',
    registers: [registry],
    collect: fill,
  });
  const indexHeight = new Gauge({
    name: 'blockwire_index_height',
    help: 'Height of the index tip (blocks applied).',
    registers: [registry],
    collect: fill,
  });
  const nodeHeight = new Gauge({
    name: 'blockwire_node_height',
    help: "Height of the node's best block, as last seen by the indexer.",
    registers: [registry],
    collect: fill,
  });
  const lag = new Gauge({
    name: 'blockwire_index_lag_blocks',
    help: 'Blocks the index is behind the node.',
    registers: [registry],
    collect: fill,
  });
  const heartbeatAge = new Gauge({
    name: 'blockwire_indexer_heartbeat_age_seconds',
    help: 'Seconds since the indexer last reported (stale: the indexer is down).',
    registers: [registry],
    collect: fill,
  });
  const outboxPending = new Gauge({
    name: 'blockwire_outbox_pending_events',
    help: 'Events in the outbox the relay has not delivered to streams and queues yet.',
    registers: [registry],
    collect: fill,
  });
  const deliveries = new Gauge({
    name: 'blockwire_deliveries',
    help: 'Webhook/SNS deliveries by status: pending now; failed and dead (dead-lettered) in the last 24 h.',
    labelNames: ['status'],
    registers: [registry],
    collect: fill,
  });
  const stamps = new Gauge({
    name: 'blockwire_stamps_queued',
    help: 'Stamps accepted and not yet placed in a signed transaction.',
    registers: [registry],
    collect: fill,
  });
  const stampTxs = new Gauge({
    name: 'blockwire_stamp_txs_unconfirmed',
    help: 'Stamp transactions signed or broadcast and not yet confirmed.',
    registers: [registry],
    collect: fill,
  });
  const stampStuck = new Gauge({
    name: 'blockwire_stamper_stuck',
    help: 'Refusals in a row of the stamp transaction the node keeps refusing (0 when none is stuck): the stamper cannot make progress.',
    registers: [registry],
    collect: fill,
  });

  // The collect of the first gauge fills all of them (prom-client calls collect per metric).
  async function collectDeployment(): Promise<void> {
    const s = await state();
    dbUp.set(s ? 1 : 0);
    if (!s) return;
    indexHeight.set(s.index.height);
    const local = sources.indexer?.status();
    const node = local?.nodeTip?.height ?? s.heartbeat?.nodeHeight ?? null;
    if (node !== null) {
      nodeHeight.set(node);
      lag.set(Math.max(0, node - s.index.height));
    } else {
      nodeHeight.reset();
      lag.reset();
    }
    if (s.heartbeat) heartbeatAge.set(s.heartbeat.ageSeconds);
    else heartbeatAge.reset();
    outboxPending.set(s.outbox.pending);
    deliveries.set({ status: 'pending' }, s.deliveries.pending);
    deliveries.set({ status: 'failed' }, s.deliveries.failed24h);
    deliveries.set({ status: 'dead' }, s.deliveries.dead24h);
    stamps.set(s.stamps.queued);
    stampTxs.set(s.stamps.unconfirmedTxs);
    stampStuck.set(s.stamps.stuck?.refusals ?? 0);
  }

  // Indexer role of this process.
  const c = (name: string, help: string, labelNames: string[] = []) => new Counter({ name, help, labelNames, registers: [registry] });
  const blocksApplied = new Counter({
    name: 'blockwire_indexer_blocks_applied_total',
    help: 'Blocks applied by this indexer since it started.',
    registers: [registry],
    collect: () => collectIndexer(),
  });
  const blocksUndone = c('blockwire_indexer_blocks_undone_total', 'Blocks undone (reorgs) by this indexer since it started.');
  const reorgs = c('blockwire_indexer_reorgs_total', 'Reorgs handled by this indexer since it started.');
  const txs = c('blockwire_indexer_txs_applied_total', 'Transactions applied by this indexer since it started.');
  const zmqMissed = c(
    'blockwire_indexer_zmq_missed_blocks_total',
    'Blocks applied that no ZMQ message announced (ZMQ lossy, late or absent; the poll found them).',
  );
  const zmqGaps = c('blockwire_zmq_sequence_gaps_total', 'Gaps and resets in the ZMQ sequence counters (each forces a full reconcile).');
  const reorgedEnded = c(
    'blockwire_indexer_reorged_txs_ended_total',
    'Watched transactions a reorg took out that never came back, by how they ended (tx.replaced by a double spend, tx.dropped).',
    ['outcome'],
  );
  const retries = c(
    'blockwire_indexer_retries_total',
    'Turns of the indexer loop that failed and were retried (node or Postgres unavailable).',
  );
  const blocksPerSecond = new Gauge({
    name: 'blockwire_indexer_blocks_per_second',
    help: 'Blocks applied per second over the last minute.',
    registers: [registry],
  });
  const lastApply = new Gauge({
    name: 'blockwire_indexer_last_apply_seconds',
    help: 'Time the last block took to apply.',
    registers: [registry],
  });
  const following = new Gauge({
    name: 'blockwire_indexer_mode',
    help: '1 for the mode the indexer is in (standby, starting, bulk, following, stopped).',
    labelNames: ['mode'],
    registers: [registry],
  });
  function collectIndexer(): void {
    const ix = sources.indexer;
    if (!ix) return;
    const m = ix.metrics();
    setTotal(blocksApplied, m.blocksApplied);
    setTotal(blocksUndone, m.blocksUndone);
    setTotal(reorgs, m.reorgs);
    setTotal(txs, m.txsApplied);
    setTotal(zmqMissed, m.zmqMissedBlocks);
    setTotal(zmqGaps, m.zmq ? m.zmq.gaps + m.zmq.resets : 0);
    setTotal(retries, m.retries);
    if (m.reorged) {
      setTotal(reorgedEnded, m.reorged.replaced, { outcome: 'replaced' });
      setTotal(reorgedEnded, m.reorged.dropped, { outcome: 'dropped' });
    }
    lastApply.set(m.lastApplyMs / 1000);
    blocksPerSecond.set(rate(m.blocksApplied));
    following.reset();
    following.set({ mode: ix.status().mode }, 1);
  }
  function rate(blocks: number): number {
    const now = Date.now();
    samples.push({ at: now, blocks });
    while (samples.length > 2 && now - samples[1]!.at >= windowMs) samples.shift();
    const first = samples[0]!;
    const span = (now - first.at) / 1000;
    return span > 0 ? (blocks - first.blocks) / span : 0;
  }

  // Streams role of this process.
  const wsClients = new Gauge({
    name: 'blockwire_stream_clients',
    help: 'WebSocket stream clients connected to this process.',
    registers: [registry],
    collect: () => collectStreams(),
  });
  const wsSent = c('blockwire_stream_events_sent_total', 'Events sent to WebSocket clients by this process.');
  const wsDropped = c('blockwire_stream_disconnects_total', 'Stream clients this process disconnected, by reason.', ['reason']);
  const relayActive = new Gauge({
    name: 'blockwire_relay_active',
    help: '1 when this process holds the relay lock (one relay is active per deployment).',
    registers: [registry],
  });
  const relayed = c('blockwire_relay_events_total', 'Outbox events relayed by this process.');
  function collectStreams(): void {
    const st = sources.streams;
    if (!st) return;
    const s = st.stats();
    wsClients.set(s.connections);
    setTotal(wsSent, s.sent);
    setTotal(wsDropped, s.slowConsumerDisconnects, { reason: 'slow_consumer' });
    setTotal(wsDropped, s.heartbeatTimeouts, { reason: 'heartbeat_timeout' });
    relayActive.set(st.relay?.active ? 1 : 0);
    setTotal(relayed, st.relay?.relayed ?? 0);
  }

  // Worker role of this process: counted from the delivery workers' events (per delivery, batch jobs included).
  const deferred = c(
    'blockwire_worker_deferred_total',
    "Delivery jobs this worker process moved back to wait without holding a slot, by transport and reason: paused (the hook's circuit breaker is open), hook or key (its share of BLOCKWIRE_WEBHOOK_CONCURRENCY was full).",
    ['transport', 'reason'],
  );
  const breakerChanges = c(
    'blockwire_worker_breaker_transitions_total',
    "Changes of hooks' circuit breakers in this worker process, by transport and the state entered (slowed, open, half_open, closed).",
    ['transport', 'state'],
  );
  const breakersNow = new Gauge({
    name: 'blockwire_worker_hook_breakers',
    help: 'Hooks whose circuit breaker in this worker process is not closed, by transport and state (slowed: one delivery at a time; open: paused; half_open: probing).',
    labelNames: ['transport', 'state'],
    registers: [registry],
    collect: () => collectBreakers(),
  });
  function collectBreakers(): void {
    for (const w of sources.worker ?? []) {
      const n: Record<string, number> = { slowed: 0, open: 0, half_open: 0 };
      for (const b of w.breakers?.().values() ?? []) n[b.state] = (n[b.state] ?? 0) + 1;
      for (const [state, v] of Object.entries(n)) breakersNow.set({ transport: w.transport, state }, v);
    }
  }
  const jobs = c(
    'blockwire_worker_deliveries_total',
    'Delivery attempts finished by this worker process, by transport and outcome: completed (delivered, or dropped because the hook is gone), retry, failed (permanently or dead-lettered).',
    ['transport', 'outcome'],
  );

  // Indexer role of this process: each write's phases (a block applied: spend, derive, txs,
  // utxos, balances, history…; undone; a bulk batch; the bulk finish's steps), observed as they end.
  const phaseSeconds = new Histogram({
    name: 'blockwire_indexer_phase_seconds',
    help: "Time of each phase of the indexer's writes, by path (apply, undo, bulk_batch, bulk_finish) and phase.",
    labelNames: ['path', 'phase'],
    buckets: PHASE_BUCKETS,
    registers: [registry],
  });
  let phasesOf: IndexerSource['phases'] | undefined;

  // API role of this process.
  const latency = new Histogram({
    name: 'blockwire_api_request_duration_seconds',
    help: 'REST API request latency by method, route pattern and status class.',
    labelNames: ['method', 'route', 'status'],
    buckets: API_LATENCY_BUCKETS,
    registers: [registry],
  });

  const historyPages = c(
    'blockwire_api_history_pages_total',
    'History pages answered, by where their entries came from: held (a chunk this API process holds, api/cache/history-chunk-cache.ts) or cut (by PostgreSQL).',
    ['source'],
  );
  for (const source of ['held', 'cut']) historyPages.inc({ source }, 0);

  return {
    registry,
    contentType: registry.contentType,
    render: () => registry.metrics(),
    observeRequest(method, route, status, seconds) {
      latency.observe({ method, route, status: `${Math.floor(status / 100)}xx` }, seconds);
    },
    countHistoryPage(source) {
      historyPages.inc({ source });
    },
    track(s) {
      if (s.indexer) sources.indexer = s.indexer;
      if (s.indexer?.phases && s.indexer.phases !== phasesOf) {
        phasesOf = s.indexer.phases;
        phasesOf.on((path, phase, seconds) => phaseSeconds.observe({ path, phase }, seconds));
      }
      if (s.streams) sources.streams = s.streams;
      if (s.worker) {
        sources.worker = s.worker;
        for (const w of s.worker) {
          for (const outcome of ['completed', 'retry', 'failed']) jobs.inc({ transport: w.transport, outcome }, 0);
          w.events.on('completed', () => jobs.inc({ transport: w.transport, outcome: 'completed' }));
          // UnrecoverableError: failed for good (4xx, or dead-lettered after the last attempt).
          w.events.on('failed', (_job, err) =>
            jobs.inc({ transport: w.transport, outcome: err?.name === 'UnrecoverableError' ? 'failed' : 'retry' }),
          );
          for (const reason of ['paused', 'hook', 'key']) deferred.inc({ transport: w.transport, reason }, 0);
          w.events.on('deferred', (reason) => deferred.inc({ transport: w.transport, reason }));
          w.events.on('breaker', (_hook, state) => breakerChanges.inc({ transport: w.transport, state }));
        }
      }
    },
  };
}
