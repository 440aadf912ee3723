/**
 * The two role factories of streams/, called by `blockwire start` (cli): `startStreams`
 * (the relay and the WebSocket stream, `--role streams`) and `startWorker` (webhook and SNS
 * delivery workers, `--role worker`); the all-in-one default runs both, with the stream attached
 * to the API's HTTP server. Wiring only: every piece is built from the deps given, nothing reads
 * the environment, and each handle's stop() undoes its start.
 * @module
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { createRedis } from '../src/net/redis.js';
import type { Kysely } from 'kysely';
import type { Config } from '../src/config.js';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import { FatalError, ServiceError } from '../src/errors.js';
import type { Resolver } from '../src/net/hook-url.js';
import { startRelay, type Relay } from './relay.js';
import { listenOutbox } from './outbox-wakeup.js';
import { createDeliveryQueues } from './queues.js';
import { feedChannel } from './feed-message.js';
import { startFeed } from './ws/feed.js';
import { createStreamHub, type HubStats } from './ws/hub.js';
import { createStreamServer } from './ws/server.js';
export { STREAM_PATHS } from './ws/server.js';
import { createDeliveryWorker, type DeliveryWorker } from './delivery-worker.js';
import { fairPolicy } from './fair-share.js';
import { createHttpTransport } from './webhook/http-transport.js';
import { createSnsTransport, type SnsTransportOptions } from './sns/sns-transport.js';
import { listenKeyEvents } from '../src/auth/key-events.js';
import { createKeyVerifier } from '../src/auth/key-cache.js';
import { createRateLimiter, type RateLimiter } from '../src/auth/rate-limit.js';
import { createFailureLimiter } from '../src/auth/failure-limit.js';

/** How often a stream process checks its connected keys for revocation besides the notifications. */
const KEY_CHECK_MS = 5000;

type CommonDeps = {
  config: Config;
  log: Logger;
  db: Kysely<Database>;
  /**
   * The database URL, for a connection LISTENing to API key changes: a revoked key's streams are
   * closed and its hooks' deliveries refused at once. Without it, within `keyCheckMs` (streams)
   * and the hook cache's life (workers). The relay LISTENs for new events on another (without
   * it, it polls the outbox every `relayPollMs`).
   */
  databaseUrl?: string;
  redisUrl: string;
  /** Prefix of BullMQ keys and the feed channel; default `config.redisPrefix` (tests isolate themselves with a unique one). */
  redisPrefix?: string;
};

export type StreamsDeps = CommonDeps & {
  /** All-in-one: the API's HTTP server, whose `upgrade` events serve /v1/stream. Without it the stream listens on config.host:config.streamPort. */
  server?: Server;
  /** Run the relay here (default true); several stream processes may all run one: one is active, the others stand by. */
  relay?: boolean;
  /**
   * The rate limiter of the process's API (all-in-one): upgrades are counted with its REST
   * requests, so a key gets one local allowance for both while Redis does not answer. Default:
   * a limiter of the stream's own.
   */
  limiter?: RateLimiter;
};

export type StreamsHandle = {
  /** Port of the stream's own listener (undefined when attached to the API server). */
  port: number | undefined;
  /** The relay of this process, if it runs one. */
  relay: Relay | undefined;
  /** Connection and delivery counters of the WebSocket hub. */
  stats(): HubStats;
  stop(): Promise<void>;
};

export type WorkerDeps = CommonDeps & {
  /** SNS client overrides (tests: static credentials); endpoint defaults to config.snsEndpoint. */
  sns?: Partial<SnsTransportOptions>;
  /** Name resolution for the SSRF guard (tests); the system resolver by default. */
  resolve?: Resolver;
};

export type WorkerHandle = { workers: DeliveryWorker[]; stop(): Promise<void> };

/**
 * Refuses a Redis that may evict keys (BullMQ jobs would vanish). A server that hides its
 * configuration (managed Redis without CONFIG) is accepted with a warning.
 */
async function assertRedisNoEviction(redis: Redis, log: Logger): Promise<void> {
  let policy: string | undefined;
  try {
    const r = (await redis.config('GET', 'maxmemory-policy')) as string[];
    policy = r[1];
  } catch (err) {
    log.warn({ err }, 'cannot read Redis maxmemory-policy; make sure it is noeviction');
    return;
  }
  if (policy !== undefined && policy !== 'noeviction') {
    throw new FatalError(
      'ERR_REDIS_EVICTION',
      `Redis maxmemory-policy is '${policy}': set it to 'noeviction', or queued deliveries can be evicted`,
    );
  }
}

