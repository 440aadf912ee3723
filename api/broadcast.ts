/**
 * Broadcasting a signed transaction (POST /transactions) and the mapping of bitcoind's
 * sendrawtransaction failures to API errors whose `retry` is true only when sending the same
 * bytes again can succeed (Bitcoin Core 30's codes and reasons; the tests trigger each one on a
 * real bitcoind).
 * @module
 */
import { unspentAt } from '../src/db/tx-reads.js';
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { decodeTx } from '../src/bitcoin/tx.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { getMempoolOutputs, getTxsByTxid, txKnown } from './queries/chain.js';
import { sql } from 'kysely';
import { ServiceError, type ErrorCode } from '../src/errors.js';
import type { NodeClient, NodeTip } from './deps.js';

/** Core's RPC error codes met on sendrawtransaction (src/rpc/protocol.h). */
const RPC = {
  MISC_ERROR: -1,
  DESERIALIZATION_ERROR: -22,
  VERIFY_ERROR: -25,
  VERIFY_REJECTED: -26,
  VERIFY_ALREADY_IN_CHAIN: -27,
  IN_WARMUP: -28,
} as const;

/** What a node error means for the client: an ServiceError, or "already confirmed" (success). */
export type BroadcastOutcome = { kind: 'error'; error: ServiceError } | { kind: 'already_confirmed' } | { kind: 'inputs_missing_or_spent' };

const TEMPORARY_REJECTIONS: [RegExp, ErrorCode][] = [
  [/^(mempool min fee not met|mempool full)/, 'ERR_TX_MEMPOOL_LIMIT'],
  [/^too-long-mempool-chain/, 'ERR_TX_MEMPOOL_LIMIT'],
  [/^non-(BIP68-)?final/, 'ERR_TX_NOT_FINAL'],
];

const CONFLICTS: RegExp[] = [
  /^txn-mempool-conflict/,
  /^insufficient fee/,
  /^replacement-adds-unconfirmed/,
  /^too many potential replacements/,
  /^txn-same-nonwitness-data-in-mempool/,
  /^bip125-replacement-disallowed/,
];

/**
 * Classifies a node error of sendrawtransaction by Core's code and message. Pure; the
 * "missing or spent" case needs the index to tell which and is returned as such.
 */
export function classifyBroadcastError(code: number, message: string): BroadcastOutcome {
  const err = (c: ErrorCode): BroadcastOutcome => ({ kind: 'error', error: new ServiceError(c, { errorCause: message }) });
  switch (code) {
    case RPC.DESERIALIZATION_ERROR:
      return err('ERR_TX_DECODE');
    case RPC.VERIFY_ALREADY_IN_CHAIN:
      return { kind: 'already_confirmed' };
    case RPC.IN_WARMUP:
      return err('ERR_NODE_UNAVAILABLE');
    case RPC.VERIFY_ERROR:
      if (/inputs-missingorspent|Missing inputs/i.test(message)) return { kind: 'inputs_missing_or_spent' };
      if (/^Fee exceeds maximum/.test(message)) return err('ERR_TX_FEE_TOO_HIGH');
      return err('ERR_TX_REJECTED');
    case RPC.VERIFY_REJECTED:
      for (const [re, c] of TEMPORARY_REJECTIONS) if (re.test(message)) return err(c);
      if (CONFLICTS.some((re) => re.test(message))) return err('ERR_TX_CONFLICT');
      if (/inputs-missingorspent|Missing inputs/i.test(message)) return { kind: 'inputs_missing_or_spent' };
      return err('ERR_TX_REJECTED');
    default:
      return err('ERR_TX_REJECTED');
  }
}

function rpcCode(err: unknown): number | undefined {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'number' ? c : undefined;
}

/** What the broadcast needs beside the node: the index, and the node's tip as last polled. */
type BroadcastDeps = { db: Kysely<Database>; node?: NodeClient | undefined; nodeTip?: (() => NodeTip | undefined) | undefined };

/** Transactions this API process is sending to the node right now (display hex), per index. */
const inFlight = new WeakMap<Kysely<Database>, Map<string, number>>();

function flying(db: Kysely<Database>): Map<string, number> {
  let m = inFlight.get(db);
  if (!m) inFlight.set(db, (m = new Map()));
  return m;
}

/**
 * Why a parent neither the node nor the index holds can still appear, or undefined when nothing
 * says it will: this process is broadcasting it at this moment (a client sending parent and child
 * together), a reorg took it out of the chain and the index has not yet seen it come back or be
 * replaced (reorged_txs), or the node is still in its initial block download (its coins are
 * incomplete). A parent sent through another API process at the same moment is not seen.
 */
async function parentsCanAppear(deps: BroadcastDeps, parents: readonly Uint8Array[]): Promise<string | undefined> {
  const f = flying(deps.db);
  const sending = parents.find((p) => f.has(hashToHex(p)));
  if (sending) return `its parent ${hashToHex(sending)} is being broadcast`;
  const tip = deps.nodeTip?.();
  if (tip && 'initialBlockDownload' in tip && tip.initialBlockDownload) return 'the node is still in its initial block download';
  const r = await sql<{
    txid: Buffer;
  }>`SELECT DISTINCT txid FROM reorged_txs WHERE txid = ANY(${parents.map((p) => Buffer.from(p))}::bytea[])`.execute(deps.db);
  if (r.rows[0]) return `its parent ${hashToHex(r.rows[0].txid)} left the chain in a reorg and may come back`;
  return undefined;
}

