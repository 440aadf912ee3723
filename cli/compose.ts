/**
 * The composition root: starts the requested roles of Blockwire from their factories against
 * already-resolved endpoints (database, Redis, node) and stops them in reverse order.
 * `blockwire start` (start.ts) resolves the endpoints (embedded PostgreSQL, a redis-server child,
 * the devnode) and calls this; so do end-to-end tests. Roles: indexer, api (with the stamper
 * when a wallet is configured), streams (relay + WebSocket stream, attached to the API's server
 * when both run here), worker (webhook and SNS delivery), electrum (the Electrum protocol server,
 * listening only where ELECTRUM_TCP_PORT / ELECTRUM_TLS_PORT say).
 * @module
 */
import type { Kysely } from 'kysely';
import { createRedis } from '../src/net/redis.js';
import type { Config, NetworkName, Role } from '../src/config.js';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import { BitcoindClient } from '../src/rpc/bitcoind.js';
import { startApi, type ApiHandle } from '../api/main.js';
import { isStampingConfigured, startStamper, type Stamper } from '../stamp/stamper.js';
import { startIndexer, type IndexerHandle } from '../indexer/main.js';
import { STREAM_PATHS, startStreams, startWorker, type StreamsHandle, type WorkerHandle } from '../streams/main.js';
import { createEventPoll } from '../streams/poll.js';
import { startElectrum, type ElectrumHandle } from '../electrum/main.js';
import type { Metrics } from './ops/metrics.js';
import { startHeartbeat } from '../src/ops/heartbeat.js';
import { watchedStep } from './lifecycle.js';

/** The roles a process can run; `all` expands to every one of them. */
export type ConcreteRole = Exclude<Role, 'all'>;
export const CONCRETE_ROLES: readonly ConcreteRole[] = ['indexer', 'api', 'streams', 'worker', 'electrum'];

/** Parses `--role` values (`all`, or a comma-separated list) into concrete roles. */
export function parseRoles(values: readonly string[]): Set<ConcreteRole> {
  const roles = new Set<ConcreteRole>();
  for (const v of values
    .flatMap((x) => x.split(','))
    .map((x) => x.trim())
    .filter(Boolean)) {
    if (v === 'all') CONCRETE_ROLES.forEach((r) => roles.add(r));
    else if ((CONCRETE_ROLES as readonly string[]).includes(v)) roles.add(v as ConcreteRole);
    else throw new TypeError(`unknown role '${v}': expected all, ${CONCRETE_ROLES.join(', ')}`);
  }
  if (roles.size === 0) CONCRETE_ROLES.forEach((r) => roles.add(r));
  return roles;
}

export type ComposeDeps = {
  config: Config;
  log: Logger;
  roles: ReadonlySet<ConcreteRole>;
  db: Kysely<Database>;
  databaseUrl: string;
  /** Required by api (rate limits), streams and worker. */
  redisUrl?: string;
  /** Prefix of BullMQ keys and the stream feed channel (tests isolate themselves). */
  redisPrefix?: string;
  /** Node endpoints; default: the configuration's. */
  rpcUrl?: string;
  zmqUrl?: string | null;
  network?: NetworkName;
  /** The process's metrics (cli/ops/metrics.ts): the API serves /metrics, the roles are tracked. */
  metrics?: Metrics;
  /** Interval of the indexer heartbeat in sync_state (default 5 s). */
  heartbeatMs?: number;
};

export type Blockwire = {
  indexer: IndexerHandle | undefined;
  api: ApiHandle | undefined;
  stamper: Stamper | undefined;
  streams: StreamsHandle | undefined;
  worker: WorkerHandle | undefined;
  electrum: ElectrumHandle | undefined;
  /** REST base URL when the api role runs here. */
  apiUrl: string | undefined;
  /** WebSocket stream URL when the streams role runs here. */
  streamUrl: string | undefined;
  /** Stops every role, last started first. */
  stop(): Promise<void>;
};

