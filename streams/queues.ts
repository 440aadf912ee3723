/**
 * The BullMQ side of deliveries: queue names, job ids and data, and the producer the relay (and
 * the rescue of lost jobs, and a worker splitting a batch) enqueues with. Two kinds of job:
 * - a delivery's own job, whose id is the delivery id (`<subscription>-<event>`, never a ':'),
 *   so enqueuing the same delivery twice is a no-op; a manual redelivery gets a suffixed id
 *   (`…-r<n>`) because the first job may still be kept as completed or failed;
 * - a batch job: the new deliveries of one hook from one relay batch (up to
 *   BLOCKWIRE_DELIVERY_BATCH), id `batch-<hook>-<relay position>-<n>-<nonce>`, recorded in each
 *   delivery's row (`deliveries.job_id`) for the rescue and for a replayed relay batch. BullMQ's
 *   work per job (add, lock, finish) is then paid once per batch instead of once per delivery;
 *   a delivery that must be tried again leaves the batch for a job of its own.
 * Producers fail fast when Redis is away (no offline queue): the caller retries from Postgres.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { Queue, type JobsOptions } from 'bullmq';
import { ReplyError } from 'ioredis';
import { createRedis } from '../src/net/redis.js';
import { RetryableError } from '../src/errors.js';
import { MAX_ATTEMPTS } from './retry.js';

/** Queue per transport. */
export const QUEUE_NAMES = { http: 'webhooks', sns: 'sns' } as const;
export type Transport = keyof typeof QUEUE_NAMES;

/** Name of the custom BullMQ backoff strategy (streams/delivery-worker.ts). */
export const BACKOFF_TYPE = 'blockwire';

/** What a delivery job carries: enough to send without reading Postgres. */
export type DeliveryJobData = {
  /** Delivery id = webhook-id. */
  delivery: string;
  hook: string;
  /** The exact JSON body. */
  payload: string;
  /** Event type, for SNS message attributes and logs. */
  type: string;
  /** Attempts made before this job (by the batch job it left); absent = none. */
  attempted?: number;
};

/** A delivery ready to enqueue; `delayMs` holds its (first) run back. */
export type DeliveryJob = DeliveryJobData & { transport: Transport; redeliveries: number; delayMs?: number };

/**
 * What a batch job carries: deliveries of one hook (attempt series 0), sent in this order, by id
 * and event type. Their bodies are not in Redis twice: the worker reads them with the log rows it
 * reads anyway before sending (which of them are still the job's to send). A `payload` is
 * present in the batch jobs of earlier versions, which may still wait in Redis after an upgrade.
 */
export type BatchJobData = {
  hook: string;
  deliveries: { delivery: string; type: string; payload?: string }[];
};

/** A batch job ready to enqueue (`backlog`: behind the jobs without it, BACKLOG_PRIORITY). */
export type DeliveryBatch = { hook: string; deliveries: { delivery: string; type: string }[] } & {
  transport: Transport;
  jobId: string;
  backlog?: boolean;
};

/**
 * BullMQ priority of the jobs of a hook that is failing (its circuit breaker not closed) and of
 * jobs deferred for their share (streams/fair-share.ts): jobs without a priority are taken
 * first, so a failing hook's backlog never stands in front of the other hooks' new deliveries.
 */
export const BACKLOG_PRIORITY = 1;

/** Name of batch jobs (a delivery's own job is named for its event type). */
export const BATCH_JOB_NAME = 'batch';

/**
 * The job id of batch `n` of `hook` from the relay batch ending at outbox position `to`. The
 * nonce keeps apart the batches of two runs over the same outbox rows (a replay after a crash
 * names the rows it finds pending by the job recorded for them, not by a new id).
 */
export function batchJobId(hook: string, to: bigint, n: number, nonce: string = randomBytes(4).toString('hex')): string {
  const id = `batch-${hook}-${to}-${n}-${nonce}`;
  if (id.includes(':')) throw new TypeError(`batch job id must not contain ':' (${id})`);
  return id;
}

/** The BullMQ job id of a delivery's own job (attempt series `redeliveries`). */
function jobIdFor(delivery: string, redeliveries: number): string {
  if (delivery.includes(':')) throw new TypeError(`delivery id must not contain ':' (${delivery})`);
  return redeliveries === 0 ? delivery : `${delivery}-r${redeliveries}`;
}

/**
 * Job options every delivery job gets. Postgres keeps the log, so a completed job is removed at
 * once (its delivery row already says delivered: a replayed batch does not enqueue it again);
 * failed jobs are kept a day for inspection.
 */
const DELIVERY_JOB_OPTIONS: JobsOptions = {
  attempts: MAX_ATTEMPTS,
  backoff: { type: BACKOFF_TYPE },
  removeOnComplete: true,
  removeOnFail: { age: 86400, count: 10_000 },
};

const LIVE_STATES = new Set(['waiting', 'delayed', 'active', 'prioritized', 'waiting-children']);

