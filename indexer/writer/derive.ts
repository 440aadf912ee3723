/**
 * PURE: the uuid-keyed uses of the one transaction derivation (derive-tx.ts). `deriveBlock`: a
 * decoded block, its height and a prevout lookup → the rows and per-address deltas the index
 * stores for it (electrs `index_single_block`): one `txs` row per transaction (packed outputs
 * and input references), the outputs left unspent, the earlier outputs it spends, the balance
 * delta and history entries of every address, and (on request) per address and transaction the
 * sats received and sent, from which events are made. `deriveUndo` gives the same deltas from
 * the stored rows, so undo is the exact inverse. `deriveMempoolTx`: a mempool transaction's
 * rows (outputs, spends, per-address amounts, fee). No I/O.
 * @module
 */
import type { DecodedBlock } from '../../src/bitcoin/block.js';
import { HEADER_BYTES } from '../../src/bitcoin/block.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { OutputCursor, type DecodedTx, type TxInput, type TxOutput } from '../../src/bitcoin/tx.js';
import { isCanonicalTemplate } from '../../src/db/address-key.js';
import { writeUuidBytes } from '../../src/db/uuid-bytes.js';
import { decodeIns, decodeOuts, PackedWriter, type PackedOut } from '../../src/db/packed.js';
import { txNumOf } from '../../src/db/tx-num.js';
import { SpentGroupKey } from '../../src/db/spent-groups.js';
import { scriptKeys, type ScriptKeys } from './address-keys.js';
import { deriveOutputs, deriveTx, txKindAt, type TxSink } from './derive-tx.js';
import type { MempoolTxRow } from '../mempool-rows.js';
import type { ScriptAlias } from './script-aliases.js';
import { TxidMap } from './txid-maps.js';

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
    super(`prevout ${hashToHex(txid)}:${vout} spent by ${hashToHex(spender)} is not in the index`);
  }
}

export interface TxRow {
  readonly txNum: number;
  readonly txid: Uint8Array;
  readonly outs: Buffer;
  readonly ins: Buffer;
  /** `txs.spent_group` (src/db/spent-groups.ts): the one group it spends from, else null. */
  readonly spentGroup: number | null;
  /** Serialized bytes, witness included. */
  readonly size: number;
  /** BIP141 weight. */
  readonly weight: number;
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

/** Adds `sats` and `count` to `key`'s delta in `map` (the one place deltas are summed). */
export function addDelta(map: Map<string, Delta>, key: string, sats: bigint, count: number): void {
  const d = map.get(key);
  if (d === undefined) map.set(key, { sats, count });
  else {
    d.sats += sats;
    d.count += count;
  }
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
  /**
   * The block's row of `block_undo` (the outs format: value and script): the outputs of earlier
   * blocks that the block spends, in input order, from which undo restores them; then the
   * outputs of the block itself that it spends, in input order, which undo reads only when the
   * node no longer has the block (stored-block.ts).
   */
  readonly undo: Uint8Array;
  readonly balances: Map<string, Delta>;
  /** Ascending tx_nums per address key. */
  readonly history: Map<string, number[]>;
  /** Per (address, transaction), when asked for with `touches: true`. */
  readonly touches: Touch[] | undefined;
  /** The script aliases of its outputs, each once. */
  readonly aliases: ScriptAlias[];
  /** Positions of its transactions carrying an Open Assets marker. */
  readonly assetCandidates: number[];
  /** Each candidate's first input's script (the issuance's asset ID), by position. */
  readonly assetFirstScripts: Map<number, Uint8Array>;
}

export interface DeriveOptions {
  /** Collect `touches` (received/sent per address and transaction) for events. */
  touches?: boolean;
  /** The outputs' keys, computed beforehand (`outputKeys(block)`), e.g. while a query runs. */
  outputKeys?: readonly (readonly ScriptKeys[])[];
  /** The outputs the block's own transactions spend, computed beforehand (`blockSpends(block).spentHere`). */
  spentHere?: readonly (Uint8Array | undefined)[];
}

/** The address keys of every output of `block`, per transaction and vout. */
export function outputKeys(block: DecodedBlock): ScriptKeys[][] {
  return outputKeysOf(block, new Array<ScriptKeys[]>(block.txs.length), 0, block.txs.length);
}

/** `outputKeys` of the transactions from position `from` up to (not including) `end`, into `keys`. */
export function outputKeysOf(block: DecodedBlock, keys: ScriptKeys[][], from: number, end: number): ScriptKeys[][] {
  for (let i = from; i < end; i++) keys[i] = block.txs[i]!.outputs.map((o) => scriptKeys(o.script));
  return keys;
}

/** Binary-string key of a 32-byte hash (cheaper than hex as a Map key). */
export function hashKey(h: Uint8Array): string {
  return Buffer.from(h.buffer, h.byteOffset, 32).toString('latin1');
}

/** What every sink's prevout carries: its value, its script, and its keys when the index stored them. */
type SinkPrevout = { readonly value: bigint; readonly script: Uint8Array; readonly keys?: ScriptKeys };

/**
 * Balances, history and touches by uuid key, transaction by transaction: the string-keyed side
 * of `TxSink` (`address`, `cosigner`) shared by the per-block, undo and mempool sinks.
 */
class Accumulator {
  readonly balances = new Map<string, Delta>();
  readonly history = new Map<string, number[]>();
  readonly touches: Touch[] | undefined;
  private txTouches = new Map<string, Touch>();
  protected txNum = -1;
  protected pos = -1;
  private readonly withBalances: boolean;
  private readonly withHistory: boolean;

