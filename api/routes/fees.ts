/**
 * GET /v1/fee-estimates: Esplora's map of confirmation target (blocks) → fee rate (sat/vB) for
 * targets 1–25, 144, 504 and 1008, from the node's `estimatesmartfee` in the mode asked for
 * (`economical`, the default, or `conservative`), all in one JSON-RPC batch with
 * `getmempoolinfo`. A rate is never below the mempool's minimum fee (a lower one would not be
 * relayed); a target the node has no estimate for gets the estimate of the nearest shorter
 * target that has one, else the mempool's minimum fee. Answers are held for a few seconds.
 * @module
 */
import { ServiceError } from '../../src/errors.js';
import type { ResolvedApiDeps } from '../deps.js';
import type { RouteModule } from '../dialect.js';

export const FEE_TARGETS = [...Array.from({ length: 25 }, (_, i) => i + 1), 144, 504, 1008] as const;
const HOLD_MS = 5_000;
type Mode = 'economical' | 'conservative';

/** BTC/kvB → sat/vB (three decimals: Core's estimates are whole sat/kvB). */
const satPerVb = (btcPerKvb: number) => Math.round(btcPerKvb * 1e8) / 1e3;

/**
 * The map from Core's answers: `estimates[i]` is estimatesmartfee's result for FEE_TARGETS[i]
 * (feerate in BTC/kvB, or errors), `minFee` getmempoolinfo's mempoolminfee (BTC/kvB).
 */
export function feeEstimates(estimates: readonly ({ feerate?: number } | Error | undefined)[], minFeeBtcPerKvb: number): Record<string, number> {
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

async function readEstimates(deps: ResolvedApiDeps, mode: Mode): Promise<Record<string, number>> {
  const batch = deps.node?.batch;
  if (!batch) throw new ServiceError('ERR_NODE_UNAVAILABLE', { message: 'no node is configured to estimate fees' });
  let answers: unknown[];
  try {
    answers = await batch.call(deps.node, [...FEE_TARGETS.map((t) => ({ method: 'estimatesmartfee', params: [t, mode] })), { method: 'getmempoolinfo', params: [] }]);
  } catch (err) {
    throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: err });
  }
  const info = answers[FEE_TARGETS.length];
  if (!info || info instanceof Error) throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: info });
  return feeEstimates(answers.slice(0, FEE_TARGETS.length) as ({ feerate?: number } | Error)[], (info as { mempoolminfee: number }).mempoolminfee);
}

export const feeRoutes: RouteModule = (app, deps) => {
  const held = new Map<Mode, { at: number; value: Promise<Record<string, number>> }>();
  app.get<{ Querystring: { mode: Mode } }>(
    '/fee-estimates',
    {
      schema: {
        summary: 'Fee rates (sat/vB) to confirm within 1–25, 144, 504 and 1008 blocks',
        description: "From the node's estimatesmartfee; never below the mempool's minimum fee; a target without an estimate takes the nearest shorter one's, else the minimum fee.",
        tags: ['fees'],
        querystring: { type: 'object', additionalProperties: false, properties: { mode: { type: 'string', enum: ['economical', 'conservative'], default: 'economical' } } },
        response: { 200: { type: 'object', additionalProperties: { type: 'number' }, description: '{"<blocks>": sat/vB}' } },
      },
    },
    async (request) => {
      const mode = request.query.mode;
      const h = held.get(mode);
      if (h && Date.now() - h.at < HOLD_MS) return h.value;
      const value = readEstimates(deps, mode);
      held.set(mode, { at: Date.now(), value });
      value.catch(() => held.delete(mode));
      return value;
    },
  );
};
