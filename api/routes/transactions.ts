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

export const transactionRoutes: RouteModule = (app, deps, dialect) => {
  const transaction = dialect.answers.transaction;
  app.get<{ Params: { hash: string } }>(
    '/transactions/:hash',
    { schema: { summary: 'A confirmed or mempool transaction', tags: ['transactions'], params: dialect.routes.hashParams, response: dialect.routes.response(transaction.schema) } },
    async (request, reply) => {
      const txid = dialect.routes.parseHash(request.params.hash, 'ERR_TX_NOT_FOUND');
      if (dialect.routes.wantsHex(request)) return sendTransactionHex(deps, txid, reply);
      const tx = await transaction.load(deps, txid);
      if (!tx) throw new ServiceError('ERR_TX_NOT_FOUND');
      return tx;
    },
  );

  app.post<{ Body: { tx: string } }>(
    '/transactions',
    {
      bodyLimit: deps.settings.txBodyLimit,
      config: { scope: 'write' },
      schema: {
        summary: 'Broadcast a signed transaction',
        description: 'Errors carry `retry: true` only when sending the same transaction again can succeed (missing parent that can still appear, not final yet, mempool limits, node unreachable).',
        tags: ['transactions'],
        body: dialect.routes.broadcastBody,
        response: dialect.routes.response({ type: 'object', required: ['transaction_hash'], properties: { transaction_hash: { type: 'string' } } }),
      },
    },
    async (request) => dialect.shapes.broadcast(await broadcastTransaction(deps, request.body.tx)),
  );
};