  constructor(opts: { touches: boolean; balances?: boolean; history?: boolean }) {
    this.touches = opts.touches ? [] : undefined;
    this.withBalances = opts.balances !== false;
    this.withHistory = opts.history !== false;
  }

  beginTx(txNum: number, pos: number): void {
    this.txNum = txNum;
    this.pos = pos;
    if (this.touches) this.txTouches = new Map();
  }

  private hist(key: string): void {
    if (!this.withHistory) return;
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

  address(key: string, value: bigint, dir: 1 | -1): void {
    this.hist(key);
    if (this.withBalances) addDelta(this.balances, key, dir === 1 ? value : -value, dir);
    const t = this.touch(key);
    if (t) {
      if (dir === 1) t.received += value;
      else t.sent += value;
    }
  }

  cosigner(key: string): void {
    this.hist(key);
    this.touch(key);
  }

  /** A prevout's address keys: the ones the index stored, else computed from its script. */
  keysOf(p: SinkPrevout): ScriptKeys {
    return p.keys !== undefined ? p.keys : scriptKeys(p.script);
  }

  amountOf(p: SinkPrevout): bigint {
    return p.value;
  }

  /** Undo and the mempool leave aliases and asset markers to others (script aliases are never removed; undo deletes colors by range; the mempool colors its own). */
  assetMarker(): void {}

  alias(_alias: ScriptAlias): void {}
}

/** The per-block sink: in-block prevouts first, then `lookup`; one writer each for packed outs and ins. */
class BlockSink extends Accumulator implements TxSink<TxInput, string, Prevout> {
  readonly base: number;
  /** Position of each transaction already derived, by txid. */
  readonly local = new TxidMap<number>();
  readonly outKeys: ScriptKeys[][];
  /** Per transaction, a mark for each output spent inside the block (known from the block alone, before deriving). */
  readonly spentHere: readonly (Uint8Array | undefined)[];
  readonly spent: SpentRow[] = [];
  readonly outsW: PackedWriter;
  readonly insW: PackedWriter;
  /** The current transaction's `txs.spent_group`. */
  readonly spentKey = new SpentGroupKey();
  /** The spent outputs of earlier blocks, in input order (BlockRows.undo). */
  readonly undoW: PackedWriter;
  /** The block's own outputs it spends, in input order (the end of BlockRows.undo). */
  readonly hereW: PackedWriter;
  private txid: Uint8Array = new Uint8Array(32);
  private keys: ScriptKeys[] = [];
  private given: readonly ScriptKeys[] | undefined;
  /** The current output's address key as bytes (`output`). */
  private readonly keyBytes = new Uint8Array(16);
  /** Aliases by own key (hex): a script repeated in the block gives one row. */
  readonly aliases = new Map<string, ScriptAlias>();
  readonly assetCandidates: number[] = [];
  readonly assetFirstScripts = new Map<number, Uint8Array>();
  /** The script the current transaction's first input spends. */
  private firstPrevScript: Uint8Array | null = null;

