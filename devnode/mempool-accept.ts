/**
 * Mempool admission as Core 30's MemPoolAccept does it for one transaction: CheckTransaction,
 * standardness, finality, inputs (missing → `bad-txns-inputs-missingorspent`), coinbase
 * maturity, input standardness, dust (`dust, tx with dust output must be 0-fee`), the 0.1 sat/vB
 * minimum relay fee, chain limits, full-RBF replacement (BIP125 rules 2–6 with Core's messages)
 * and script checks (`mempool-script-verify-flag-failed (…)`). Replaced transactions leave with
 * reason `replaced` before the newcomer enters, so ZMQ shows `R` then `A`.
 * @module
 */
import type { DecodedTx } from '../src/bitcoin/tx.js';
import { outpointKey, prevTxidOf, txidOf, wtxidOf, type Chain, type Coin, isFinalTx } from './chain.js';
import { REGTEST } from './consensus.js';
import type { Mempool, MempoolEntry } from './mempool.js';
import {
  dustOutputs,
  feeForSize,
  feeRatePerKvB,
  formatFeeRate,
  formatMoney,
  inputsStandard,
  POLICY,
  sigOpsCost,
  standardTxReason,
  witnessStandard,
} from './policy.js';
import { verifyTxScriptsDetailed, type Prevout } from './script-verify.js';

/** TxValidationResult, as far as callers care (missing inputs map to RPC -25, the rest to -26). */
export type TxResult = 'consensus' | 'not-standard' | 'missing-inputs' | 'premature' | 'policy' | 'conflict' | 'reconsiderable';

export type TxRejected = { ok: false; result: TxResult; reason: string; debug: string };
export type TxAccepted = {
  ok: true;
  txid: string;
  wtxid: string;
  fee: bigint;
  vsize: number;
  replaced: MempoolEntry[];
};

/** TxValidationState::ToString(): reason, then ", debug" when there is one. */
export function rejectString(r: TxRejected): string {
  return r.debug ? `${r.reason}, ${r.debug}` : r.reason;
}

function reject(result: TxResult, reason: string, debug = ''): TxRejected {
  return { ok: false, result, reason, debug };
}

/** CheckTransaction (context-free consensus rules): null or the reject reason. */
export function checkTransaction(tx: DecodedTx): string | null {
  if (tx.inputs.length === 0) return 'bad-txns-vin-empty';
  if (tx.outputs.length === 0) return 'bad-txns-vout-empty';
  if (tx.baseSize * 4 > REGTEST.maxBlockWeight) return 'bad-txns-oversize';
  let total = 0n;
  for (const o of tx.outputs) {
    if (o.value < 0n) return 'bad-txns-vout-negative';
    if (o.value > REGTEST.maxMoney) return 'bad-txns-vout-toolarge';
    total += o.value;
    if (total > REGTEST.maxMoney) return 'bad-txns-txouttotal-toolarge';
  }
  const seen = new Set<string>();
  for (let i = 0; i < tx.inputs.length; i++) {
    const k = outpointKey(prevTxidOf(tx, i), tx.inputs[i]!.vout);
    if (seen.has(k)) return 'bad-txns-inputs-duplicate';
    seen.add(k);
  }
  if (tx.isCoinbase) {
    const n = tx.inputs[0]!.scriptSig.length;
    if (n < 2 || n > 100) return 'bad-cb-length';
  } else {
    for (const i of tx.inputs) {
      if (i.vout === 0xffffffff && i.prevTxid.every((b) => b === 0)) return 'bad-txns-prevout-null';
    }
  }
  return null;
}

/** What admission needs from the node. */
export type AcceptContext = {
  chain: Chain;
  mempool: Mempool;
  /** Node time in seconds (mock time aware). */
  now: () => number;
  verifyScripts: boolean;
  /** Core 30 is always full-RBF; false restores the BIP125 opt-in rule (`txn-mempool-conflict`). */
  fullRbf: boolean;
  onUnchecked?: (txid: string, inputs: number[]) => void;
};

export type AcceptOptions = {
  /** Re-admission after a reorg: no fee checks (Core's bypass_limits). */
  bypassLimits?: boolean;
  testAccept?: boolean;
  /** Submitted locally and not yet relayed (getmempoolentry `unbroadcast`). */
  unbroadcast?: boolean;
};

