/**
 * PURE: the one derivation of what a transaction gives the index, used by every path that
 * indexes transactions: a block applied and undone (derive.ts), the bulk import's batches
 * (bulk-batch.ts) and a mempool transaction (derive.ts, `deriveMempoolTx`). Inputs first (none
 * for a coinbase), then outputs:
 * - an input's prevout is resolved and recorded as spent, and its address keys send its value;
 * - an output is recorded, its keys receive its value, and it enters the unspent set unless it
 *   is unspendable (OP_RETURN-led or oversized: Core never holds it), under its balance key;
 * - keys: a single address (P2PKH, P2SH, segwit, P2PK as its P2PKH) carries the amount (history
 *   entry, balance delta, received/sent) and is the output's balance key; each key of a bare
 *   multisig gets a history entry and a touch but no amount, and the output no balance key; an
 *   OP_RETURN or nonstandard script has no key;
 * - an output whose script the index keeps under another key (P2PK, bare multisig) gives its
 *   script alias (script-aliases.ts), the genesis coinbase's included;
 * - a transaction that spends and carries an Open Assets marker is a candidate for coloring
 *   (asset-rows.ts);
 * - the genesis block's coinbase pays nobody: Core never adds its output to the UTXO set (it can
 *   never be spent), so its outputs are recorded (the block's transaction stays readable) but
 *   enter no unspent set, balance or history — as ElectrumX indexes the genesis block. This is
 *   the one place the rule lives: every path (block, bulk, undo) derives through here.
 * Where the results go and how a prevout is found differ per path: that is the `TxSink`.
 * @module
 */
import { hasAssetMarker } from '../../src/bitcoin/open-assets.js';
import { DecodedTx, InputCursor, OutputCursor, type TxInput, type TxOutput } from '../../src/bitcoin/tx.js';
import { unspendableScript } from './address-keys.js';
import { mayHaveAlias, scriptAlias, type ScriptAlias } from './script-aliases.js';

/** No address, one address, or the keys of a bare multisig, in a path's representation `K`. */
export type Keys<K> = null | K | readonly K[];

/**
 * What the derivation reads of a transaction given as arrays: its inputs (`I`: a path's input
 * reference) and outputs. A `DecodedTx` is read in place instead (`InputCursor`, `OutputCursor`:
 * no object per input or output); a sink then gets the cursors as its inputs and outputs, valid
 * only during the call (what it keeps of one it takes from `prevTxid`, `script` or `value`).
 */
export interface TxShape<I> {
  readonly inputs: readonly I[];
  readonly outputs: readonly TxOutput[];
}

/**
 * A path's side of the derivation. `K` is its address-key representation (uuid strings, or
 * 16-byte binaries on the bulk path), `P` its handle of a resolved prevout (a row, a cache slot).
 * Calls come in transaction order: per input resolve, keysOf, amountOf, spend, then `address`
 * or `cosigner` per key; `assetMarker` when the transaction carries one; per output outputKeys,
 * output, `alias` when it has one, `address` or `cosigner` per key, then unspent when spendable.
 */
export interface TxSink<I, K, P> {
  /** The output `input` spends; throws when the path does not know it (the index is inconsistent). */
  resolve(input: I): P;
  /** The address keys of a resolved prevout. */
  keysOf(prevout: P): Keys<K>;
  /** False for a path that keeps no amounts: `address` then gets 0n for an output, whose value is not read. */
  readonly amounts?: boolean;
  /** Its value (a path that keeps no amounts may answer 0n and ignore amounts). */
  amountOf(prevout: P): bigint;
  /** `input` spends `prevout`: record the reference (packed inputs, spent rows, the unspent set). */
  spend(prevout: P, input: I): void;
  /** The address keys output `vout` is indexed under. */
  outputKeys(out: TxOutput, vout: number): Keys<K>;
  /** Every output, in order (packed outputs, sums). */
  output(vout: number, out: TxOutput): void;
  /** A spendable output enters the unspent set; `key` is its balance key (a single address) or null. */
  unspent(vout: number, keys: Keys<K>, key: K | null, out: TxOutput): void;
  /** A single address receives (`dir` 1, an output) or sends (`dir` -1, a spent prevout) `value`. */
  address(key: K, value: bigint, dir: 1 | -1): void;
  /** A key of a bare multisig takes part (received or sent), with no amount. */
  cosigner(key: K): void;
  /** The transaction (one that spends) carries an Open Assets marker: its outputs may be colored. */
  assetMarker(): void;
  /** The current output's script is kept under another key: its alias. */
  alias(alias: ScriptAlias): void;
}

