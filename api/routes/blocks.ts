/**
 * /v1 block routes beside GET /blocks/{hash} (routes/chain.ts): a block by height, the recent
 * blocks, and a block's transactions paged in block order. Each answer is read in one snapshot of
 * the index, whose tip it carries in the tip headers (api/tip.ts).
 * @module
 */
import { findBlockHeader, listBlockTxs, listRecentBlocks } from '../queries/blocks.js';
import { listBlockTxids } from '../queries/chain.js';
import { hashToHex, hexToHash } from '../../src/bitcoin/hash.js';
import { ServiceError } from '../../src/errors.js';
import { blockSummary, blockSummarySchema, blockViewSchema } from '../block-view.js';
import { confirmedViews } from '../transaction-view.js';
import { hashParams } from '../schemas.js';
import { txViewSchema, withRawExtras } from '../transaction-extras.js';
import type { RouteModule } from '../dialect.js';
import type { BlockAnswer } from '../dialect.js';
import type { ResolvedApiDeps } from '../deps.js';
import { readAtTip, setTipHeaders, withTipHeaders } from '../tip.js';

const heightParams = {
  type: 'object',
  required: ['height'],
  properties: { height: { type: 'integer', minimum: 0, maximum: 2147483647, description: 'block height on the main chain' } },
} as const;

/** Block-transaction cursors: the position of the next transaction in its block. */
function encodeTxCursor(pos: number): string {
  return Buffer.from(`b.${pos}`, 'utf8').toString('base64url');
}

function decodeTxCursor(raw: string): number {
  const m = /^b\.(\d{1,7})$/.exec(/^[A-Za-z0-9_-]{1,40}$/.test(raw) ? Buffer.from(raw, 'base64url').toString('utf8') : '');
  if (!m) throw new ServiceError('ERR_INVALID_CURSOR');
  return Number(m[1]);
}

/** /v1's block: the spec's with the header's fields (GET /blocks/{hash}, routes/chain.ts). */
export const v1BlockAnswer: BlockAnswer = {
  schema: blockViewSchema,
  load: (deps, hash) => loadBlockView(deps, { hash }),
};

/** The /v1 block view of a main-chain block by hash or height, and the tip it was read at. */
async function loadBlockView(deps: ResolvedApiDeps, by: { hash: Buffer } | { height: number }) {
  const { value, tip } = await readAtTip(deps.readDb, async (trx) => {
    const row = await findBlockHeader(trx, by);
    return row && { ...blockSummary(row), transaction_list: (await listBlockTxids(trx, row.height)).map((t) => hashToHex(t)) };
  });
  return value && { answer: value, tip };
}

export const blockRoutes: RouteModule = (app, deps) => {
  app.get<{ Params: { height: number } }>(
    '/blocks/height/:height',
    {
      schema: {
        summary: 'The main-chain block at a height',
        tags: ['chain'],
        params: heightParams,
        response: { 200: withTipHeaders(blockViewSchema) },
      },
    },
    async (request, reply) => {
      const r = await loadBlockView(deps, { height: request.params.height });
      if (!r)
        throw new ServiceError('ERR_BLOCK_NOT_FOUND', { message: `no block at height ${request.params.height} on the indexed main chain` });
      setTipHeaders(reply, r.tip);
      return r.answer;
    },
  );

  app.get<{ Querystring: { limit: number; start_height?: number } }>(
    '/blocks',
    {
      schema: {
        summary: 'The most recent blocks, newest first',
        description: 'From `start_height` (default: the indexed tip) down, `limit` blocks.',
        tags: ['chain'],
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
            start_height: { type: 'integer', minimum: 0, maximum: 2147483647, description: 'height of the first (newest) block listed' },
          },
        },
        response: { 200: withTipHeaders({ type: 'array', items: blockSummarySchema }) },
      },
    },
    async (request, reply) => {
      const { value, tip } = await readAtTip(deps.readDb, (trx) =>
        listRecentBlocks(trx, request.query.start_height ?? null, request.query.limit),
      );
      setTipHeaders(reply, tip);
      return value.blocks.map(blockSummary);
    },
  );

  app.get<{ Params: { hash: string }; Querystring: { limit: number; cursor?: string } }>(
    '/blocks/:hash/txs',
    {
      schema: {
        summary: "A block's transactions in block order, paged",
        description:
          'Transaction views (fee, size, vsize, weight as for GET /transactions/{hash}); the next page\'s URL is in the `Link: <…>; rel="next"` header.',
        tags: ['chain'],
        params: hashParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: 100, default: 25 },
            cursor: { type: 'string', maxLength: 40, description: "opaque cursor from the previous page's Link header" },
          },
        },
        response: { 200: withTipHeaders({ type: 'array', items: txViewSchema, headers: { Link: { type: 'string' } } }) },
      },
    },
    async (request, reply) => {
      const from = request.query.cursor === undefined ? 0 : decodeTxCursor(request.query.cursor);
      const limit = request.query.limit;
      const { value: read, tip } = await readAtTip(deps.readDb, async (trx) => {
        const row = await findBlockHeader(trx, { hash: Buffer.from(hexToHash(request.params.hash)) });
        if (!row) return undefined;
        const txs = await listBlockTxs(trx, row.height, from, limit + 1);
        const views = await confirmedViews(
          trx,
          deps.network,
          txs.slice(0, limit),
          { hash: row.hash, height: row.height, time: row.time },
          deps.node,
        );
        return { row, views, more: txs.length > limit };
      });
      if (!read) throw new ServiceError('ERR_BLOCK_NOT_FOUND');
      setTipHeaders(reply, tip);
      // (sizes of views built without the node's transactions: from the node's block, outside the snapshot)
      const out = await withRawExtras(deps, read.views, { kind: 'block', hash: hashToHex(read.row.hash) });
      if (read.more) {
        const path = request.url.split('?')[0]!;
        reply.header('Link', `<${path}?limit=${limit}&cursor=${encodeTxCursor(from + limit)}>; rel="next"`);
      }
      return out;
    },
  );
};