  constructor(
    private readonly block: DecodedBlock,
    height: number,
    private readonly lookup: PrevoutLookup,
    private readonly opts: DeriveOptions,
  ) {
    super({ touches: opts.touches === true });
    const n = block.txs.length;
    this.base = txNumOf(height, 0);
    this.outKeys = new Array(n);
    this.spentHere = opts.spentHere ?? blockSpends(block).spentHere;
    this.outsW = new PackedWriter(block.size);
    this.insW = new PackedWriter(n * 16 + 64);
    this.undoW = new PackedWriter(n * 64 + 64);
    this.hereW = new PackedWriter(64);
  }

  begin(pos: number): void {
    const tx = this.block.txs[pos]!;
    this.beginTx(this.base + pos, pos);
    this.txid = tx.txid;
    this.keys = new Array<ScriptKeys>(tx.outputs.length);
    this.outKeys[pos] = this.keys;
    this.given = this.opts.outputKeys?.[pos];
    this.spentKey.reset();
    this.firstPrevScript = null;
  }

  end(): void {
    this.local.set(this.txid, this.pos);
  }

  resolve(input: TxInput): Prevout {
    const j = this.local.get(input.prevTxid);
    if (j !== undefined) {
      const out = this.block.txs[j]!.outputs[input.vout];
      if (out === undefined) throw new MissingPrevoutError(input.prevTxid, input.vout, this.txid);
      return { txNum: this.base + j, value: out.value, script: out.script, keys: this.outKeys[j]![input.vout]! };
    }
    const p = this.lookup(input.prevTxid, input.vout);
    if (p === undefined) throw new MissingPrevoutError(input.prevTxid, input.vout, this.txid);
    return p;
  }

  spend(p: Prevout, input: TxInput): void {
    this.firstPrevScript ??= p.script;
    const j = p.txNum - this.base;
    if (j >= 0) this.hereW.packOut(p.value, p.script);
    else {
      this.spent.push({ txid: input.prevTxid, vout: input.vout, txNum: p.txNum });
      this.undoW.packOut(p.value, p.script);
    }
    this.insW.packIn(p.txNum, input.vout);
    this.spentKey.add(p.txNum);
  }

  outputKeys(out: TxOutput, vout: number): ScriptKeys {
    const k = this.given !== undefined ? this.given[vout]! : scriptKeys(out.script);
    this.keys[vout] = k;
    return k;
  }

  /**
   * A script of the usual templates is its own canonical script, so its tag is its address key's
   * first bytes (out-tags.ts), read from the key outputKeys() just gave: no second hash of the
   * script, as the bulk writer tags (bulk-batch.ts).
   */
  output(vout: number, out: TxOutput): void {
    const key = this.keys[vout];
    if (
      typeof key === 'string' &&
      out instanceof OutputCursor &&
      isCanonicalTemplate(out.bytes, out.scriptAt, out.scriptLength) &&
      writeUuidBytes(this.keyBytes, 0, key)
    ) {
      const sats = out.sats;
      this.outsW.packTaggedOwn(vout, sats >= 0 ? sats : out.value, this.keyBytes);
    } else this.outsW.packTaggedOut(vout, out.value, out.script);
  }

  /** (The block's unspent rows come from `blockCreated`, the same derivation of its outputs.) */
  unspent(): void {}