/** BIP125: any input sequence ≤ 0xfffffffd, or an in-mempool ancestor signals. */
export function signalsRbf(mempool: Mempool, tx: DecodedTx): boolean {
  if (tx.inputs.some((i) => i.sequence <= 0xfffffffd)) return true;
  for (const a of mempool.ancestorsOfTx(tx)) {
    if (mempool.get(a)!.tx.inputs.some((i) => i.sequence <= 0xfffffffd)) return true;
  }
  return false;
}

/** BIP68 relative lock-times against the next block (CheckSequenceLocksAtTip). */
function sequenceLocksOk(chain: Chain, tx: DecodedTx, coins: Coin[]): boolean {
  if (tx.version < 2) return true;
  const next = chain.height() + 1;
  let minHeight = -1;
  let minTime = -1;
  tx.inputs.forEach((input, i) => {
    const seq = input.sequence;
    if (seq & 0x80000000) return;
    const coinHeight = coins[i]!.height;
    if (seq & 0x00400000) {
      const base = chain.active[Math.max(Math.min(coinHeight, next) - 1, 0)]!.mtp;
      minTime = Math.max(minTime, base + (seq & 0xffff) * 512 - 1);
    } else {
      minHeight = Math.max(minHeight, coinHeight + (seq & 0xffff) - 1);
    }
  });
  return minHeight < next && minTime < chain.tip().mtp;
}

