/**
 * Data access for `deliveries` (migrations/0020_streams.ts): one row per event per hook — the
 * delivery log the API shows, the dead letters, and the durable record that lets the relay
 * re-create jobs Redis lost. Writers: the relay inserts (pending, or failed for a disabled
 * hook), workers record each attempt, the API requests manual redeliveries. A row's
 * `redeliveries` names its current attempt series; outcomes of an older series are ignored.
 * `job_id` names the batch job (several deliveries of one hook) that carries a pending delivery;
 * null = its own job, whose id is the delivery id (streams/queues.ts).
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database, DeliveriesTable, DeliveryStatus } from '../schema.js';

export type DeliveryRow = Omit<DeliveriesTable, 'created_at' | 'updated_at' | 'status' | 'attempts' | 'redeliveries'> & {
  created_at: Date;
  updated_at: Date;
  status: DeliveryStatus;
  attempts: number;
  redeliveries: number;
};

export type NewDelivery = {
  id: string;
  hookId: string;
  keyId: bigint;
  subscriptionId: string;
  eventId: bigint;
  eventType: string;
  payload: string;
  /** `pending`, or `failed` with `error` when the hook cannot take it (disabled). */
  status: 'pending' | 'failed';
  error?: string;
  /** The batch job that will carry it (pending only); absent = its own job. */
  jobId?: string;
};

/**
 * A pending delivery that needs a job, with its hook's transport, the batch job that carries it
 * (null: its own), the attempts of its series so far and when the next one is due.
 */
export type QueuedDelivery = {
  id: string;
  hook_id: string;
  payload: string;
  event_type: string;
  redeliveries: number;
  transport: 'http' | 'sns';
  job_id: string | null;
  attempts: number;
  next_attempt_at: Date | null;
};

/**
 * Inserts deliveries (idempotent by id) and returns those that are still pending — new ones and
 * ones left pending by an earlier run — which are exactly the ones that need a job, each with
 * the batch job recorded for it (an earlier run's, for a row that was already there).
 */
export async function upsertDeliveries(
  db: Kysely<Database>,
  rows: readonly NewDelivery[],
): Promise<{ id: string; redeliveries: number; jobId: string | null }[]> {
  if (rows.length === 0) return [];
  // (the rows as one JSON parameter: JSON.stringify is native, where pg's array literals escape
  // every text element in JavaScript, and the payloads are JSON full of quotes to escape)
  const json = JSON.stringify(
    rows.map((d) => ({
      id: d.id,
      hook_id: d.hookId,
      key_id: d.keyId.toString(),
      subscription_id: d.subscriptionId,
      event_id: d.eventId.toString(),
      event_type: d.eventType,
      payload: d.payload,
      status: d.status,
      last_error: d.error ?? null,
      job_id: d.status === 'pending' ? (d.jobId ?? null) : null,
    })),
  );
  const r = await sql<{ id: string; redeliveries: number; status: DeliveryStatus; job_id: string | null }>`
    INSERT INTO deliveries (id, hook_id, key_id, subscription_id, event_id, event_type, payload, status, last_error, next_attempt_at, enqueued_at, job_id)
    SELECT u.id, u.hook_id, u.key_id, u.subscription_id, u.event_id, u.event_type, u.payload, u.status, u.last_error,
           CASE WHEN u.status = 'pending' THEN now() END, CASE WHEN u.status = 'pending' THEN now() END, u.job_id
    FROM json_to_recordset(${json}::json)
      AS u(id text, hook_id text, key_id int8, subscription_id text, event_id int8, event_type text, payload text, status text, last_error text, job_id text)
    ON CONFLICT (id) DO UPDATE SET enqueued_at = now() WHERE deliveries.status = 'pending'
    RETURNING id, redeliveries, status, job_id`.execute(db);
  return r.rows.filter((x) => x.status === 'pending').map((x) => ({ id: x.id, redeliveries: x.redeliveries, jobId: x.job_id }));
}

/** The outcome of one attempt of series `redeliveries`. */
export type AttemptOutcome = {
  id: string;
  redeliveries: number;
  status: DeliveryStatus;
  /** Attempt number within the series (1 = first). */
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  /** Pending only: when the next attempt is due. */
  nextAttemptAt: Date | null;
  /** The request this outcome is of, absent when none was sent (hook deleted, disabled, key revoked). */
  sent?: SentAttempt;
  /** The delivery leaves its batch job for a job of its own (a retry of a batched delivery). */
  ownJob?: boolean;
};

/** One request sent to a receiver: when (its `webhook-timestamp`), how long it took, the answer's first bytes. */
export type SentAttempt = { at: Date; latencyMs: number; response: string | null };

/**
 * Records attempt outcomes in one statement, with the attempts sent (delivered or not) counted
 * per hook and minute in `hook_attempt_minutes` (the console's chart), in the order of that
 * table's key so that concurrent writers lock its rows in one order. An outcome of an older series is ignored, and a
 * delivered row stays delivered (a duplicate job's late failure cannot undo it).
 */
