/**
 * The relay: outbox → match → (delivery log + BullMQ jobs, Redis feed) → cursor. Each batch of
 * events with `seq > cursor` is matched to subscriptions; hook deliveries are written to
 * `deliveries` and enqueued, a hook's new ones from one batch in batch jobs of up to
 * `deliveryBatchSize` (the job recorded in each row), a lone one in a job of its own (job id =
 * delivery id); the batch is published to the stream hubs; only then does the cursor move. A
 * crash anywhere repeats the batch: the delivery log and the recorded job ids make the repeat a
 * no-op, hubs drop what they already have (at-least-once, stable ids). One relay is active: it
 * holds a Postgres session advisory lock on the connection it does all its work on; standbys
 * retry the lock. The active relay also re-creates jobs Redis lost (from the delivery log) and
 * prunes events past the retention.
 *
 * Lost jobs are found two ways. Before each batch the relay checks that Redis is still the
 * server the jobs were last enqueued on (its `run_id`, recorded in `stream_state`): a Sentinel
 * failover promotes a replica that may lack the primary's last writes (replication is
 * asynchronous), and a restarted server may lack its last second (the append-only file is synced
 * once a second). On another run id it reconciles at once: every pending delivery whose job
 * Redis does not hold gets one of its own, in event order, before anything new is relayed. The
 * age-based rescue (a delivery overdue by `rescueAfterMs`) stays as the safety net for whatever
 * else loses a job.
 *
 * The loop's state (lock held, cursor, Redis run id known, housekeeping clock, failures) is one
 * explicit object and its decisions are pure steps of relay-plan.ts; this module does the I/O.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Redis } from 'ioredis';
import { leaderIdleMs, RELAY_LEADER, releaseLeaderLock, sqlOn, tryLeaderLock } from '../src/db/leader-lock.js';
import type { Database } from '../src/db/schema.js';
import { RetryableError } from '../src/errors.js';
import type { Logger } from '../src/log.js';
import {
  listOverdueDeliveries,
  listPendingDeliveries,
  listUnqueuedDeliveries,
  markEnqueued,
  pruneAttemptMinutes,
  markRecreated,
  pruneDeliveries,
  upsertDeliveries,
  type DeliveryPosition,
  type NewDelivery,
  type QueuedDelivery,
} from '../src/db/queries/tenancy-deliveries.js';
import { decodeOutboxRows } from './events.js';
import { deliveryId, deliveryJson, deliveryParts, indexSubscriptions, matchEvents, partsJson } from './match.js';
import { advanceRelayCursor, pruneOutbox, readOutbox, readRedisRunId, readStreamState, recordRedisRunId } from './outbox.js';
import { loadSubscriptionsFor } from './subscriptions.js';
import { encodeFeedBatch, type FeedItem } from './feed-message.js';
import { assignBatchJobs, relayJobs } from './relay-jobs.js';
import type { DeliveryJob, DeliveryQueues } from './queues.js';
import type { OutboxWakeup } from './outbox-wakeup.js';
import {
  housekeepingDue,
  initialRelayState,
  leadEnded,
  leadFailed,
  leading,
  relayedBatch,
  runIdToCheck,
  runIdVerdict,
  type RelayPolicy,
  type RelayState,
} from './relay-plan.js';

/** How long the per-minute attempt counts of hooks (the console's last-hour chart) are kept. */
const ATTEMPT_MINUTES_KEPT_MS = 24 * 3600_000;

export type RelaySettings = {
  /** Outbox rows per batch. */
  batchSize: number;
  /** Most deliveries in one batch job (one hook, one relay batch); 1 = a job per delivery. */
  deliveryBatchSize: number;
  /** Idle poll interval of the outbox (with a wakeup: the safety net for lost notifications). */
  pollMs: number;
  /** How often a standby tries to become the active relay. */
  standbyMs: number;
  /** Redis channel of the stream feed. */
  channel: string;
  /** Events older than this are pruned (and resuming before them is "cursor expired"). */
  retentionMs: number;
  /** Finished deliveries older than this leave the delivery log. */
  deliveryLogRetentionMs: number;
  /** A pending delivery this long overdue has its job checked (and re-created when Redis lost it). */
  rescueAfterMs: number;
  /** How often housekeeping (lost-job scan, pruning) runs; redelivery requests are picked up every turn. */
  housekeepingMs: number;
};

