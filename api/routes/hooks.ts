/**
 * Hooks — where a key's events are pushed (docs/events.md):
 * POST /hooks (http: url + generated or given `whsec_…` secret, answered once; sns: topic ARN +
 * region), GET /hooks, GET/DELETE /hooks/{id}, POST /hooks/{id}/rotate-secret,
 * POST /hooks/{id}/enable, the delivery log GET /hooks/{id}/deliveries[/{delivery}] and manual
 * redelivery POST /hooks/{id}/deliveries/{delivery}/redeliver. Webhook URLs pass the SSRF guard
 * (src/net/hook-url.ts) here and again at every delivery. A key sees only its own hooks.
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { checkHookUrl, HookUrlError } from '../../src/net/hook-url.js';
import {
  countHookSubscriptions,
  deleteHook,
  enableHook,
  findHook,
  insertHook,
  listHooks,
  rotateHookSecret,
  type HookRow,
} from '../../src/db/queries/tenancy-hooks.js';
import {
  findDelivery,
  listDeliveries,
  requestRedelivery,
  type DeliveryPosition,
  type DeliveryRow,
} from '../../src/db/queries/tenancy-deliveries.js';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../../src/db/schema.js';
import { ServiceError } from '../../src/errors.js';
import { isoTime } from '../../src/time.js';
import type { ResolvedApiDeps } from '../deps.js';
import type { RouteModule } from '../dialect.js';

/** How long a rotated-out secret keeps signing (second signature) so receivers can switch. */
const SECRET_ROTATION_GRACE_MS = 24 * 3600_000;

const SECRET_RE = /^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/;
const ARN_RE = /^arn:aws[a-z-]*:sns:([a-z0-9-]{4,30}):(\d{12}):[A-Za-z0-9_-]{1,256}(\.fifo)?$/;
const REGION_RE = /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/;
const ID_RE = '^[a-z]{3,5}_[0-9a-f]{20}$';

/** A new random id with a type prefix (`hook_…`, `sub_…`, `wal_…`): no ':' (BullMQ job ids), no '-'. */
export function newId(prefix: 'hook' | 'sub' | 'wal'): string {
  return `${prefix}_${randomBytes(10).toString('hex')}`;
}

