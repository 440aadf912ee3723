/**
 * A delivery worker: a BullMQ Worker on one queue (webhooks or sns) that sends each delivery
 * through its transport and records every attempt in the delivery log before the job ends.
 * Outcomes: delivered → job completes; permanent → `failed` in the log, UnrecoverableError (410
 * also disables the hook); retryable → `pending` with the next attempt's time, or `dead` (the
 * dead letter) on the last attempt. The retry delay is computed here (streams/retry.ts) and
 * handed to BullMQ through the error, so the log shows exactly when the next attempt comes.
 *
 * A batch job (streams/queues.ts) carries several deliveries of one hook: it reads their log
 * rows, sends those still its own (pending, recorded with this job) a few at a time over the
 * transport's kept-alive connections, and records each outcome. The first retryable failure
 * stops it: that delivery leaves for a job of its own (id = delivery id) delayed by its retry
 * delay, and the ones not yet sent leave for jobs of their own due now, so a failing receiver is
 * tried delivery by delivery as before and every delivery keeps its own schedule.
 *
 * A worker killed mid-delivery leaves its job stalled; another worker re-runs it (same
 * webhook-id; a batch skips what its log rows say was delivered). A hook whose API key was
 * revoked gets nothing more: its deliveries end `failed` ("API key revoked").
 * @module
 */
import { EventEmitter } from 'node:events';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { createRedis } from '../src/net/redis.js';
import { ConcurrencyLimit } from '../src/rpc/limit.js';
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import { disableHook, findHookById, setHookBreaker, type HookRow } from '../src/db/queries/tenancy-hooks.js';
import { readBatchedDeliveries, releaseToOwnJobs, type AttemptOutcome } from '../src/db/queries/tenancy-deliveries.js';
import { createOutcomeWriter } from './outcome-writer.js';
import {
  BACKLOG_PRIORITY,
  BACKOFF_TYPE,
  BATCH_JOB_NAME,
  QUEUE_NAMES,
  createDeliveryQueues,
  type BatchJobData,
  type DeliveryJob,
  type DeliveryJobData,
  type Transport as TransportName,
} from './queues.js';
import { MAX_ATTEMPTS, RETRY_BASE_MS, retryDelay, retryDelayAfter } from './retry.js';
import type { SendResult, Transport } from './transport.js';
import { persisted, type AttemptVerdict, type Breaker } from './breaker.js';
import { EMPTY_FAIR_STATE, admit, adopt, observe, release, type FairPolicy, type FairState, type Step } from './fair-share.js';

/** How long the worker waits before it tries again a Redis call of its own loop that failed (BullMQ's `runRetryDelay`). */
const RUN_RETRY_MS = 1000;

/** A retryable failure carrying the delay the worker chose for the next attempt. */
export class RetryLaterError extends Error {
  readonly delayMs: number;
  constructor(message: string, delayMs: number) {
    super(message);
    this.name = 'RetryLaterError';
    this.delayMs = delayMs;
  }
}

/** BullMQ backoff strategy: the delay chosen by the processor, else the schedule. */
export function deliveryBackoff(attemptsMade: number, _type?: string, err?: Error, retryBaseMs: number = RETRY_BASE_MS): number {
  if (err instanceof RetryLaterError) return err.delayMs;
  return retryDelay(Math.max(1, attemptsMade), Math.random, retryBaseMs);
}

/** The attempt series of a job from its id (`…-r<n>` for manual redeliveries). */
export function seriesOf(jobId: string | undefined): number {
  const m = /-r(\d+)$/.exec(jobId ?? '');
  return m ? Number(m[1]) : 0;
}

