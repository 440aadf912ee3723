/**
 * A delivery worker: a BullMQ Worker on one queue (webhooks or sns) that sends each job through
 * its transport and records every attempt in the delivery log before the job ends. Outcomes:
 * delivered → job completes; permanent → `failed` in the log, UnrecoverableError (410 also
 * disables the hook); retryable → `pending` with the next attempt's time, or `dead` (the dead
 * letter) on the last attempt. The retry delay is computed here (streams/retry.ts) and handed to
 * BullMQ through the error, so the log shows exactly when the next attempt comes. A worker
 * killed mid-delivery leaves its job stalled; another worker re-runs it (same webhook-id). A
 * hook whose API key was revoked gets nothing more: its jobs end `failed` ("API key revoked").
 * @module
 */
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { createRedis } from '../src/net/redis.js';
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import { disableHook, findHookById, type HookRow } from '../src/db/queries/tenancy-hooks.js';
import { recordOutcomes, type AttemptOutcome } from '../src/db/queries/tenancy-deliveries.js';
import { BACKOFF_TYPE, QUEUE_NAMES, type DeliveryJobData, type Transport as TransportName } from './queues.js';
import { retryDelay, retryDelayAfter } from './retry.js';
import type { SendResult, Transport } from './transport.js';

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
export function deliveryBackoff(attemptsMade: number, _type?: string, err?: Error): number {
  if (err instanceof RetryLaterError) return err.delayMs;
  return retryDelay(Math.max(1, attemptsMade));
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
  concurrency: number;
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
  random?: () => number;
};

export type DeliveryWorker = {
  worker: Worker;
  /** Drops what is cached of the key's hooks (a key notification: it may be revoked). */
  forgetKey(keyId: string): void;
  close(): Promise<void>;
};

/** Outcomes written together: at most this many, or whatever arrived within FLUSH_MS. */
const FLUSH_ROWS = 200;
const FLUSH_MS = 5;

/**
 * Group-commits attempt outcomes (one UPDATE for many deliveries, instead of one each): each
 * `record` resolves once its row is written, so a job still ends only after its log row.
 */
function createOutcomeWriter(db: Kysely<Database>) {
  let pending: { o: AttemptOutcome; resolve: () => void; reject: (e: unknown) => void }[] = [];
  let timer: NodeJS.Timeout | undefined;
  const flush = async () => {
    clearTimeout(timer);
    timer = undefined;
    const batch = pending;
    pending = [];
    try {
      await recordOutcomes(db, batch.map((p) => p.o));
      for (const p of batch) p.resolve();
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  };
  return (o: AttemptOutcome) =>
    new Promise<void>((resolve, reject) => {
      pending.push({ o, resolve, reject });
      if (pending.length >= FLUSH_ROWS) void flush();
      else timer ??= setTimeout(() => void flush(), FLUSH_MS);
    });
}

export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const log = deps.log.child({ component: `streams.worker.${deps.transportName}` });
  const record = createOutcomeWriter(deps.db);
  const random = deps.random ?? Math.random;
  const hookCacheMs = deps.hookCacheMs ?? 1000;
  const hooks = new Map<string, { at: number; hook: (HookRow & { key_revoked: boolean }) | undefined }>();

  async function loadHook(id: string): Promise<(HookRow & { key_revoked: boolean }) | undefined> {
    const hit = hooks.get(id);
    if (hit && Date.now() - hit.at < hookCacheMs) return hit.hook;
    const hook = await findHookById(deps.db, id);
    hooks.set(id, { at: Date.now(), hook });
    return hook;
  }

  async function process(job: Job<DeliveryJobData>): Promise<void> {
    const data = job.data;
    const attempt = job.attemptsMade + 1;
    const last = attempt >= (job.opts.attempts ?? 1);
    const base = { id: data.delivery, redeliveries: seriesOf(job.id), attempts: attempt };
    const hook = await loadHook(data.hook);
    if (!hook || hook.deleted_at) {
      await record({ ...base, status: 'failed', lastStatus: null, lastError: 'hook deleted', nextAttemptAt: null });
      return;
    }
    if (hook.key_revoked) {
      await record({ ...base, status: 'failed', lastStatus: null, lastError: 'API key revoked', nextAttemptAt: null });
      return;
    }
    if (hook.disabled_at) {
      await record({ ...base, status: 'failed', lastStatus: null, lastError: `hook disabled: ${hook.disabled_reason ?? ''}`.trim(), nextAttemptAt: null });
      return;
    }
    const r: SendResult = await deps.transport.send(hook, data);
    switch (r.kind) {
      case 'delivered':
        await record({ ...base, status: 'delivered', lastStatus: r.status, lastError: null, nextAttemptAt: null });
        return;
      case 'permanent':
        if (r.disableHook) {
          await disableHook(deps.db, hook.id, r.disableHook);
          hooks.delete(hook.id);
          log.warn({ hook: hook.id, reason: r.disableHook }, 'hook disabled');
        }
        await record({ ...base, status: 'failed', lastStatus: r.status, lastError: r.error, nextAttemptAt: null });
        throw new UnrecoverableError(r.error);
      case 'retry': {
        if (last) {
          await record({ ...base, status: 'dead', lastStatus: r.status, lastError: r.error, nextAttemptAt: null });
          log.warn({ delivery: data.delivery, attempts: attempt }, 'delivery dead-lettered after its last attempt');
          throw new UnrecoverableError(r.error);
        }
        const delayMs = retryDelayAfter(attempt, r.retryAfterMs, random);
        await record({ ...base, status: 'pending', lastStatus: r.status, lastError: r.error, nextAttemptAt: new Date(Date.now() + delayMs) });
        throw new RetryLaterError(r.error, delayMs);
      }
    }
  }

  const connection = createRedis(deps.redisUrl, { maxRetriesPerRequest: null, connectionName: `blockwire-worker-${deps.transportName}` });
  connection.on('error', () => {});
  const worker = new Worker<DeliveryJobData>(QUEUE_NAMES[deps.transportName], process, {
    connection,
    prefix: deps.prefix,
    concurrency: deps.concurrency,
    lockDuration: deps.lockMs,
    stalledInterval: Math.max(1000, Math.floor(deps.lockMs / 2)),
    maxStalledCount: 10,
    settings: { backoffStrategy: (attemptsMade, type, err) => (type === BACKOFF_TYPE ? deliveryBackoff(attemptsMade, type, err) : retryDelay(Math.max(1, attemptsMade))) },
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
    forgetKey(keyId) {
      for (const [id, e] of hooks) if (!e.hook || String(e.hook.key_id) === keyId) hooks.delete(id);
    },
    async close() {
      if (!(await settlesWithin(worker.close(), deps.closeTimeoutMs))) {
        log.warn({ timeoutMs: deps.closeTimeoutMs }, 'delivery worker did not stop in time (Redis unreachable?): disconnecting; jobs it held run again when their locks expire');
        await settlesWithin(worker.disconnect(), 1000);
      }
      await deps.transport.close?.();
      connection.disconnect();
    },
  };
}

/** True when `p` settles (either way) within `ms`; a late rejection is swallowed. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  try {
    return await Promise.race([p.then(() => true as const, () => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
