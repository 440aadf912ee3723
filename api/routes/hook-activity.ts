/**
 * What a hook's deliveries came to, for the console (api/console/) and any client: the attempts
 * that delivered and those that failed, minute by minute over the last hour
 * (GET /hooks/{id}/stats), and one delivery's last exchange with the receiver — the request as
 * sent and the receiver's answer (GET /hooks/{id}/deliveries/{delivery}/exchange). Both read what
 * the delivery workers record with each attempt (migration 0041). A key sees only its own hooks.
 * @module
 */
import { findDelivery, readAttemptMinutes } from '../../src/db/queries/tenancy-deliveries.js';
import { ServiceError } from '../../src/errors.js';
import { isoTime } from '../../src/time.js';
import type { RouteModule } from '../dialect.js';
import { deliveryParams, hookParams, ownHook } from './hooks.js';

/** Minutes the chart covers, the current one included. */
const STATS_MINUTES = 60;

const MINUTE_MS = 60_000;

const statsView = {
  type: 'object',
  required: ['hook_id', 'since', 'delivered', 'failed', 'minutes'],
  properties: {
    hook_id: { type: 'string' },
    since: { type: 'string', format: 'date-time', description: 'start of the first minute' },
    delivered: { type: 'integer', description: 'attempts the receiver accepted (2xx) over the hour' },
    failed: { type: 'integer', description: 'attempts that failed over the hour (any other answer, no answer)' },
    minutes: {
      type: 'array',
      description: `${STATS_MINUTES} entries, oldest first, the current minute last`,
      items: {
        type: 'object',
        required: ['minute', 'delivered', 'failed'],
        properties: { minute: { type: 'string', format: 'date-time' }, delivered: { type: 'integer' }, failed: { type: 'integer' } },
      },
    },
  },
} as const;

const exchangeView = {
  type: 'object',
  required: ['delivery_id', 'attempts', 'request', 'response'],
  properties: {
    delivery_id: { type: 'string' },
    attempts: { type: 'integer', description: 'attempts of the current series' },
    request: {
      type: 'object',
      required: ['method', 'url', 'headers', 'body'],
      description:
        "what every attempt sends: the same body and webhook-id; the signature (from the hook's secret and the timestamp) is not kept",
      properties: {
        method: { type: 'string' },
        url: { type: 'string', description: 'the webhook URL, or the SNS topic ARN' },
        headers: {
          type: 'object',
          additionalProperties: { type: 'string' },
          description: 'webhook-id and, once sent, the webhook-timestamp of the last attempt (http); the message attributes (sns)',
        },
        body: { type: 'string', description: 'the exact JSON sent (docs/events.md)' },
      },
    },
    response: {
      type: ['object', 'null'],
      required: ['sent_at', 'status', 'latency_ms', 'body', 'error'],
      description: "the last attempt's outcome; null before the first",
      properties: {
        sent_at: { type: 'string', format: 'date-time' },
        status: { type: ['integer', 'null'], description: 'HTTP status; null when no answer came' },
        latency_ms: { type: ['integer', 'null'] },
        body: { type: ['string', 'null'], description: 'the first 2,048 bytes of the answer, as text' },
        error: { type: ['string', 'null'] },
      },
    },
  },
} as const;

export const hookActivityRoutes: RouteModule = (app, deps) => {
  app.get<{ Params: { id: string } }>(
    '/hooks/:id/stats',
    {
      schema: {
        summary: "The hook's delivery attempts per minute over the last hour",
        tags: ['subscriptions'],
        params: hookParams,
        response: { 200: statsView },
      },
    },
    async (request) => {
      const hook = await ownHook(deps, request);
      const first = Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS - (STATS_MINUTES - 1) * MINUTE_MS;
      const counted = new Map((await readAttemptMinutes(deps.db, hook.id, new Date(first))).map((m) => [m.minute.getTime(), m]));
      const minutes = Array.from({ length: STATS_MINUTES }, (_, i) => {
        const t = first + i * MINUTE_MS;
        const m = counted.get(t);
        return { minute: isoTime(new Date(t)), delivered: m?.delivered ?? 0, failed: m?.failed ?? 0 };
      });
      const sum = (k: 'delivered' | 'failed') => minutes.reduce((n, m) => n + m[k], 0);
      return { hook_id: hook.id, since: isoTime(new Date(first)), delivered: sum('delivered'), failed: sum('failed'), minutes };
    },
  );

  app.get<{ Params: { id: string; delivery: string } }>(
    '/hooks/:id/deliveries/:delivery/exchange',
    {
      schema: {
        summary: "A delivery's request and its receiver's last answer",
        tags: ['subscriptions'],
        params: deliveryParams,
        response: { 200: exchangeView },
      },
    },
    async (request) => {
      const hook = await ownHook(deps, request);
      const d = await findDelivery(deps.db, hook.id, request.params.delivery);
      if (!d) throw new ServiceError('ERR_DELIVERY_NOT_FOUND');
      const sentAt = d.last_attempt_at;
      const headers: Record<string, string> =
        hook.type === 'http'
          ? {
              'content-type': 'application/json',
              'webhook-id': d.id,
              ...(sentAt ? { 'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)) } : {}),
            }
          : { 'webhook-id': d.id, 'event-type': d.event_type };
      return {
        delivery_id: d.id,
        attempts: d.attempts,
        request: {
          method: hook.type === 'http' ? 'POST' : 'Publish',
          url: (hook.type === 'http' ? hook.url : hook.topic_arn) ?? '',
          headers,
          body: d.payload,
        },
        response: sentAt
          ? { sent_at: isoTime(sentAt), status: d.last_status, latency_ms: d.last_latency_ms, body: d.last_response, error: d.last_error }
          : null,
      };
    },
  );
};
