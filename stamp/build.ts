/**
 * Builds and signs one stamp transaction: the given wallet coins in, one OP_RETURN output per
 * payload (vout 0…n-1, in order, value 0), then change back to the wallet (none when it would be
 * dust). Inputs signal BIP125 replaceability. Signatures are low-R (@scure/btc-signer), so the
 * size computed before signing is exact or one byte over, and the fee is never under the rate.
 * OP_RETURN payloads over 80 bytes and OP_RETURN outputs with value are refused before signing.
 * Pure: no I/O.
 * @module
 */
import { Transaction } from '@scure/btc-signer';
import { hashToHex, hexToHash, reverseBytes } from '../src/bitcoin/hash.js';
import { nullDataScript } from '../src/bitcoin/script.js';
import { feeFor } from './fee.js';
import type { StampWallet, WalletScriptType } from './wallet.js';

/** Largest OP_RETURN payload we sign (Core's historic -datacarriersize, 83-byte script). */
const MAX_DATA_PAYLOAD = 80;
/** BIP125 opt-in: every input's nSequence. */
export const RBF_SEQUENCE = 0xfffffffd;

/** A wallet coin. `txid` in internal byte order. */
export type Coin = {
  txid: Buffer;
  vout: number;
  value: bigint;
  script: Buffer;
  /** Unconfirmed stamp transactions it hangs below, its own included (0 = confirmed). */
  depth: number;
};

export type BuildParams = {
  wallet: StampWallet;
  inputs: readonly Coin[];
  /** One OP_RETURN output per payload (≤ 80 bytes each), in this order. */
  payloads: readonly Uint8Array[];
  feeRatePerKvB: bigint;
  /** The least absolute fee (a replacement's BIP125 floor), computed for the final size by `minFeeFor`. */
  minFeeFor?: (vsize: number) => bigint;
  /** Split change into this many outputs when it is large enough (1 or 2). */
  changeOutputs?: number;
  /** Refuse to pay more than this. */
  maxFee: bigint;
};

export type BuiltTx = {
  /** Internal byte order. */
  txid: Buffer;
  raw: Buffer;
  vsize: number;
  fee: bigint;
  inputs: readonly Coin[];
  /** vout of payload i is i. */
  dataCount: number;
  change: { vout: number; value: bigint; script: Buffer }[];
};

/** The inputs cannot pay for the outputs and the fee. */
export class InsufficientFundsError extends Error {
  override name = 'InsufficientFundsError';
  constructor(
    readonly available: bigint,
    readonly needed: bigint,
  ) {
    super(`inputs hold ${available} sat, ${needed} sat needed`);
  }
}

/** The fee would exceed the configured maximum. */
export class FeeTooHighError extends Error {
  override name = 'FeeTooHighError';
  constructor(
    readonly fee: bigint,
    readonly maxFee: bigint,
  ) {
    super(`fee ${fee} sat exceeds the maximum of ${maxFee} sat`);
  }
}

/**
 * Refuses an OP_RETURN output we must never sign.
 * @throws RangeError `OP_RETURN payload of N bytes exceeds 80` / `OP_RETURN output must carry no value (got N sat)`
 */
export function assertDataOutput(payload: Uint8Array, value: bigint): void {
  if (payload.length > MAX_DATA_PAYLOAD) throw new RangeError(`OP_RETURN payload of ${payload.length} bytes exceeds ${MAX_DATA_PAYLOAD}`);
  if (value !== 0n) throw new RangeError(`OP_RETURN output must carry no value (got ${value} sat)`);
}

function compactSize(n: number): number {
  return n < 0xfd ? 1 : n <= 0xffff ? 3 : 5;
}

/** Signature bytes with the sighash byte: low-R and low-S DER is at most 70, +1. */
const SIG = 71;

function inputWeight(type: WalletScriptType, pubkeyLength: number): { base: number; witness: number } {
  if (type === 'p2wpkh') return { base: 32 + 4 + 1 + 4, witness: 1 + 1 + SIG + 1 + pubkeyLength };
  const scriptSig = 1 + SIG + 1 + pubkeyLength;
  return { base: 32 + 4 + compactSize(scriptSig) + scriptSig + 4, witness: 1 };
}