export type RelayDeps = {
  db: Kysely<Database>;
  /** Fail-fast Redis connection for PUBLISH. */
  publisher: Redis;
  queues: DeliveryQueues;
  log: Logger;
  settings: RelaySettings;
  /**
   * What tells the relay of new outbox rows (streams/outbox-wakeup.ts): its wait ends at a
   * notification, the poll only the safety net. Without it the relay polls every `pollMs`.
   */
  wakeup?: Pick<OutboxWakeup, 'wait'>;
};

export type Relay = {
  /** True while this relay holds the lock. */
  readonly active: boolean;
  /** Events relayed so far by this process. */
  readonly relayed: number;
  /** Stops after the current batch and releases the lock. */
  stop(): Promise<void>;
};

/** Pending deliveries read per page when reconciling with a Redis that changed. */
const RECONCILE_PAGE = 1000;

/** The job of a delivery of the log, going on with its attempts and due when its next one is. */
function toJob(d: QueuedDelivery, now = Date.now()): DeliveryJob {
  const delayMs = d.next_attempt_at ? d.next_attempt_at.getTime() - now : 0;
  return {
    transport: d.transport,
    delivery: d.id,
    hook: d.hook_id,
    payload: d.payload,
    type: d.event_type,
    redeliveries: d.redeliveries,
    ...(d.attempts > 0 ? { attempted: d.attempts } : {}),
    ...(delayMs > 0 ? { delayMs } : {}),
  };
}