/**
 * What a transaction is to the derivation: `spends` resolves its inputs; a `coinbase`'s inputs
 * spend nothing; the `genesis` coinbase (position 0 of height 0) also pays nobody.
 */
export type TxKind = 'spends' | 'coinbase' | 'genesis';

/** The kind of the transaction at `pos` in the block at `height` (`coinbase`: it has the coinbase input). */
export function txKindAt(height: number, pos: number, coinbase: boolean): TxKind {
  if (pos !== 0 || !coinbase) return 'spends';
  return height === 0 ? 'genesis' : 'coinbase';
}

/** Derives one transaction of kind `kind` into `sink`. */
export function deriveTx<K, P>(tx: DecodedTx, kind: TxKind, sink: TxSink<TxInput, K, P>): void;
export function deriveTx<I, K, P>(tx: TxShape<I>, kind: TxKind, sink: TxSink<I, K, P>): void;
export function deriveTx<I, K, P>(tx: TxShape<I> | DecodedTx, kind: TxKind, sink: TxSink<I, K, P>): void {
  if (tx instanceof DecodedTx) {
    deriveDecoded(tx, kind, sink as unknown as TxSink<TxInput, K, P>);
    return;
  }
  if (kind === 'spends') {
    const inputs = tx.inputs;
    for (let i = 0; i < inputs.length; i++) deriveInput(sink, inputs[i]!);
    if (hasAssetMarker(tx.outputs)) sink.assetMarker();
  }
  const outputs = tx.outputs;
  for (let v = 0; v < outputs.length; v++) deriveOutput(sink, kind, outputs[v]!, v);
}

/** `deriveTx` of a decoded transaction, read in place through cursors. */
function deriveDecoded<K, P>(tx: DecodedTx, kind: TxKind, sink: TxSink<TxInput, K, P>): void {
  const outs = new OutputCursor();
  if (kind === 'spends') {
    const ins = new InputCursor().start(tx);
    while (ins.next()) deriveInput(sink, ins);
    if (hasAssetMarker(outs.start(tx))) sink.assetMarker();
  }
  deriveOutputs(tx, kind, sink);
}

/**
 * The outputs' part of `deriveTx` alone (a decoded transaction's, in order): what a transaction's
 * outputs give the index does not depend on its inputs, so a writer can take it before the
 * prevouts are known (the per-block writer copies a block's new unspent outputs while it waits
 * for them). `deriveTx` derives its outputs through here.
 */
export function deriveOutputs<K, P>(tx: DecodedTx, kind: TxKind, sink: TxSink<TxInput, K, P>): void {
  const outs = new OutputCursor().start(tx);
  while (outs.next()) deriveOutput(sink, kind, outs, outs.vout);
}

function deriveInput<I, K, P>(sink: TxSink<I, K, P>, input: I): void {
  const prevout = sink.resolve(input);
  const keys = sink.keysOf(prevout);
  const value = sink.amountOf(prevout);
  sink.spend(prevout, input);
  touch(sink, keys, value, -1);
}

function deriveOutput<I, K, P>(sink: TxSink<I, K, P>, kind: TxKind, out: TxOutput, v: number): void {
  const keys = sink.outputKeys(out, v);
  sink.output(v, out);
  // The script's length and end bytes, read in place from a cursor (no view for the usual output).
  const c = out instanceof OutputCursor ? out : null;
  const n = c !== null ? c.scriptLength : out.script.length;
  const first = c !== null ? c.firstByte : (out.script[0] ?? -1);
  if (mayHaveAlias(n, first, c !== null ? c.lastByte : (out.script[n - 1] ?? -1))) {
    const alias = scriptAlias(out.script);
    if (alias !== null) sink.alias(alias);
  }
  if (kind === 'genesis') return;
  touch(sink, keys, keys === null || Array.isArray(keys) || sink.amounts === false ? 0n : out.value, 1);
  if (!unspendableScript(n, first)) sink.unspent(v, keys, balanceKey(keys), out);
}

/** The key that carries an output's balance: a single address's, none for multisig or no key. */
function balanceKey<K>(keys: Keys<K>): K | null {
  return keys === null || Array.isArray(keys) ? null : (keys as K);
}

function touch<I, K, P>(sink: TxSink<I, K, P>, keys: Keys<K>, value: bigint, dir: 1 | -1): void {
  if (keys === null) return;
  if (Array.isArray(keys)) {
    for (const k of keys as readonly K[]) sink.cosigner(k);
    return;
  }
  sink.address(keys as K, value, dir);
}
