/**
 * Planning a transaction, with no I/O: check outputs against the dust threshold, select inputs
 * from candidate outputs with @scure/btc-signer's fee-aware selection (fee rate in sat/vB, change
 * above the dust threshold or none), and order the outputs (shuffled by default, with the change
 * among them; in the caller's order otherwise, change last).
 * @module
 */
import { hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import { DustError, InsufficientFundsError } from './errors.js';
import type { Network } from './network.js';
import type { SpendSource } from './sources.js';

/** The dust threshold of the hosted service (configurable per builder). */
export const DUST_THRESHOLD = 546n;

/** An output the caller asked for. */
export type PlannedOutput = {
  script: Uint8Array;
  amount: bigint;
  /** The address, when it pays one. */
  address?: string;
  /** Data (OP_RETURN) outputs are exempt from the dust threshold. */
  data?: Uint8Array;
};

/** An unspent output that may be spent, with the source that can sign it. */
export type Candidate = {
  txid: string;
  vout: number;
  value: bigint;
  confirmations: number;
  source: SpendSource;
};

/** Inputs of the plan. */
export type PlanRequest = {
  /** Outputs in the caller's order. */
  outputs: readonly PlannedOutput[];
  /** Outputs that may be selected. */
  candidates: readonly Candidate[];
  /** Outputs that must be spent, first and in this order (Open Assets relies on it). */
  required?: readonly Candidate[];
  /** Fee rate, sat/vB (integer). */
  feeRate: bigint;
  changeAddress: string;
  network: Network;
  dustThreshold?: bigint;
  allowDustyOutputs?: boolean;
  /** Shuffle the outputs, change included (default true). */
  shuffleOutputs?: boolean;
  /** Random source for the shuffle, uniform in [0, 1) (default crypto.getRandomValues). */
  random?: () => number;
};

/** The chosen inputs and ordered outputs. */
export type Plan = {
  inputs: Candidate[];
  outputs: PlannedOutput[];
  /** Index of the change output in `outputs`, or null when there is none. */
  changeIndex: number | null;
  /** The fee, sat (inputs − outputs). */
  fee: bigint;
  /** Estimated virtual size with worst-case (72-byte) ECDSA signatures. */
  estimatedVsize: number;
};

/** Options that keep `selectUTXO` from refusing OP_RETURN and legacy inputs spent by prevout. */
export const TX_OPTIONS = Object.freeze({ allowLegacyWitnessUtxo: true, allowUnknownOutputs: true });

/** Throws DustError for the first payment output below the threshold. */
export function checkDust(outputs: readonly PlannedOutput[], threshold: bigint = DUST_THRESHOLD): void {
  outputs.forEach((o, i) => {
    if (o.data === undefined && o.amount < threshold) throw new DustError(i, o.amount, threshold);
  });
}

function cryptoRandom(): number {
  const b = new Uint32Array(1);
  globalThis.crypto.getRandomValues(b);
  return b[0]! / 2 ** 32;
}

/** Fisher–Yates shuffle of a copy. */
export function shuffled<T>(items: readonly T[], random: () => number = cryptoRandom): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** The PSBT input of a candidate. */
export function candidateInput(c: Candidate) {
  return { txid: hex.decode(c.txid), index: c.vout, witnessUtxo: { script: c.source.script, amount: c.value }, ...c.source.fields };
}

/**
 * Plans a transaction. @throws DustError, InsufficientFundsError, RangeError for a bad fee rate
 * or an empty output list.
 */
export function planTransaction(req: PlanRequest): Plan {
  if (req.outputs.length === 0) throw new RangeError('A transaction needs at least one output');
  if (typeof req.feeRate !== 'bigint' || req.feeRate < 0n) throw new RangeError('feeRate must be a non-negative integer (sat/vB)');
  const threshold = req.dustThreshold ?? DUST_THRESHOLD;
  if (!req.allowDustyOutputs) checkDust(req.outputs, threshold);
  for (const o of req.outputs) if (o.amount < 0n) throw new RangeError('Output amounts cannot be negative');
  const required = req.required ?? [];
  const key = (c: { txid: string; vout: number }) => `${c.txid}:${c.vout}`;
  const requiredKeys = new Set(required.map(key));
  const candidates = req.candidates.filter((c) => !requiredKeys.has(key(c)));
  const byKey = new Map([...candidates, ...required].map((c) => [key(c), c]));
  const result = btc.selectUTXO(
    candidates.map(candidateInput),
    req.outputs.map((o) => ({ script: o.script, amount: o.amount })),
    'default',
    {
      ...TX_OPTIONS,
      feePerByte: req.feeRate,
      changeAddress: req.changeAddress,
      network: req.network,
      bip69: false,
      createTx: false,
      // Change at or below the dust threshold is left to the fee instead of created.
      dust: threshold,
      dustRelayFeeRate: 1n,
      requiredInputs: required.map(candidateInput),
    },
  );
  const wanted = req.outputs.reduce((s, o) => s + o.amount, 0n);
  if (!result) {
    const available = [...candidates, ...required].reduce((s, c) => s + c.value, 0n);
    throw new InsufficientFundsError(
      wanted,
      available,
      `${candidates.length + required.length} spendable outputs, fee rate ${req.feeRate} sat/vB`,
    );
  }
  const inputs = result.inputs.map((i) => byKey.get(`${hex.encode(i.txid!)}:${i.index}`)!);
  // scure's estimate leaves out the empty witness (1 WU) each legacy input carries in a segwit
  // transaction; count it, and take what the fee then lacks from the change.
  const legacy = inputs.filter((c) => isLegacySource(c.source)).length;
  const weight = result.weight + (legacy < inputs.length ? legacy : 0);
  const estimatedVsize = Math.ceil(weight / 4);
  let outputs: PlannedOutput[] = [...req.outputs];
  let changeIndex: number | null = null;
  if (result.change) {
    const change = result.outputs[result.outputs.length - 1]!;
    const fee = inputs.reduce((s, c) => s + c.value, 0n) - wanted - change.amount;
    const amount = change.amount - maxBig(0n, req.feeRate * BigInt(estimatedVsize) - fee);
    if (amount > threshold) {
      const script = btc.OutScript.encode(btc.Address(req.network).decode(req.changeAddress));
      outputs.push({ script, amount, address: req.changeAddress });
      changeIndex = outputs.length - 1;
    }
  }
  if (req.shuffleOutputs ?? true) {
    const order = shuffled(
      outputs.map((_, i) => i),
      req.random,
    );
    outputs = order.map((i) => outputs[i]!);
    if (changeIndex !== null) changeIndex = order.indexOf(changeIndex);
  }
  const totalIn = inputs.reduce((s, c) => s + c.value, 0n);
  const totalOut = outputs.reduce((s, o) => s + o.amount, 0n);
  if (totalIn - totalOut < req.feeRate * BigInt(estimatedVsize) - req.feeRate) {
    throw new InsufficientFundsError(
      wanted,
      totalIn,
      `the selected outputs leave ${totalIn - totalOut} sat for a fee of about ${req.feeRate * BigInt(estimatedVsize)} sat`,
    );
  }
  return { inputs, outputs, changeIndex, fee: totalIn - totalOut, estimatedVsize };
}

function maxBig(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** True when inputs spending `source` carry no witness (P2PKH, bare or P2SH-wrapped legacy scripts). */
function isLegacySource(source: SpendSource): boolean {
  const out = btc.OutScript.decode(source.script);
  if (out.type === 'pkh' || out.type === 'pk' || out.type === 'ms') return true;
  if (out.type !== 'sh') return false;
  const r = source.fields.redeemScript;
  const witnessProgram = r !== undefined && r.length >= 4 && (r[0] === 0x00 || (r[0]! >= 0x51 && r[0]! <= 0x60)) && r[1] === r.length - 2;
  return !witnessProgram;
}
