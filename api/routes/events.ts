/**
 * GET /v1/events?after=ID&wait=SECONDS: the key's events by long polling, for hosts where
 * WebSockets are blocked. The same ordered event log, matching and JSON as the stream
 * (`/v1/stream`): the answer holds the events after `after` (at once when there are some, else
 * the first ones within `wait` seconds, else none) and `next`, the id to ask after next time. The
 * tip headers (api/tip.ts) carry the indexed tip read with the end of the log the answer covers.
 * @module
 */
import { ServiceError } from '../../src/errors.js';
import type { RouteModule } from '../dialect.js';
import { setTipHeaders, tipHeaders, TIP_HEIGHT_HEADER } from '../tip.js';

/** Longest wait a poll may ask for, seconds. */
const MAX_WAIT_S = 60;

export const eventRoutes: RouteModule = (app, deps) => {
  app.get<{ Querystring: { after?: string; wait: number; limit: number } }>(
    '/events',
    {
      // (a poll may wait MAX_WAIT_S: the route's own time limit, above the API's per-request one)
      handlerTimeout: (MAX_WAIT_S + 15) * 1000,
      schema: {
        summary: "The key's events after an event id, by long polling (the stream's events without a WebSocket)",
        description: `Answers at once when events after \`after\` exist, else waits up to \`wait\` seconds (0–${MAX_WAIT_S}) for the first. Events are the stream's, in its order and JSON (docs/events.md); \`next\` is the id to pass as \`after\` next time (it moves past events of other keys too). Without \`after\`: events from now on. An \`after\` beyond the newest event, or before the retention, is 400 ERR_INVALID_CURSOR.`,
        tags: ['events'],
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            after: { type: 'string', pattern: '^[0-9]{1,18}$', description: 'an event id received before' },
            wait: { type: 'integer', minimum: 0, maximum: MAX_WAIT_S, default: 0, description: 'seconds to wait for the first event' },
            limit: {
              type: 'integer',
              minimum: 1,
              maximum: 1000,
              default: 100,
              description: "outbox rows read at most (an event of several of the key's subscriptions counts once)",
            },
          },
        },
        response: {
          200: {
            type: 'object',
            required: ['events', 'next'],
            properties: {
              events: { type: 'array', items: { type: 'object', additionalProperties: true } },
              next: { type: 'integer', description: 'the event id to poll after next' },
            },
            headers: {
              ...tipHeaders,
              [TIP_HEIGHT_HEADER]: {
                type: 'integer',
                description:
                  'height of the indexed tip read in one statement with the end of the event log this answer covers (-1 while nothing is indexed)',
              },
            },
          },
        },
      },
    },
    async (request, reply) => {
      if (!deps.events)
        throw new ServiceError('ERR_ROUTE_NOT_FOUND', { message: 'this server does not serve the event log (no streams role)' });
      const q = request.query;
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      const r = await deps.events.poll(request.apiKey.id, q.after === undefined ? undefined : BigInt(q.after), {
        waitMs: q.wait * 1000,
        limit: q.limit,
        signal: gone.signal,
      });
      setTipHeaders(reply, r.tip);
      // (the payloads are the stream's JSON as is)
      return reply.type('application/json; charset=utf-8').send(`{"events":[${r.events.join(',')}],"next":${r.next}}`);
    },
  );
};
