/**
 * The bulk path's sink of the one transaction derivation (derive-tx.ts): blocks are turned
 * straight into binary COPY rows for one batch (blocks, txs, unspent outputs, spends of earlier
 * batches, history chunks per address) with no per-row objects, strings or maps: address keys
 * stay 16-byte binaries, inputs resolve through the outpoint cache (outputs of the same block
 * and batch included, since each transaction's outputs enter the cache right after it). What a
 * transaction gives is decided by `deriveTx`, as for the per-block path; bulk.test.ts compares
 * the whole indexes the two paths build.
 * The `utxos` rows of the outputs still unspent at the end of the batch are written then, from
 * the batch's blocks (kept until the batch is recycled): an output spent within its batch, about
 * half of them, costs a few typed-array writes and no row. Each output of the batch has a record
 * (its transaction, its script's place in its block, its key, whether it is unspent), found from
 * its tx_num and vout, so the outpoint cache need not say where it is.
 * @module
 */
import type { DecodedBlock } from '../../src/bitcoin/block.js';
import { HEADER_BYTES } from '../../src/bitcoin/block.js';
import { DecodedInput, InputCursor, OutputCursor, type TxInput, type TxOutput } from '../../src/bitcoin/tx.js';
import { PackedWriter } from '../../src/db/packed.js';
import { isCanonicalTemplate } from '../../src/db/address-key.js';
import { outputKeyBytes } from './address-keys.js';
import { BinaryCopy } from './copy-binary.js';
import type { ScriptAlias } from './script-aliases.js';
import { MissingPrevoutError } from './derive.js';
import { deriveTx, txKindAt, type Keys, type TxSink } from './derive-tx.js';
import { TX_NUM_SPAN, txNumOf } from '../../src/db/tx-num.js';
import { SpentGroupKey } from '../../src/db/spent-groups.js';
import { PartWriter, PART_TXS } from '../../src/db/tx-parts.js';
import { HistoryGroups } from './history-groups.js';
import type { OutpointCache } from './outpoint-cache.js';

/** A batch of blocks as COPY data, built block by block: the bulk path's sink of deriveTx. */
export class BulkBatch implements TxSink<TxInput, Uint8Array, number> {
  readonly blocks: BinaryCopy;
  /** The batch's transactions: `txs` rows, or with `parts` `tx_parts` rows (src/db/tx-parts.ts). */
  readonly txs: BinaryCopy;
  readonly spent: BinaryCopy;
  /** Script aliases of the batch's P2PK and bare multisig outputs (repeats included: the finish keeps one of each). */
  readonly aliases: BinaryCopy;
  /** The batch's history entries by address. */
  private readonly groups: HistoryGroups;
  /** The batch's blocks' bytes (its outputs' values and scripts are read from them by `utxos()`). */
  private raws: Uint8Array[] = [];
  /** Per transaction of the batch (in order): its txid (32 bytes each), its tx_num, its block, its first output's record. */
  private txids: Uint8Array;
  private txNums: Float64Array;
  private txBlock: Int32Array;
  private txOut: Int32Array;
  /** The index of each block's first transaction. */
  private blockTx: number[] = [];
  /** The first tx_num of the batch (outputs with a smaller one were created by earlier batches). */
  private firstTxNum = Infinity;
  /**
   * Per output of the batch (in order): its transaction, its script's offset and length in its
   * block, its single key (4 words), and its state (REC_*).
   */
  private recTx: Int32Array;
  private recScript: Int32Array;
  private recLen: Int32Array;
  private recKey: Int32Array;
  private recState: Uint8Array;
  private recCount = 0;
  /** The COPY data `utxos()` and `history()` give (kept for the batch that recycles this one). */
  private readonly utxoOut: BinaryCopy;
  private readonly historyOut: BinaryCopy;
  readonly blockHashes: Buffer[] = [];
  /**
   * The batch's transactions carrying an Open Assets marker (colored by the bulk finish): each
   * one's tx_num, the output its first input spends, and that output's script when it was made
   * in this batch (else the finish takes it from `utxos`, where an earlier batch left it).
   */
  readonly assetCandidates: { txNum: number; prevTxNum: number; prevVout: number; script: Uint8Array | null }[] = [];
  readonly heights: number[] = [];
  txCount = 0;
  lastHash: Uint8Array | null = null;
  lastHeight = -1;
  private readonly outsW = new PackedWriter(1 << 12);
  private readonly insW = new PackedWriter(1 << 10);
  /** The current transaction's `txs.spent_group` (src/db/spent-groups.ts). */
  private readonly spentKey = new SpentGroupKey();
  /** The output the current transaction's first input spends. */
  private firstPrevTxNum = -1;
  private firstPrevVout = 0;
  /** The transaction being derived. */
  private txNum = -1;
  private txid: Uint8Array = new Uint8Array(32);
  /** Its index in the batch, and where its block's bytes start in their buffer. */
  private txIdx = 0;
  private blockBase = 0;
  /** A spent prevout's single key, as bytes (filled from the cache's words, read at once). */
  private readonly prevKey = new Uint8Array(16);
  /** The current output's single key. */
  private readonly outKey = new Uint8Array(16);

