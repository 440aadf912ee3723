/**
 * PURE: a decoded block, its height and a prevout lookup → the rows and per-address deltas the
 * index stores for it (electrs `index_single_block`): one `txs` row per transaction (packed
 * outputs and input references), the outputs left unspent, the earlier outputs it spends, the
 * balance delta and history entries of every address, and (on request) per address and
 * transaction the sats received and sent, from which events are made. No I/O.
 * `deriveUndo` gives the same deltas from the stored rows, so undo is the exact inverse.
 * @module
 */
import type { DecodedBlock } from '../src/bitcoin/block.js';
import { HEADER_BYTES } from '../src/bitcoin/block.js';
import type { DecodedTx } from '../src/bitcoin/tx.js';
import { decodeIns, decodeOuts, PackedWriter } from '../src/db/packed.js';
import { TX_NUM_SPAN, txNumOf } from '../src/db/tx-num.js';
import { isUnspendable, scriptKeys, type ScriptKeys } from './address-keys.js';

/** An output an input spends, as the index (or the node's spenttxouts) knows it. */
export interface Prevout {
  readonly txNum: number;
  readonly value: bigint;
  readonly script: Uint8Array;
  /** Address keys when already known (utxos.addr_key); computed from `script` otherwise. */
  readonly keys?: ScriptKeys;
}

/** Finds the output `vout` of `txid` among outputs created before this block, or undefined. */
export type PrevoutLookup = (txid: Uint8Array, vout: number) => Prevout | undefined;

/** A prevout the lookup did not know: the index is inconsistent with the chain. */
export class MissingPrevoutError extends RangeError {
  override name = 'MissingPrevoutError';
  constructor(
    readonly txid: Uint8Array,
    readonly vout: number,
    readonly spender: Uint8Array,
  ) {
    super(`prevout ${Buffer.from(txid).reverse().toString('hex')}:${vout} spent by ${Buffer.from(spender).reverse().toString('hex')} is not in the index`);
  }
}

export interface TxRow {
  readonly txNum: number;
  readonly txid: Uint8Array;
  readonly outs: Buffer;
  readonly ins: Buffer;
}

/** An output left unspent at the end of the block (OP_RETURN and other unspendables excluded). */
export interface UtxoRow {
  readonly txid: Uint8Array;
  readonly vout: number;
  readonly txNum: number;
  /** The balance-carrying key, null for multisig, nonstandard. */
  readonly key: string | null;
  /** Every key the output is indexed under (multisig: one per public key). */
  readonly keys: ScriptKeys;
  readonly value: bigint;
  readonly script: Uint8Array;
}

/** An output created before this block and spent by it. */
export interface SpentRow {
  readonly txid: Uint8Array;
  readonly vout: number;
  readonly txNum: number;
}

/** Change of an address's confirmed balance and unspent-output count. */
export interface Delta {
  sats: bigint;
  count: number;
}

/** What one transaction did to one address (multisig keys: both 0). */
export interface Touch {
  readonly key: string;
  /** Position of the transaction in the block. */
  readonly pos: number;
  received: bigint;
  sent: bigint;
}

export interface BlockRows {
  readonly height: number;
  readonly hash: Uint8Array;
  readonly prevHash: Uint8Array;
  readonly header: Uint8Array;
  readonly time: number;
  readonly txCount: number;
  readonly size: number;
  readonly weight: number;
  readonly txs: TxRow[];
  readonly created: UtxoRow[];
  readonly spent: SpentRow[];
  readonly balances: Map<string, Delta>;
  /** Ascending tx_nums per address key. */
  readonly history: Map<string, number[]>;
  /** Per (address, transaction), when asked for with `touches: true`. */
  readonly touches: Touch[] | undefined;
}

export interface DeriveOptions {
  /** Collect `touches` (received/sent per address and transaction) for events. */
  touches?: boolean;
  /** Collect balance deltas (default true; the bulk path rebuilds balances from utxos instead). */
  balances?: boolean;
  /** The outputs' keys, computed beforehand (`outputKeys(block)`), e.g. while a query runs. */
  outputKeys?: readonly (readonly ScriptKeys[])[];
}

/** The address keys of every output of `block`, per transaction and vout. */
export function outputKeys(block: DecodedBlock): ScriptKeys[][] {
  return block.txs.map((tx) => tx.outputs.map((o) => scriptKeys(o.script)));
}

/** Binary-string key of a 32-byte hash (cheaper than hex as a Map key). */
export function hashKey(h: Uint8Array): string {
  return Buffer.from(h.buffer, h.byteOffset, 32).toString('latin1');
}

/** Accumulates balances, history and touches, transaction by transaction. */
class Accumulator {
  readonly balances = new Map<string, Delta>();
  readonly history = new Map<string, number[]>();
  readonly touches: Touch[] | undefined;
  private txTouches = new Map<string, Touch>();
  private txNum = -1;
  private pos = -1;
  private readonly withBalances: boolean;