/** A new Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function newHookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const hookView = {
  type: 'object',
  required: ['id', 'type', 'url', 'topic_arn', 'region', 'disabled', 'disabled_reason', 'breaker', 'created_at'],
  properties: {
    id: { type: 'string' },
    type: { type: 'string', enum: ['http', 'sns'] },
    url: { type: ['string', 'null'] },
    topic_arn: { type: ['string', 'null'] },
    region: { type: ['string', 'null'] },
    disabled: {
      type: 'boolean',
      description: 'true after the receiver answered 410 Gone (or the SNS topic vanished); POST /hooks/{id}/enable clears it',
    },
    disabled_reason: { type: ['string', 'null'] },
    breaker: {
      type: 'object',
      required: ['state', 'until'],
      description:
        'the delivery circuit breaker (docs/events.md "Fair delivery"): closed; slowed (failing: one delivery at a time); open (paused until `until`, deliveries kept); half_open (one probe at a time)',
      properties: {
        state: { type: 'string', enum: ['closed', 'slowed', 'open', 'half_open'] },
        until: { type: ['string', 'null'], format: 'date-time' },
      },
    },
    created_at: { type: 'string', format: 'date-time' },
  },
} as const;

const deliveryView = {
  type: 'object',
  required: [
    'id',
    'event_id',
    'type',
    'subscription_id',
    'status',
    'attempts',
    'redeliveries',
    'last_status',
    'last_error',
    'last_attempt_at',
    'last_latency_ms',
    'created_at',
    'updated_at',
    'next_attempt_at',
    'delivered_at',
    'payload',
  ],
  properties: {
    id: { type: 'string', description: 'the webhook-id header (and SNS message attribute) of every attempt' },
    event_id: { type: 'integer' },
    type: { type: 'string' },
    subscription_id: { type: 'string' },
    status: {
      type: 'string',
      enum: [...DELIVERY_STATUSES],
      description: 'pending (being tried), delivered, failed (permanent answer or disabled hook), dead (retries exhausted)',
    },
    attempts: { type: 'integer' },
    redeliveries: { type: 'integer' },
    last_status: { type: ['integer', 'null'], description: 'HTTP status of the last attempt; null when no answer came' },
    last_error: { type: ['string', 'null'] },
    last_attempt_at: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'when the last attempt was sent; null before the first',
    },
    last_latency_ms: { type: ['integer', 'null'], description: 'how long the last attempt took until the answer (or the failure), ms' },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
    next_attempt_at: { type: ['string', 'null'], format: 'date-time' },
    delivered_at: { type: ['string', 'null'], format: 'date-time' },
    payload: { type: 'object', additionalProperties: true, description: 'the event as sent (docs/events.md)' },
  },
} as const;

export const hookParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', pattern: ID_RE } } } as const;
export const deliveryParams = {
  type: 'object',
  required: ['id', 'delivery'],
  properties: { id: { type: 'string', pattern: ID_RE }, delivery: { type: 'string', pattern: `${ID_RE.slice(0, -1)}-\\d{1,19}$` } },
} as const;

function toHookView(h: HookRow) {
  return {
    id: h.id,
    type: h.type,
    url: h.url,
    topic_arn: h.topic_arn,
    region: h.region,
    disabled: h.disabled_at !== null,
    disabled_reason: h.disabled_reason,
    breaker: { state: h.breaker_state, until: h.breaker_until ? isoTime(h.breaker_until) : null },
    created_at: isoTime(h.created_at),
  };
}

function toDeliveryView(d: DeliveryRow) {
  const opt = (t: Date | null) => (t ? isoTime(t) : null);
  return {
    id: d.id,
    event_id: Number(d.event_id),
    type: d.event_type,
    subscription_id: d.subscription_id,
    status: d.status,
    attempts: d.attempts,
    redeliveries: d.redeliveries,
    last_status: d.last_status,
    last_error: d.last_error,
    last_attempt_at: opt(d.last_attempt_at),
    last_latency_ms: d.last_latency_ms,
    created_at: isoTime(d.created_at),
    updated_at: isoTime(d.updated_at),
    next_attempt_at: d.status === 'pending' ? opt(d.next_attempt_at) : null,
    delivered_at: opt(d.delivered_at),
    payload: JSON.parse(d.payload) as unknown,
  };
}

function encodeDeliveryCursor(p: DeliveryPosition): string {
  return Buffer.from(`d.${p.eventId}.${p.id}`, 'utf8').toString('base64url');
}

function decodeDeliveryCursor(raw: string): DeliveryPosition {
  const m = /^d\.(\d{1,19})\.([a-z]{3,5}_[0-9a-f]{20}-\d{1,19})$/.exec(Buffer.from(raw, 'base64url').toString('utf8'));
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(raw) || !m) throw new ServiceError('ERR_INVALID_CURSOR');
  return { eventId: BigInt(m[1]!), id: m[2]! };
}

export async function ownHook(deps: ResolvedApiDeps, request: FastifyRequest<{ Params: { id: string } }>): Promise<HookRow> {
  const hook = await findHook(deps.db, request.apiKey.id, request.params.id);
  if (!hook) throw new ServiceError('ERR_HOOK_NOT_FOUND');
  return hook;
}

type CreateBody = { type: 'http' | 'sns'; url?: string; secret?: string; topic_arn?: string; region?: string };

async function validateCreate(
  deps: ResolvedApiDeps,
  b: CreateBody,
): Promise<{ type: 'http'; url: string; secret: string } | { type: 'sns'; topicArn: string; region: string }> {
  const bad = (message: string) => new ServiceError('ERR_INVALID_BODY', { message });
  if (b.type === 'http') {
    if (b.topic_arn !== undefined || b.region !== undefined) throw bad('topic_arn and region belong to sns hooks');
    if (b.url === undefined) throw bad("body must have required property 'url'");
    try {
      await checkHookUrl(b.url, deps.hookUrls ?? { allowPrivate: false });
    } catch (err) {
      if (err instanceof HookUrlError) throw new ServiceError('ERR_HOOK_URL_REFUSED', { message: err.message });
      throw err;
    }
    if (b.secret !== undefined && !SECRET_RE.test(b.secret)) throw bad('secret must be whsec_ followed by the base64 of 24 to 64 bytes');
    return { type: 'http', url: b.url, secret: b.secret ?? newHookSecret() };
  }
  if (b.url !== undefined || b.secret !== undefined) throw bad('url and secret belong to http hooks');
  if (b.topic_arn === undefined) throw bad("body must have required property 'topic_arn'");
  const m = ARN_RE.exec(b.topic_arn);
  if (!m) throw bad('topic_arn must be an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)');
  const region = b.region ?? m[1]!;
  if (!REGION_RE.test(region)) throw bad('region must be an AWS region such as us-east-1');
  if (region !== m[1]) throw bad(`region ${region} differs from the topic's region ${m[1]}`);
  return { type: 'sns', topicArn: b.topic_arn, region };
}

export const hookRoutes: RouteModule = (app, deps, dialect) => {
  app.post<{ Body: CreateBody }>(
    '/hooks',
    {
      config: { scope: 'write' },
      schema: {
        summary: 'Register a delivery target (HTTP webhook or SNS topic)',
        description: "An http hook's secret (`whsec_…`, Standard Webhooks) is in this answer only; keep it to verify `webhook-signature`.",
        tags: ['subscriptions'],
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['type'],
          properties: {
            type: { type: 'string', enum: ['http', 'sns'] },
            url: { type: 'string', maxLength: 2048, description: 'http: https URL receiving POSTs' },
            secret: { type: 'string', maxLength: 100, description: 'http: your own whsec_ secret; one is generated when absent' },
            topic_arn: { type: 'string', maxLength: 300, description: 'sns: topic ARN' },
            region: { type: 'string', maxLength: 30, description: "sns: the topic's region (default: from the ARN)" },
          },
        },
        response: {
          201: {
            ...hookView,
            required: [...hookView.required],
            properties: { ...hookView.properties, secret: { type: ['string', 'null'] } },
          },
        },
      },
    },
    async (request, reply) => {
      const v = await validateCreate(deps, request.body);
      const id = newId('hook');
      const row = await insertHook(
        deps.db,
        v.type === 'http' ? { id, keyId: request.apiKey.id, ...v } : { id, keyId: request.apiKey.id, ...v },
        deps.settings.maxHooksPerKey,
      );
      return reply.code(201).send({ ...toHookView(row), secret: row.secret });
    },
  );

  app.get(
    '/hooks',
    { schema: { summary: "The key's hooks", tags: ['subscriptions'], response: { 200: { type: 'array', items: hookView } } } },
    async (request) => (await listHooks(deps.db, request.apiKey.id)).map(toHookView),
  );

  app.get<{ Params: { id: string } }>(
    '/hooks/:id',
    { schema: { summary: 'One hook', tags: ['subscriptions'], params: hookParams, response: { 200: hookView } } },
    async (request) => toHookView(await ownHook(deps, request)),
  );

  app.delete<{ Params: { id: string } }>(
    '/hooks/:id',
    { config: { scope: 'write' }, schema: { summary: 'Delete a hook no subscription uses', tags: ['subscriptions'], params: hookParams } },
    async (request, reply) => {
      const hook = await ownHook(deps, request);
      const users = await countHookSubscriptions(deps.db, hook.id);
      if (users > 0)
        throw new ServiceError('ERR_HOOK_IN_USE', {
          message: `hook is used by ${users} subscription${users === 1 ? '' : 's'}; delete them first`,
        });
      if (!(await deleteHook(deps.db, request.apiKey.id, hook.id))) throw new ServiceError('ERR_HOOK_NOT_FOUND');
      return dialect.shapes.deleted(reply);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/hooks/:id/rotate-secret',
    {
      config: { scope: 'write' },
      schema: {
        summary: "Replace an http hook's secret",
        description:
          'Answers the new secret once. For 24 hours deliveries carry two signatures (new and old), so receivers can switch without losing one.',
        tags: ['subscriptions'],
        params: hookParams,
        response: {
          200: {
            type: 'object',
            required: ['id', 'secret', 'previous_secret_expires_at'],
            properties: {
              id: { type: 'string' },
              secret: { type: 'string' },
              previous_secret_expires_at: { type: 'string', format: 'date-time' },
            },
          },
        },
      },
    },
    async (request) => {
      const hook = await ownHook(deps, request);
      if (hook.type !== 'http') throw new ServiceError('ERR_INVALID_PARAMETER', { message: 'only http hooks have a secret' });
      const until = new Date(Date.now() + SECRET_ROTATION_GRACE_MS);
      const row = await rotateHookSecret(deps.db, request.apiKey.id, hook.id, newHookSecret(), until);
      if (!row?.secret) throw new ServiceError('ERR_HOOK_NOT_FOUND');
      return { id: row.id, secret: row.secret, previous_secret_expires_at: isoTime(until) };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/hooks/:id/enable',
    {
      config: { scope: 'write' },
      schema: { summary: 'Re-enable a disabled hook', tags: ['subscriptions'], params: hookParams, response: { 200: hookView } },
    },
    async (request) => {
      await ownHook(deps, request);
      const row = await enableHook(deps.db, request.apiKey.id, request.params.id);
      if (!row) throw new ServiceError('ERR_HOOK_NOT_FOUND');
      return toHookView(row);
    },
  );

  app.get<{ Params: { id: string }; Querystring: { status?: DeliveryStatus; limit: number; cursor?: string } }>(
    '/hooks/:id/deliveries',
    {
      schema: {
        summary: "The hook's delivery log, newest event first",
        description:
          'Paged by `limit` and `cursor`; the next page\'s URL is in the `Link: <…>; rel="next"` header. `status=dead` lists the dead letters.',
        tags: ['subscriptions'],
        params: hookParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            status: { type: 'string', enum: [...DELIVERY_STATUSES] },
            limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
            cursor: { type: 'string', maxLength: 200 },
          },
        },
        response: { 200: { type: 'array', items: deliveryView, headers: { Link: { type: 'string' } } } },
      },
    },
    async (request, reply: FastifyReply) => {
      const hook = await ownHook(deps, request);
      const q = request.query;
      const after = q.cursor === undefined ? undefined : decodeDeliveryCursor(q.cursor);
      const rows = await listDeliveries(deps.db, hook.id, {
        ...(q.status ? { status: q.status } : {}),
        ...(after ? { after } : {}),
        limit: q.limit + 1,
      });
      if (rows.length > q.limit) {
        rows.length = q.limit;
        const last = rows[rows.length - 1]!;
        const params = new URLSearchParams({
          limit: String(q.limit),
          ...(q.status ? { status: q.status } : {}),
          cursor: encodeDeliveryCursor({ eventId: last.event_id, id: last.id }),
        });
        reply.header('Link', `<${request.url.split('?')[0]!}?${params.toString()}>; rel="next"`);
      }
      return rows.map(toDeliveryView);
    },
  );

  app.get<{ Params: { id: string; delivery: string } }>(
    '/hooks/:id/deliveries/:delivery',
    { schema: { summary: 'One delivery of the hook', tags: ['subscriptions'], params: deliveryParams, response: { 200: deliveryView } } },
    async (request) => {
      const hook = await ownHook(deps, request);
      const d = await findDelivery(deps.db, hook.id, request.params.delivery);
      if (!d) throw new ServiceError('ERR_DELIVERY_NOT_FOUND');
      return toDeliveryView(d);
    },
  );

  app.post<{ Params: { id: string; delivery: string } }>(
    '/hooks/:id/deliveries/:delivery/redeliver',
    {
      config: { scope: 'write' },
      schema: {
        summary: 'Deliver again (a dead letter, a failed or a delivered one)',
        description: 'Starts a new series of attempts with the same webhook-id and body; the first attempt follows within about a second.',
        tags: ['subscriptions'],
        params: deliveryParams,
        response: { 202: deliveryView },
      },
    },
    async (request, reply) => {
      const hook = await ownHook(deps, request);
      const d = await requestRedelivery(deps.db, hook.id, request.params.delivery);
      if (!d) throw new ServiceError('ERR_DELIVERY_NOT_FOUND');
      return reply.code(202).send(toDeliveryView(d));
    },
  );
};
