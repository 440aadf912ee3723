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
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import type { Redis } from 'ioredis';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import {
  listOverdueDeliveries,
  listUnqueuedDeliveries,
  markEnqueued,
  pruneAttemptMinutes,
  pruneDeliveries,
  upsertDeliveries,
  type NewDelivery,
  type QueuedDelivery,
} from '../src/db/queries/tenancy-deliveries.js';
import { decodeOutboxRows } from './events.js';
import { deliveryId, deliveryJson, deliveryParts, indexSubscriptions, matchEvents, partsJson } from './match.js';
import { advanceRelayCursor, pruneOutbox, readOutbox, readStreamState } from './outbox.js';
import { loadSubscriptionsFor } from './subscriptions.js';
import { encodeFeedBatch, type FeedItem } from './feed-message.js';
import { roundRobin } from './fair-share.js';
import { batchJobId, type DeliveryBatch, type DeliveryJob, type DeliveryQueues } from './queues.js';

/** How long the per-minute attempt counts of hooks (the console's last-hour chart) are kept. */
const ATTEMPT_MINUTES_KEPT_MS = 24 * 3600_000;

/** "BWRELAY1" as ASCII: the session advisory lock of the active relay. */
const RELAY_LOCK = 0x4257_5245_4c41_5931n;

/** How long the relay's lock session may sit idle before the server ends it (and frees the lock): never less than 15 s, nor than three polls. */
function lockIdleMs(pollMs: number): number {
  return Math.max(15_000, 3 * pollMs);
}

export type RelaySettings = {
  /** Outbox rows per batch. */
  batchSize: number;
  /** Most deliveries in one batch job (one hook, one relay batch); 1 = a job per delivery. */
  deliveryBatchSize: number;
  /** Idle poll interval of the outbox. */
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
};

export type Relay = {
  /** True while this relay holds the lock. */
  readonly active: boolean;
  /** Events relayed so far by this process. */
  readonly relayed: number;
  /** Stops after the current batch and releases the lock. */
  stop(): Promise<void>;
};

function toJob(d: QueuedDelivery): DeliveryJob {
  return { transport: d.transport, delivery: d.id, hook: d.hook_id, payload: d.payload, type: d.event_type, redeliveries: d.redeliveries };
}

/**
 * Gives the pending deliveries of each hook (in event order) batch job ids, `size` to a job; a
 * delivery left alone keeps its own job (no id).
 */
export function assignBatchJobs(rows: NewDelivery[], size: number, to: bigint): void {
  if (size < 2) return;
  const byHook = new Map<string, NewDelivery[]>();
  for (const r of rows) {
    if (r.status !== 'pending') continue;
    const list = byHook.get(r.hookId);
    if (list) list.push(r);
    else byHook.set(r.hookId, [r]);
  }
  for (const [hook, list] of byHook) {
    for (let i = 0, n = 0; i < list.length; i += size, n++) {
      const chunk = list.slice(i, i + size);
      if (chunk.length < 2) continue;
      const jobId = batchJobId(hook, to, n);
      for (const r of chunk) r.jobId = jobId;
    }
  }
}