export type DeliveryQueues = {
  queues: Record<Transport, Queue>;
  /**
   * Adds the jobs (idempotent by job id). With `replace`, a finished job of the same id is
   * removed first (re-creating a job Redis lost or ended early). A redelivery also removes the
   * waiting job of the previous series, when there is one. Throws when Redis is unreachable.
   */
  enqueue(jobs: readonly DeliveryJob[], opts?: { replace?: boolean }): Promise<void>;
  /** Adds batch jobs (idempotent by job id: a batch whose job exists is left as it is). */
  enqueueBatches(batches: readonly DeliveryBatch[]): Promise<void>;
  /**
   * Whether the job carrying this delivery series is still to run (waiting, delayed or active):
   * the batch job `jobId` when given, else the delivery's own job.
   */
  isLive(job: Pick<DeliveryJob, 'transport' | 'delivery' | 'redeliveries'> & { jobId?: string | null }): Promise<boolean>;
  /**
   * The `run_id` of the Redis server the producer is connected to (asked once per connection):
   * another one than before means a failover or a restart, which may have lost jobs. Undefined
   * when the server does not tell (INFO refused). Throws when Redis is unreachable.
   */
  serverRunId(): Promise<string | undefined>;
  /**
   * Resolves when the producer's connection is (or becomes) ready, or after `ms`, or when
   * `signal` aborts: a wait after "Redis is not reachable" ends as soon as it is again.
   */
  ready(ms: number, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
};

/** Opens the producer side of both queues on its own fail-fast Redis connection. */
export function createDeliveryQueues(opts: { redisUrl: string; prefix: string }): DeliveryQueues {
  const connection = createRedis(opts.redisUrl, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectionName: 'blockwire-producer',
  });
  // Errors surface on the commands that fail; the connection reconnects by itself.
  connection.on('error', () => {});
  const queues = {
    http: new Queue(QUEUE_NAMES.http, { connection, prefix: opts.prefix }),
    sns: new Queue(QUEUE_NAMES.sns, { connection, prefix: opts.prefix }),
  } satisfies Record<Transport, Queue>;
  for (const q of Object.values(queues)) q.on('error', () => {});
  // A Queue made while Redis is away would wait for it: fail at once instead.
  const assertReady = () => {
    if (connection.status !== 'ready') throw new RetryableError('ERR_REDIS_UNAVAILABLE', `Redis is not reachable (${connection.status})`);
  };
  // (a connection's server stays the same until it reconnects, to the new primary after a failover)
  let runId: Promise<string | undefined> | undefined;
  const forgetRunId = () => {
    runId = undefined;
  };
  connection.on('close', forgetRunId);
  connection.on('ready', forgetRunId);
  return {
    queues,
    async enqueue(jobs, opts = {}) {
      assertReady();
      for (const transport of Object.keys(queues) as Transport[]) {
        const mine = jobs.filter((j) => j.transport === transport);
        if (mine.length === 0) continue;
        const queue = queues[transport];
        for (const j of mine) {
          if (opts.replace) await queue.remove(jobIdFor(j.delivery, j.redeliveries));
          if (j.redeliveries > 0) await queue.remove(jobIdFor(j.delivery, j.redeliveries - 1));
        }
        await queue.addBulk(
          mine.map((j) => {
            const attempted = j.attempted ?? 0;
            const data: DeliveryJobData = {
              delivery: j.delivery,
              hook: j.hook,
              payload: j.payload,
              type: j.type,
              ...(attempted > 0 ? { attempted } : {}),
            };
            const o: JobsOptions = {
              ...DELIVERY_JOB_OPTIONS,
              attempts: Math.max(1, MAX_ATTEMPTS - attempted),
              jobId: jobIdFor(j.delivery, j.redeliveries),
            };
            if (j.delayMs !== undefined && j.delayMs > 0) o.delay = j.delayMs;
            return { name: j.type, data, opts: o };
          }),
        );
      }
    },
    async enqueueBatches(batches) {
      assertReady();
      for (const transport of Object.keys(queues) as Transport[]) {
        const mine = batches.filter((b) => b.transport === transport);
        if (mine.length === 0) continue;
        await queues[transport].addBulk(
          mine.map((b) => ({
            name: BATCH_JOB_NAME,
            data: {
              hook: b.hook,
              deliveries: b.deliveries.map((d) => ({ delivery: d.delivery, type: d.type })),
            } satisfies BatchJobData,
            opts: { ...DELIVERY_JOB_OPTIONS, jobId: b.jobId, ...(b.backlog ? { priority: BACKLOG_PRIORITY } : {}) },
          })),
        );
      }
    },
    async isLive(job) {
      assertReady();
      const found = await queues[job.transport].getJob(job.jobId ?? jobIdFor(job.delivery, job.redeliveries));
      if (!found) return false;
      return LIVE_STATES.has(await found.getState());
    },
    async serverRunId() {
      assertReady();
      runId ??= connection.info('server').then(
        (info) => /^run_id:(\w+)/m.exec(info)?.[1],
        (err: unknown) => {
          runId = undefined;
          if (err instanceof ReplyError) return undefined;
          throw err;
        },
      );
      return runId;
    },
    ready(ms, signal) {
      if (connection.status === 'ready' || signal?.aborted) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          connection.off('ready', done);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        connection.on('ready', done);
        signal?.addEventListener('abort', done, { once: true });
      });
    },
    async close() {
      await Promise.allSettled(Object.values(queues).map((q) => q.close()));
      connection.disconnect();
    },
  };
}
