/**
 * GET /healthz (liveness plus the index tip, the node tip and the lag, as JSON) and GET /readyz
 * (200 only when the database answers, the node was reachable at its last poll and the index is
 * within API_MAX_LAG_BLOCKS of it). Both are public: no apiKey.
 * @module
 */
import { getIndexTip } from '../../src/db/queries/api-chain.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { ServiceError } from '../../src/errors.js';
import type { ApiInstance, NodeTip, ResolvedApiDeps } from '../deps.js';

const tipSchema = {
  type: 'object',
  properties: { height: { type: 'integer' }, hash: { type: ['string', 'null'] } },
} as const;

const healthSchema = {
  type: 'object',
  required: ['status', 'index', 'node', 'lag'],
  properties: {
    status: { type: 'string', enum: ['ok', 'syncing', 'node_unreachable', 'node_unknown'] },
    network: { type: 'string' },
    index: tipSchema,
    node: {
      type: ['object', 'null'],
      properties: { height: { type: 'integer' }, hash: { type: 'string' }, initial_block_download: { type: 'boolean' }, error: { type: 'string' }, checked_at: { type: 'string' } },
    },
    lag: { type: ['integer', 'null'], description: 'node height minus index height' },
    stamping: {
      type: 'object',
      description: 'the stamping wallet (address, balance in sat, whether it can pay, queued stamps), when stamping is configured',
      additionalProperties: true,
    },
  },
} as const;

export type Health = {
  status: 'ok' | 'syncing' | 'node_unreachable' | 'node_unknown';
  network: string;
  index: { height: number; hash: string | null };
  node: { height: number; hash: string; initial_block_download: boolean; checked_at: string } | { error: string; checked_at: string } | null;
  lag: number | null;
  stamping?: Record<string, unknown>;
};

function nodeView(tip: NodeTip | undefined): Health['node'] {
  if (!tip) return null;
  if ('error' in tip) return { error: tip.error, checked_at: tip.at.toISOString() };
  return { height: tip.height, hash: tip.hash, initial_block_download: tip.initialBlockDownload, checked_at: tip.at.toISOString() };
}

/** The health report (also used for the syncing check of address routes). */
export async function readHealth(deps: ResolvedApiDeps): Promise<Health> {
  let index;
  try {
    index = await getIndexTip(deps.db);
  } catch (err) {
    throw new ServiceError('ERR_DATABASE_UNAVAILABLE', { cause: err });
  }
  const tip = deps.nodeTip?.();
  const node = nodeView(tip);
  const lag = tip && !('error' in tip) ? tip.height - index.height : null;
  let status: Health['status'] = 'ok';
  if (!tip) status = deps.node ? 'node_unknown' : 'ok';
  else if ('error' in tip) status = 'node_unreachable';
  else if (tip.initialBlockDownload || (lag !== null && lag > deps.settings.maxLagBlocks)) status = 'syncing';
  const health: Health = { status, network: deps.network, index: { height: index.height, hash: index.hash ? hashToHex(index.hash) : null }, node, lag };
  if (deps.stampStatus) {
    try {
      health.stamping = await deps.stampStatus();
    } catch (err) {
      health.stamping = { error: err instanceof Error ? err.message : String(err) };
    }
  }
  return health;
}

/** Registers /healthz and /readyz (at the root only, not under /v1). */
export function healthRoutes(app: ApiInstance, deps: ResolvedApiDeps): void {
  app.get(
    '/healthz',
    { config: { auth: false }, schema: { summary: 'Liveness, index tip, node tip and lag', tags: ['operations'], response: { 200: healthSchema } } },
    async () => readHealth(deps),
  );
  app.get(
    '/readyz',
    { config: { auth: false }, schema: { summary: 'Readiness: database up, node reachable, index caught up (503 otherwise)', tags: ['operations'], response: { 200: healthSchema, 503: healthSchema } } },
    async (_req, reply) => {
      const h = await readHealth(deps);
      return reply.code(h.status === 'ok' ? 200 : 503).send(h);
    },
  );
}