  constructor(withTouches: boolean, withBalances = true) {
    this.touches = withTouches ? [] : undefined;
    this.withBalances = withBalances;
  }

  beginTx(txNum: number, pos: number): void {
    this.txNum = txNum;
    this.pos = pos;
    if (this.touches) this.txTouches = new Map();
  }

  private hist(key: string): void {
    const list = this.history.get(key);
    if (list === undefined) this.history.set(key, [this.txNum]);
    else if (list[list.length - 1] !== this.txNum) list.push(this.txNum);
  }

  private touch(key: string): Touch | undefined {
    if (!this.touches) return undefined;
    let t = this.txTouches.get(key);
    if (t === undefined) {
      t = { key, pos: this.pos, received: 0n, sent: 0n };
      this.txTouches.set(key, t);
      this.touches.push(t);
    }
    return t;
  }

  private delta(key: string, sats: bigint, count: number): void {
    const d = this.balances.get(key);
    if (d === undefined) this.balances.set(key, { sats, count });
    else {
      d.sats += sats;
      d.count += count;
    }
  }

  /** An output of the current transaction (sign 1) or a prevout it spends (sign -1). */
  add(keys: ScriptKeys, value: bigint, sign: 1 | -1): void {
    if (keys === null) return;
    if (typeof keys === 'string') {
      this.hist(keys);
      if (this.withBalances) this.delta(keys, sign === 1 ? value : -value, sign);
      const t = this.touch(keys);
      if (t) {
        if (sign === 1) t.received += value;
        else t.sent += value;
      }
      return;
    }
    for (const k of keys) {
      this.hist(k);
      this.touch(k);
    }
  }
}

/**
 * The rows of `block` at `height`. Inputs spending outputs of earlier transactions of the same
 * block are resolved here; all others through `lookup`.
 * @throws MissingPrevoutError when `lookup` does not know a prevout.
 */
export function deriveBlock(block: DecodedBlock, height: number, lookup: PrevoutLookup, opts: DeriveOptions = {}): BlockRows {
  const txs = block.txs;
  const n = txs.length;
  const base = txNumOf(height, 0);
  const acc = new Accumulator(opts.touches === true, opts.balances !== false);
  const local = new Map<string, number>();
  const outKeys: ScriptKeys[][] = new Array(n);
  const spentHere: (Uint8Array | undefined)[] = new Array(n);
  const spent: SpentRow[] = [];
  const outsW = new PackedWriter(block.size);
  const insW = new PackedWriter(n * 16 + 64);
  const outsAt = new Array<number>(n + 1);
  const insAt = new Array<number>(n + 1);

  for (let i = 0; i < n; i++) {
    const tx = txs[i]!;
    const txNum = base + i;
    acc.beginTx(txNum, i);
    insAt[i] = insW.len;
    if (!(i === 0 && tx.isCoinbase)) {
      for (const input of tx.inputs) {
        const vout = input.vout;
        const j = local.get(hashKey(input.prevTxid));
        if (j !== undefined) {
          const out = txs[j]!.outputs[vout];
          if (out === undefined) throw new MissingPrevoutError(input.prevTxid, vout, tx.txid);
          (spentHere[j] ??= new Uint8Array(txs[j]!.outputCount))[vout] = 1;
          insW.packIn(base + j, vout);
          acc.add(outKeys[j]![vout]!, out.value, -1);
        } else {
          const p = lookup(input.prevTxid, vout);
          if (p === undefined) throw new MissingPrevoutError(input.prevTxid, vout, tx.txid);
          spent.push({ txid: input.prevTxid, vout, txNum: p.txNum });
          insW.packIn(p.txNum, vout);
          acc.add(p.keys !== undefined ? p.keys : scriptKeys(p.script), p.value, -1);
        }
      }
    }
    insAt[i + 1] = insW.len;
    outsAt[i] = outsW.len;
    const outputs = tx.outputs;
    const given = opts.outputKeys?.[i];
    const keys = new Array<ScriptKeys>(outputs.length);
    for (let v = 0; v < outputs.length; v++) {
      const out = outputs[v]!;
      const k = given !== undefined ? given[v]! : scriptKeys(out.script);
      keys[v] = k;
      outsW.packOut(out.value, out.script);
      acc.add(k, out.value, 1);
    }
    outsAt[i + 1] = outsW.len;
    outKeys[i] = keys;
    local.set(hashKey(tx.txid), i);
  }

  const rows: TxRow[] = new Array(n);
  const created: UtxoRow[] = [];
  for (let i = 0; i < n; i++) {
    const tx = txs[i]!;
    const txNum = base + i;
    rows[i] = { txNum, txid: tx.txid, outs: outsW.view(outsAt[i]!, outsAt[i + 1]!), ins: insW.view(insAt[i]!, insAt[i + 1]!) };
    const outputs = tx.outputs;
    const mark = spentHere[i];
    for (let v = 0; v < outputs.length; v++) {
      if (mark !== undefined && mark[v] === 1) continue;
      const out = outputs[v]!;
      if (isUnspendable(out.script)) continue;
      const k = outKeys[i]![v]!;
      created.push({ txid: tx.txid, vout: v, txNum, key: typeof k === 'string' ? k : null, keys: k, value: out.value, script: out.script });
    }
  }

  const header = block.bytes.subarray(0, HEADER_BYTES);
  return {
    height,
    hash: block.hash,
    prevHash: block.header.prevHash,
    header,
    time: block.header.time,
    txCount: n,
    size: block.size,
    weight: block.weight,
    txs: rows,
    created,
    spent,
    balances: acc.balances,
    history: acc.history,
    touches: acc.touches,
  };
}

