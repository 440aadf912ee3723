/**
 * Signing and PSBT (BIP174): assemble a plan into a transaction, sign it with the keys at hand,
 * pass it between parties as base64 PSBT (each signer adds its signatures, or partial PSBTs are
 * combined), and finalize it once every input has its signatures (m for an m-of-n multisig).
 * All of it is @scure/btc-signer; this module only fixes the options and reports progress.
 * @module
 */
import { base64, hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import { BlockwireError } from './errors.js';
import { getNetwork, type Network, type NetworkName } from './network.js';
import { TX_OPTIONS, candidateInput, type Plan } from './plan.js';
import { signingKey, type KeyInput } from './sources.js';

/** nSequence signalling replaceability (BIP125). */
export const RBF_SEQUENCE = 0xfffffffd;

/** A PSBT as bytes or base64 (BIP174's text form). */
export type PsbtInput = string | Uint8Array;

/** Signature progress of one input. */
export type InputSignatures = { index: number; required: number; present: number; finalized: boolean };

/** Assembles a plan into an unsigned transaction carrying each input's prevout and scripts. */
export function assembleTransaction(plan: Plan, opts: { rbf?: boolean; lockTime?: number } = {}): btc.Transaction {
  const tx = new btc.Transaction({ ...TX_OPTIONS, lockTime: opts.lockTime ?? 0 });
  const sequence = (opts.rbf ?? true) ? RBF_SEQUENCE : btc.DEFAULT_SEQUENCE;
  for (const c of plan.inputs) tx.addInput({ ...candidateInput(c), sequence });
  for (const o of plan.outputs) tx.addOutput({ script: o.script, amount: o.amount });
  return tx;
}

function isNotMine(err: unknown): boolean {
  const m = err instanceof Error ? err.message : '';
  return m.startsWith("Input script doesn't have pubKey") || m === 'No taproot scripts signed';
}

/**
 * Signs every input of `tx` that `keys` can sign (each key is tried on each input). Returns
 * the number of signatures added.
 */
export function signWithKeys(tx: btc.Transaction, keys: readonly Uint8Array[]): number {
  let added = 0;
  for (let i = 0; i < tx.inputsLength; i++) {
    for (const k of keys) {
      try {
        if (tx.signIdx(k, i)) added++;
      } catch (err) {
        if (!isNotMine(err)) throw err;
      }
    }
  }
  return added;
}

/** The signature progress of every input. */
export function inputSignatures(tx: btc.Transaction): InputSignatures[] {
  const out: InputSignatures[] = [];
  for (let i = 0; i < tx.inputsLength; i++) {
    const input = tx.getInput(i);
    const finalized = input.finalScriptSig !== undefined || input.finalScriptWitness !== undefined;
    const script = input.witnessScript ?? input.redeemScript;
    let required = 1;
    if (script) {
      const decoded = btc.OutScript.decode(script);
      if (decoded.type === 'ms') required = decoded.m;
    }
    const present = finalized ? required : input.tapKeySig ? 1 : (input.partialSig?.length ?? 0);
    out.push({ index: i, required, present, finalized });
  }
  return out;
}

/**
 * Finalizes every input and returns the network serialization.
 * @throws BlockwireError `ERR_NOT_ENOUGH_SIGNATURES` naming the inputs that lack signatures.
 */
export function finalizeTransaction(tx: btc.Transaction): { hex: string; txid: string; vsize: number; fee: bigint } {
  const missing = inputSignatures(tx).filter((s) => !s.finalized && s.present < s.required);
  if (missing.length) {
    const list = missing.map((s) => `input ${s.index} has ${s.present} of ${s.required}`).join(', ');
    throw new BlockwireError('ERR_NOT_ENOUGH_SIGNATURES', `Not enough signatures to finalize: ${list}`);
  }
  tx.finalize();
  return { hex: hex.encode(tx.extract()), txid: tx.id, vsize: tx.vsize, fee: tx.fee };
}

/** Parses a PSBT (base64 or bytes). */
export function parsePsbt(psbt: PsbtInput): btc.Transaction {
  const bytes = typeof psbt === 'string' ? base64.decode(psbt.trim()) : psbt;
  return btc.Transaction.fromPSBT(bytes, TX_OPTIONS);
}

/** Serializes a transaction as a base64 PSBT. */
export function toPsbt(tx: btc.Transaction): string {
  return base64.encode(tx.toPSBT());
}

/**
 * Adds the signatures `keys` can make to a PSBT and returns the new PSBT (base64). A key that
 * signs nothing is an error: the PSBT is probably not the one its holder meant to sign.
 */
export function signPsbt(psbt: PsbtInput, keys: KeyInput | readonly KeyInput[], network: NetworkName | Network): string {
  const tx = parsePsbt(psbt);
  const list = Array.isArray(keys) ? (keys as KeyInput[]) : [keys as KeyInput];
  const privs = list.map((k) => signingKey(k, getNetwork(network)));
  if (signWithKeys(tx, privs) === 0) throw new BlockwireError('ERR_NOTHING_SIGNED', 'None of the keys can sign an input of this PSBT');
  return toPsbt(tx);
}

/** Merges PSBTs of the same transaction signed by different parties (BIP174 Combiner). */
export function combinePsbts(psbts: readonly PsbtInput[]): string {
  if (psbts.length === 0) throw new RangeError('combinePsbts needs at least one PSBT');
  return base64.encode(
    btc.PSBTCombine(
      psbts.map((p) => (typeof p === 'string' ? base64.decode(p.trim()) : p)),
      TX_OPTIONS,
    ),
  );
}

/** Signature progress of a PSBT: per input, and whether it can be finalized. */
export function psbtStatus(psbt: PsbtInput): { inputs: InputSignatures[]; complete: boolean } {
  const inputs = inputSignatures(parsePsbt(psbt));
  return { inputs, complete: inputs.every((s) => s.finalized || s.present >= s.required) };
}

/** What a PSBT spends and pays, for a signer to check before signing. */
export function describePsbt(psbt: PsbtInput, network: NetworkName | Network) {
  const tx = parsePsbt(psbt);
  const net = getNetwork(network);
  const inputs = [];
  for (let i = 0; i < tx.inputsLength; i++) {
    const inp = tx.getInput(i);
    inputs.push({ txid: hex.encode(inp.txid!), vout: inp.index!, value: inp.witnessUtxo?.amount });
  }
  const outputs = [];
  for (let i = 0; i < tx.outputsLength; i++) {
    const o = tx.getOutput(i);
    outputs.push({ amount: o.amount!, script: hex.encode(o.script!), address: tx.getOutputAddress(i, net) });
  }
  return { txid: tx.id, inputs, outputs, fee: tx.fee };
}

/** Finalizes a PSBT that has all its signatures: the transaction to broadcast. */
export function finalizePsbt(psbt: PsbtInput): { hex: string; txid: string; vsize: number; fee: bigint } {
  return finalizeTransaction(parsePsbt(psbt));
}
