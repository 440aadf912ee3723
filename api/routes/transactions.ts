/**
 * GET /transactions/{hash} (confirmed or mempool: what the dialect's transaction answer loads
 * and shows; with `?format=hex` in Coinstack's dialect its raw bytes) and POST /transactions
 * {"tx": "<hex>"} (broadcast; `write` scope), answered in the dialect's shape.
 * @module
 */
import { ServiceError } from '../../src/errors.js';
import { broadcastTransaction } from '../broadcast.js';
import type { RouteModule } from '../dialect.js';
import { sendTransactionHex } from './raw-hex.js';
import { keyCheckPassed } from '../key-check.js';
import { setTipHeaders, withTipHeaders } from '../tip.js';

/** What fastify sends a serialized object as. */
const JSON_TYPE = 'application/json; charset=utf-8';

export const transactionRoutes: RouteModule = (app, deps, dialect) => {
  const bodies = new WeakMap<object, string>();
  const transaction = dialect.answers.transaction;
  app.get<{ Params: { hash: string } }>(
    '/transactions/:hash',
    {
      // (a read without side effects: the key's revocation check runs while it is read, api/key-check.ts)
      config: { keyCheck: 'alongside' },
      schema: {
        summary: 'A confirmed or mempool transaction',
        tags: ['transactions'],
        params: dialect.routes.hashParams,
        response: dialect.routes.response(withTipHeaders(transaction.schema)),
      },
    },
    async (request, reply) => {
      const txid = dialect.routes.parseHash(request.params.hash, 'ERR_TX_NOT_FOUND');
      if (dialect.routes.wantsHex(request)) {
        await keyCheckPassed(request);
        return sendTransactionHex(deps, txid, reply);
      }
      const r = await transaction.load(deps, txid);
      if (!r) throw new ServiceError('ERR_TX_NOT_FOUND');
      const tx = r.answer;
      await keyCheckPassed(request);
      setTipHeaders(reply, r.tip);
      // An answer the dialect gave before (a held transaction whose rows are unchanged) goes out
      // as it was serialized then: the route's own serializer made those bytes.
      let body = bodies.get(tx);
      if (body === undefined) bodies.set(tx, (body = reply.serialize(tx) as string));
      return reply.type(JSON_TYPE).send(body);
    },
  );

  app.post<{ Body: { tx: string } }>(
    '/transactions',
    {
      bodyLimit: deps.settings.txBodyLimit,
      config: { scope: 'write' },
      schema: {
        summary: 'Broadcast a signed transaction',
        description:
          'Errors carry `retry: true` only when sending the same transaction again can succeed (missing parent that can still appear, not final yet, mempool limits, node unreachable).',
        tags: ['transactions'],
        body: dialect.routes.broadcastBody,
        response: dialect.routes.response({
          type: 'object',
          required: ['transaction_hash'],
          properties: { transaction_hash: { type: 'string' } },
        }),
      },
    },
    async (request) => dialect.shapes.broadcast(await broadcastTransaction(deps, request.body.tx)),
  );
};
