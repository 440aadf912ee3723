/**
 * The BullMQ side of deliveries: queue names, job ids and data, and the producer the relay (and
 * the rescue of lost jobs) enqueues with. Job ids are the delivery ids (`<subscription>-<event>`,
 * never a ':'), so enqueuing the same delivery twice is a no-op; a manual redelivery gets a
 * suffixed id (`…-r<n>`) because the first job may still be kept as completed or failed.
 * Producers fail fast when Redis is away (no offline queue): the caller retries from Postgres.
 * @module
 */
import { Queue, type JobsOptions } from 'bullmq';
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
};

/** A delivery ready to enqueue. */
export type DeliveryJob = DeliveryJobData & { transport: Transport; redeliveries: number };

/** The BullMQ job id of a delivery (attempt series `redeliveries`). */
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
  /** Whether the job of this delivery series is still to run (waiting, delayed or active). */
  isLive(job: Pick<DeliveryJob, 'transport' | 'delivery' | 'redeliveries'>): Promise<boolean>;
  close(): Promise<void>;
};

/** Opens the producer side of both queues on its own fail-fast Redis connection. */
export function createDeliveryQueues(opts: { redisUrl: string; prefix: string }): DeliveryQueues {
  const connection = createRedis(opts.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectionName: 'blockwire-producer' });
  // Errors surface on the commands that fail; the connection reconnects by itself.
  connection.on('error', () => {});
  const queues = {
    http: new Queue(QUEUE_NAMES.http, { connection, prefix: opts.prefix }),
    sns: new Queue(QUEUE_NAMES.sns, { connection, prefix: opts.prefix }),
  } satisfies Record<Transport, Queue>;
  for (const q of Object.values(queues)) q.on('error', () => {});
  return {
    queues,
    async enqueue(jobs, opts = {}) {
      // A Queue made while Redis is away would wait for it: fail at once instead.
      if (connection.status !== 'ready') throw new RetryableError('ERR_REDIS_UNAVAILABLE', `Redis is not reachable (${connection.status})`);
      for (const transport of Object.keys(queues) as Transport[]) {
        const mine = jobs.filter((j) => j.transport === transport);
        if (mine.length === 0) continue;
        const queue = queues[transport];
        for (const j of mine) {
          if (opts.replace) await queue.remove(jobIdFor(j.delivery, j.redeliveries));
          if (j.redeliveries > 0) await queue.remove(jobIdFor(j.delivery, j.redeliveries - 1));
        }
        await queue.addBulk(
          mine.map((j) => ({
            name: j.type,
            data: { delivery: j.delivery, hook: j.hook, payload: j.payload, type: j.type } satisfies DeliveryJobData,
            opts: { ...DELIVERY_JOB_OPTIONS, jobId: jobIdFor(j.delivery, j.redeliveries) },
          })),
        );
      }
    },
    async isLive(job) {
      if (connection.status !== 'ready') throw new RetryableError('ERR_REDIS_UNAVAILABLE', `Redis is not reachable (${connection.status})`);
      const found = await queues[job.transport].getJob(jobIdFor(job.delivery, job.redeliveries));
      if (!found) return false;
      return LIVE_STATES.has(await found.getState());
    },
    async close() {
      await Promise.allSettled(Object.values(queues).map((q) => q.close()));
      connection.disconnect();
    },
  };
}