  override assetMarker(): void {
    this.assetCandidates.push(this.pos);
    this.assetFirstScripts.set(this.pos, this.firstPrevScript!);
  }

  /** The block's `block_undo` row: the spent outputs of earlier blocks, then its own it spends. */
  undoRow(): Uint8Array {
    const row = new Uint8Array(this.undoW.len + this.hereW.len);
    row.set(this.undoW.buf.subarray(0, this.undoW.len));
    row.set(this.hereW.buf.subarray(0, this.hereW.len), this.undoW.len);
    return row;
  }

  override alias(alias: ScriptAlias): void {
    this.aliases.set(alias.scriptKey.toString('hex'), alias);
  }
}

/** The outputs' side of a block's derivation: the unspent rows only (`blockCreated`). */
class CreatedSink implements TxSink<TxInput, string, Prevout> {
  readonly rows: UtxoRow[] = [];
  readonly amounts = false;
  private txid: Uint8Array = new Uint8Array(32);
  private txNum = 0;
  private given: readonly ScriptKeys[] = [];
  private spent: Uint8Array | undefined;

  begin(txid: Uint8Array, txNum: number, keys: readonly ScriptKeys[], spent: Uint8Array | undefined): void {
    this.txid = txid;
    this.txNum = txNum;
    this.given = keys;
    this.spent = spent;
  }

  outputKeys(_out: TxOutput, vout: number): ScriptKeys {
    return this.given[vout]!;
  }

  unspent(vout: number, keys: ScriptKeys, key: string | null, out: TxOutput): void {
    if (this.spent?.[vout] === 1) return;
    this.rows.push({ txid: this.txid, vout, txNum: this.txNum, key, keys, value: out.value, script: out.script });
  }

  // Inputs are not derived here; outputs give nothing else that this sink keeps.
  resolve(): Prevout {
    throw new RangeError('blockCreated derives no inputs');
  }
  keysOf(): ScriptKeys {
    return null;
  }
  amountOf(): bigint {
    return 0n;
  }
  spend(): void {}
  output(): void {}
  address(): void {}
  cosigner(): void {}
  assetMarker(): void {}
  alias(): void {}
}

/**
 * The unspent outputs the transactions of `block` at positions `from` to `end` (not included)
 * create and no transaction of the block spends: `deriveBlock(...).created` of those positions,
 * from the block alone (each transaction's outputs derived as `deriveTx` derives them, with the
 * keys `outputKeysOf` computed and the block's own spends `blockSpends(block).spentHere`), so a
 * writer can copy them before it knows a single prevout.
 */
export function blockCreated(
  block: DecodedBlock,
  height: number,
  keys: readonly (readonly ScriptKeys[])[],
  spentHere: readonly (Uint8Array | undefined)[],
  from = 0,
  end = block.txs.length,
): UtxoRow[] {
  const sink = new CreatedSink();
  const base = txNumOf(height, 0);
  for (let i = from; i < end; i++) {
    const tx = block.txs[i]!;
    sink.begin(tx.txid, base + i, keys[i]!, spentHere[i]);
    deriveOutputs(tx, txKindAt(height, i, tx.isCoinbase), sink);
  }
  return sink.rows;
}

/**
 * The rows of `block` at `height`. Inputs spending outputs of earlier transactions of the same
 * block are resolved here; all others through `lookup`.
 * @throws MissingPrevoutError when `lookup` does not know a prevout.
 */
export function deriveBlock(block: DecodedBlock, height: number, lookup: PrevoutLookup, opts: DeriveOptions = {}): BlockRows {
  const d = new BlockDerivation(block, height, lookup, opts);
  d.through(block.txs.length);
  return d.rows();
}

/**
 * `deriveBlock` a part at a time: `through(n)` derives the transactions before position `n`
 * (their prevouts must be known to `lookup` by then), `rows()` the block's rows once all are.
 * The per-block writer derives each part while PostgreSQL deletes the next part's spent outputs.
 */
export class BlockDerivation {
  private readonly sink: BlockSink;
  private readonly outsAt: number[];
  private readonly insAt: number[];
  private readonly groups: (number | null)[];
  private next = 0;