/** Starts the relay loop (standby until it gets the lock). */
export function startRelay(deps: RelayDeps): Relay {
  const { db, publisher, queues, settings } = deps;
  const log = deps.log.child({ component: 'streams.relay' });
  const stopping = new AbortController();
  const policy: RelayPolicy = settings;
  /** The loop's state (relay-plan.ts): every decision below is a pure step over it. */
  let state: RelayState = initialRelayState;

  const nap = (ms: number) => sleep(ms, undefined, { signal: stopping.signal }).catch(() => undefined);
  /** Until new rows are told of, or the poll interval. */
  const untilTold = deps.wakeup ? (ms: number) => deps.wakeup!.wait(ms, stopping.signal) : nap;

  /**
   * The cursor as relayed but not yet written (null: written). A full batch (more to come at
   * once) leaves its cursor to go with the next batch's delivery log rows, in their transaction:
   * one commit per batch instead of two. A repeat after a crash starts from the cursor written,
   * at most one batch earlier (every step is idempotent); a batch that waits, or has no hook
   * deliveries, writes it at once.
   */
  let unsaved: bigint | null = null;

  /** Writes the cursor left unsaved (on the lock's connection, or in the transaction of the next batch's log rows). */
  async function saveCursor(conn: Kysely<Database>): Promise<void> {
    if (unsaved === null) return;
    await advanceRelayCursor(conn, unsaved);
    unsaved = null;
  }

  /** One batch from `cursor`; returns how many outbox rows it covered and the seq it ended at. */
  async function relayBatch(conn: Kysely<Database>, cursor: bigint): Promise<{ rows: number; to: bigint }> {
    const rows = await readOutbox(conn, { after: cursor, limit: settings.batchSize });
    if (rows.length === 0) {
      await saveCursor(conn);
      return { rows: 0, to: cursor };
    }
    const to = rows[rows.length - 1]!.seq;
    const events = decodeOutboxRows(rows, (row, err) =>
      log.error({ seq: row.seq.toString(), type: row.type, err }, 'outbox row skipped: it breaks the outbox contract'),
    );
    const deliveries = matchEvents(events, indexSubscriptions(await loadSubscriptionsFor(conn, events)));

    const items: FeedItem[] = [];
    const hookRows: NewDelivery[] = [];
    const transports = new Map<string, 'http' | 'sns'>();
    // Hooks whose breaker is not closed: their batch jobs queue behind the others' (BACKLOG_PRIORITY).
    const failing = new Set<string>();
    for (const d of deliveries) {
      // (the feed message carries the parts: each event's JSON once, whatever its subscribers)
      const parts = deliveryParts(d);
      const json = parts ? partsJson(parts) : deliveryJson(d);
      items.push(parts ? { keyId: d.keyId, seq: d.event.seq, json, parts } : { keyId: d.keyId, seq: d.event.seq, json });
      const sub = d.subscription;
      if (!sub || sub.hookId === null || sub.hookType === null) continue;
      const id = deliveryId(sub.id, d.event.seq);
      transports.set(id, sub.hookType);
      if (sub.hookFailing) failing.add(sub.hookId);
      const row: NewDelivery = {
        id,
        hookId: sub.hookId,
        keyId: d.keyId,
        subscriptionId: sub.id,
        eventId: d.event.seq,
        eventType: d.event.type,
        payload: json,
        status: sub.hookActive ? 'pending' : 'failed',
      };
      if (!sub.hookActive) row.error = 'hook disabled';
      hookRows.push(row);
    }
    assignBatchJobs(hookRows, settings.deliveryBatchSize, to);
    /** The log rows (with the cursor of the batch before, when it was left unsaved), then their jobs. */
    const logAndEnqueue = async () => {
      if (hookRows.length === 0) return;
      const pending =
        unsaved === null
          ? await upsertDeliveries(conn, hookRows)
          : await conn.transaction().execute(async (trx) => {
              await saveCursor(trx);
              return upsertDeliveries(trx, hookRows);
            });
      if (pending.length > 0) {
        const { own, batches } = relayJobs(hookRows, pending, transports, failing);
        if (own.length > 0) await queues.enqueue(own);
        if (batches.length > 0) await queues.enqueueBatches(batches);
      }
    };
    // (the feed does not wait for the log: the cursor moves only once both are done)
    const published = publisher.publish(settings.channel, encodeFeedBatch({ from: cursor, to, items }));
    // (handled now so that a failed log does not leave the publish's failure unhandled)
    published.catch(() => undefined);
    await logAndEnqueue();
    await published;
    unsaved = to;
    if (rows.length < settings.batchSize || hookRows.length === 0) await saveCursor(conn);
    return { rows: rows.length, to };
  }

  /**
   * Asks Redis for the job of each delivery (a batch job once for all its deliveries) and gives
   * each one whose job is gone a job of its own (a batch job Redis lost is not re-created as a
   * batch), in the order given. Returns the ids of those whose job was there, and of the others.
   */
  async function recreateLostJobs(conn: Kysely<Database>, rows: readonly QueuedDelivery[]): Promise<{ live: string[]; lost: string[] }> {
    const jobOf = (d: QueuedDelivery) => `${d.transport}/${d.job_id ?? `${d.id}-r${d.redeliveries}`}`;
    const asked = new Map<string, Promise<boolean>>();
    for (const d of rows) if (!asked.has(jobOf(d))) asked.set(jobOf(d), queues.isLive({ ...d, delivery: d.id, jobId: d.job_id }));
    const isLive = new Map(await Promise.all([...asked].map(async ([job, ok]) => [job, await ok] as const)));
    const live: string[] = [];
    const lost: QueuedDelivery[] = [];
    for (const d of rows) {
      if (isLive.get(jobOf(d))) live.push(d.id);
      else lost.push(d);
    }
    if (lost.length > 0) {
      const now = Date.now();
      await queues.enqueue(
        lost.map((d) => toJob(d, now)),
        { replace: true },
      );
      await markRecreated(
        conn,
        lost.map((d) => d.id),
      );
    }
    return { live, lost: lost.map((d) => d.id) };
  }

  /** Every pending delivery whose job Redis does not hold gets one, in event order. */
  async function reconcile(conn: Kysely<Database>): Promise<{ pending: number; recreated: number }> {
    let after: DeliveryPosition | null = null;
    let pending = 0;
    let recreated = 0;
    for (;;) {
      const page = await listPendingDeliveries(conn, after, RECONCILE_PAGE);
      pending += page.length;
      recreated += (await recreateLostJobs(conn, page)).lost.length;
      if (page.length < RECONCILE_PAGE) return { pending, recreated };
      const last = page[page.length - 1]!;
      after = { eventId: last.event_id, id: last.id };
    }
  }

  /**
   * Reconciles with Redis when it is not the server (run id) the delivery jobs were last
   * enqueued on: a failover or a restart may have lost some (see the module comment).
   */
  async function reconcileIfRedisChanged(conn: Kysely<Database>): Promise<void> {
    const runId = await queues.serverRunId();
    if (!runIdToCheck(state, runId)) return;
    const recorded = await readRedisRunId(conn);
    const verdict = runIdVerdict(state, runId, recorded);
    if (verdict.reconcile) {
      const started = Date.now();
      const r = await reconcile(conn);
      await recordRedisRunId(conn, runId);
      const fields = { runId, previous: recorded, ...r, ms: Date.now() - started };
      if (verdict.changed)
        log.warn(fields, 'Redis is another server than before (failover or restart): pending deliveries reconciled, lost jobs re-created');
      else log.info(fields, 'Redis server recorded');
    }
    state = verdict.state;
  }

  /** Jobs for redelivery requests, and (periodically) for overdue deliveries whose job Redis lost; pruning. */
  async function housekeeping(conn: Kysely<Database>): Promise<void> {
    const unqueued = await listUnqueuedDeliveries(conn, 500);
    if (unqueued.length > 0) {
      await queues.enqueue(unqueued.map((d) => toJob(d)));
      await markEnqueued(
        conn,
        unqueued.map((d) => d.id),
        { ownJobs: true },
      );
      log.info({ deliveries: unqueued.length }, 'delivery jobs created (redelivery or retried enqueue)');
    }
    const now = Date.now();
    const due = housekeepingDue(state, now, policy);
    state = due.state;
    if (!due.due) return;
    const overdue = await listOverdueDeliveries(conn, new Date(now - settings.rescueAfterMs), 1000);
    if (overdue.length > 0) {
      const { live, lost } = await recreateLostJobs(conn, overdue);
      if (lost.length > 0) log.warn({ deliveries: lost.length }, 'delivery jobs re-created: Redis had lost them');
      await markEnqueued(conn, live);
    }
    const pruned = await pruneOutbox(conn, new Date(now - settings.retentionMs));
    const logPruned = await pruneDeliveries(conn, new Date(now - settings.deliveryLogRetentionMs));
    await pruneAttemptMinutes(conn, new Date(now - ATTEMPT_MINUTES_KEPT_MS));
    if (pruned + logPruned > 0) log.info({ events: pruned, deliveries: logPruned }, 'pruned past retention');
  }

  /** Holds the lock on one connection and relays until stopped or an error. False: not leader. */
  async function lead(): Promise<boolean> {
    return db.connection().execute(async (conn) => {
      // The relay leader lock (src/db/leader-lock.ts): a running relay reads the outbox on the
      // lock session every poll, so only a stopped one leaves it idle past the limit.
      const run = sqlOn(conn);
      const got = await tryLeaderLock(run, RELAY_LEADER, leaderIdleMs(settings.pollMs), (err) =>
        log.warn({ err }, "relay: a setting that ends a dead holder's session was refused (idle_session_timeout needs PostgreSQL 14)"),
      );
      if (got === null) return false;
      state = { ...state, active: true };
      log.info('relay active');
      unsaved = null;
      try {
        state = leading(state, (await readStreamState(conn)).relay);
        while (!stopping.signal.aborted) {
          await reconcileIfRedisChanged(conn);
          const r = await relayBatch(conn, state.cursor!);
          const done = relayedBatch(state, r.rows, r.to, policy);
          state = done.state;
          await housekeeping(conn);
          if (done.wait) await untilTold(settings.pollMs);
        }
      } finally {
        state = { ...state, active: false };
        // (a full batch's cursor left unsaved is written on the way out; if that fails, the next lead repeats the batch)
        await saveCursor(conn).catch(() => undefined);
        await releaseLeaderLock(run, RELAY_LEADER);
      }
      return true;
    });
  }

  const loop = (async () => {
    while (!stopping.signal.aborted) {
      try {
        const ended = leadEnded(state, await lead(), policy);
        state = ended.state;
        if (ended.waitMs > 0) await nap(ended.waitMs);
      } catch (err) {
        const failed = leadFailed(state);
        state = failed.state;
        log.warn({ err, retryInMs: failed.waitMs }, 'relay batch failed; the cursor stays, retrying');
        // (Redis away: tried again as soon as it is back, so that a failover's lost jobs are
        // re-created at once rather than after the back-off, up to 5 s)
        if (err instanceof RetryableError && err.code === 'ERR_REDIS_UNAVAILABLE') await queues.ready(failed.waitMs, stopping.signal);
        else await nap(failed.waitMs);
      }
    }
  })();

  return {
    get active() {
      return state.active;
    },
    get relayed() {
      return state.relayed;
    },
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}
