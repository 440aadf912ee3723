/**
 * The API role's entrypoint: `startApi(deps)` builds the app from the configuration, keeps the
 * node's tip (for /healthz and the "still syncing" check) polled in the background, listens on
 * HOST:PORT and returns a handle whose `close()` stops both. `blockwire start` calls it.
 * @module
 */
import { setWalletDeriveThreads } from '../src/db/wallet-derive-pool.js';
import { keyringGetter } from '../src/auth/server-keys.js';
import type { FastifyInstance } from 'fastify';
import { Kysely, PostgresDialect } from 'kysely';
import type { Redis } from 'ioredis';
import { NETWORKS, type Config, type NetworkName } from '../src/config.js';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import { getIndexTip } from './queries/chain.js';
import { FatalError } from '../src/errors.js';
import { buildApi } from './app.js';
import { coinstackSockets } from './coinstack-sockets.js';
import { apiRateLimiter } from './auth.js';
import type { RateLimiter } from '../src/auth/rate-limit.js';
import { startCoinstackPush } from './coinstack-push.js';
import { feedChannel } from '../src/net/feed-channel.js';
import { coinstackDialect } from './dialects/coinstack.js';
import { addUpgradeHandler, reserveUpgradePaths } from '../src/net/upgrades.js';
import { createKeyVerifier } from '../src/auth/key-cache.js';
import { listenChainChanges } from './cache/chain-changes.js';
import { createPreparedPool } from '../src/db/prepared-pool.js';
import { createReadReplicas } from './cache/read-replicas.js';
import { defaultApiSettings, type ApiMetrics, type ApiSettings, type EventLogPoll, type NodeClient, type NodeTip } from './deps.js';
import type { StampService } from '../src/stamp-service.js';

export type ApiHandle = {
  app: FastifyInstance;
  /** `http://host:port` actually bound (PORT=0 picks a free port). */
  url: string;
  port: number;
  /** The rate limiter of the process's requests (with Redis): lend it to the stream upgrades of this process (StreamsDeps.limiter). */
  limiter: RateLimiter | undefined;
  close(): Promise<void>;
};

export type StartApiDeps = {
  config: Config;
  log: Logger;
  db: Kysely<Database>;
  redis?: Redis;
  node?: NodeClient;
  stamps?: StampService;
  /** The event log for long polling (GET /v1/events). */
  events?: EventLogPoll;
  /**
   * Upgrade paths another role attaches to this server after it listens (the stream in the
   * all-in-one process): until then (and once it stops) they answer 503 ERR_STARTING, not 404.
   */
  upgradesComing?: readonly string[];
  /** The stamping wallet's state for /healthz. */
  stampStatus?: () => Promise<Record<string, unknown>>;
  /** Overrides config.network (else detected from the node). */
  network?: NetworkName;
  /** How often the node and index tips are polled (default config.pollIntervalMs). */
  tipPollMs?: number;
  /**
   * The database URL (DatabaseHandle.url): verified keys are then cached in memory and dropped
   * on the revocation notifications of this database. Without it every request looks its key up.
   */
  databaseUrl?: string;
  /** Redis key prefix of the rate-limit counters (default `bw`); one per deployment sharing a Redis. */
  redisPrefix?: string;
  /** Prometheus metrics of the process (cli/ops/metrics.ts): latency recorded, GET /metrics served. */
  metrics?: ApiMetrics;
  /** Read replicas of chain reads (default config.databaseReadUrls, DATABASE_READ_URL). */
  readUrls?: readonly string[];
  /** The clock of the rate-limit windows (ApiDeps.rateClock). */
  rateClock?: () => number;
  /** How often `/websocket` reads the outbox without a feed message (default 1 s). */
  pushPollMs?: number;
};

/**
 * How often `/websocket` reads the outbox when no feed message woke it (a lost message, or no
 * streams role publishing the feed): the safety net under the feed.
 */
const PUSH_POLL_MS = 1000;

/** How often the keys of open Coinstack sockets are checked for revocation besides the key notifications. */
const SOCKET_KEY_CHECK_MS = 5000;

/** The API settings of a configuration. */
function apiSettingsFromConfig(config: Config): Partial<ApiSettings> {
  return {
    bodyLimit: config.apiBodyLimit,
    txBodyLimit: config.apiTxBodyLimit,
    bodyMaxDepth: config.apiBodyMaxDepth,
    bodyMaxItems: config.apiBodyMaxItems,
    requestTimeoutMs: config.apiRequestTimeoutMs,
    rateLimit: config.apiRateLimit,
    rateWindowMs: config.apiRateWindowMs,
    rateFallbackShare: config.apiRateFallbackShare,
    authFailureLimit: config.apiAuthFailureLimit,
    maxSubscriptionsPerKey: config.apiMaxSubscriptionsPerKey,
    maxHooksPerKey: config.apiMaxHooksPerKey,
    maxWalletsPerKey: config.apiMaxWalletsPerKey,
    walletMaxDerivations: config.apiWalletMaxDerivations,
    maxLagBlocks: config.apiMaxLagBlocks,
    corsOrigins: config.apiCorsOrigins,
    esploraAnonymousRateLimit: config.esploraAnonymousRateLimit,
    historyCacheBytes: config.apiHistoryCacheMb * 1024 * 1024,
    txCacheBytes: config.apiTxCacheMb * 1024 * 1024,
  };
}