  constructor(
    private readonly block: DecodedBlock,
    private readonly height: number,
    lookup: PrevoutLookup,
    opts: DeriveOptions = {},
  ) {
    const n = block.txs.length;
    this.sink = new BlockSink(block, height, lookup, opts);
    this.outsAt = new Array<number>(n + 1);
    this.insAt = new Array<number>(n + 1);
    this.groups = new Array<number | null>(n);
  }

  /** Derives the transactions from the last one derived up to (not including) position `end`. */
  through(end: number): void {
    const { block, height, sink, outsAt, insAt, groups } = this;
    for (let i = this.next; i < end; i++) {
      const tx = block.txs[i]!;
      sink.begin(i);
      insAt[i] = sink.insW.len;
      outsAt[i] = sink.outsW.len;
      deriveTx(tx, txKindAt(height, i, tx.isCoinbase), sink);
      insAt[i + 1] = sink.insW.len;
      outsAt[i + 1] = sink.outsW.len;
      groups[i] = sink.spentKey.key();
      sink.end();
    }
    this.next = Math.max(this.next, end);
  }

  /**
   * The `txs` rows of positions `from` to `end` (not included), all derived already: final once
   * derived (a later transaction changes no earlier one's row), so they can be written while
   * the rest of the block is derived. The views stay valid while the writers grow.
   */
  txRows(from: number, end: number): TxRow[] {
    const { block, height, sink, outsAt, insAt, groups } = this;
    if (this.next < end) throw new RangeError(`block ${height}: ${this.next} of ${end} transactions derived`);
    const rows: TxRow[] = new Array(end - from);
    for (let i = from; i < end; i++) {
      const tx = block.txs[i]!;
      rows[i - from] = {
        txNum: sink.base + i,
        txid: tx.txid,
        outs: sink.outsW.view(outsAt[i]!, outsAt[i + 1]!),
        ins: sink.insW.view(insAt[i]!, insAt[i + 1]!),
        spentGroup: groups[i]!,
        size: tx.size,
        weight: tx.weight,
      };
    }
    return rows;
  }

  /** The block's rows (every transaction derived). */
  rows(): BlockRows {
    const { block, height, sink } = this;
    const n = block.txs.length;
    if (this.next < n) throw new RangeError(`block ${height}: ${this.next} of ${n} transactions derived`);
    const rows = this.txRows(0, n);

    const header = block.bytes.subarray(0, HEADER_BYTES);
    // Read by a turn of blocks (apply-turn.ts); the per-block writer copies them before it derives.
    let created: UtxoRow[] | undefined;
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
      get created() {
        return (created ??= blockCreated(block, height, sink.outKeys, sink.spentHere));
      },
      spent: sink.spent,
      undo: sink.undoRow(),
      balances: sink.balances,
      history: sink.history,
      touches: sink.touches,
      aliases: [...sink.aliases.values()],
      assetCandidates: sink.assetCandidates,
      assetFirstScripts: sink.assetFirstScripts,
    };
  }
}

/** The inputs of `block` that spend outputs of earlier blocks (what the index must supply). */
export function externalOutpoints(block: DecodedBlock): { txid: Uint8Array; vout: number }[] {
  return externalOutpointsByTx(block).flat();
}

/** What a block's inputs spend, from the block alone (one pass over its inputs). */
export interface BlockSpends {
  /** Per transaction, in block order, the outpoints of earlier blocks its inputs spend (what the index must supply). */
  readonly external: { txid: Uint8Array; vout: number }[][];
  /**
   * Per position, a mark for each output of the transaction that a later transaction of the
   * block spends (undefined: none), as the derivation resolves inputs: by the txid of an earlier
   * transaction of the block.
   */
  readonly spentHere: (Uint8Array | undefined)[];
}

/**
 * `blockSpends` one transaction at a time, in block order: a transaction's inputs are resolved
 * against the txids of the transactions before it alone, so the writer can send the first
 * transactions' spends before the later ones' txids are even hashed.
 */
export class SpendWalk {
  /** `BlockSpends.spentHere`, complete once every transaction is walked. */
  readonly spentHere: (Uint8Array | undefined)[];
  private readonly local = new TxidMap<number>();
  private next = 0;