function failFastRedis(url: string, name: string): Redis {
  const r = createRedis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectionName: name });
  r.on('error', () => undefined);
  return r;
}

async function ready(r: Redis): Promise<void> {
  if (r.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('Redis did not become ready within 10 s')), 10_000);
    r.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Starts the relay (unless `relay: false`) and the WebSocket stream. */
export async function startStreams(deps: StreamsDeps): Promise<StreamsHandle> {
  const { config, db } = deps;
  const log = deps.log.child({ component: 'streams' });
  const prefix = deps.redisPrefix ?? config.redisPrefix;
  const channel = feedChannel(prefix);

  // Everything opened so far, closed in reverse by stop() — or at once if the start fails.
  const undo: (() => Promise<void> | void)[] = [];
  const stopAll = async () => {
    for (const u of undo.reverse()) await u();
  };
  try {
    const publisher = failFastRedis(deps.redisUrl, 'blockwire-relay');
    undo.push(() => publisher.disconnect());
    await ready(publisher);
    await assertRedisNoEviction(publisher, log);

    let relay: Relay | undefined;
    if (deps.relay !== false) {
      const queues = createDeliveryQueues({ redisUrl: deps.redisUrl, prefix });
      undo.push(() => queues.close());
      // New events wake the relay as their transaction commits; without a database URL it polls.
      const wakeup = deps.databaseUrl
        ? await listenOutbox({ databaseUrl: deps.databaseUrl, applicationName: 'blockwire-relay-wakeup', log })
        : undefined;
      if (wakeup) undo.push(() => wakeup.close());
      const r = startRelay({
        db,
        publisher,
        queues,
        log,
        ...(wakeup ? { wakeup } : {}),
        settings: {
          batchSize: config.relayBatchSize,
          deliveryBatchSize: config.deliveryBatchSize,
          pollMs: config.relayPollMs,
          standbyMs: 2000,
          channel,
          retentionMs: config.eventRetentionSeconds * 1000,
          deliveryLogRetentionMs: config.deliveryLogDays * 86_400_000,
          rescueAfterMs: config.deliveryRescueMs,
          housekeepingMs: Math.min(30_000, config.deliveryRescueMs),
        },
      });
      relay = r;
      undo.push(() => r.stop());
    }

    let feedPosition = () => 0n;
    const hub = createStreamHub({
      db,
      log,
      position: () => feedPosition(),
      settings: {
        heartbeatMs: config.wsHeartbeatMs,
        maxBufferedBytes: config.wsMaxBufferedBytes,
        catchUpPage: 500,
        closeGraceMs: 5000,
        keyCheckMs: KEY_CHECK_MS,
      },
    });
    undo.push(() => hub.close());
    const keyEvents = deps.databaseUrl
      ? await listenKeyEvents({
          databaseUrl: deps.databaseUrl,
          applicationName: 'blockwire-stream-keys',
          log,
          onChange: (id) => void hub.checkKeys([BigInt(id)]).catch((err: unknown) => log.warn({ err }, 'stream key check failed')),
          onUp: () => void hub.checkKeys().catch((err: unknown) => log.warn({ err }, 'stream key check failed')),
        })
      : undefined;
    if (keyEvents) undo.push(() => keyEvents.close());
    const subscriber = createRedis(deps.redisUrl, { maxRetriesPerRequest: null, connectionName: 'blockwire-stream-feed' });
    subscriber.on('error', () => undefined);
    undo.push(() => subscriber.disconnect());
    const feed = await startFeed({ db, subscriber, channel, log, onBatch: (b) => hub.onBatch(b), checkMs: 2000 });
    undo.push(() => feed.stop());
    feedPosition = () => feed.position;

    // Upgrades are requests of the key: counted in the API's window (same Redis, same prefix),
    // the key verified from memory once known (revocations still exact: src/auth/key-cache.ts).
    const limiter =
      deps.limiter ??
      createRateLimiter({
        redis: publisher,
        prefix,
        windowMs: config.apiRateWindowMs,
        fallbackShare: config.apiRateFallbackShare,
        onUnavailable: () => undefined,
      });
    const keys = deps.databaseUrl ? await createKeyVerifier({ db, databaseUrl: deps.databaseUrl, log }) : undefined;
    if (keys) undo.push(() => keys.close());
    const wsServer = createStreamServer({
      db,
      hub,
      log,
      limiter,
      rateLimit: config.apiRateLimit,
      maxConnectionsPerKey: config.wsMaxConnectionsPerKey,
      failures: createFailureLimiter({ limit: config.apiAuthFailureLimit, windowMs: config.apiRateWindowMs }),
      ...(keys ? { verifyKey: (k: string) => keys.verify(k), peekKey: (k: string) => keys.peek(k) } : {}),
      ...(keyEvents ? { keyGeneration: () => keyEvents.generation } : {}),
    });
    undo.push(() => wsServer.close());
    let port: number | undefined;
    if (deps.server) {
      wsServer.attach(deps.server);
    } else {
      const own = createServer((_req, res) => {
        res.writeHead(426, { 'content-type': 'application/json; charset=utf-8', upgrade: 'websocket' });
        res.end(JSON.stringify(new ServiceError('ERR_UPGRADE_REQUIRED').toBody()));
      });
      wsServer.attach(own);
      await new Promise<void>((resolve, reject) => {
        own.once('error', reject);
        own.listen(config.streamPort, config.host, () => resolve());
      });
      undo.push(() => new Promise<void>((r) => own.close(() => r())));
      port = (own.address() as AddressInfo).port;
    }
    log.info({ port, attached: Boolean(deps.server), relay: Boolean(relay) }, 'streams started');
    return { port, relay, stats: () => hub.stats(), stop: stopAll };
  } catch (err) {
    await stopAll().catch(() => undefined);
    throw err;
  }
}