/**
 * The first of `inputs` (outputs the index holds unspent by any block) that the node no longer
 * has unspent (`gettxout`, mempool included): spent in a block the index has not indexed yet,
 * since the index follows the node. Undefined when the node has them all, or cannot be asked.
 */
async function spentAheadOfIndex<I extends { prevTxid: Uint8Array; vout: number }>(
  deps: BroadcastDeps,
  inputs: readonly I[],
): Promise<I | undefined> {
  const node = deps.node;
  if (inputs.length === 0 || !node?.batch) return undefined;
  const calls = inputs.map((i) => ({ method: 'gettxout', params: [hashToHex(i.prevTxid), i.vout, true] }));
  const outs = await node.batch.call(node, calls).catch(() => undefined);
  return outs && inputs.find((_, n) => outs[n] === null);
}

/**
 * Spent or missing? An input whose transaction is confirmed (or in the mempool) but whose
 * output is no longer unspent is spent: no retry can help. So is a confirmed output the index
 * still holds unspent but the node does not (spentAheadOfIndex: the index is a block behind).
 * Otherwise the parent is unknown to both the node and the index: resending can succeed only if
 * it can still appear (parentsCanAppear); else the transaction spends coins that do not exist,
 * and no retry helps.
 */
async function missingOrSpent(
  deps: BroadcastDeps,
  inputs: readonly { prevTxid: Uint8Array; vout: number }[],
  nodeMessage: string,
): Promise<ServiceError> {
  const { db } = deps;
  const txids = inputs.map((i) => Buffer.from(i.prevTxid));
  const [confirmed, mempoolOuts] = await Promise.all([
    getTxsByTxid(db, txids),
    getMempoolOutputs(
      db,
      inputs.map((i) => ({ txid: Buffer.from(i.prevTxid), vout: i.vout })),
    ),
  ]);
  const unspent = await sql<{ txid: Buffer; vout: number }>`
    SELECT u.txid, u.vout FROM unnest(${txids}::bytea[], ${inputs.map((i) => i.vout)}::int4[]) AS q(txid, vout)
    JOIN LATERAL (${unspentAt(sql.ref('q.txid'), sql.ref('q.vout'))}) u ON true`.execute(db);
  const unspentSet = new Set(unspent.rows.map((r) => `${r.txid.toString('hex')}:${r.vout}`));
  for (const i of inputs) {
    const hex = Buffer.from(i.prevTxid).toString('hex');
    const k = `${hex}:${i.vout}`;
    const parentKnown = confirmed.has(hex) || [...mempoolOuts.keys()].some((m) => m.startsWith(`${hex}:`));
    if (parentKnown && !unspentSet.has(k) && !mempoolOuts.has(k)) {
      return new ServiceError('ERR_TX_CONFLICT', {
        message: `input ${hashToHex(i.prevTxid)}:${i.vout} is already spent`,
        errorCause: nodeMessage,
      });
    }
  }
  const lagging = await spentAheadOfIndex(
    deps,
    inputs.filter((i) => unspentSet.has(`${Buffer.from(i.prevTxid).toString('hex')}:${i.vout}`)),
  );
  if (lagging) {
    return new ServiceError('ERR_TX_CONFLICT', {
      message: `input ${hashToHex(lagging.prevTxid)}:${lagging.vout} is already spent in a block the index has not indexed yet`,
      errorCause: nodeMessage,
    });
  }
  const why = await parentsCanAppear(
    deps,
    inputs.map((i) => i.prevTxid),
  );
  if (why) return new ServiceError('ERR_TX_INPUTS_MISSING', { message: `transaction inputs are unknown; ${why}`, errorCause: nodeMessage });
  return new ServiceError('ERR_TX_INPUTS_UNKNOWN', { errorCause: nodeMessage });
}

/**
 * Sends a raw transaction (hex) through the node and returns its txid, or throws the ServiceError
 * the client should see. A transaction already confirmed counts as sent (idempotent resubmit).
 */
export async function broadcastTransaction(deps: BroadcastDeps, hex: string): Promise<string> {
  let tx;
  try {
    tx = decodeTx(Buffer.from(hex, 'hex'));
  } catch (err) {
    throw new ServiceError('ERR_TX_DECODE', { errorCause: (err as Error).message });
  }
  const txid = hashToHex(tx.txid);
  if (!deps.node) throw new ServiceError('ERR_NODE_UNAVAILABLE', { message: 'no bitcoin node configured' });
  const f = flying(deps.db);
  f.set(txid, (f.get(txid) ?? 0) + 1);
  try {
    const sent = await deps.node.sendRawTransaction(hex.toLowerCase());
    return sent;
  } catch (err) {
    const code = rpcCode(err);
    if (code === undefined) throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: err });
    const message = err instanceof Error ? err.message : String(err);
    const outcome = classifyBroadcastError(code, message);
    if (outcome.kind === 'already_confirmed') return txid;
    if (outcome.kind === 'error') throw outcome.error;
    if ((await txKnown(deps.db, Buffer.from(tx.txid))) === 'confirmed') return txid;
    throw await missingOrSpent(deps, tx.inputs, message);
  } finally {
    const n = f.get(txid)! - 1;
    if (n === 0) f.delete(txid);
    else f.set(txid, n);
  }
}