export type DeliveryWorkerDeps = {
  db: Kysely<Database>;
  redisUrl: string;
  prefix: string;
  transportName: TransportName;
  transport: Transport;
  log: Logger;
  /** Deliveries in flight at most (over all jobs of this worker). */
  concurrency: number;
  /** Deliveries of one batch job in flight at most. Default 4. */
  batchConcurrency?: number;
  /** Shares of `concurrency` per key and hook, and the hooks' circuit breaker (streams/fair-share.ts). */
  fairness: FairPolicy;
  /**
   * How long an attempt's outcome waits at most for others to go with it into one statement of
   * the delivery log (streams/outcome-writer.ts); 0: the outcomes of one turn of the event loop. Default 0.
   */
  outcomeWindowMs?: number;
  /**
   * The same for the deliveries of batch jobs (their hook's share is free once nothing of the
   * batch is in flight, so their outcomes may wait longer, and go in larger statements). Default
   * `outcomeWindowMs`.
   */
  batchOutcomeWindowMs?: number;
  /** Job lock; a job whose worker died is re-run after about this long. */
  lockMs: number;
  /**
   * How long a hook row is cached (deletion, disabling and secret rotation show within it; a
   * key's revocation at once through `forgetKey`, else within it too). Default 1 s.
   */
  hookCacheMs?: number;
  /**
   * The longest close() waits for deliveries in flight and for BullMQ to let go; then it
   * disconnects (BullMQ's close never resolves while its blocking client reconnects to a Redis
   * that is down, taskforcesh/bullmq#4656). Jobs it held run again once their lock expires.
   */
  closeTimeoutMs: number;
  /** The nominal delay before a delivery's first retry (streams/retry.ts). Default 10 s. */
  retryBaseMs?: number;
  random?: () => number;
};

export type DeliveryWorker = {
  worker: Worker;
  /**
   * One event per delivery attempt that ends (whatever job carried it): `completed`, or `failed`
   * with the error (UnrecoverableError: failed for good; else it is tried again). Besides:
   * `deferred` (reason: `paused`, `hook`, `key`) per job moved back to wait for its share or
   * its hook's breaker, and `breaker` (hook id, new state) per change of a hook's breaker.
   */
  events: EventEmitter;
  /** The fair-share state now (deliveries in flight by key and hook, breakers not closed). */
  fairness(): FairState;
  /** Drops what is cached of the key's hooks (a key notification: it may be revoked). */
  forgetKey(keyId: string): void;
  close(): Promise<void>;
};

/** A hook's row as the worker keeps it. */
type CachedHook = HookRow & { key_revoked: boolean };

/** What one attempt came to: its log row (`record` it), and for the job how it ends. */
type Attempted = { outcome: AttemptOutcome } & (
  { end: 'done' } | { end: 'failed'; error: string } | { end: 'retry'; error: string; delayMs: number }
);

/**
 * An attempt's log row. (A literal, not a spread of `base`: on the V8 of Node 20 a literal that
 * adds properties after a spread is built property by property in the runtime.)
 */
function outcomeOf(
  base: { id: string; redeliveries: number; attempts: number },
  status: AttemptOutcome['status'],
  lastStatus: number | null,
  lastError: string | null,
  nextAttemptAt: Date | null,
  sent?: AttemptOutcome['sent'],
): AttemptOutcome {
  const o: AttemptOutcome = {
    id: base.id,
    redeliveries: base.redeliveries,
    attempts: base.attempts,
    status,
    lastStatus,
    lastError,
    nextAttemptAt,
  };
  if (sent) o.sent = sent;
  return o;
}

