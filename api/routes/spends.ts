/**
 * GET /transactions/{hash}/outspends and /outspend/{vout} (/v1, Esplora's shapes): for each
 * output, whether a block or a mempool transaction spends it, which transaction and input, and
 * that transaction's block. From the index (api/queries/spends.ts), one statement per answer,
 * its tip in the tip headers.
 * @module
 */
import { hashToHex, hexToHash } from '../../src/bitcoin/hash.js';
import { getOutspends, type Spend } from '../queries/spends.js';
import { ServiceError } from '../../src/errors.js';
import type { RouteModule } from '../dialect.js';
import { hashParams } from '../schemas.js';
import { setTipHeaders, tipHeaders } from '../tip.js';

const outspendSchema = {
  type: 'object',
  required: ['spent'],
  properties: {
    spent: { type: 'boolean' },
    txid: { type: 'string', description: 'the spending transaction (display hex)' },
    vin: { type: 'integer', description: 'its input that spends the output' },
    status: {
      type: 'object',
      required: ['confirmed'],
      properties: {
        confirmed: { type: 'boolean' },
        block_height: { type: 'integer' },
        block_hash: { type: 'string' },
        block_time: { type: 'integer', description: "the block header's time, Unix seconds" },
      },
    },
  },
} as const;

type Outspend =
  | { spent: false }
  | {
      spent: true;
      txid: string;
      vin: number;
      status: { confirmed: boolean; block_height?: number; block_hash?: string; block_time?: number };
    };

function view(s: Spend | null): Outspend {
  if (s === null) return { spent: false };
  const status = s.block
    ? { confirmed: true, block_height: s.block.height, block_hash: hashToHex(s.block.hash), block_time: s.block.time }
    : { confirmed: false };
  return { spent: true, txid: hashToHex(s.txid), vin: s.vin, status };
}

export const spendRoutes: RouteModule = (app, deps) => {
  const load = async (hash: string) => {
    const r = await getOutspends(deps.readDb, Buffer.from(hexToHash(hash)));
    if (!r) throw new ServiceError('ERR_TX_NOT_FOUND');
    return r;
  };

  app.get<{ Params: { hash: string } }>(
    '/transactions/:hash/outspends',
    {
      schema: {
        summary: 'Spend status of every output of a transaction (Esplora shape)',
        description:
          'One entry per output, in order: `{spent: false}`, or the spending transaction, its input and its block (`status.confirmed` false while it is in the mempool).',
        tags: ['transactions'],
        params: hashParams,
        response: { 200: { type: 'array', items: outspendSchema, headers: tipHeaders } },
      },
    },
    async (request, reply) => {
      const r = await load(request.params.hash);
      setTipHeaders(reply, r.tip);
      return r.spends.map(view);
    },
  );

  app.get<{ Params: { hash: string; vout: number } }>(
    '/transactions/:hash/outspend/:vout',
    {
      schema: {
        summary: 'Spend status of one output (Esplora shape)',
        tags: ['transactions'],
        params: {
          type: 'object',
          required: ['hash', 'vout'],
          properties: { ...hashParams.properties, vout: { type: 'integer', minimum: 0, maximum: 1000000 } },
        },
        response: { 200: { ...outspendSchema, headers: tipHeaders } },
      },
    },
    async (request, reply) => {
      const r = await load(request.params.hash);
      const vout = request.params.vout;
      if (vout >= r.spends.length)
        throw new ServiceError('ERR_OUTPUT_NOT_FOUND', {
          message: `the transaction has ${r.spends.length} outputs; there is no output ${vout}`,
        });
      setTipHeaders(reply, r.tip);
      return view(r.spends[vout]!);
    },
  );
};