/** The inputs of `block` that spend outputs of earlier blocks (what the index must supply). */
export function externalOutpoints(block: DecodedBlock): { txid: Uint8Array; vout: number }[] {
  const local = new Set<string>();
  const out: { txid: Uint8Array; vout: number }[] = [];
  block.txs.forEach((tx: DecodedTx, i) => {
    if (!(i === 0 && tx.isCoinbase)) {
      for (const input of tx.inputs) {
        if (!local.has(hashKey(input.prevTxid))) out.push({ txid: input.prevTxid, vout: input.vout });
      }
    }
    local.add(hashKey(tx.txid));
  });
  return out;
}

/** A stored `txs` row, as undo reads it back. */
export interface StoredTx {
  readonly txNum: number;
  readonly txid: Uint8Array;
  readonly outs: Uint8Array;
  readonly ins: Uint8Array;
}

export interface UndoRows {
  /** Spendable outputs the block created (delete those still unspent). */
  readonly createdOutpoints: { txid: Uint8Array; vout: number }[];
  /** Outputs of earlier blocks that the block spent: unspent again after the undo. */
  readonly restored: UtxoRow[];
  /** The block's balance deltas (undo subtracts them). */
  readonly balances: Map<string, Delta>;
  /** Addresses whose history holds entries of the block. */
  readonly keys: string[];
  readonly touches: Touch[] | undefined;
}

/**
 * The exact inverse data of a block from its stored transactions (`blockTxs`, in position
 * order) and the stored transactions their inputs reference (`prevTxs`, by tx_num).
 */
export function deriveUndo(height: number, blockTxs: readonly StoredTx[], prevTxs: ReadonlyMap<number, StoredTx>, opts: DeriveOptions = {}): UndoRows {
  const base = txNumOf(height, 0);
  const acc = new Accumulator(opts.touches === true);
  const createdOutpoints: { txid: Uint8Array; vout: number }[] = [];
  const restored: UtxoRow[] = [];
  const decodedOuts = new Map<number, ReturnType<typeof decodeOuts>>();
  const keysCache = new Map<string, ScriptKeys>();
  const outsOf = (t: StoredTx) => {
    let o = decodedOuts.get(t.txNum);
    if (o === undefined) {
      o = decodeOuts(t.outs);
      decodedOuts.set(t.txNum, o);
    }
    return o;
  };
  const keysOf = (txNum: number, vout: number, script: Uint8Array) => {
    const id = `${txNum}:${vout}`;
    let k = keysCache.get(id);
    if (k === undefined) {
      k = scriptKeys(script);
      keysCache.set(id, k);
    }
    return k;
  };
  const inBlock = new Map<number, StoredTx>();
  for (const t of blockTxs) inBlock.set(t.txNum, t);

  for (const t of blockTxs) {
    if (t.txNum < base || t.txNum >= base + TX_NUM_SPAN) throw new RangeError(`tx_num ${t.txNum} is not in block ${height}`);
    acc.beginTx(t.txNum, t.txNum - base);
    for (const ref of decodeIns(t.ins)) {
      const prevNum = Number(ref.txNum);
      const prev = inBlock.get(prevNum) ?? prevTxs.get(prevNum);
      if (prev === undefined) throw new RangeError(`undo of block ${height}: prevout tx_num ${prevNum} is not in the index`);
      const out = outsOf(prev)[ref.vout];
      if (out === undefined) throw new RangeError(`undo of block ${height}: prevout ${prevNum}:${ref.vout} does not exist`);
      const k = keysOf(prevNum, ref.vout, out.script);
      acc.add(k, out.value, -1);
      if (prevNum < base) restored.push({ txid: prev.txid, vout: ref.vout, txNum: prevNum, key: typeof k === 'string' ? k : null, keys: k, value: out.value, script: out.script });
    }
    outsOf(t).forEach((out, v) => {
      acc.add(keysOf(t.txNum, v, out.script), out.value, 1);
      // Outputs spent inside the block are not in utxos either; deleting them is a no-op.
      if (!isUnspendable(out.script)) createdOutpoints.push({ txid: t.txid, vout: v });
    });
  }
  return { createdOutpoints, restored, balances: acc.balances, keys: [...acc.history.keys()], touches: acc.touches };
}