  constructor(private readonly block: DecodedBlock) {
    this.spentHere = new Array<Uint8Array | undefined>(block.txs.length);
  }

  /** The next transaction's outpoints of earlier blocks, in input order. */
  step(): { txid: Uint8Array; vout: number }[] {
    const i = this.next++;
    const tx: DecodedTx | undefined = this.block.txs[i];
    if (tx === undefined) throw new RangeError(`the block has ${this.block.txs.length} transactions`);
    const out: { txid: Uint8Array; vout: number }[] = [];
    if (!(i === 0 && tx.isCoinbase)) {
      for (const input of tx.inputs) {
        const j = this.local.get(input.prevTxid);
        if (j === undefined) out.push({ txid: input.prevTxid, vout: input.vout });
        else (this.spentHere[j] ??= new Uint8Array(this.block.txs[j]!.outputCount))[input.vout] = 1;
      }
    }
    this.local.set(tx.txid, i);
    return out;
  }
}

/** The outpoints `block`'s inputs spend: of earlier blocks, per transaction, and of its own transactions. */
export function blockSpends(block: DecodedBlock): BlockSpends {
  const walk = new SpendWalk(block);
  const external = block.txs.map(() => walk.step());
  return { external, spentHere: walk.spentHere };
}

/** `externalOutpoints` per transaction, in block order. */
export function externalOutpointsByTx(block: DecodedBlock): { txid: Uint8Array; vout: number }[][] {
  return blockSpends(block).external;
}

/** A stored `txs` row of the block undone: its txid and input references (the prevouts' tx_nums). */
export interface StoredTx {
  readonly txNum: number;
  readonly txid: Uint8Array;
  readonly ins: Uint8Array;
}

/**
 * The outputs of earlier blocks a block spent, as undo gets them: its `block_undo` row
 * (`BlockRows.undo`: the outs format, one output per input spending an earlier block, in input
 * order, then — in rows written since the block's own spent outputs were kept — one per input
 * spending an output of the block itself), or the node's list per transaction of every input's
 * prevout (`/rest/spenttxouts`, `getblock <hash> 3`: chain-source.ts `getSpentTxOuts`).
 */
export type UndoSpent = { readonly undo: Uint8Array } | { readonly perTx: readonly (readonly { value: bigint; script: Uint8Array }[])[] };

export interface UndoRows {
  /** Outputs of earlier blocks that the block spent: unspent again after the undo. */
  readonly restored: UtxoRow[];
  /** The block's balance deltas (undo subtracts them). */
  readonly balances: Map<string, Delta>;
  /** Addresses whose history holds entries of the block. */
  readonly keys: string[];
  readonly touches: Touch[] | undefined;
}

/**
 * What undo reads of a block: the node's decoded block, or the same fields rebuilt from the
 * index's rows when the node no longer has it (stored-block.ts).
 */
export interface UndoBlock {
  readonly txs: readonly {
    readonly txid: Uint8Array;
    readonly isCoinbase: boolean;
    readonly inputs: readonly { readonly prevTxid: Uint8Array; readonly vout: number }[];
    readonly outputs: readonly TxOutput[];
  }[];
}

/** An input of the block undone: its stored reference (prevout tx_num, vout) and its place. */
interface UndoInput {
  readonly txNum: number;
  readonly vout: number;
  readonly prevTxid: Uint8Array;
  /** Its index among its transaction's inputs. */
  readonly at: number;
}

/** A prevout as undo resolves it. */
interface UndoPrevout {
  readonly txNum: number;
  readonly txid: Uint8Array;
  readonly vout: number;
  readonly value: bigint;
  readonly script: Uint8Array;
  readonly keys: ScriptKeys;
}

/** The undo sink: the block's own outputs from the block, earlier ones from `spent`; keys computed once per outpoint. */
class UndoSink extends Accumulator implements TxSink<UndoInput, string, UndoPrevout> {
  readonly restored: UtxoRow[] = [];
  private readonly keysCache = new Map<string, ScriptKeys>();
  readonly undo: PackedOut[] | undefined;
  /** The next entry of `undo` to hand out. */
  next = 0;
  /** Inputs spending an output of the block itself. */
  here = 0;

