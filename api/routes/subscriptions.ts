/**
 * Subscriptions (docs/events.md): POST /subscriptions
 * {address, action?, confirmations?} → {id}, or {type: "chain"} for block connected/disconnected
 * events, or {wallet} for every address of a wallet (docs/wallets.md "Events"); GET /subscriptions; DELETE /subscriptions/{id}. `action` is a hook id of the same key
 * (events are then also pushed there); without it the subscription feeds the key's WebSocket
 * streams only. Creating the same subscription twice answers the existing id. A key sees and
 * deletes only its own. Bodies and answers in the dialect's shapes: Coinstack's SDK (Java) sends
 * `{action, address}` and wants `{id, address, action}` items and a 200 with a body on DELETE.
 * @module
 */
import { findHook } from '../../src/db/queries/tenancy-hooks.js';
import { deleteSubscription, insertSubscription, listSubscriptions, type SubscriptionPosition } from '../queries/tenancy-subscriptions.js';
import { ServiceError } from '../../src/errors.js';
import { findWallet } from '../queries/wallets.js';
import { resolveAddress } from './addresses.js';
import { newId } from './hooks.js';
import type { RouteModule } from '../dialect.js';

/** Most subscriptions on one page of GET /subscriptions (and the page size when none is asked). */
const MAX_PAGE = 1000;

/** A page position as an opaque cursor: creation time to the microsecond and id. */
function encodeSubscriptionCursor(p: SubscriptionPosition): string {
  return Buffer.from(`s.${p.createdAt.toISOString()}.${p.id}`, 'utf8').toString('base64url');
}

function decodeSubscriptionCursor(raw: string): SubscriptionPosition {
  const m = /^s\.(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)\.(sub_[0-9a-f]{20})$/.exec(Buffer.from(raw, 'base64url').toString('utf8'));
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(raw) || !m) throw new ServiceError('ERR_INVALID_CURSOR');
  return { createdAt: new Date(m[1]!), id: m[2]! };
}

/** Default confirmation target: tx.confirmations events up to 6. */
export const DEFAULT_CONFIRMATIONS = 6;

/** The /v1 subscription view (the response schema also serializes it). */
const subscriptionView = {
  type: 'object',
  required: ['id', 'type', 'address', 'action', 'confirmations', 'created_at'],
  properties: {
    id: { type: 'string' },
    type: { type: 'string', enum: ['address', 'chain', 'wallet'] },
    address: { type: ['string', 'null'] },
    wallet: { type: ['string', 'null'], description: 'the wallet of a wallet subscription' },
    action: { type: ['string', 'null'], description: 'hook id, or null for stream-only' },
    confirmations: { type: 'integer' },
    created_at: { type: 'string', format: 'date-time' },
  },
} as const;

type CreateBody = {
  type?: 'address' | 'chain' | 'wallet';
  address?: string;
  wallet?: string;
  action?: string | null;
  confirmations?: number;
};

export const subscriptionRoutes: RouteModule = (app, deps, dialect) => {
  app.post<{ Body: CreateBody }>(
    '/subscriptions',
    {
      config: { scope: 'write' },
      schema: {
        summary: 'Subscribe to an address (or to the chain)',
        description: "Events recorded after this call are delivered to the key's WebSocket streams and, with `action`, to that hook.",
        tags: ['subscriptions'],
        body: dialect.routes.subscriptionBody,
        response: { 200: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } },
      },
    },
    async (request) => {
      const b = request.body;
      const keyId = request.apiKey.id;
      const kind = b.type ?? (b.wallet !== undefined ? 'wallet' : 'address');
      let address: string | null = null;
      let addrKey: string | null = null;
      let walletId: string | null = null;
      if (kind !== 'wallet' && b.wallet !== undefined)
        throw new ServiceError('ERR_INVALID_BODY', { message: `a ${kind} subscription has no wallet` });
      if (kind === 'wallet') {
        if (b.wallet === undefined) throw new ServiceError('ERR_INVALID_BODY', { message: "body must have required property 'wallet'" });
        if (b.address !== undefined) throw new ServiceError('ERR_INVALID_BODY', { message: 'a wallet subscription has no address' });
        if (!(await findWallet(deps.db, keyId, b.wallet)))
          throw new ServiceError('ERR_WALLET_NOT_FOUND', { message: `wallet ${b.wallet}: no such wallet` });
        walletId = b.wallet;
      } else if (kind === 'address') {
        if (b.address === undefined) throw new ServiceError('ERR_INVALID_BODY', { message: "body must have required property 'address'" });
        addrKey = resolveAddress(deps, b.address);
        address = b.address;
      } else if (b.address !== undefined) {
        throw new ServiceError('ERR_INVALID_BODY', { message: 'a chain subscription has no address' });
      }
      const hookId = b.action ?? null;
      if (hookId !== null && !(await findHook(deps.db, keyId, hookId)))
        throw new ServiceError('ERR_HOOK_NOT_FOUND', { message: `action ${hookId}: no such hook` });
      const confirmations = b.confirmations ?? DEFAULT_CONFIRMATIONS;
      // The same subscription again (even concurrently) is the existing one: a unique index decides.
      const row = await insertSubscription(
        deps.db,
        { id: newId('sub'), keyId, kind, address, addrKey, walletId, hookId, confirmations },
        deps.settings.maxSubscriptionsPerKey,
      );
      return { id: row.id };
    },
  );

  app.get<{ Querystring: { limit: number; cursor?: string } }>(
    '/subscriptions',
    {
      schema: {
        summary: "The key's subscriptions",
        description:
          'Oldest first, paged by `limit` (default and most 1,000) and `cursor`; the next page\'s URL is in the `Link: <…>; rel="next"` header.',
        tags: ['subscriptions'],
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE, default: MAX_PAGE },
            cursor: { type: 'string', maxLength: 200 },
          },
        },
        response: dialect.routes.response({ type: 'array', items: subscriptionView, headers: { Link: { type: 'string' } } }),
      },
    },
    async (request, reply) => {
      const q = request.query;
      const after = q.cursor === undefined ? undefined : decodeSubscriptionCursor(q.cursor);
      const rows = await listSubscriptions(deps.db, request.apiKey.id, { limit: q.limit + 1, ...(after ? { after } : {}) });
      if (rows.length > q.limit) {
        rows.length = q.limit;
        const last = rows[rows.length - 1]!;
        const params = new URLSearchParams({
          limit: String(q.limit),
          cursor: encodeSubscriptionCursor({ createdAt: last.created_at, id: last.id }),
        });
        reply.header('Link', `<${request.url.split('?')[0]!}?${params.toString()}>; rel="next"`);
      }
      return rows.map(dialect.shapes.subscription);
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/subscriptions/:id',
    {
      config: { scope: 'write' },
      schema: {
        summary: 'Delete a subscription',
        tags: ['subscriptions'],
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 40 } } },
      },
    },
    async (request, reply) => {
      if (!(await deleteSubscription(deps.db, request.apiKey.id, request.params.id))) throw new ServiceError('ERR_SUBSCRIPTION_NOT_FOUND');
      return dialect.shapes.deleted(reply);
    },
  );
};