/** vsize of a transaction with these inputs and output scripts, signatures at their largest. */
export function estimateVsize(wallet: StampWallet, inputs: readonly Coin[], outputScripts: readonly Uint8Array[]): number {
  let base = 4 + 4 + compactSize(inputs.length) + compactSize(outputScripts.length);
  let witness = 0;
  let segwit = false;
  for (const c of inputs) {
    const type = wallet.typeOf(c.script);
    if (!type) throw new TypeError(`coin ${hashToHex(c.txid)}:${c.vout} is not the wallet's`);
    const w = inputWeight(type, wallet.publicKey.length);
    base += w.base;
    witness += w.witness;
    if (type === 'p2wpkh') segwit = true;
  }
  for (const s of outputScripts) base += 8 + compactSize(s.length) + s.length;
  const weight = base * 4 + (segwit ? 2 + witness : 0);
  return Math.ceil(weight / 4);
}

/** Dust threshold of a wallet change output at Core's 3 sat/vB dust relay rate. */
export function dustThreshold(type: WalletScriptType): bigint {
  // GetDustThreshold: (output size + spending input size) × 3 sat/vB.
  return type === 'p2wpkh' ? 294n : 546n;
}

/**
 * Builds and signs. Throws InsufficientFundsError, FeeTooHighError, or RangeError for a payload
 * that must not be signed.
 */
export function buildStampTx(p: BuildParams): BuiltTx {
  for (const d of p.payloads) assertDataOutput(d, 0n);
  if (p.inputs.length === 0) throw new InsufficientFundsError(0n, 1n);
  const dataScripts = p.payloads.map((d) => nullDataScript(d));
  const total = p.inputs.reduce((s, c) => s + c.value, 0n);
  const change = p.wallet.change;
  const dust = dustThreshold(change.type);
  const minFee = (vsize: number) => {
    const byRate = feeFor(p.feeRatePerKvB, vsize);
    const floor = p.minFeeFor ? p.minFeeFor(vsize) : 0n;
    return byRate > floor ? byRate : floor;
  };

  // Largest layout first: as many change outputs as asked, if each stays well above dust.
  let plan: { fee: bigint; change: bigint[] } | undefined;
  for (let n = Math.max(1, Math.min(2, p.changeOutputs ?? 1)); n >= 0 && !plan; n--) {
    const scripts = [...dataScripts, ...Array.from({ length: n }, () => change.script)];
    const vsize = estimateVsize(p.wallet, p.inputs, scripts);
    const fee = minFee(vsize);
    if (n === 0) {
      if (total >= fee) plan = { fee: total, change: [] };
      else throw new InsufficientFundsError(total, fee);
      break;
    }
    const left = total - fee;
    if (left < dust * BigInt(n) * (n > 1 ? 10n : 1n)) continue;
    const each = left / BigInt(n);
    plan = { fee, change: Array.from({ length: n }, (_, i) => (i === 0 ? left - each * BigInt(n - 1) : each)) };
  }
  if (!plan) throw new InsufficientFundsError(total, minFee(estimateVsize(p.wallet, p.inputs, dataScripts)));
  if (plan.fee > p.maxFee) throw new FeeTooHighError(plan.fee, p.maxFee);

  const tx = new Transaction({ version: 2, allowUnknownOutputs: true, allowLegacyWitnessUtxo: true, lowR: true });
  for (const c of p.inputs) {
    tx.addInput({ txid: reverseBytes(c.txid), index: c.vout, sequence: RBF_SEQUENCE, witnessUtxo: { script: c.script, amount: c.value } });
  }
  for (const s of dataScripts) tx.addOutput({ script: s, amount: 0n });
  for (const v of plan.change) tx.addOutput({ script: change.script, amount: v });
  for (let i = 0; i < p.inputs.length; i++) tx.signIdx(p.wallet.privateKey, i);
  tx.finalize();
  const raw = Buffer.from(tx.extract());
  const vsize = tx.vsize;
  if (plan.change.length > 0 && plan.fee < feeFor(p.feeRatePerKvB, vsize)) {
    // Cannot happen with low-R signatures; refuse rather than underpay.
    throw new RangeError(`signed size ${vsize} vB exceeds the estimate`);
  }
  return {
    txid: Buffer.from(hexToHash(tx.id)),
    raw,
    vsize,
    fee: plan.fee,
    inputs: p.inputs,
    dataCount: dataScripts.length,
    change: plan.change.map((value, i) => ({ vout: dataScripts.length + i, value, script: change.script })),
  };
}
