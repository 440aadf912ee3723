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
import type { ResolvedApiDeps, RouteModule } from '../deps.js';

/** A transaction's answer and its schema (the spec's Transaction here; /v1's in api/routes/transaction-reads.ts). */
export type TransactionAnswer = { schema: Record<string, unknown>; load(deps: ResolvedApiDeps, txid: Buffer): Promise<object | undefined> };

const specTransaction: TransactionAnswer = { schema: transactionSchema, load: (deps, txid) => loadTransactionJson(deps.db, deps.network, txid) };

/** The transaction routes answering a transaction with `answer`. */
export const transactionRoutesWith = (answer: TransactionAnswer): RouteModule => (app, deps) => {
  app.get<{ Params: { hash: string } }>(
    '/transactions/:hash',
    { schema: { summary: 'A confirmed or mempool transaction', tags: ['transactions'], params: hashParams, response: { 200: answer.schema } } },
    async (request) => {
      const tx = await answer.load(deps, Buffer.from(hexToHash(request.params.hash)));
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

export const transactionRoutes = transactionRoutesWith(specTransaction);