  get undoCount(): number {
    return this.undo?.length ?? 0;
  }

  constructor(
    private readonly height: number,
    readonly base: number,
    private readonly block: UndoBlock,
    touches: boolean,
    private readonly spent: UndoSpent,
  ) {
    super({ touches });
    this.undo = 'undo' in spent ? decodeOuts(spent.undo) : undefined;
  }

  private keysAt(txNum: number, vout: number, script: Uint8Array): ScriptKeys {
    const id = `${txNum}:${vout}`;
    let k = this.keysCache.get(id);
    if (k === undefined) {
      k = scriptKeys(script);
      this.keysCache.set(id, k);
    }
    return k;
  }

  begin(pos: number): void {
    this.beginTx(this.base + pos, pos);
  }

  resolve(ref: UndoInput): UndoPrevout {
    const { txNum, vout } = ref;
    let out: { value: bigint; script: Uint8Array } | undefined;
    if (txNum >= this.base) {
      out = this.block.txs[txNum - this.base]?.outputs[vout];
      this.here++;
    } else if (this.undo !== undefined) out = this.undo[this.next++];
    else out = 'perTx' in this.spent ? this.spent.perTx[this.pos]?.[ref.at] : undefined;
    if (out === undefined) throw new RangeError(`undo of block ${this.height}: prevout ${txNum}:${vout} is not known`);
    return { txNum, txid: ref.prevTxid, vout, value: out.value, script: out.script, keys: this.keysAt(txNum, vout, out.script) };
  }

  spend(p: UndoPrevout): void {
    const k = p.keys;
    if (p.txNum < this.base)
      this.restored.push({
        txid: p.txid,
        vout: p.vout,
        txNum: p.txNum,
        key: typeof k === 'string' ? k : null,
        keys: k,
        value: p.value,
        script: p.script,
      });
  }

  outputKeys(out: TxOutput, vout: number): ScriptKeys {
    return this.keysAt(this.txNum, vout, out.script);
  }

  output(): void {}