  /** The part being built (with `parts`): its transactions so far. */
  private readonly part = new PartWriter();

  /**
   * `recycled`: a batch whose COPY data is written and no longer needed; this batch takes over
   * its buffers and arrays (emptied), and it must not be used again.
   */
  constructor(
    readonly id: number,
    private readonly cache: OutpointCache,
    /** Transaction parts on: the batch writes parts of 64 (`tx_parts`) rather than `txs` rows. */
    readonly parts: boolean,
    recycled?: BulkBatch,
  ) {
    if (recycled) {
      this.blocks = recycled.blocks.reset();
      this.txs = recycled.txs.reset();
      this.spent = recycled.spent.reset();
      this.aliases = recycled.aliases.reset();
      this.utxoOut = recycled.utxoOut;
      this.historyOut = recycled.historyOut;
      recycled.raws = [];
      this.txids = recycled.txids;
      this.txNums = recycled.txNums;
      this.txBlock = recycled.txBlock;
      this.txOut = recycled.txOut;
      this.recTx = recycled.recTx;
      this.recScript = recycled.recScript;
      this.recLen = recycled.recLen;
      this.recKey = recycled.recKey;
      this.recState = recycled.recState;
      this.groups = recycled.groups;
      this.groups.reset();
    } else {
      this.blocks = new BinaryCopy(1 << 12);
      this.txs = new BinaryCopy(1 << 22);
      this.spent = new BinaryCopy(1 << 20);
      this.aliases = new BinaryCopy(1 << 12);
      this.utxoOut = new BinaryCopy(1 << 12);
      this.historyOut = new BinaryCopy(1 << 12);
      this.txids = new Uint8Array(32 << 14);
      this.txNums = new Float64Array(1 << 14);
      this.txBlock = new Int32Array(1 << 14);
      this.txOut = new Int32Array(1 << 14);
      this.recTx = new Int32Array(1 << 16);
      this.recScript = new Int32Array(1 << 16);
      this.recLen = new Int32Array(1 << 16);
      this.recKey = new Int32Array(4 << 16);
      this.recState = new Uint8Array(1 << 16);
      this.groups = new HistoryGroups();
    }
  }

  get blockCount(): number {
    return this.heights.length;
  }

  /** Room for `n` more transactions. */
  private reserveTxs(n: number): void {
    const need = this.txCount + n;
    if (need <= this.txNums.length) return;
    let cap = this.txNums.length * 2;
    while (cap < need) cap *= 2;
    this.txids = grown(this.txids, cap * 32);
    this.txNums = grown(this.txNums, cap);
    this.txBlock = grown(this.txBlock, cap);
    this.txOut = grown(this.txOut, cap);
  }

  /** Room for `n` more output records. */
  private reserveRecs(n: number): void {
    const need = this.recCount + n;
    if (need <= this.recState.length) return;
    let cap = this.recState.length * 2;
    while (cap < need) cap *= 2;
    this.recTx = grown(this.recTx, cap);
    this.recScript = grown(this.recScript, cap);
    this.recLen = grown(this.recLen, cap);
    this.recKey = grown(this.recKey, cap * 4);
    this.recState = grown(this.recState, cap);
  }

  /** The record of output `vout` of the batch's transaction `txNum` (at least firstTxNum). */
  private recordOf(txNum: number, vout: number): number {
    const height = Math.floor(txNum / TX_NUM_SPAN);
    const t = this.blockTx[height - this.heights[0]!]! + (txNum - height * TX_NUM_SPAN);
    return this.txOut[t]! + vout;
  }

