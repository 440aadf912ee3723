/**
 * GET /v1/fee-estimates: Esplora's map of confirmation target (blocks) → fee rate (sat/vB) for
 * targets 1–25, 144, 504 and 1008, from the node's `estimatesmartfee` in the mode asked for
 * (`economical`, the default, or `conservative`), all in one JSON-RPC batch with
 * `getmempoolinfo`. A rate is never below the mempool's minimum fee (a lower one would not be
 * relayed); a target the node has no estimate for gets the estimate of the nearest shorter
 * target that has one, else the mempool's minimum fee. Answers are held for a few seconds. The
 * tip headers (api/tip.ts) carry the index's tip read together with the node's answer: the state
 * of the index the estimates were asked against (the node's own tip is ahead by the index's lag).
 * @module
 */
import { ServiceError } from '../../src/errors.js';
import type { ResolvedApiDeps } from '../deps.js';
import type { DialectEdge, RouteModule } from '../dialect.js';
import { getIndexTip, type Tip } from '../queries/chain.js';
import { setTipHeaders, tipHeaders, TIP_HEIGHT_HEADER } from '../tip.js';

export const FEE_TARGETS = [...Array.from({ length: 25 }, (_, i) => i + 1), 144, 504, 1008] as const;
const HOLD_MS = 5_000;
type Mode = 'economical' | 'conservative';

/** BTC/kvB → sat/vB (three decimals: Core's estimates are whole sat/kvB). */
const satPerVb = (btcPerKvb: number) => Math.round(btcPerKvb * 1e8) / 1e3;

/**
 * The map from Core's answers: `estimates[i]` is estimatesmartfee's result for FEE_TARGETS[i]
 * (feerate in BTC/kvB, or errors), `minFee` getmempoolinfo's mempoolminfee (BTC/kvB).
 */
export function feeEstimates(
  estimates: readonly ({ feerate?: number } | Error | undefined)[],
  minFeeBtcPerKvb: number,
): Record<string, number> {
  const floor = satPerVb(minFeeBtcPerKvb);
  const out: Record<string, number> = {};
  let previous: number | undefined;
  FEE_TARGETS.forEach((target, i) => {
    const e = estimates[i];
    const rate = e && !(e instanceof Error) && typeof e.feerate === 'number' ? satPerVb(e.feerate) : previous;
    previous = rate;
    out[String(target)] = Math.max(rate ?? floor, floor);
  });
  return out;
}

type Estimates = { value: Record<string, number>; tip: Tip };

async function readEstimates(deps: ResolvedApiDeps, mode: Mode): Promise<Estimates> {
  const batch = deps.node?.batch;
  if (!batch) throw new ServiceError('ERR_NODE_UNAVAILABLE', { message: 'no node is configured to estimate fees' });
  let answers: unknown[];
  const tip = getIndexTip(deps.readDb);
  try {
    answers = await batch.call(deps.node, [
      ...FEE_TARGETS.map((t) => ({ method: 'estimatesmartfee', params: [t, mode] })),
      { method: 'getmempoolinfo', params: [] },
    ]);
  } catch (err) {
    tip.catch(() => undefined);
    throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: err });
  }
  const info = answers[FEE_TARGETS.length];
  if (!info || info instanceof Error) throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: info });
  return {
    value: feeEstimates(
      answers.slice(0, FEE_TARGETS.length) as ({ feerate?: number } | Error)[],
      (info as { mempoolminfee: number }).mempoolminfee,
    ),
    tip: await tip,
  };
}

export const feeRoutes: RouteModule<DialectEdge> = (app, deps) => {
  const held = new Map<Mode, { at: number; value: Promise<Estimates> }>();
  app.get<{ Querystring: { mode: Mode } }>(
    '/fee-estimates',
    {
      schema: {
        summary: 'Fee rates (sat/vB) to confirm within 1–25, 144, 504 and 1008 blocks',
        description:
          "From the node's estimatesmartfee; never below the mempool's minimum fee; a target without an estimate takes the nearest shorter one's, else the minimum fee. Held for a few seconds. The tip headers carry the index's tip read together with the node's answer (the node's own tip may be ahead by the index's lag).",
        tags: ['fees'],
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { mode: { type: 'string', enum: ['economical', 'conservative'], default: 'economical' } },
        },
        response: {
          200: {
            type: 'object',
            additionalProperties: { type: 'number' },
            description: '{"<blocks>": sat/vB}',
            headers: {
              ...tipHeaders,
              [TIP_HEIGHT_HEADER]: {
                type: 'integer',
                description: "height of the index's tip read together with the node's estimates (-1 while nothing is indexed)",
              },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const mode = request.query.mode;
      let h = held.get(mode);
      if (!h || Date.now() - h.at >= HOLD_MS) {
        h = { at: Date.now(), value: readEstimates(deps, mode) };
        held.set(mode, h);
        h.value.catch(() => held.delete(mode));
      }
      const r = await h.value;
      setTipHeaders(reply, r.tip);
      return r.value;
    },
  );
};
