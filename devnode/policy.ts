/**
 * Core 30's relay policy for single transactions: IsStandardTx (version, weight, push-only
 * scriptSigs, standard outputs, aggregate OP_RETURN size, dust), dust thresholds at the 3 sat/vB
 * dust feerate, AreInputsStandard, IsWitnessStandard, sigop cost, and fee arithmetic (CFeeRate,
 * FormatMoney) as Core prints them in reject reasons.
 * @module
 */
import type { DecodedTx, TxOutput } from '../src/bitcoin/tx.js';
import { compactSizeBytes } from '../src/bitcoin/wire.js';
import { classifyScript, decodeOutputScript } from '../src/bitcoin/script.js';
import { isPushOnly, parseScript, sigOpCount, witnessProgram } from './script.js';
import type { Prevout } from './script-verify.js';

export const POLICY = {
  /** -minrelaytxfee and -incrementalrelayfee: 100 sat/kvB (0.1 sat/vB) since Core 30. */
  minRelayFeePerKvB: 100n,
  incrementalRelayFeePerKvB: 100n,
  /** -dustrelayfee: 3000 sat/kvB. */
  dustRelayFeePerKvB: 3000n,
  maxStandardTxWeight: 400_000,
  maxStandardScriptSigSize: 1650,
  maxDataCarrierBytes: 100_000,
  maxStandardVersion: 3,
  maxDustOutputsPerTx: 1,
  minStandardTxNonWitnessSize: 65,
  maxStandardTxSigopsCost: 16_000,
  maxP2shSigops: 15,
  maxReplacementCandidates: 100,
  ancestorLimit: 25,
  descendantLimit: 25,
  /** sendrawtransaction's default maxfeerate: 0.10 BTC/kvB. */
  defaultMaxFeeRatePerKvB: 10_000_000n,
  maxStandardP2wshScriptSize: 3600,
  maxStandardP2wshStackItems: 100,
  maxStandardP2wshStackItemSize: 80,
} as const;

/** CFeeRate::GetFee: ceil(rate * size / 1000), at least 1 sat for a positive rate. */
export function feeForSize(ratePerKvB: bigint, vsize: number): bigint {
  const size = BigInt(vsize);
  let fee = (ratePerKvB * size + 999n) / 1000n;
  if (fee === 0n && size !== 0n && ratePerKvB > 0n) fee = 1n;
  return fee;
}

/** CFeeRate(fee, size).GetFeePerK(): sat/kvB, truncated. */
export function feeRatePerKvB(fee: bigint, vsize: number): bigint {
  return vsize > 0 ? (fee * 1000n) / BigInt(vsize) : 0n;
}

/** Core's FormatMoney: at least two decimals, trailing zeros trimmed ("0.00001", "1.00"). */
export function formatMoney(sats: bigint): string {
  const neg = sats < 0n;
  const abs = neg ? -sats : sats;
  const frac = (abs % 100_000_000n).toString().padStart(8, '0').replace(/0+$/, '').padEnd(2, '0');
  return `${neg ? '-' : ''}${abs / 100_000_000n}.${frac}`;
}

/** CFeeRate::ToString(): "0.00001000 BTC/kvB". */
export function formatFeeRate(perKvB: bigint): string {
  return `${perKvB / 100_000_000n}.${(perKvB % 100_000_000n).toString().padStart(8, '0')} BTC/kvB`;
}

/** True for OP_RETURN scripts and scripts over 10,000 bytes (never enter the UTXO set). */
export function isUnspendable(script: Uint8Array): boolean {
  return (script.length > 0 && script[0] === 0x6a) || script.length > 10_000;
}

/** GetDustThreshold at the dust relay feerate. */
function dustThreshold(out: TxOutput): bigint {
  if (isUnspendable(out.script)) return 0n;
  let size = 8 + compactSizeBytes(out.script.length) + out.script.length;
  size += witnessProgram(out.script) ? 32 + 4 + 1 + Math.floor(107 / 4) + 4 : 32 + 4 + 1 + 107 + 4;
  return feeForSize(POLICY.dustRelayFeePerKvB, size);
}

/** Indices of the dust outputs of `tx`. */
export function dustOutputs(tx: DecodedTx): number[] {
  const out: number[] = [];
  tx.outputs.forEach((o, i) => {
    if (o.value < dustThreshold(o)) out.push(i);
  });
  return out;
}

/** Core's ::IsStandard for an output script. */
function isStandardOutput(script: Uint8Array): { ok: boolean; type: string } {
  const d = decodeOutputScript(script);
  if (d.type === 'nonstandard') return { ok: false, type: d.type };
  if (d.type === 'multisig') {
    const n = d.pubkeys.length;
    if (n < 1 || n > 3 || d.required < 1 || d.required > n) return { ok: false, type: d.type };
  }
  return { ok: true, type: d.type };
}