  /**
   * Adds the block at `height`, the one after the batch's last. @throws MissingPrevoutError when
   * an input's output is unknown.
   */
  addBlock(block: DecodedBlock, height: number): void {
    if (this.heights.length > 0 && height !== this.lastHeight + 1)
      throw new RangeError(`bulk batch: block ${height} does not follow block ${this.lastHeight}`);
    const header = block.bytes.subarray(0, HEADER_BYTES);
    this.blocks
      .row(8)
      .int4(height)
      .bytea(block.hash)
      .bytea(block.header.prevHash)
      .bytea(header)
      .int4(block.header.time)
      .int4(block.txs.length)
      .int4(block.size)
      .int4(block.weight);
    this.blockHashes.push(Buffer.from(block.hash));
    if (this.heights.length === 0) this.firstTxNum = txNumOf(height, 0);
    this.heights.push(height);
    const blockIdx = this.raws.length;
    this.raws.push(block.bytes);
    this.blockBase = block.bytes.byteOffset;
    this.blockTx.push(this.txCount);
    const txs = block.txs;
    this.reserveTxs(txs.length);
    for (let i = 0; i < txs.length; i++) {
      const tx = txs[i]!;
      this.txNum = txNumOf(height, i);
      this.txid = tx.txid;
      const t = this.txCount;
      this.txIdx = t;
      this.txids.set(tx.txid, t * 32);
      this.txNums[t] = this.txNum;
      this.txBlock[t] = blockIdx;
      this.txOut[t] = this.recCount;
      this.reserveRecs(tx.outputCount);
      this.txCount = t + 1;
      this.insW.len = 0;
      this.outsW.len = 0;
      this.spentKey.reset();
      deriveTx(tx, txKindAt(height, i, tx.isCoinbase), this);
      if (this.parts) {
        // A part never spans two blocks: it ends at slot 63 or with the block.
        this.part.add(tx.txid, this.outsW.buf, this.outsW.len, this.insW.buf, this.insW.len);
        if (this.part.count === PART_TXS || i === txs.length - 1) {
          const p = this.part.take();
          this.txs
            .row(5)
            .int8(Math.floor(this.txNum / PART_TXS))
            .bytea(p.txids)
            .bytea(p.ends)
            .bytea(p.outs)
            .bytea(p.ins);
        }
        continue;
      }
      this.txs
        .row(5)
        .int8(this.txNum)
        .bytea(tx.txid)
        .byteaRange(this.outsW.buf, 0, this.outsW.len)
        .byteaRange(this.insW.buf, 0, this.insW.len);
      const key = this.spentKey.key();
      if (key === null) this.txs.null();
      else this.txs.int4(key);
    }
    this.lastHash = block.hash;
    this.lastHeight = height;
  }

  // TxSink: what deriveTx makes of the current transaction, as typed-array rows. Prevouts are
  // outpoint-cache slots; the cache keeps no amounts (balances are rebuilt from utxos at the
  // finish), so amounts are ignored here.

  resolve(input: TxInput): number {
    // A decoded block's input is read in place (no view of its txid is made).
    const slot =
      input instanceof InputCursor || input instanceof DecodedInput
        ? this.cache.findAt(input.src, input.outpointAt, input.vout)
        : this.cache.find(input.prevTxid, input.vout);
    if (slot < 0) throw new MissingPrevoutError(input.prevTxid, input.vout, this.txid);
    return slot;
  }

  keysOf(slot: number): Keys<Uint8Array> {
    const c = this.cache;
    const kind = c.keyKind(slot);
    if (kind === 1) {
      const b = this.prevKey;
      for (let w = 0; w < 4; w++) {
        const v = c.keyWord(slot, w);
        b[w * 4] = v >>> 24;
        b[w * 4 + 1] = v >>> 16;
        b[w * 4 + 2] = v >>> 8;
        b[w * 4 + 3] = v;
      }
      return b;
    }
    return kind === 2 ? (c.multiKeysAt(slot) as readonly Uint8Array[]) : null;
  }

  readonly amounts = false;

  amountOf(): bigint {
    return 0n;
  }

  spend(slot: number, input: TxInput): void {
    const c = this.cache;
    const prevTxNum = c.txNumAt(slot);
    if (this.insW.len === 0) {
      this.firstPrevTxNum = prevTxNum;
      this.firstPrevVout = input.vout;
    }
    this.insW.packIn(prevTxNum, input.vout);
    if (!this.parts) this.spentKey.add(prevTxNum); // (a part has no spent_group column)
    // The output leaves the unspent set: no row when it was created in this batch, else recorded as spent.
    if (prevTxNum >= this.firstTxNum) this.recState[this.recordOf(prevTxNum, input.vout)] = REC_NONE;
    else this.spent.row(2).int8(prevTxNum).int4(input.vout);
    c.delete(slot);
  }

  outputKeys(out: TxOutput): Keys<Uint8Array> {
    // A single key lands in outKey: address() and unspent() copy it before the next output.
    return outputKeyBytes(out, this.outKey);
  }