/** AcceptToMemoryPool for a single transaction. */
export function acceptToMempool(ctx: AcceptContext, tx: DecodedTx, opts: AcceptOptions = {}): TxAccepted | TxRejected {
  const { chain, mempool } = ctx;
  const txid = txidOf(tx);
  const wtxid = wtxidOf(tx);

  const bad = checkTransaction(tx);
  if (bad) return reject('consensus', bad);
  if (tx.isCoinbase) return reject('consensus', 'coinbase');
  const nonStandard = standardTxReason(tx);
  if (nonStandard) return reject('not-standard', nonStandard);
  if (tx.baseSize < POLICY.minStandardTxNonWitnessSize) return reject('not-standard', 'tx-size-small');
  const tip = chain.tip();
  if (!isFinalTx(tx, tip.height + 1, tip.mtp)) return reject('premature', 'non-final');
  if (mempool.txidForWtxid(wtxid)) return reject('conflict', 'txn-already-in-mempool');
  if (mempool.has(txid)) return reject('conflict', 'txn-same-nonwitness-data-in-mempool');

  const conflicts = new Set<string>();
  for (let i = 0; i < tx.inputs.length; i++) {
    const spender = mempool.spender(prevTxidOf(tx, i), tx.inputs[i]!.vout);
    if (spender) {
      if (!ctx.fullRbf && !signalsRbf(mempool, mempool.get(spender)!.tx)) return reject('conflict', 'txn-mempool-conflict');
      conflicts.add(spender);
    }
  }

  const mempoolHeight = tip.height + 1;
  const coins: Coin[] = [];
  for (let i = 0; i < tx.inputs.length; i++) {
    const ptxid = prevTxidOf(tx, i);
    const vout = tx.inputs[i]!.vout;
    const coin = mempool.coin(ptxid, vout, mempoolHeight) ?? chain.coin(ptxid, vout);
    if (!coin) {
      for (let v = 0; v < tx.outputs.length; v++) if (chain.coin(txid, v)) return reject('conflict', 'txn-already-known');
      return reject('missing-inputs', 'bad-txns-inputs-missingorspent');
    }
    coins.push(coin);
  }
  if (!sequenceLocksOk(chain, tx, coins)) return reject('premature', 'non-BIP68-final');

  let valueIn = 0n;
  for (const c of coins) {
    if (c.coinbase && mempoolHeight - c.height < REGTEST.coinbaseMaturity) {
      return reject('premature', 'bad-txns-premature-spend-of-coinbase', `tried to spend coinbase at depth ${mempoolHeight - c.height}`);
    }
    valueIn += c.value;
  }
  const valueOut = tx.outputs.reduce((s, o) => s + o.value, 0n);
  if (valueIn < valueOut)
    return reject('consensus', 'bad-txns-in-belowout', `value in (${formatMoney(valueIn)}) < value out (${formatMoney(valueOut)})`);
  const fee = valueIn - valueOut;
  const prevouts: Prevout[] = coins.map((c) => ({ value: c.value, script: c.script }));

  if (!inputsStandard(tx, prevouts)) return reject('not-standard', 'bad-txns-nonstandard-inputs');
  if (!witnessStandard(tx, prevouts)) return reject('not-standard', 'bad-witness-nonstandard');
  const sigops = sigOpsCost(tx, prevouts);
  if (sigops > POLICY.maxStandardTxSigopsCost) return reject('not-standard', 'bad-txns-too-many-sigops', String(sigops));
  if (dustOutputs(tx).length > 0 && fee !== 0n) return reject('not-standard', 'dust', 'tx with dust output must be 0-fee');

  const vsize = tx.vsize;
  if (!opts.bypassLimits) {
    const required = feeForSize(POLICY.minRelayFeePerKvB, vsize);
    if (fee < required) return reject('reconsiderable', 'min relay fee not met', `${fee} < ${required}`);
  }

  const ancestors = mempool.ancestorsOfTx(tx);
  if (ancestors.size + 1 > POLICY.ancestorLimit) {
    return reject('policy', 'too-long-mempool-chain', `too many unconfirmed ancestors [limit: ${POLICY.ancestorLimit}]`);
  }
  for (const a of ancestors) {
    if (conflicts.has(a)) continue;
    if (mempool.descendants(a).size + 2 > POLICY.descendantLimit) {
      return reject('policy', 'too-long-mempool-chain', `too many descendants for tx ${a} [limit: ${POLICY.descendantLimit}]`);
    }
  }

  let allConflicts: string[] = [];
  if (conflicts.size > 0) {
    for (const a of ancestors) {
      if (conflicts.has(a)) return reject('consensus', 'bad-txns-spends-conflicting-tx', `${txid} spends conflicting transaction ${a}`);
    }
    const newRate = feeRatePerKvB(fee, vsize);
    for (const c of conflicts) {
      const e = mempool.get(c)!;
      const oldRate = feeRatePerKvB(e.fee, e.vsize);
      if (newRate <= oldRate) {
        return reject(
          'reconsiderable',
          'insufficient fee',
          `rejecting replacement ${txid}; new feerate ${formatFeeRate(newRate)} <= old feerate ${formatFeeRate(oldRate)}`,
        );
      }
    }
    const all = new Set<string>();
    for (const c of conflicts) {
      all.add(c);
      for (const d of mempool.descendants(c)) all.add(d);
    }
    if (all.size > POLICY.maxReplacementCandidates) {
      return reject(
        'policy',
        'too many potential replacements',
        `rejecting replacement ${txid}; too many potential replacements (${all.size} > ${POLICY.maxReplacementCandidates})\n`,
      );
    }
    const parentsOfConflicts = new Set<string>();
    for (const c of conflicts) {
      const e = mempool.get(c)!;
      for (let i = 0; i < e.tx.inputs.length; i++) parentsOfConflicts.add(prevTxidOf(e.tx, i));
    }
    for (let i = 0; i < tx.inputs.length; i++) {
      const p = prevTxidOf(tx, i);
      if (!parentsOfConflicts.has(p) && mempool.has(p))
        return reject('policy', 'replacement-adds-unconfirmed', `replacement ${txid} adds unconfirmed input, idx ${i}`);
    }
    let originalFees = 0n;
    for (const c of all) originalFees += mempool.get(c)!.fee;
    if (fee < originalFees) {
      return reject(
        'reconsiderable',
        'insufficient fee',
        `rejecting replacement ${txid}, less fees than conflicting txs; ${formatMoney(fee)} < ${formatMoney(originalFees)}`,
      );
    }
    const relay = feeForSize(POLICY.incrementalRelayFeePerKvB, vsize);
    if (fee - originalFees < relay) {
      return reject(
        'reconsiderable',
        'insufficient fee',
        `rejecting replacement ${txid}, not enough additional fees to relay; ${formatMoney(fee - originalFees)} < ${formatMoney(relay)}`,
      );
    }
    allConflicts = mempool.topological(all);
  }

  if (ctx.verifyScripts) {
    const { failure, unchecked } = verifyTxScriptsDetailed(tx, prevouts);
    if (failure) return reject('not-standard', `mempool-script-verify-flag-failed (${failure.error})`);
    if (unchecked.length) ctx.onUnchecked?.(txid, unchecked);
  }

  const replaced = allConflicts.map((t) => mempool.get(t)!);
  if (opts.testAccept) return { ok: true, txid, wtxid, fee, vsize, replaced };

  for (const t of [...allConflicts].reverse()) mempool.remove(t, 'replaced');
  mempool.add({
    tx,
    txid,
    wtxid,
    fee,
    vsize,
    weight: tx.weight,
    time: ctx.now(),
    height: tip.height,
    sigopsCost: sigops,
    unbroadcast: opts.unbroadcast ?? false,
  });
  return { ok: true, txid, wtxid, fee, vsize, replaced };
}