/** Starts the relay loop (standby until it gets the lock). */
export function startRelay(deps: RelayDeps): Relay {
  const { db, publisher, queues, settings } = deps;
  const log = deps.log.child({ component: 'streams.relay' });
  const stopping = new AbortController();
  let active = false;
  let relayed = 0;
  let lastHousekeeping = 0;

  const nap = (ms: number) => sleep(ms, undefined, { signal: stopping.signal }).catch(() => undefined);

  /** One batch; returns how many outbox rows it covered. */
  async function relayBatch(conn: Kysely<Database>, cursor: bigint): Promise<{ rows: number; to: bigint }> {
    const rows = await readOutbox(conn, { after: cursor, limit: settings.batchSize });
    if (rows.length === 0) return { rows: 0, to: cursor };
    const to = rows[rows.length - 1]!.seq;
    const events = decodeOutboxRows(rows, (row, err) => log.error({ seq: row.seq.toString(), type: row.type, err }, 'outbox row skipped: it breaks the outbox contract'));
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
      hookRows.push({
        id,
        hookId: sub.hookId,
        keyId: d.keyId,
        subscriptionId: sub.id,
        eventId: d.event.seq,
        eventType: d.event.type,
        payload: json,
        status: sub.hookActive ? 'pending' : 'failed',
        ...(sub.hookActive ? {} : { error: 'hook disabled' }),
      });
    }
    assignBatchJobs(hookRows, settings.deliveryBatchSize, to);
    const pending = await upsertDeliveries(conn, hookRows);
    if (pending.length > 0) {
      // (a row that was already there keeps the job recorded for it: re-adding that job is a no-op while it exists)
      const recorded = new Map(pending.map((p) => [p.id, p]));
      const own: DeliveryJob[] = [];
      const batches = new Map<string, DeliveryBatch>();
      const batchKeys = new Map<string, string>();
      for (const h of hookRows) {
        const p = recorded.get(h.id);
        if (!p) continue;
        const transport = transports.get(h.id)!;
        if (p.jobId === null) {
          own.push({ transport, delivery: h.id, hook: h.hookId, payload: h.payload, type: h.eventType, redeliveries: p.redeliveries });
          continue;
        }
        let b = batches.get(p.jobId);
        if (!b) {
          batches.set(p.jobId, (b = { transport, jobId: p.jobId, hook: h.hookId, deliveries: [], ...(failing.has(h.hookId) ? { backlog: true } : {}) }));
          batchKeys.set(p.jobId, String(h.keyId));
        }
        b.deliveries.push({ delivery: h.id, payload: h.payload, type: h.eventType });
      }
      if (own.length > 0) await queues.enqueue(own);
      // (in turns over the keys: one key's many hooks do not queue in front of another key's first job)
      if (batches.size > 0) await queues.enqueueBatches(roundRobin([...batches.values()], (b) => batchKeys.get(b.jobId)!));
    }
    await publisher.publish(settings.channel, encodeFeedBatch({ from: cursor, to, items }));
    await advanceRelayCursor(conn, to);
    relayed += rows.length;
    return { rows: rows.length, to };
  }

  /** Jobs for redelivery requests, and (periodically) for overdue deliveries whose job Redis lost; pruning. */
  async function housekeeping(conn: Kysely<Database>): Promise<void> {
    const unqueued = await listUnqueuedDeliveries(conn, 500);
    if (unqueued.length > 0) {
      await queues.enqueue(unqueued.map(toJob));
      await markEnqueued(conn, unqueued.map((d) => d.id), { ownJobs: true });
      log.info({ deliveries: unqueued.length }, 'delivery jobs created (redelivery or retried enqueue)');
    }
    const now = Date.now();
    if (now - lastHousekeeping < settings.housekeepingMs) return;
    lastHousekeeping = now;
    const overdue = await listOverdueDeliveries(conn, new Date(now - settings.rescueAfterMs), 1000);
    if (overdue.length > 0) {
      const lost: QueuedDelivery[] = [];
      const live: string[] = [];
      // (a batch job is asked about once for all its overdue deliveries)
      const batchLive = new Map<string, boolean>();
      for (const d of overdue) {
        let ok = d.job_id === null ? undefined : batchLive.get(d.job_id);
        if (ok === undefined) {
          ok = await queues.isLive({ ...toJob(d), jobId: d.job_id });
          if (d.job_id !== null) batchLive.set(d.job_id, ok);
        }
        if (ok) live.push(d.id);
        else lost.push(d);
      }
      if (lost.length > 0) {
        // Each gets a job of its own (a batch job Redis lost is not re-created as a batch).
        await queues.enqueue(lost.map(toJob), { replace: true });
        log.warn({ deliveries: lost.length }, 'delivery jobs re-created: Redis had lost them');
      }
      await markEnqueued(conn, live);
      await markEnqueued(conn, lost.map((d) => d.id), { ownJobs: true });
    }
    const pruned = await pruneOutbox(conn, new Date(now - settings.retentionMs));
    const logPruned = await pruneDeliveries(conn, new Date(now - settings.deliveryLogRetentionMs));
    await pruneAttemptMinutes(conn, new Date(now - ATTEMPT_MINUTES_KEPT_MS));
    if (pruned + logPruned > 0) log.info({ events: pruned, deliveries: logPruned }, 'pruned past retention');
  }

  /** Holds the lock on one connection and relays until stopped or an error. False: not leader. */
  async function lead(): Promise<boolean> {
    return db.connection().execute(async (conn) => {
      const got = await sql<{ ok: boolean }>`SELECT pg_try_advisory_lock(${RELAY_LOCK.toString()}::int8) AS ok`.execute(conn);
      if (!got.rows[0]?.ok) return false;
      active = true;
      log.info('relay active');
      try {
        // A relay that stops (a stopped process, a frozen host) must not hold the lock for good:
        // its session open, the lock would stay with it and no standby could take over. The
        // server ends the session, the lock with it, once it has been idle this long; a running
        // relay reads the outbox every poll, so it never is.
        const idle = String(lockIdleMs(settings.pollMs));
        await sql`SELECT set_config('idle_session_timeout', ${idle}, false), set_config('idle_in_transaction_session_timeout', ${idle}, false)`
          .execute(conn)
          .catch((err: unknown) => log.warn({ err }, 'relay: the idle limit of the lock session was refused (PostgreSQL before 14?); a stopped relay then holds the lock until its connection closes'));
        let cursor = (await readStreamState(conn)).relay;
        lastHousekeeping = 0;
        while (!stopping.signal.aborted) {
          const r = await relayBatch(conn, cursor);
          cursor = r.to;
          await housekeeping(conn);
          if (r.rows < settings.batchSize) await nap(settings.pollMs);
        }
      } finally {
        active = false;
        await sql`SELECT pg_advisory_unlock(${RELAY_LOCK.toString()}::int8)`.execute(conn).catch(() => undefined);
        await sql`RESET idle_session_timeout`.execute(conn).catch(() => undefined);
        await sql`RESET idle_in_transaction_session_timeout`.execute(conn).catch(() => undefined);
      }
      return true;
    });
  }

  const loop = (async () => {
    let failures = 0;
    while (!stopping.signal.aborted) {
      try {
        const led = await lead();
        failures = 0;
        if (!led) await nap(settings.standbyMs);
      } catch (err) {
        failures += 1;
        const wait = Math.min(5000, 100 * 2 ** Math.min(failures, 6));
        log.warn({ err, retryInMs: wait }, 'relay batch failed; the cursor stays, retrying');
        await nap(wait);
      }
    }
  })();

  return {
    get active() {
      return active;
    },
    get relayed() {
      return relayed;
    },
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}