  output(vout: number, out: TxOutput): void {
    const r = this.recCount++;
    this.recTx[r] = this.txIdx;
    if (out instanceof OutputCursor) {
      // Read in place: the value as a number (every real amount is one). A script of the usual
      // templates is its own canonical script, so its tag is its address key's first bytes, which
      // outputKeys() just put in outKey: no second hash (src/db/out-tags.ts; bulk.test.ts holds
      // the rows equal to the per-block writer's, which tags through outTagOf).
      const sats = out.sats;
      const value = sats >= 0 ? sats : out.value;
      if (isCanonicalTemplate(out.bytes, out.scriptAt, out.scriptLength)) this.outsW.packTaggedOwn(vout, value, this.outKey);
      else this.outsW.packTaggedOut(vout, out.value, out.script);
      this.recScript[r] = out.bytes.byteOffset + out.scriptAt - this.blockBase;
      this.recLen[r] = out.scriptLength;
    } else {
      const script = out.script;
      this.outsW.packTaggedOut(vout, out.value, script);
      this.recScript[r] = script.byteOffset - this.blockBase;
      this.recLen[r] = script.length;
    }
    this.recState[r] = REC_NONE;
  }

  alias(alias: ScriptAlias): void {
    this.aliases.row(3).uuidBytes(alias.scriptKey).uuidBytes(alias.addrKey).bool(alias.keyed);
  }

  assetMarker(): void {
    const prevTxNum = this.firstPrevTxNum;
    const prevVout = this.firstPrevVout;
    let script: Uint8Array | null = null;
    if (prevTxNum >= this.firstTxNum) {
      const r = this.recordOf(prevTxNum, prevVout);
      const at = this.recScript[r]!;
      script = this.raws[this.txBlock[this.recTx[r]!]!]!.slice(at, at + this.recLen[r]!);
    }
    this.assetCandidates.push({ txNum: this.txNum, prevTxNum, prevVout, script });
  }

  unspent(vout: number, keys: Keys<Uint8Array>, key: Uint8Array | null): void {
    // (Its record is the last one output() made.)
    const r = this.recCount - 1;
    if (key !== null) {
      const o = r * 4;
      this.recKey[o] = be32(key, 0);
      this.recKey[o + 1] = be32(key, 4);
      this.recKey[o + 2] = be32(key, 8);
      this.recKey[o + 3] = be32(key, 12);
      this.recState[r] = REC_KEYED;
    } else this.recState[r] = REC_UNKEYED;
    const old = this.cache.insert(this.txid, vout, this.txNum, keys);
    if (old >= 0) {
      // BIP30: a duplicate coinbase overwrote an unspent output, which is gone for good.
      if (old >= this.firstTxNum) this.recState[this.recordOf(old, vout)] = REC_NONE;
      else this.spent.row(2).int8(old).int4(vout);
    }
  }

  address(key: Uint8Array): void {
    this.groups.addBytes(key, this.txNum);
  }

  cosigner(key: Uint8Array): void {
    this.groups.addBytes(key, this.txNum);
  }

  /** COPY data of the batch's history chunks (at most `max` entries each). */
  history(max: number): BinaryCopy {
    return this.groups.rows(max, this.historyOut);
  }

  /**
   * COPY data of the outputs still unspent at the end of the batch, in the order they were
   * created: txid, vout, tx_num, key (null for none or a multisig's), value (its 8 bytes in the
   * block, little-endian, written big-endian) and script, read from the batch's blocks.
   */
  utxos(): BinaryCopy {
    const out = this.utxoOut.reset(1 << 16);
    const txids = this.txids;
    for (let r = 0; r < this.recCount; r++) {
      const state = this.recState[r]!;
      if (state === REC_NONE) continue;
      const t = this.recTx[r]!;
      const raw = this.raws[this.txBlock[t]!]!;
      const at = this.recScript[r]!;
      const len = this.recLen[r]!;
      out
        .row(6)
        .byteaRange(txids, t * 32, t * 32 + 32)
        .int4(r - this.txOut[t]!)
        .int8(this.txNums[t]!);
      if (state === REC_KEYED) {
        const o = r * 4;
        out.uuidWords(this.recKey[o]!, this.recKey[o + 1]!, this.recKey[o + 2]!, this.recKey[o + 3]!);
      } else out.null();
      // The value lies before the script's length (a canonical compact size) and the script.
      out.int8LE(raw, at - compactSizeBytes(len) - 8).byteaRange(raw, at, at + len);
    }
    return out;
  }
}

/** Record states: no row (unspendable, or spent within the batch), a row with its key, a row without. */
const REC_NONE = 0;
const REC_KEYED = 1;
const REC_UNKEYED = 2;

/** Bytes of the canonical compact size of `n` (the decoder accepts no other). */
function compactSizeBytes(n: number): number {
  return n < 0xfd ? 1 : n <= 0xffff ? 3 : 5;
}

function be32(b: Uint8Array, p: number): number {
  return (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]! | 0;
}

/** A copy of `a` with room for `n` elements. */
export function grown<T extends Int32Array | Uint32Array | Uint8Array | Float64Array>(a: T, n: number): T {
  const g = new (a.constructor as new (n: number) => T)(n);
  g.set(a);
  return g;
}
