/**
 * GET /transactions/{hash} (confirmed or mempool, service-api.md "Transaction") and
 * POST /transactions {"tx": "<hex>"} → {"transaction_hash"} (broadcast; `write` scope).
 * @module
 */
import { hexToHash } from '../../src/bitcoin/hash.js';
import { ServiceError } from '../../src/errors.js';
import { hashParams, transactionSchema } from '../schemas.js';
import { loadTransactionJson } from '../transaction-view.js';
import { broadcastTransaction } from '../broadcast.js';
import type { RouteModule } from '../deps.js';

export const transactionRoutes: RouteModule = (app, deps) => {
  app.get<{ Params: { hash: string } }>(
    '/transactions/:hash',
    { schema: { summary: 'A confirmed or mempool transaction', tags: ['transactions'], params: hashParams, response: { 200: transactionSchema } } },
    async (request) => {
      const tx = await loadTransactionJson(deps.db, deps.network, Buffer.from(hexToHash(request.params.hash)));
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
        description: 'Errors carry `retry: true` only when sending the same transaction again can succeed (missing parent, not final yet, mempool limits, node unreachable).',
        tags: ['transactions'],
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['tx'],
          properties: { tx: { type: 'string', minLength: 2, pattern: '^([0-9a-fA-F]{2})+$', description: 'the signed transaction, hex' } },
        },
        response: { 200: { type: 'object', required: ['transaction_hash'], properties: { transaction_hash: { type: 'string' } } } },
      },
    },
    async (request) => ({ transaction_hash: await broadcastTransaction(deps, request.body.tx) }),
  );
};