async function detectNetwork(deps: StartApiDeps): Promise<NetworkName> {
  const configured = deps.network ?? deps.config.network;
  if (configured) return configured;
  if (!deps.node) throw new FatalError('ERR_CONFIG', 'BITCOIN_NETWORK is unset and no node is configured to detect it from');
  const chain = (await deps.node.getBlockchainInfo()).chain;
  if (!(NETWORKS as readonly string[]).includes(chain)) throw new FatalError('ERR_CONFIG', `the node reports an unknown chain '${chain}'`);
  return chain as NetworkName;
}

/** Resolves once `redis` is ready, or after `ms` (it keeps connecting in the background). */
async function connected(redis: Redis, ms: number): Promise<void> {
  if (redis.status === 'ready') return;
  let timer: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    redis.once('ready', () => resolve());
  }).finally(() => clearTimeout(timer));
}

/**
 * How long the tip poll waits for the node before calling it unreachable (a busy Core can hold
 * getblockchaininfo a few seconds while it connects a large block; a stalled one never answers).
 */
const NODE_PROBE_MS = 5000;

/** Starts the REST API; see the module comment. */
export async function startApi(deps: StartApiDeps): Promise<ApiHandle> {
  const log = deps.log.child({ component: 'api.main' });
  const network = await detectNetwork(deps);
  setWalletDeriveThreads(deps.config.walletDeriveThreads);
  const settings = { ...apiSettingsFromConfig(deps.config), ...(deps.redisPrefix ? { redisPrefix: deps.redisPrefix } : {}) };
  let nodeTip: NodeTip | undefined;
  let indexHeight = -1;
  let stopped = false;

  // One call of each kind in flight at most: a stalled database or node is not asked again and
  // again, and a node that does not answer within NODE_PROBE_MS is unreachable until it does (a
  // stalled node is down for /readyz, not "up at the last poll"); a stalled database does not
  // hold the node's poll.
  let indexRead: Promise<void> | undefined;
  let nodeCall: Promise<void> | undefined;
  const nodeDown = (err: unknown) => {
    if (!nodeTip || !('error' in nodeTip)) log.warn({ err }, 'bitcoin node unreachable');
    nodeTip = { error: err instanceof Error ? err.message : String(err), at: new Date() };
  };
  async function poll() {
    indexRead ??= getIndexTip(deps.db)
      .then((t) => void (indexHeight = t.height))
      .catch((err: unknown) => log.warn({ err }, 'cannot read the index tip'))
      .finally(() => (indexRead = undefined));
    const node = deps.node;
    if (node) {
      nodeCall ??= node
        .getBlockchainInfo()
        .then(
          (info) =>
            void (nodeTip = {
              height: info.blocks,
              hash: info.bestblockhash,
              at: new Date(),
              initialBlockDownload: info.initialblockdownload === true,
            }),
        )
        .catch(nodeDown)
        .finally(() => (nodeCall = undefined));
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), NODE_PROBE_MS)));
    const [, nodeAnswer] = await Promise.all([Promise.race([indexRead, late]), nodeCall ? Promise.race([nodeCall, late]) : undefined]);
    clearTimeout(timer);
    if (nodeAnswer === 'late') nodeDown(new Error(`the node did not answer within ${NODE_PROBE_MS} ms`));
  }
  await poll();
  const every = deps.tipPollMs ?? deps.config.pollIntervalMs;
  let timer: NodeJS.Timeout | undefined;
  const loop = () => {
    timer = setTimeout(() => {
      void poll().finally(() => {
        if (!stopped) loop();
      });
    }, every);
    timer.unref();
  };
  loop();

  const maxLag = deps.config.apiMaxLagBlocks;
  // With the URL: a pool of the API's own with prepared statements, and cached key checks.
  const pool = deps.databaseUrl ? createPreparedPool(deps.databaseUrl, { max: 10, applicationName: 'blockwire-api' }) : undefined;
  const db = pool ? new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }) : deps.db;
  // Chain reads from the replicas, when there are any.
  const urls = deps.readUrls ?? deps.config.databaseReadUrls;
  const replicas =
    urls.length > 0
      ? await createReadReplicas({
          urls,
          primary: db,
          ...(pool ? { fallback: pool } : {}),
          maxLagBlocks: maxLag,
          pollMs: every,
          log: deps.log,
          poolMax: 10,
          connectTimeoutMs: Math.max(100, Math.floor(deps.config.apiRequestTimeoutMs / 4)),
        })
      : undefined;
  // (a key notification also closes the Coinstack sockets of a revoked key, once they are served)
  let onKeyChange = (_keyId?: bigint): void => undefined;
  const keys = await createKeyVerifier({
    db,
    log,
    onKeyChange: (id) => onKeyChange(id),
    ...(deps.databaseUrl ? { databaseUrl: deps.databaseUrl } : {}),
  });
  // Chain changes, handed to the caches (api/cache/): held transactions and history chunks answered
  // without a statement while none came; not with replicas, whose state the primary's
  // notifications do not describe.
  const chainChanges = deps.databaseUrl && !replicas ? await listenChainChanges({ databaseUrl: deps.databaseUrl, log }) : undefined;
  // Rate-limit counters on a connection of the API's own that sends concurrent requests' commands
  // in one write (auto-pipelining): one syscall per event-loop turn instead of one per request.
  const redis = deps.redis?.duplicate({ enableAutoPipelining: true });
  redis?.on('error', () => {});
  // Ready (and /readyz true) from the first request when Redis is up; a Redis that is down
  // does not stop the API from starting: /readyz says so until it comes.
  if (redis) await connected(redis, 5000);
  const limiter = apiRateLimiter({
    ...(redis ? { redis } : {}),
    settings: { ...defaultApiSettings, ...settings },
    log: deps.log,
    ...(deps.rateClock ? { rateClock: deps.rateClock } : {}),
  });
  const closeOwn = async () => {
    await keys.close();
    await chainChanges?.close();
    redis?.disconnect();
    await replicas?.close();
    if (db !== deps.db) await db.destroy();
  };
  const app = await buildApi({
    db,
    ...(replicas ? { readDb: replicas.db } : {}),
    log: deps.log,
    network,
    ...(deps.node ? { node: deps.node } : {}),
    ...(redis ? { redis } : {}),
    ...(limiter ? { limiter } : {}),
    ...(deps.rateClock ? { rateClock: deps.rateClock } : {}),
    ...(deps.stamps ? { stamps: deps.stamps } : {}),
    ...(deps.events ? { events: deps.events } : {}),
    hookUrls: { allowPrivate: deps.config.allowPrivateHooks },
    nodeTip: () => nodeTip,
    isSyncing: async () => {
      const behind = () => nodeTip !== undefined && !('error' in nodeTip) && nodeTip.height - indexHeight > maxLag;
      if (!behind()) return false;
      // The polled index height may be a poll interval old: confirm against the live tip.
      indexHeight = (await getIndexTip(db)).height;
      return behind();
    },
    ...(deps.stampStatus ? { stampStatus: deps.stampStatus } : {}),
    verifyKey: (k) => keys.verify(k),
    keyring: keyringGetter(deps.config, (err) => log.warn({ err }, 'server keys not read')),
    peekKey: (k) => keys.peek(k),
    ...(chainChanges ? { chainChanges } : {}),
    settings,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
  });
  // coinstackd's push feed, woken by the relay's feed channel (on a connection of its own: subscriber mode)
  const subscriber = redis?.duplicate({ enableAutoPipelining: false });
  subscriber?.on('error', () => {});
  const push = startCoinstackPush({
    db,
    log: deps.log,
    ...(subscriber ? { subscriber } : {}),
    channel: feedChannel(settings.redisPrefix ?? deps.config.redisPrefix),
    pollMs: deps.pushPollMs ?? PUSH_POLL_MS,
    maxBufferedBytes: deps.config.wsMaxBufferedBytes,
  });
  const closePush = async () => {
    await push.close();
    subscriber?.disconnect();
  };
  // coinstackd's /sock and /websocket WebSockets, beside any other upgrade handler of this server (the stream's)
  const sockets = coinstackSockets(app, {
    db,
    dialect: coinstackDialect,
    log: deps.log,
    maxMessageBytes: (settings.txBodyLimit ?? defaultApiSettings.txBodyLimit) + 64 * 1024,
    push,
    maxPerKey: deps.config.apiMaxSocketsPerKey,
    keyCheckMs: SOCKET_KEY_CHECK_MS,
  });
  onKeyChange = (id) =>
    void sockets.checkKeys(id === undefined ? undefined : [id]).catch((err: unknown) => log.warn({ err }, 'socket key check failed'));
  const detachSockets = addUpgradeHandler(app.server, sockets.handleUpgrade);
  if (deps.upgradesComing) reserveUpgradePaths(app.server, deps.upgradesComing);
  try {
    await app.listen({ host: deps.config.host, port: deps.config.port });
  } catch (err) {
    stopped = true;
    clearTimeout(timer);
    detachSockets();
    sockets.close();
    await closePush();
    await closeOwn();
    throw err;
  }
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : deps.config.port;
  const url = `http://${deps.config.host.includes(':') ? `[${deps.config.host}]` : deps.config.host}:${port}`;
  log.info({ url, network }, 'api listening');
  return {
    app,
    url,
    port,
    limiter,
    async close() {
      stopped = true;
      clearTimeout(timer);
      detachSockets();
      sockets.close();
      await closePush();
      await app.close();
      await closeOwn();
    },
  };
}
