/**
 * GET /healthz (liveness plus the index tip, the node tip, the lag and the state of each
 * dependency, as JSON; 200 while the process runs, whatever its dependencies) and GET /readyz
 * (the same body; 200 only when the database answers, Redis answers (when the API uses one), the
 * node was reachable at its last poll and the index is within API_MAX_LAG_BLOCKS of it, else
 * 503). Both are public: no apiKey. Neither throws: a dependency that is down is a field of the
 * report, so the answer always matches its schema. The stamping wallet's details (address,
 * balance, queue) are shown only to a request with a valid apiKey; without one `stamping` says
 * only that stamping is on.
 * @module
 */
import type { Redis } from 'ioredis';
import { getIndexTip } from '../queries/chain.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { presentedKey } from '../../src/auth/authenticate.js';
import { verifyApiKey } from '../../src/auth/keys.js';
import type { ApiInstance, NodeTip, ResolvedApiDeps } from '../deps.js';

/** How long a readiness probe waits for the database or Redis before calling it down. */
const PROBE_TIMEOUT_MS = 2000;

const tipSchema = {
  type: ['object', 'null'],
  properties: { height: { type: 'integer' }, hash: { type: ['string', 'null'] } },
} as const;

const DEPENDENCY_STATES = ['up', 'down', 'unknown', 'not_used'] as const;
type DependencyState = (typeof DEPENDENCY_STATES)[number];

const dependencySchema = {
  type: 'object',
  required: ['database', 'redis', 'node'],
  description: 'each dependency: up, down, unknown (not polled yet) or not_used by this process',
  properties: {
    database: { type: 'string', enum: [...DEPENDENCY_STATES] },
    redis: { type: 'string', enum: [...DEPENDENCY_STATES] },
    node: { type: 'string', enum: [...DEPENDENCY_STATES] },
  },
} as const;

const healthSchema = {
  type: 'object',
  required: ['status', 'index', 'node', 'lag', 'dependencies'],
  properties: {
    status: { type: 'string', enum: ['ok', 'syncing', 'node_unreachable', 'node_unknown', 'database_unreachable', 'redis_unreachable'] },
    network: { type: 'string' },
    index: tipSchema,
    node: {
      type: ['object', 'null'],
      properties: {
        height: { type: 'integer' },
        hash: { type: 'string' },
        initial_block_download: { type: 'boolean' },
        error: { type: 'string' },
        checked_at: { type: 'string' },
        below_index: {
          type: 'boolean',
          description:
            "true when the node's tip, asked again, is still below the index's (the node's chain got shorter: the index undoes blocks next)",
        },
      },
    },
    lag: { type: ['integer', 'null'], minimum: 0, description: 'node height minus index height, never negative' },
    dependencies: dependencySchema,
    stamping: {
      type: 'object',
      description: 'the stamping wallet (address, balance in sat, whether it can pay, queued stamps), when stamping is configured',
      additionalProperties: true,
    },
  },
} as const;

export type Health = {
  status: 'ok' | 'syncing' | 'node_unreachable' | 'node_unknown' | 'database_unreachable' | 'redis_unreachable';
  network: string;
  /** null when the database cannot be read. */
  index: { height: number; hash: string | null } | null;
  node:
    | { height: number; hash: string; initial_block_download: boolean; checked_at: string; below_index?: true }
    | { error: string; checked_at: string }
    | null;
  lag: number | null;
  dependencies: { database: DependencyState; redis: DependencyState; node: DependencyState };
  stamping?: Record<string, unknown>;
};

/** `p`, or a rejection after `ms`. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** Redis answers a PING now (a connection that is not ready is down without waiting). */
async function redisUp(redis: Redis): Promise<boolean> {
  if (redis.status !== 'ready') return false;
  try {
    return (await within(redis.ping(), PROBE_TIMEOUT_MS, 'redis')) === 'PONG';
  } catch {
    return false;
  }
}

function nodeView(tip: NodeTip | undefined): Health['node'] {
  if (!tip) return null;
  if ('error' in tip) return { error: tip.error, checked_at: tip.at.toISOString() };
  return { height: tip.height, hash: tip.hash, initial_block_download: tip.initialBlockDownload, checked_at: tip.at.toISOString() };
}