function outcomesJson(outcomes: readonly AttemptOutcome[]): string {
  // (one JSON parameter, as in upsertDeliveries)
  return JSON.stringify(
    outcomes.map((o) => ({
      id: o.id,
      redeliveries: o.redeliveries,
      status: o.status,
      attempts: o.attempts,
      last_status: o.lastStatus,
      last_error: o.lastError,
      next_attempt_at: o.nextAttemptAt?.toISOString() ?? null,
      own_job: o.ownJob === true,
      sent_at: o.sent?.at.toISOString() ?? null,
      latency_ms: o.sent?.latencyMs ?? null,
      response: o.sent?.response ?? null,
    })),
  );
}

export async function recordOutcomes(db: Kysely<Database>, outcomes: readonly AttemptOutcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  await sql`
    WITH done AS (
      UPDATE deliveries d SET
        status = u.status,
        attempts = GREATEST(d.attempts, u.attempts),
        last_status = u.last_status,
        last_error = u.last_error,
        next_attempt_at = u.next_attempt_at,
        delivered_at = CASE WHEN u.status = 'delivered' THEN now() ELSE d.delivered_at END,
        dead_at = CASE WHEN u.status = 'dead' THEN now() END,
        job_id = CASE WHEN u.own_job THEN NULL ELSE d.job_id END,
        last_attempt_at = COALESCE(u.sent_at, d.last_attempt_at),
        last_latency_ms = CASE WHEN u.sent_at IS NULL THEN d.last_latency_ms ELSE u.latency_ms END,
        last_response = CASE WHEN u.sent_at IS NULL THEN d.last_response ELSE u.response END,
        updated_at = now()
      FROM json_to_recordset(${outcomesJson(outcomes)}::json)
        AS u(id text, redeliveries int4, status text, attempts int4, last_status int4, last_error text, next_attempt_at timestamptz,
             own_job bool, sent_at timestamptz, latency_ms int4, response text)
      WHERE d.id = u.id AND d.redeliveries = u.redeliveries AND NOT (d.status = 'delivered' AND u.status <> 'delivered')
      RETURNING d.hook_id, u.status, u.sent_at
    )
    INSERT INTO hook_attempt_minutes (hook_id, minute, delivered, failed)
    SELECT hook_id, date_trunc('minute', sent_at), count(*) FILTER (WHERE status = 'delivered'), count(*) FILTER (WHERE status <> 'delivered')
    FROM done WHERE sent_at IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (hook_id, minute) DO UPDATE SET delivered = hook_attempt_minutes.delivered + EXCLUDED.delivered, failed = hook_attempt_minutes.failed + EXCLUDED.failed`.execute(
    db,
  );
}

const queuedColumns = sql`d.id, d.hook_id, d.payload, d.event_type, d.redeliveries, h.type AS transport, d.job_id, d.attempts, d.next_attempt_at`;

/** Pending deliveries that have no job yet (manual redeliveries, enqueues that failed). */
export async function listUnqueuedDeliveries(db: Kysely<Database>, limit: number): Promise<QueuedDelivery[]> {
  const r = await sql<QueuedDelivery>`
    SELECT ${queuedColumns} FROM deliveries d JOIN hooks h ON h.id = d.hook_id
    WHERE d.status = 'pending' AND d.enqueued_at IS NULL ORDER BY d.created_at LIMIT ${limit}`.execute(db);
  return r.rows;
}

/** Pending deliveries whose next attempt was due before `dueBefore` (their job may be lost). */
export async function listOverdueDeliveries(db: Kysely<Database>, dueBefore: Date, limit: number): Promise<QueuedDelivery[]> {
  const r = await sql<QueuedDelivery>`
    SELECT ${queuedColumns} FROM deliveries d JOIN hooks h ON h.id = d.hook_id
    WHERE d.status = 'pending' AND d.next_attempt_at < ${dueBefore.toISOString()}::timestamptz
    ORDER BY d.next_attempt_at LIMIT ${limit}`.execute(db);
  return r.rows;
}

/** A pending delivery with its place in event order. */
export type PendingDelivery = QueuedDelivery & { event_id: bigint };

/** A page of every pending delivery, in event order (then id), after `after`. */
export async function listPendingDeliveries(
  db: Kysely<Database>,
  after: DeliveryPosition | null,
  limit: number,
): Promise<PendingDelivery[]> {
  const from = after ? sql`AND (d.event_id, d.id) > (${after.eventId.toString()}::int8, ${after.id})` : sql``;
  const r = await sql<PendingDelivery>`
    SELECT ${queuedColumns}, d.event_id FROM deliveries d JOIN hooks h ON h.id = d.hook_id
    WHERE d.status = 'pending' ${from}
    ORDER BY d.event_id, d.id LIMIT ${limit}`.execute(db);
  return r.rows;
}

/**
 * Marks deliveries whose job was re-created (Redis had lost it) as carried by their own job,
 * enqueued now; the next attempt keeps its time when that is still ahead (a retry's delay).
 */