  /** The block's own outputs leave utxos by their tx_num range (apply.ts undoBlock). */
  unspent(): void {}
}

/**
 * The exact inverse data of `block` at `height` from the block itself (as the node gives it),
 * its stored transactions (`blockTxs`, in position order: their input references give each
 * prevout's tx_num) and the outputs of earlier blocks it spent (`spent`). Nothing is read from
 * the stored outputs: the index need not keep scripts for undo.
 * @throws RangeError when the stored rows are not the block's, a prevout is missing, or a
 * `block_undo` row does not hold one output per input spending an earlier block's output.
 */
export function deriveUndo(
  height: number,
  block: UndoBlock,
  blockTxs: readonly StoredTx[],
  spent: UndoSpent,
  opts: DeriveOptions = {},
): UndoRows {
  const base = txNumOf(height, 0);
  if (blockTxs.length !== block.txs.length)
    throw new RangeError(`undo of block ${height}: the index holds ${blockTxs.length} transactions, the block ${block.txs.length}`);
  const sink = new UndoSink(height, base, block, opts.touches === true, spent);
  block.txs.forEach((tx, pos) => {
    const t = blockTxs[pos]!;
    if (t.txNum !== base + pos || hashKey(t.txid) !== hashKey(tx.txid))
      throw new RangeError(`undo of block ${height}: stored transaction ${t.txNum} is not the block's transaction ${pos}`);
    sink.begin(pos);
    const refs = decodeIns(t.ins);
    const coinbase = pos === 0 && tx.isCoinbase;
    if (!coinbase && refs.length !== tx.inputs.length)
      throw new RangeError(
        `undo of block ${height}: stored transaction ${t.txNum} has ${refs.length} inputs, the block's ${tx.inputs.length}`,
      );
    const inputs: UndoInput[] = coinbase
      ? []
      : refs.map((r, at) => {
          const input = tx.inputs[at]!;
          if (r.vout !== input.vout) throw new RangeError(`undo of block ${height}: stored input ${t.txNum}:${at} is not the block's`);
          return { txNum: Number(r.txNum), vout: r.vout, prevTxid: input.prevTxid, at };
        });
    deriveTx({ inputs, outputs: tx.outputs }, txKindAt(height, pos, tx.isCoinbase), sink);
  });
  // (a row from before the block's own spent outputs were kept holds the earlier ones only)
  if (sink.undo !== undefined && sink.undoCount !== sink.next && sink.undoCount !== sink.next + sink.here)
    throw new RangeError(
      `undo of block ${height}: its block_undo row holds ${sink.undoCount} outputs, its inputs spend ${sink.next} of earlier blocks and ${sink.here} of its own`,
    );
  return { restored: sink.restored, balances: sink.balances, keys: [...sink.history.keys()], touches: sink.touches };
}

/** A prevout of a mempool transaction: a confirmed unspent output or a mempool output. */
export type MempoolPrevout = Omit<Prevout, 'txNum'>;

/** The mempool sink: sums for the fee, outputs and spends as the mempool tables hold them, touches. */
class MempoolSink extends Accumulator implements TxSink<TxInput, string, MempoolPrevout> {
  inSum = 0n;
  outSum = 0n;
  readonly outputs: MempoolTxRow['outputs'] = [];
  readonly spends: MempoolTxRow['spends'] = [];

  constructor(
    private readonly txid: Uint8Array,
    private readonly lookup: (txid: Uint8Array, vout: number) => MempoolPrevout | undefined,
  ) {
    super({ touches: true, balances: false, history: false });
    this.beginTx(-1, 0);
  }

  resolve(input: TxInput): MempoolPrevout {
    const p = this.lookup(input.prevTxid, input.vout);
    if (p === undefined) throw new MissingPrevoutError(input.prevTxid, input.vout, this.txid);
    return p;
  }

  spend(p: MempoolPrevout, input: TxInput): void {
    this.inSum += p.value;
    this.spends.push({ prevTxid: input.prevTxid, prevVout: input.vout });
  }

  outputKeys(out: TxOutput): ScriptKeys {
    return scriptKeys(out.script);
  }

  output(_vout: number, out: TxOutput): void {
    this.outSum += out.value;
  }

  unspent(vout: number, _keys: ScriptKeys, key: string | null, out: TxOutput): void {
    this.outputs.push({ vout, key, value: out.value, script: out.script });
  }
}

/**
 * PURE: the rows of one mempool transaction, its prevouts found by `lookup` (confirmed unspent
 * outputs and mempool outputs). The fee is inputs minus outputs.
 * @throws MissingPrevoutError when `lookup` does not know a prevout.
 */
export function deriveMempoolTx(
  tx: DecodedTx,
  lookup: (txid: Uint8Array, vout: number) => MempoolPrevout | undefined,
  firstSeen: Date,
): MempoolTxRow {
  const sink = new MempoolSink(tx.txid, lookup);
  deriveTx(tx, 'spends', sink);
  return {
    txid: tx.txid,
    raw: tx.bytes,
    firstSeen,
    fee: sink.inSum - sink.outSum,
    vsize: tx.vsize,
    outputs: sink.outputs,
    spends: sink.spends,
    addresses: sink.touches!.map((t) => ({ key: t.key, received: t.received, sent: t.sent })),
  };
}