/** IsStandardTx: null when standard, else the reject reason. */
export function standardTxReason(tx: DecodedTx): string | null {
  if (tx.version > POLICY.maxStandardVersion || tx.version < 1) return 'version';
  if (tx.weight > POLICY.maxStandardTxWeight) return 'tx-size';
  for (const input of tx.inputs) {
    if (input.scriptSig.length > POLICY.maxStandardScriptSigSize) return 'scriptsig-size';
    if (!isPushOnly(input.scriptSig)) return 'scriptsig-not-pushonly';
  }
  let dataLeft = POLICY.maxDataCarrierBytes;
  for (const out of tx.outputs) {
    const { ok, type } = isStandardOutput(out.script);
    if (!ok) return 'scriptpubkey';
    if (type === 'nulldata') {
      if (out.script.length > dataLeft) return 'datacarrier';
      dataLeft -= out.script.length;
    }
  }
  if (dustOutputs(tx).length > POLICY.maxDustOutputsPerTx) return 'dust';
  return null;
}

function p2shRedeemScript(scriptSig: Uint8Array): Uint8Array | null {
  const { ops, error } = parseScript(scriptSig);
  if (error || ops.length === 0) return null;
  const last = ops[ops.length - 1]!;
  return last.data ?? (last.op >= 0x51 && last.op <= 0x60 ? new Uint8Array([last.op - 0x50]) : new Uint8Array(0));
}

/** AreInputsStandard (including Core 30's 2,500 legacy sigops limit). */
export function inputsStandard(tx: DecodedTx, prevouts: readonly Prevout[]): boolean {
  let legacySigops = 0;
  for (let i = 0; i < tx.inputs.length; i++) {
    const spk = prevouts[i]!.script;
    const type = classifyScript(spk);
    if (type === 'nonstandard' || type === 'witness_unknown') return false;
    legacySigops += sigOpCount(tx.inputs[i]!.scriptSig, true) + sigOpCount(spk, true);
    if (type === 'scripthash') {
      const redeem = p2shRedeemScript(tx.inputs[i]!.scriptSig);
      if (redeem === null) return false;
      const n = sigOpCount(redeem, true);
      if (n > POLICY.maxP2shSigops) return false;
      legacySigops += n;
    }
  }
  return legacySigops <= 2500;
}

/** IsWitnessStandard for the shapes we know (P2WSH limits, no annex, P2A without witness). */
export function witnessStandard(tx: DecodedTx, prevouts: readonly Prevout[]): boolean {
  for (let i = 0; i < tx.inputs.length; i++) {
    const input = tx.inputs[i]!;
    if (input.witness.length === 0) continue;
    let spk = prevouts[i]!.script;
    if (classifyScript(spk) === 'scripthash') {
      const redeem = p2shRedeemScript(input.scriptSig);
      if (redeem === null) return false;
      spk = redeem;
    }
    const wp = witnessProgram(spk);
    if (!wp) return false; // witness on a non-witness input
    if (wp.version === 0 && wp.program.length === 32) {
      const ws = input.witness[input.witness.length - 1]!;
      if (ws.length > POLICY.maxStandardP2wshScriptSize) return false;
      if (input.witness.length - 1 > POLICY.maxStandardP2wshStackItems) return false;
      if (input.witness.slice(0, -1).some((w) => w.length > POLICY.maxStandardP2wshStackItemSize)) return false;
    }
    if (wp.version === 1 && wp.program.length === 32) {
      if (input.witness.length >= 2 && input.witness[input.witness.length - 1]![0] === 0x50) return false;
    }
    if (classifyScript(spk) === 'anchor') return false;
  }
  return true;
}

/** GetTransactionSigOpCost (legacy ×4, P2SH ×4, witness ×1). */
export function sigOpsCost(tx: DecodedTx, prevouts: readonly Prevout[] | null): number {
  let legacy = 0;
  for (const i of tx.inputs) legacy += sigOpCount(i.scriptSig, false);
  for (const o of tx.outputs) legacy += sigOpCount(o.script, false);
  let cost = legacy * 4;
  if (prevouts === null) return cost;
  for (let i = 0; i < tx.inputs.length; i++) {
    const input = tx.inputs[i]!;
    let spk = prevouts[i]!.script;
    if (classifyScript(spk) === 'scripthash') {
      const redeem = p2shRedeemScript(input.scriptSig);
      if (redeem === null) continue;
      cost += sigOpCount(redeem, true) * 4;
      spk = redeem;
    }
    const wp = witnessProgram(spk);
    if (wp && wp.version === 0) {
      if (wp.program.length === 20) cost += 1;
      else if (wp.program.length === 32 && input.witness.length > 0) cost += sigOpCount(input.witness[input.witness.length - 1]!, true);
    }
  }
  return cost;
}