export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const log = deps.log.child({ component: `streams.worker.${deps.transportName}` });
  const outcomes = createOutcomeWriter(deps.db, deps.outcomeWindowMs ?? 0);
  const record = outcomes.record;
  const batchWindowMs = deps.batchOutcomeWindowMs ?? deps.outcomeWindowMs ?? 0;
  const random = deps.random ?? Math.random;
  const retryBaseMs = deps.retryBaseMs ?? RETRY_BASE_MS;
  const batchConcurrency = Math.max(1, deps.batchConcurrency ?? 4);
  // Deliveries in flight, over own jobs and batches alike.
  const gate = new ConcurrencyLimit(deps.concurrency);
  // Where a batch's deliveries that must be tried again get jobs of their own.
  const producer = createDeliveryQueues({ redisUrl: deps.redisUrl, prefix: deps.prefix });
  const hookCacheMs = deps.hookCacheMs ?? 1000;
  const hooks = new Map<string, { at: number; hook: CachedHook | undefined }>();
  // Loads of a hook row under way: the attempts that find its cached row stale meanwhile wait for
  // the same query (a hook's deliveries in flight do not each read it again).
  const loading = new Map<string, Promise<CachedHook | undefined>>();
  const policy = deps.fairness;
  // Who holds which share, and the breakers (pure steps: streams/fair-share.ts).
  let fair: FairState = EMPTY_FAIR_STATE;
  // Jobs parked in this process for their share, by key: woken when a share of the key frees
  // (they ask again).
  const parked = new Map<string, (() => void)[]>();
  let closing = false;
  // Jobs the worker holds at once (running or parked).
  const jobSlots = deps.concurrency;
  // Jobs in process() now (running, parked or being admitted): the worker's slots taken.
  let inProcess = 0;
  /** Wakes the jobs parked for the key's shares (all of them: every key). */
  const wake = (key?: string) => {
    for (const k of key === undefined ? [...parked.keys()] : [key]) {
      const woken = parked.get(k) ?? [];
      parked.delete(k);
      for (const w of woken) w();
    }
  };

  /** Applies a fair-share step; a breaker that changed is logged, counted, shown on the hook (persisted). */
  function step<T extends object>(st: Step<T>, hook: HookRow): Step<T> {
    fair = st.state;
    if (st.breaker) breakerChanged(hook, st.breaker);
    return st;
  }

  function breakerChanged(hook: HookRow, b: Breaker): void {
    const p = persisted(b);
    const hit = hooks.get(hook.id);
    if (hit?.hook) hit.hook = { ...hit.hook, breaker_state: p.state, breaker_until: p.until };
    if (b.state === 'open') log.warn({ hook: hook.id, until: p.until }, 'hook circuit breaker open: its deliveries wait (kept) until then');
    else log.info({ hook: hook.id, breaker: b.state }, 'hook circuit breaker');
    events.emit('breaker', hook.id, b.state);
    setHookBreaker(deps.db, hook.id, p.state, p.until).catch((err: unknown) =>
      log.warn({ err, hook: hook.id }, "could not record the hook's breaker"),
    );
  }

  /** The hook's row: cached, or read (once for all the attempts that ask meanwhile). */
  function loadHook(id: string): CachedHook | undefined | Promise<CachedHook | undefined> {
    const hit = hooks.get(id);
    if (hit && Date.now() - hit.at < hookCacheMs) return hit.hook;
    let load = loading.get(id);
    if (!load) {
      load = findHookById(deps.db, id).then(
        (hook) => {
          loading.delete(id);
          hooks.set(id, { at: Date.now(), hook });
          return hook;
        },
        (err: unknown) => {
          loading.delete(id);
          throw err;
        },
      );
      loading.set(id, load);
    }
    return load;
  }

  /** One attempt of one delivery (`base.attempts` = its number), its outcome not yet recorded. */
  async function attempt(
    data: DeliveryJobData,
    base: { id: string; redeliveries: number; attempts: number },
    last: boolean,
  ): Promise<Attempted> {
    const hook = await loadHook(data.hook);
    if (!hook || hook.deleted_at) return notSent(base, 'hook deleted');
    if (hook.key_revoked) return notSent(base, 'API key revoked');
    if (hook.disabled_at) return notSent(base, `hook disabled: ${hook.disabled_reason ?? ''}`.trim());
    const at = Date.now();
    const r: SendResult = await deps.transport.send(hook, data);
    const end = Date.now();
    // (sent at: the timestamp the request was signed with, which the receiver saw, when there is one)
    const sent = { at: new Date(r.signedAt !== undefined ? r.signedAt * 1000 : at), latencyMs: end - at, response: r.response ?? null };
    const verdict = verdictOf(r);
    // (an answer from a hook whose breaker is closed changes nothing)
    if (verdict === 'failed' || (verdict === 'answered' && fair.breakers.has(hook.id)))
      step(observe(fair, hook.id, verdict, end, policy), hook);
    switch (r.kind) {
      case 'delivered':
        return { end: 'done', outcome: outcomeOf(base, 'delivered', r.status, null, null, sent) };
      case 'permanent':
        if (r.disableHook) {
          // Disabled here at once: nothing more of this process starts for the hook meanwhile.
          hooks.set(hook.id, { at: Date.now(), hook: { ...hook, disabled_at: new Date(), disabled_reason: r.disableHook } });
          await disableHook(deps.db, hook.id, r.disableHook);
          log.warn({ hook: hook.id, reason: r.disableHook }, 'hook disabled');
        }
        return {
          end: 'failed',
          error: r.error,
          outcome: outcomeOf(base, 'failed', r.status, r.error, null, sent),
        };
      case 'retry': {
        if (last) {
          log.warn({ delivery: data.delivery, attempts: base.attempts }, 'delivery dead-lettered after its last attempt');
          return {
            end: 'failed',
            error: r.error,
            outcome: outcomeOf(base, 'dead', r.status, r.error, null, sent),
          };
        }
        const delayMs = retryDelayAfter(base.attempts, r.retryAfterMs, random, retryBaseMs);
        return {
          end: 'retry',
          error: r.error,
          delayMs,
          outcome: outcomeOf(base, 'pending', r.status, r.error, new Date(Date.now() + delayMs), sent),
        };
      }
    }
  }

  /** A delivery's own job. */
  async function processOne(job: Job<DeliveryJobData>): Promise<void> {
    const data = job.data;
    const base = { id: data.delivery, redeliveries: seriesOf(job.id), attempts: (data.attempted ?? 0) + job.attemptsMade + 1 };
    const a = await gate.run(() => attempt(data, base, job.attemptsMade + 1 >= (job.opts.attempts ?? 1)));
    await record(a.outcome);
    if (a.end === 'failed') throw new UnrecoverableError(a.error);
    if (a.end === 'retry') throw new RetryLaterError(a.error, a.delayMs);
  }

  /**
   * A batch job: its deliveries still pending under this job, `width` at a time. `sent()` is
   * called once nothing of it is in flight any more (its log rows may still be being written):
   * its share is free for the hook's next job from then.
   */
  async function processBatch(job: Job<BatchJobData>, width: number, sent: () => void): Promise<void> {
    const { hook, deliveries } = job.data;
    const rows = new Map(
      (
        await readBatchedDeliveries(
          deps.db,
          deliveries.map((d) => d.delivery),
        )
      ).map((r) => [r.id, r]),
    );
    const todo = deliveries.filter((d) => {
      const r = rows.get(d.delivery);
      return r !== undefined && r.status === 'pending' && r.job_id === job.id && r.redeliveries === 0;
    });
    const recorded: Promise<void>[] = [];
    const keep = (p: Promise<void>, a?: Attempted) => {
      // (awaited below; handled now so that an early failure is not "unhandled")
      p.then(a ? () => ended(a) : undefined, () => undefined);
      recorded.push(p);
    };
    const retries: { data: DeliveryJobData; a: Attempted & { end: 'retry' } }[] = [];
    let next = 0;
    let stopped = false;
    let broke: unknown;
    /** One delivery of the batch within the worker's cap; false once there is nothing more to send. */
    const sendNext = async (): Promise<boolean> => {
      // (taken only once it may go: after a stop, `todo.slice(next)` is exactly what was not sent)
      if (stopped || next >= todo.length) return false;
      const d = todo[next++]!;
      const row = rows.get(d.delivery)!;
      const attempts = row.attempts + 1;
      // (the body as logged; a batch job of an earlier version carries it itself)
      const data: DeliveryJobData = { delivery: d.delivery, hook, payload: d.payload ?? row.payload, type: d.type };
      let a: Attempted;
      try {
        a = await attempt(data, { id: d.delivery, redeliveries: 0, attempts }, attempts >= MAX_ATTEMPTS);
      } catch (err) {
        // (PostgreSQL away…: the job fails and runs again; this delivery is still the batch's)
        broke ??= err;
        stopped = true;
        return false;
      }
      if (a.end === 'retry') {
        stopped = true;
        retries.push({ data, a });
      } else {
        keep(record(a.outcome, batchWindowMs), a);
      }
      return true;
    };
    const lane = async () => {
      while (await gate.run(sendNext));
    };
    await Promise.all(Array.from({ length: Math.min(width, todo.length) }, lane));
    sent();
    const unsent = todo.slice(next);
    if (retries.length + unsent.length > 0) {
      // Their own jobs first, then the log rows that hand them over: a crash in between sends
      // one twice (the batch runs again), never zero times.
      const own: DeliveryJob[] = [
        ...retries.map(({ data, a }) => ({
          ...data,
          transport: deps.transportName,
          redeliveries: 0,
          attempted: a.outcome.attempts,
          delayMs: a.delayMs,
        })),
        ...unsent.map((d) => {
          const row = rows.get(d.delivery)!;
          return {
            delivery: d.delivery,
            hook,
            payload: d.payload ?? row.payload,
            type: d.type,
            transport: deps.transportName,
            redeliveries: 0,
            attempted: row.attempts,
          };
        }),
      ];
      try {
        await producer.enqueue(own);
      } catch (err) {
        await Promise.allSettled(recorded);
        throw err;
      }
      for (const { a } of retries) keep(record({ ...a.outcome, ownJob: true }), a);
      keep(
        releaseToOwnJobs(
          deps.db,
          unsent.map((d) => d.delivery),
          job.id!,
        ),
      );
    }
    await Promise.all(recorded);
    if (broke !== undefined) throw broke;
  }

  /** The `events` of one attempt of a batch (a delivery's own job reports through its job's end). */
  function ended(a: Attempted): void {
    if (a.end === 'done') events.emit('completed');
    else if (a.end === 'failed') events.emit('failed', undefined, new UnrecoverableError(a.error));
    else events.emit('failed', undefined, new RetryLaterError(a.error, a.delayMs));
  }

  /**
   * A job within its fair share: run as wide as granted, parked in the process for a share, or
   * moved back to the delayed set (no slot held, no attempt counted) until its share or its
   * hook's breaker lets it send.
   */
  async function process(job: Job<DeliveryJobData | BatchJobData>, token?: string): Promise<void> {
    inProcess += 1;
    try {
      return await admitted(job, token);
    } finally {
      inProcess -= 1;
    }
  }

  async function admitted(job: Job<DeliveryJobData | BatchJobData>, token?: string): Promise<void> {
    const batch = job.name === BATCH_JOB_NAME;
    const run = (width: number, sent: () => void = () => undefined) =>
      batch ? processBatch(job as Job<BatchJobData>, width, sent) : processOne(job as Job<DeliveryJobData>);
    // (the row as last loaded, however old: admission needs its key, which never changes, and
    // its breaker; a fresh row is read before each send. A backlog deferred again costs no query.)
    const hook = hooks.get(job.data.hook)?.hook ?? (await loadHook(job.data.hook));
    // (nothing is sent for a hook that is gone, disabled or revoked: its deliveries just end)
    if (!hook || hook.deleted_at || hook.disabled_at || hook.key_revoked) return run(batchConcurrency);
    fair = adopt(fair, hook.id, { state: hook.breaker_state, until: hook.breaker_until }, Date.now()).state;
    const want = batch ? Math.min(batchConcurrency, (job.data as BatchJobData).deliveries.length) : 1;
    let wasParked = false;
    for (;;) {
      const now = Date.now();
      const deferrals = Math.max(0, (job.attemptsStarted ?? 1) - 1 - job.attemptsMade);
      const { decision: d } = step(
        admit(
          fair,
          {
            key: String(hook.key_id),
            hook: hook.id,
            want,
            parked: wasParked,
            mayPark: !closing,
            deferrals,
            freeSlots: jobSlots - inProcess,
          },
          now,
          policy,
        ),
        hook,
      );
      if (d.kind === 'run') {
        const grant = d.grant;
        let held = true;
        // (once: when a batch has nothing in flight any more, or when the job ends)
        const free = () => {
          if (!held) return;
          held = false;
          fair = release(fair, grant);
          wake(grant.key);
        };
        try {
          return await run(grant.width, free);
        } finally {
          free();
        }
      }
      if (d.kind === 'park') {
        wasParked = true;
        const key = String(hook.key_id);
        let waiting = parked.get(key);
        if (!waiting) parked.set(key, (waiting = []));
        const mine = waiting;
        await new Promise<void>((resolve) => mine.push(resolve));
        continue;
      }
      // Back with a priority: fresh jobs (no priority) go first, so a key's backlog of deferred
      // jobs never stands in front of another key's new deliveries.
      if (!job.priority) await job.changePriority({ priority: BACKLOG_PRIORITY });
      // (spread out: the jobs of one paused hook do not all come back in the same instant)
      await job.moveToDelayed(d.until + Math.floor(random() * Math.min(1000, Math.max(50, (d.until - now) / 10))), token);
      events.emit('deferred', d.reason);
      throw new DelayedError();
    }
  }

  const connection = createRedis(deps.redisUrl, { maxRetriesPerRequest: null, connectionName: `blockwire-worker-${deps.transportName}` });
  connection.on('error', () => {});
  const worker = new Worker<DeliveryJobData | BatchJobData>(QUEUE_NAMES[deps.transportName], process, {
    connection,
    prefix: deps.prefix,
    concurrency: jobSlots,
    lockDuration: deps.lockMs,
    stalledInterval: Math.max(1000, Math.floor(deps.lockMs / 2)),
    maxStalledCount: 10,
    // A job's end (moveToFinished) or a fetch that fails on Redis is tried again after this
    // long. BullMQ's default, 15 s, held every slot of the jobs in flight at a Sentinel failover
    // (their ends fail with the old primary) for 15 s, in which the worker took no job: the
    // jobs the relay re-created on the new primary waited that long, and a backlog grew.
    runRetryDelay: RUN_RETRY_MS,
    settings: {
      backoffStrategy: (attemptsMade, type, err) =>
        type === BACKOFF_TYPE
          ? deliveryBackoff(attemptsMade, type, err, retryBaseMs)
          : retryDelay(Math.max(1, attemptsMade), random, retryBaseMs),
    },
  });
  const events = new EventEmitter();
  worker.on('completed', (job) => {
    if (job.name !== BATCH_JOB_NAME) events.emit('completed');
  });
  worker.on('failed', (job, err) => {
    // (a batch job fails as a whole only when PostgreSQL or Redis did: its deliveries are tried again)
    events.emit('failed', job, err);
  });
  let lastError = 0;
  worker.on('error', (err) => {
    if (Date.now() - lastError > 5000) {
      lastError = Date.now();
      log.warn({ err }, 'delivery worker error (Redis?); it reconnects by itself');
    }
  });
  return {
    worker,
    events,
    fairness: () => fair,
    forgetKey(keyId) {
      for (const [id, e] of hooks) if (!e.hook || String(e.hook.key_id) === keyId) hooks.delete(id);
    },
    async close() {
      // Parked jobs go back to the queue rather than wait here for a share; outcomes waiting for
      // their window are written now (the jobs they hold end with them).
      closing = true;
      wake();
      outcomes.hurry();
      if (!(await settlesWithin(worker.close(), deps.closeTimeoutMs))) {
        log.warn(
          { timeoutMs: deps.closeTimeoutMs },
          'delivery worker did not stop in time (Redis unreachable?): disconnecting; jobs it held run again when their locks expire',
        );
        await settlesWithin(worker.disconnect(), 1000);
      }
      await deps.transport.close?.();
      await settlesWithin(producer.close(), 1000);
      connection.disconnect();
    },
  };
}

/** The outcome of an attempt that sent nothing (its hook gone, disabled or its key revoked): failed for good. */
function notSent(base: { id: string; redeliveries: number; attempts: number }, lastError: string): Attempted {
  return { end: 'done', outcome: outcomeOf(base, 'failed', null, lastError, null) };
}

/** What an attempt's result says of the receiver: an answer (even a 4xx) or a failure; nothing when it was not reached. */
function verdictOf(r: SendResult): AttemptVerdict | undefined {
  if (r.kind === 'retry') return 'failed';
  return r.kind === 'delivered' || r.status !== null ? 'answered' : undefined;
}

/** True when `p` settles (either way) within `ms`; a late rejection is swallowed. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  try {
    return await Promise.race([
      p.then(
        () => true as const,
        () => true as const,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