/** The health report (also used for the syncing check of address routes). */
async function readHealth(deps: ResolvedApiDeps, opts: { wallet?: boolean } = {}): Promise<Health> {
  const [index, redis] = await Promise.all([
    within(getIndexTip(deps.db), PROBE_TIMEOUT_MS, 'database').catch((err: unknown) => {
      deps.log.warn({ err }, 'health: database unavailable');
      return null;
    }),
    deps.redis ? redisUp(deps.redis) : undefined,
  ]);
  let tip = deps.nodeTip?.();
  // The node's tip is polled; the index may have applied a block the last poll did not see yet.
  // Then the node is asked now rather than answering a negative lag.
  if (tip && !('error' in tip) && index && tip.height < index.height && deps.node) {
    const polled = tip;
    tip = await within(deps.node.getBlockchainInfo(), PROBE_TIMEOUT_MS, 'node').then(
      (info): NodeTip => ({
        height: info.blocks,
        hash: info.bestblockhash,
        at: new Date(),
        initialBlockDownload: info.initialblockdownload === true,
      }),
      () => polled,
    );
  }
  const node = nodeView(tip);
  const belowIndex = tip !== undefined && !('error' in tip) && index !== null && tip.height < index.height;
  if (belowIndex && node && !('error' in node)) Object.assign(node, { below_index: true });
  const lag = tip && !('error' in tip) && index ? Math.max(0, tip.height - index.height) : null;
  const dependencies: Health['dependencies'] = {
    database: index ? 'up' : 'down',
    redis: redis === undefined ? 'not_used' : redis ? 'up' : 'down',
    node: !deps.node && !tip ? 'not_used' : !tip ? 'unknown' : 'error' in tip ? 'down' : 'up',
  };
  let status: Health['status'] = 'ok';
  if (!index) status = 'database_unreachable';
  else if (redis === false) status = 'redis_unreachable';
  else if (!tip) status = deps.node ? 'node_unknown' : 'ok';
  else if ('error' in tip) status = 'node_unreachable';
  else if (tip.initialBlockDownload || (lag !== null && lag > deps.settings.maxLagBlocks)) status = 'syncing';
  const health: Health = {
    status,
    network: deps.network,
    index: index ? { height: index.height, hash: index.hash ? hashToHex(index.hash) : null } : null,
    node,
    lag,
    dependencies,
  };
  if (deps.stampStatus && opts.wallet === false) {
    health.stamping = { enabled: true };
  } else if (deps.stampStatus && index) {
    try {
      health.stamping = await deps.stampStatus();
    } catch (err) {
      health.stamping = { error: err instanceof Error ? err.message : String(err) };
    }
  }
  return health;
}

/** Whether the request carries a valid API key (the health routes need none, the wallet's details do). */
async function hasValidKey(deps: ResolvedApiDeps, header: string | string[] | undefined): Promise<boolean> {
  const key = presentedKey(header);
  if (!key) return false;
  const principal = await (deps.verifyKey ?? ((k: string) => verifyApiKey(deps.db, k)))(key).catch(() => null);
  return principal !== null;
}

/** Registers /healthz and /readyz (at the root only, not under /v1). */
export function healthRoutes(app: ApiInstance, deps: ResolvedApiDeps): void {
  app.get(
    '/healthz',
    {
      config: { auth: false },
      schema: {
        summary: 'Liveness (200 while the process runs), index tip, node tip, lag and the state of each dependency',
        tags: ['operations'],
        response: { 200: healthSchema },
      },
    },
    async (req) => readHealth(deps, { wallet: await hasValidKey(deps, req.headers['apikey']) }),
  );
  app.get(
    '/readyz',
    {
      config: { auth: false },
      schema: {
        summary: 'Readiness: database and Redis up, node reachable, index caught up (503 otherwise)',
        tags: ['operations'],
        response: { 200: healthSchema, 503: healthSchema },
      },
    },
    async (req, reply) => {
      const h = await readHealth(deps, { wallet: await hasValidKey(deps, req.headers['apikey']) });
      return reply.code(h.status === 'ok' ? 200 : 503).send(h);
    },
  );
}
