/**
 * What stamping asks of bitcoind (src/rpc's BitcoindClient satisfies `StampNode`): broadcast,
 * fee estimate, relay policy. `loadNodePolicy` reads the node's version (Core ≥ 30 relays several
 * OP_RETURN outputs per transaction; older nodes one) and its relay and incremental fees;
 * `estimateFeeRate` falls back to the configured rate when Core has no estimate (a fresh regtest
 * node answers "Insufficient data or no feerate found"). `classifyBroadcast` turns Core's answers
 * into the few outcomes the stamper acts on.
 * @module
 */
import { isRetryable } from '../src/errors.js';
import { btcPerKvBToSatPerKvB } from './fee.js';

/** The bitcoind calls stamping uses. */
export interface StampNode {
  sendRawTransaction(hex: string): Promise<string>;
  estimateSmartFee(confTarget: number): Promise<{ feerate?: number; errors?: string[] }>;
  getNetworkInfo(): Promise<{ version: number; relayfee: number; incrementalfee: number }>;
}

/** Core 30.0: several OP_RETURN outputs per transaction, 100 kB of them in all (-datacarriersize). */
const MULTI_OP_RETURN_VERSION = 300000;

export type NodePolicy = {
  version: number;
  /** Stamps per transaction the node relays: STAMP_MAX_PER_TX on Core ≥ 30, else 1. */
  perTx: number;
  relayPerKvB: bigint;
  incrementalPerKvB: bigint;
};

export async function loadNodePolicy(node: StampNode, maxPerTx: number): Promise<NodePolicy> {
  const info = await node.getNetworkInfo();
  return {
    version: info.version,
    perTx: info.version >= MULTI_OP_RETURN_VERSION ? maxPerTx : 1,
    relayPerKvB: btcPerKvBToSatPerKvB(info.relayfee),
    incrementalPerKvB: btcPerKvBToSatPerKvB(info.incrementalfee),
  };
}

/** The fee rate to pay now (sat/kvB): the estimate, else the fallback; never under the relay fee nor over the cap. */
export async function estimateFeeRate(
  node: StampNode,
  opts: { confTarget: number; fallbackPerKvB: bigint; maxPerKvB: bigint; relayPerKvB: bigint },
): Promise<{ ratePerKvB: bigint; source: 'estimate' | 'fallback' }> {
  let rate = opts.fallbackPerKvB;
  let source: 'estimate' | 'fallback' = 'fallback';
  try {
    const est = await node.estimateSmartFee(opts.confTarget);
    if (typeof est.feerate === 'number' && est.feerate > 0) {
      rate = btcPerKvBToSatPerKvB(est.feerate);
      source = 'estimate';
    }
  } catch (err) {
    if (isRetryable(err)) throw err;
    // An RPC error here (e.g. a node without fee estimation) means: use the fallback.
  }
  if (rate < opts.relayPerKvB) rate = opts.relayPerKvB;
  if (rate > opts.maxPerKvB) rate = opts.maxPerKvB;
  return { ratePerKvB: rate, source };
}

export type BroadcastOutcome =
  /** In the mempool now (or already was). */
  | { kind: 'accepted' }
  /** Its outputs are in the UTXO set: it is mined. */
  | { kind: 'in-chain' }
  /** An input is unknown or spent: a parent not yet accepted, or a conflicting version won. */
  | { kind: 'missing-inputs'; message: string }
  /** The node refused it (policy, an insufficient replacement fee, a conflict in the mempool). */
  | { kind: 'rejected'; message: string }
  /** The node could not be asked; try again later. */
  | { kind: 'unavailable'; message: string };

/** Sends `raw` and classifies Core's answer (RpcError codes -25, -26, -27; RetryableError). */
export async function broadcastRaw(node: StampNode, raw: Uint8Array): Promise<BroadcastOutcome> {
  try {
    await node.sendRawTransaction(Buffer.from(raw).toString('hex'));
    return { kind: 'accepted' };
  } catch (err) {
    if (isRetryable(err)) return { kind: 'unavailable', message: (err as Error).message };
    const code = (err as { code?: unknown }).code;
    const message = err instanceof Error ? err.message : String(err);
    if (code === -27) return { kind: 'in-chain' };
    if (/missingorspent|missing-inputs|txn-already-known/.test(message)) return { kind: 'missing-inputs', message };
    if (typeof code === 'number') return { kind: 'rejected', message };
    return { kind: 'unavailable', message };
  }
}
