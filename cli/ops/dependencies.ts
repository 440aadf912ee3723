/**
 * The configured dependencies probed once before `blockwire start` starts anything, all at once:
 * PostgreSQL (DATABASE_URL), Redis (REDIS_URL) and the node (BITCOIND_RPC_URL). Every failure is
 * a DependencyError naming the setting, the target and the likely fix; a node that merely does not
 * listen yet is reported apart (the caller waits for it).
 * @module
 */
import pg from 'pg';
import type { Config } from '../../src/config.js';
import { createRedis, redisTarget } from '../../src/net/redis.js';
import { BitcoindClient } from '../../src/rpc/bitcoind.js';
import { explainDependencyFailure, type DependencyError } from './dependency-error.js';

const PROBE_TIMEOUT_MS = 10_000;

/** Connects to PostgreSQL and runs `SELECT 1`. */
async function probeDatabase(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Connects to Redis and sends PING, without retrying. */
async function probeRedis(url: string): Promise<void> {
  const redis = createRedis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    connectTimeout: PROBE_TIMEOUT_MS,
    retryStrategy: () => null,
    sentinelRetryStrategy: () => null,
  });
  let lastError: unknown;
  redis.on('error', (err) => (lastError = err));
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    throw lastError ?? err;
  } finally {
    redis.disconnect();
  }
}

/** Calls getblockchaininfo. */
async function probeNode(url: string, cookieFile?: string): Promise<{ chain: string; blocks: number }> {
  const client = new BitcoindClient({ url, timeoutMs: PROBE_TIMEOUT_MS, ...(cookieFile ? { cookieFile } : {}) });
  return client.call<{ chain: string; blocks: number }>('getblockchaininfo', []);
}

export type DependencyTargets = {
  databaseUrl?: string | undefined;
  redisUrl?: string | undefined;
  rpcUrl?: string | undefined;
  cookieFile?: string | undefined;
};

type Role = 'indexer' | 'api' | 'streams' | 'worker' | 'electrum';

/** What a process running `roles` uses of the configuration: the node for the roles that read it, Redis for those that queue or limit. */
export function dependencyTargets(
  config: Pick<Config, 'databaseUrl' | 'bitcoindRpcUrl' | 'bitcoindCookieFile' | 'redisUrl' | 'redisSentinels' | 'redisSentinelName'>,
  roles: ReadonlySet<Role>,
): DependencyTargets {
  const node = roles.has('indexer') || roles.has('api') || roles.has('electrum');
  const redis = roles.has('api') || roles.has('streams') || roles.has('worker');
  return {
    databaseUrl: config.databaseUrl,
    ...(redis ? { redisUrl: redisTarget(config) } : {}),
    ...(node ? { rpcUrl: config.bitcoindRpcUrl, cookieFile: config.bitcoindCookieFile } : {}),
  };
}

/** The report of failed probes, as `start` and `config --check` print it. */
export function describeDependencyFailures(failures: readonly DependencyError[]): string {
  return `cannot use what is configured:\n  ${failures.map((f) => f.message).join('\n  ')}`;
}

/**
 * Probes the given targets in parallel. `failures`: what is misconfigured or down for good;
 * `nodeNotYet`: the node does not listen (yet) — it may be starting.
 */
export async function checkDependencies(
  t: DependencyTargets,
): Promise<{ failures: DependencyError[]; nodeNotYet: DependencyError | undefined }> {
  const failures: DependencyError[] = [];
  let nodeNotYet: DependencyError | undefined;
  await Promise.all([
    t.databaseUrl &&
      probeDatabase(t.databaseUrl).catch((err: unknown) => {
        failures.push(explainDependencyFailure('database', t.databaseUrl!, err).error);
      }),
    t.redisUrl &&
      probeRedis(t.redisUrl).catch((err: unknown) => {
        failures.push(explainDependencyFailure('redis', t.redisUrl!, err).error);
      }),
    t.rpcUrl &&
      probeNode(t.rpcUrl, t.cookieFile).catch((err: unknown) => {
        // Still loading its block index (RPC warm-up): it answers, so it is there.
        if ((err as { code?: unknown }).code === 'ERR_RPC_WARMUP') return;
        const explained = explainDependencyFailure('node', t.rpcUrl!, err);
        if (explained.transient) nodeNotYet = explained.error;
        else failures.push(explained.error);
      }),
  ]);
  return { failures, nodeNotYet };
}