export async function markRecreated(db: Kysely<Database>, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`UPDATE deliveries SET enqueued_at = now(), next_attempt_at = GREATEST(next_attempt_at, now()), job_id = NULL, updated_at = now()
    WHERE id = ANY(${ids}::text[]) AND status = 'pending'`.execute(db);
}

/**
 * Marks deliveries as having a job now (and pushes their overdue check forward); with
 * `ownJobs`, that job is each one's own (a redelivery series, a job re-created after Redis lost it).
 */
export async function markEnqueued(db: Kysely<Database>, ids: readonly string[], opts: { ownJobs?: boolean } = {}): Promise<void> {
  if (ids.length === 0) return;
  const jobId = opts.ownJobs ? sql`NULL` : sql`job_id`;
  await sql`UPDATE deliveries SET enqueued_at = now(), next_attempt_at = now(), job_id = ${jobId}, updated_at = now() WHERE id = ANY(${ids}::text[]) AND status = 'pending'`.execute(
    db,
  );
}

/** What a batch job reads of its deliveries before sending: which are still its to send, and their bodies. */
export type BatchedDelivery = {
  id: string;
  status: DeliveryStatus;
  attempts: number;
  redeliveries: number;
  job_id: string | null;
  payload: string;
};

export async function readBatchedDeliveries(db: Kysely<Database>, ids: readonly string[]): Promise<BatchedDelivery[]> {
  if (ids.length === 0) return [];
  const r =
    await sql<BatchedDelivery>`SELECT id, status, attempts, redeliveries, job_id, payload FROM deliveries WHERE id = ANY(${ids}::text[])`.execute(
      db,
    );
  return r.rows;
}

/**
 * Hands pending deliveries of batch job `jobId` over to jobs of their own (due now): a batch that
 * stops sending after a failure leaves what it did not send this way.
 */
export async function releaseToOwnJobs(db: Kysely<Database>, ids: readonly string[], jobId: string): Promise<void> {
  if (ids.length === 0) return;
  await sql`UPDATE deliveries SET job_id = NULL, next_attempt_at = now(), updated_at = now()
    WHERE id = ANY(${ids}::text[]) AND job_id = ${jobId} AND status = 'pending'`.execute(db);
}

/** Deletes finished deliveries (not pending) last changed before `before`; returns how many. */
export async function pruneDeliveries(db: Kysely<Database>, before: Date): Promise<number> {
  const r = await db.deleteFrom('deliveries').where('status', '<>', 'pending').where('updated_at', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Deletes the per-minute attempt counts of minutes before `before`; returns how many rows. */
export async function pruneAttemptMinutes(db: Kysely<Database>, before: Date): Promise<number> {
  const r = await db.deleteFrom('hook_attempt_minutes').where('minute', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** A hook's attempts per minute from `since` on (minutes without attempts absent), oldest first. */
export async function readAttemptMinutes(
  db: Kysely<Database>,
  hookId: string,
  since: Date,
): Promise<{ minute: Date; delivered: number; failed: number }[]> {
  return db
    .selectFrom('hook_attempt_minutes')
    .select(['minute', 'delivered', 'failed'])
    .where('hook_id', '=', hookId)
    .where('minute', '>=', since)
    .orderBy('minute')
    .execute();
}

/** Keyset position in a hook's delivery log (newest event first). */
export type DeliveryPosition = { eventId: bigint; id: string };

/** A page of the hook's deliveries, newest event first, optionally one status only. */
export async function listDeliveries(
  db: Kysely<Database>,
  hookId: string,
  opts: { status?: DeliveryStatus; after?: DeliveryPosition; limit: number },
): Promise<DeliveryRow[]> {
  let q = db.selectFrom('deliveries').selectAll().where('hook_id', '=', hookId);
  if (opts.status) q = q.where('status', '=', opts.status);
  if (opts.after) {
    const { eventId, id } = opts.after;
    q = q.where((eb) => eb.or([eb('event_id', '<', eventId), eb.and([eb('event_id', '=', eventId), eb('id', '<', id)])]));
  }
  return q.orderBy('event_id', 'desc').orderBy('id', 'desc').limit(opts.limit).execute();
}

/** One delivery of the hook, or undefined. */
export async function findDelivery(db: Kysely<Database>, hookId: string, id: string): Promise<DeliveryRow | undefined> {
  return db.selectFrom('deliveries').selectAll().where('hook_id', '=', hookId).where('id', '=', id).executeTakeFirst();
}

/**
 * Starts a new attempt series for a delivery (manual redelivery): pending, attempts reset, no
 * job yet (the relay creates one within a second). Returns the row, or undefined when unknown.
 */
export async function requestRedelivery(db: Kysely<Database>, hookId: string, id: string): Promise<DeliveryRow | undefined> {
  return db
    .updateTable('deliveries')
    .set((eb) => ({
      status: 'pending',
      redeliveries: eb('redeliveries', '+', 1),
      attempts: 0,
      enqueued_at: null,
      job_id: null,
      next_attempt_at: new Date(),
      dead_at: null,
      updated_at: new Date(),
    }))
    .where('hook_id', '=', hookId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}