/** Starts the roles; on a failure, stops what already started and rethrows. */
export async function startBlockwire(deps: ComposeDeps): Promise<Blockwire> {
  const { config, log, roles, db } = deps;
  const stops: { name: string; stop: () => Promise<unknown> }[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) {
      try {
        await watchedStep(log, s.name, s.stop);
      } catch (err) {
        log.error({ err, role: s.name }, 'stop failed');
      }
    }
    stops.length = 0;
  };
  const needsRedis = roles.has('api') || roles.has('streams') || roles.has('worker');
  if (needsRedis && !deps.redisUrl) throw new TypeError('roles api, streams and worker need a Redis URL');
  const rpcUrl = deps.rpcUrl ?? config.bitcoindRpcUrl;

  const out: Blockwire = {
    indexer: undefined,
    api: undefined,
    stamper: undefined,
    streams: undefined,
    worker: undefined,
    electrum: undefined,
    apiUrl: undefined,
    streamUrl: undefined,
    stop,
  };
  try {
    if (roles.has('indexer')) {
      out.indexer = await startIndexer({
        config,
        log,
        db,
        databaseUrl: deps.databaseUrl,
        ...(deps.rpcUrl ? { rpcUrl: deps.rpcUrl } : {}),
        ...(deps.zmqUrl !== undefined ? { zmqUrl: deps.zmqUrl } : {}),
      });
      const indexer = out.indexer;
      stops.push({ name: 'indexer', stop: () => indexer.stop() });
      const heartbeat = startHeartbeat({ db, log, indexer, ...(deps.heartbeatMs ? { intervalMs: deps.heartbeatMs } : {}) });
      stops.push({ name: 'heartbeat', stop: () => heartbeat.stop() });
    }

    if (roles.has('api')) {
      const node = rpcUrl
        ? new BitcoindClient({ url: rpcUrl, ...(config.bitcoindCookieFile ? { cookieFile: config.bitcoindCookieFile } : {}), log })
        : undefined;
      const network = deps.network ?? config.network ?? (node ? await detectChain(node) : undefined);
      if (isStampingConfigured(config)) {
        if (!node || !network) throw new TypeError('stamping needs a node (BITCOIND_RPC_URL)');
        out.stamper = await startStamper({ db, log, config, network, node });
        const stamper = out.stamper;
        stops.push({ name: 'stamper', stop: () => stamper.stop() });
      }
      const redis = createRedis(deps.redisUrl!, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true });
      redis.on('error', () => {});
      stops.push({ name: 'api-redis', stop: async () => redis.disconnect() });
      // Long polling reads the streams' event log (the relay, in this process or another, moves it).
      const events = createEventPoll({ db, log });
      stops.push({ name: 'event-poll', stop: async () => events.stop() });
      out.api = await startApi({
        config,
        log,
        db,
        redis,
        databaseUrl: deps.databaseUrl,
        ...(deps.redisPrefix ? { redisPrefix: deps.redisPrefix } : {}),
        ...(node ? { node } : {}),
        ...(network ? { network } : {}),
        ...(out.stamper ? { stamps: out.stamper.service, stampStatus: out.stamper.status } : {}),
        events,
        ...(deps.metrics && config.apiMetrics ? { metrics: deps.metrics } : {}),
        // (the stream attaches once the API listens: a client reconnecting meanwhile gets 503, not 404)
        ...(roles.has('streams') ? { upgradesComing: STREAM_PATHS } : {}),
      });
      const api = out.api;
      out.apiUrl = api.url;
      stops.push({ name: 'api', stop: () => api.close() });
    }

    if (roles.has('streams')) {
      const attach = out.api?.app.server;
      out.streams = await startStreams({
        config,
        log,
        db,
        databaseUrl: deps.databaseUrl,
        redisUrl: deps.redisUrl!,
        ...(deps.redisPrefix ? { redisPrefix: deps.redisPrefix } : {}),
        ...(attach ? { server: attach } : {}),
        // (one rate limiter for the process's REST requests and stream upgrades: one local allowance while Redis does not answer)
        ...(out.api?.limiter ? { limiter: out.api.limiter } : {}),
      });
      const streams = out.streams;
      const base = attach ? out.apiUrl! : `http://${hostForUrl(config.host)}:${streams.port}`;
      out.streamUrl = `${base.replace(/^http/, 'ws')}/v1/stream`;
      stops.push({ name: 'streams', stop: () => streams.stop() });
    }

    if (roles.has('worker')) {
      out.worker = await startWorker({
        config,
        log,
        db,
        databaseUrl: deps.databaseUrl,
        redisUrl: deps.redisUrl!,
        ...(deps.redisPrefix ? { redisPrefix: deps.redisPrefix } : {}),
      });
      const worker = out.worker;
      stops.push({ name: 'worker', stop: () => worker.stop() });
    }
    if (roles.has('electrum') && (config.electrumTcpPort !== undefined || config.electrumTlsPort !== undefined)) {
      if (!rpcUrl) throw new TypeError('the electrum role needs a node (BITCOIND_RPC_URL)');
      const node = new BitcoindClient({
        url: rpcUrl,
        ...(config.bitcoindCookieFile ? { cookieFile: config.bitcoindCookieFile } : {}),
        log,
      });
      out.electrum = await startElectrum({ config, log, db, node, databaseUrl: deps.databaseUrl });
      const electrum = out.electrum;
      stops.push({ name: 'electrum', stop: () => electrum.stop() });
    }
    deps.metrics?.track({
      indexer: out.indexer,
      streams: out.streams,
      worker: out.worker?.workers.map((w, i) => ({
        transport: WORKER_TRANSPORTS[i] ?? `transport${i}`,
        events: w.events,
        breakers: () => w.fairness().breakers,
      })),
    });
    return out;
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Transports of startWorker's workers, in order. */
const WORKER_TRANSPORTS = ['http', 'sns'] as const;

async function detectChain(node: BitcoindClient): Promise<NetworkName | undefined> {
  try {
    const info = (await node.call('getblockchaininfo', [])) as { chain: string };
    return info.chain as NetworkName;
  } catch {
    return undefined;
  }
}

/** A listen address as it appears in a URL a user can open. */
export function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}
