/**
 * GET /v1/mempool (Esplora's shape: count, vsize, total_fee, fee_histogram) and
 * GET /v1/mempool/recent (the transactions seen last: txid, fee, vsize, value), from the indexed
 * mempool. The histogram is electrs's: transactions by fee rate, highest first, cut into bins of
 * more than 50,000 vB, each `[fee rate of its last transaction (sat/vB), its vsize]`. Each
 * answer carries the indexed tip its snapshot of the mempool was read at (api/tip.ts).
 * @module
 */
import { listMempoolFees, listRecentMempool } from '../queries/mempool.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { decodeTx } from '../../src/bitcoin/tx.js';
import type { DialectEdge, RouteModule } from '../dialect.js';
import { readAtTip, setTipHeaders, tipHeaders } from '../tip.js';

const BIN_VSIZE = 50_000;

/** electrs's make_fee_histogram over (fee, vsize) sorted by fee rate, highest first. */
function feeHistogram(fees: readonly { fee: bigint | null; vsize: number }[]): [number, number][] {
  const bins: [number, number][] = [];
  let size = 0;
  let last = 0;
  for (const f of fees) {
    last = f.fee === null ? 0 : Number(f.fee) / f.vsize;
    size += f.vsize;
    if (size > BIN_VSIZE) {
      bins.push([last, size]);
      size = 0;
    }
  }
  if (size > 0) bins.push([last, size]);
  return bins;
}

export const mempoolRoutes: RouteModule<DialectEdge> = (app, deps) => {
  app.get(
    '/mempool',
    {
      schema: {
        summary: 'The mempool: transaction count, total vsize and fee, fee histogram',
        tags: ['mempool'],
        response: {
          200: {
            type: 'object',
            required: ['count', 'vsize', 'total_fee', 'fee_histogram'],
            properties: {
              count: { type: 'integer' },
              vsize: { type: 'integer', description: "sum of the transactions' vsize, vB" },
              total_fee: { type: 'integer', description: 'sat' },
              fee_histogram: {
                type: 'array',
                items: { type: 'array', items: { type: 'number' } },
                description: '[fee rate sat/vB, vsize vB] bins, highest rate first',
              },
            },
            headers: tipHeaders,
          },
        },
      },
    },
    async (_request, reply) => {
      const { value: fees, tip } = await readAtTip(deps.readDb, (trx) => listMempoolFees(trx));
      setTipHeaders(reply, tip);
      let vsize = 0;
      let total = 0n;
      for (const f of fees) {
        vsize += f.vsize;
        total += f.fee ?? 0n;
      }
      return { count: fees.length, vsize, total_fee: Number(total), fee_histogram: feeHistogram(fees) };
    },
  );

  app.get<{ Querystring: { limit: number } }>(
    '/mempool/recent',
    {
      schema: {
        summary: 'The mempool transactions seen last, newest first',
        tags: ['mempool'],
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 } },
        },
        response: {
          200: {
            type: 'array',
            items: {
              type: 'object',
              required: ['txid', 'fee', 'vsize', 'value'],
              properties: {
                txid: { type: 'string' },
                fee: { type: ['integer', 'null'] },
                vsize: { type: 'integer' },
                value: { type: 'integer', description: 'sum of its outputs, sat' },
              },
            },
            headers: tipHeaders,
          },
        },
      },
    },
    async (request, reply) => {
      const { value: recent, tip } = await readAtTip(deps.readDb, (trx) => listRecentMempool(trx, request.query.limit));
      setTipHeaders(reply, tip);
      return recent.map((m) => ({
        txid: hashToHex(m.txid),
        fee: m.fee === null ? null : Number(m.fee),
        vsize: m.vsize,
        value: Number(decodeTx(m.raw).outputs.reduce((s, o) => s + o.value, 0n)),
      }));
    },
  );
};