/** Starts the webhook and SNS delivery workers. */
export async function startWorker(deps: WorkerDeps): Promise<WorkerHandle> {
  const { config, db } = deps;
  const log = deps.log.child({ component: 'streams' });
  const prefix = deps.redisPrefix ?? config.redisPrefix;

  const probe = failFastRedis(deps.redisUrl, 'blockwire-worker-probe');
  try {
    await ready(probe);
    await assertRedisNoEviction(probe, log);
  } finally {
    probe.disconnect();
  }

  // A delivery in flight ends within its webhook timeout; a close that takes much longer is stuck.
  const closeTimeoutMs = config.webhookTimeoutMs + 5000;
  const common = {
    db,
    redisUrl: deps.redisUrl,
    prefix,
    log,
    concurrency: config.webhookConcurrency,
    batchConcurrency: config.deliveryBatchConcurrency,
    outcomeWindowMs: config.deliveryOutcomeWindowMs,
    batchOutcomeWindowMs: config.deliveryBatchOutcomeWindowMs,
    fairness: fairPolicy(config),
    lockMs: config.workerLockMs,
    retryBaseMs: config.deliveryRetryBaseMs,
    closeTimeoutMs,
  };
  const http = createDeliveryWorker({
    ...common,
    transportName: 'http',
    transport: createHttpTransport({
      policy: { allowPrivate: config.allowPrivateHooks, ...(deps.resolve ? { resolve: deps.resolve } : {}) },
      timeoutMs: config.webhookTimeoutMs,
    }),
  });
  const sns = createDeliveryWorker({
    ...common,
    transportName: 'sns',
    transport: createSnsTransport({
      timeoutMs: config.webhookTimeoutMs,
      ...(config.snsEndpoint ? { endpoint: config.snsEndpoint } : {}),
      ...deps.sns,
    }),
  });
  const workers = [http, sns];
  const keyEvents = deps.databaseUrl
    ? await listenKeyEvents({
        databaseUrl: deps.databaseUrl,
        applicationName: 'blockwire-worker-keys',
        log,
        onChange: (id) => workers.forEach((w) => w.forgetKey(id)),
      })
    : undefined;
  log.info({ concurrency: config.webhookConcurrency }, 'delivery workers started');
  return {
    workers,
    async stop() {
      await keyEvents?.close();
      await Promise.all(workers.map((w) => w.close()));
    },
  };
}
