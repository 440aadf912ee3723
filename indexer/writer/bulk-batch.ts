/**
 * The bulk path's sink of the one transaction derivation (derive-tx.ts): blocks are turned
 * straight into binary COPY rows for one batch (blocks, txs, unspent outputs, spends of earlier
 * batches, history chunks per address) with no per-row objects, strings or maps: address keys
 * stay 16-byte binaries, inputs resolve through the outpoint cache (outputs of the same block
 * and batch included, since each transaction's outputs enter the cache right after it). What a
 * transaction gives is decided by `deriveTx`, as for the per-block path; bulk.test.ts compares
 * the whole indexes the two paths build.
 * @module
 */
import type { DecodedBlock } from '../../src/bitcoin/block.js';
import { HEADER_BYTES } from '../../src/bitcoin/block.js';
import { DecodedInput, type TxInput } from '../../src/bitcoin/tx.js';
import { PackedWriter } from '../../src/db/packed.js';
import { scriptKeyBytes } from './address-keys.js';
import { BinaryCopy } from './copy-binary.js';
import type { ScriptAlias } from './script-aliases.js';
import { MissingPrevoutError } from './derive.js';
import { deriveTx, txKindAt, type Keys, type TxSink } from './derive-tx.js';
import { txNumOf } from '../../src/db/tx-num.js';
import { SpentGroupKey } from '../../src/db/spent-groups.js';
import { HistoryGroups } from './history-groups.js';
import type { OutpointCache } from './outpoint-cache.js';

/** A batch of blocks as COPY data, built block by block: the bulk path's sink of deriveTx. */
export class BulkBatch implements TxSink<TxInput, Uint8Array, number> {
  readonly blocks: BinaryCopy;
  readonly txs: BinaryCopy;
  /** Outputs created in this batch; rows spent within the batch are cut out at the end. */
  private readonly utxoRows: BinaryCopy;
  private rowStart: Int32Array;
  private rowDead: Uint8Array;
  private rowCount = 0;
  readonly spent: BinaryCopy;
  /** Script aliases of the batch's P2PK and bare multisig outputs (repeats included: the finish keeps one of each). */
  readonly aliases: BinaryCopy;
  /** The batch's history entries by address. */
  private readonly groups: HistoryGroups;
  /** The COPY data `utxos()` and `history()` give (kept for the batch that recycles this one). */
  private readonly utxoOut: BinaryCopy;
  private readonly historyOut: BinaryCopy;
  readonly blockHashes: Buffer[] = [];
  /** tx_nums of the batch's transactions carrying an Open Assets marker (colored by the bulk finish). */
  readonly assetCandidates: number[] = [];
  readonly heights: number[] = [];
  txCount = 0;
  lastHash: Uint8Array | null = null;
  lastHeight = -1;
  private readonly outsW = new PackedWriter(1 << 12);
  private readonly insW = new PackedWriter(1 << 10);
  /** The current transaction's `txs.spent_group` (src/db/spent-groups.ts). */
  private readonly spentKey = new SpentGroupKey();
  /** The transaction being derived. */
  private txNum = -1;
  private txid: Uint8Array = new Uint8Array(32);
  /** A spent prevout's single key, as bytes (filled from the cache's words, read at once). */
  private readonly prevKey = new Uint8Array(16);
  /** The current output's single key. */
  private readonly outKey = new Uint8Array(16);

  /**
   * `recycled`: a batch whose COPY data is written and no longer needed; this batch takes over
   * its buffers and arrays (emptied), and it must not be used again.
   */
  constructor(
    readonly id: number,
    private readonly cache: OutpointCache,
    recycled?: BulkBatch,
  ) {
    if (recycled) {
      this.blocks = recycled.blocks.reset();
      this.txs = recycled.txs.reset();
      this.utxoRows = recycled.utxoRows.reset();
      this.spent = recycled.spent.reset();
      this.aliases = recycled.aliases.reset();
      this.utxoOut = recycled.utxoOut;
      this.historyOut = recycled.historyOut;
      this.rowStart = recycled.rowStart;
      this.rowDead = recycled.rowDead.fill(0, 0, recycled.rowCount);
      this.groups = recycled.groups;
      this.groups.reset();
    } else {
      this.blocks = new BinaryCopy(1 << 12);
      this.txs = new BinaryCopy(1 << 22);
      this.utxoRows = new BinaryCopy(1 << 22);
      this.spent = new BinaryCopy(1 << 20);
      this.aliases = new BinaryCopy(1 << 12);
      this.utxoOut = new BinaryCopy(1 << 12);
      this.historyOut = new BinaryCopy(1 << 12);
      this.rowStart = new Int32Array(1 << 16);
      this.rowDead = new Uint8Array(1 << 16);
      this.groups = new HistoryGroups();
    }
  }

  get blockCount(): number {
    return this.heights.length;
  }

  private pushRow(start: number): number {
    if (this.rowCount === this.rowStart.length) {
      const s = new Int32Array(this.rowStart.length * 2);
      s.set(this.rowStart);
      this.rowStart = s;
      const d = new Uint8Array(this.rowDead.length * 2);
      d.set(this.rowDead);
      this.rowDead = d;
    }
    this.rowStart[this.rowCount] = start;
    return this.rowCount++;
  }

  /** Adds the block at `height`. @throws MissingPrevoutError when an input's output is unknown. */
  addBlock(block: DecodedBlock, height: number): void {
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
    this.heights.push(height);
    const txs = block.txs;
    for (let i = 0; i < txs.length; i++) {
      const tx = txs[i]!;
      this.txNum = txNumOf(height, i);
      this.txid = tx.txid;
      this.insW.len = 0;
      this.outsW.len = 0;
      this.spentKey.reset();
      deriveTx(tx, txKindAt(height, i, tx.isCoinbase), this);
      this.txs
        .row(7)
        .int8(this.txNum)
        .bytea(tx.txid)
        .byteaRange(this.outsW.buf, 0, this.outsW.len)
        .byteaRange(this.insW.buf, 0, this.insW.len)
        .int4(tx.size)
        .int4(tx.weight);
      const key = this.spentKey.key();
      if (key === null) this.txs.null();
      else this.txs.int4(key);
    }
    this.txCount += txs.length;
    this.lastHash = block.hash;
    this.lastHeight = height;
  }

  // TxSink: what deriveTx makes of the current transaction, as typed-array rows. Prevouts are
  // outpoint-cache slots; the cache keeps no amounts (balances are rebuilt from utxos at the
  // finish), so amounts are ignored here.

  resolve(input: TxInput): number {
    // A decoded block's input is read in place (no view of its txid is made).
    const slot =
      input instanceof DecodedInput
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

  amountOf(): bigint {
    return 0n;
  }

  spend(slot: number, input: TxInput): void {
    const c = this.cache;
    const prevTxNum = c.txNumAt(slot);
    this.insW.packIn(prevTxNum, input.vout);
    this.spentKey.add(prevTxNum);
    // The output leaves the unspent set: cut from this batch's rows or recorded as spent.
    if (c.batchAt(slot) === this.id) this.rowDead[c.rowAt(slot)] = 1;
    else this.spent.row(2).int8(c.txNumAt(slot)).int4(input.vout);
    c.delete(slot);
  }

  outputKeys(script: Uint8Array): Keys<Uint8Array> {
    // A single key lands in outKey: address() and unspent() copy it before the next output.
    return scriptKeyBytes(script, this.outKey);
  }

  output(_vout: number, value: bigint, script: Uint8Array): void {
    this.outsW.packOut(value, script);
  }

  alias(alias: ScriptAlias): void {
    this.aliases.row(3).uuidBytes(alias.scriptKey).uuidBytes(alias.addrKey).bool(alias.keyed);
  }

  assetMarker(): void {
    this.assetCandidates.push(this.txNum);
  }

  unspent(vout: number, keys: Keys<Uint8Array>, key: Uint8Array | null, value: bigint, script: Uint8Array): void {
    const row = this.pushRow(this.utxoRows.length);
    this.utxoRows.row(6).bytea(this.txid).int4(vout).int8(this.txNum);
    if (key !== null) this.utxoRows.uuidBytes(key);
    else this.utxoRows.null();
    this.utxoRows.int8(value).bytea(script);
    const old = this.cache.insert(this.txid, vout, this.txNum, keys, this.id, row);
    if (old !== null) {
      // BIP30: a duplicate coinbase overwrote an unspent output, which is gone for good.
      if (old.batch === this.id) this.rowDead[old.row] = 1;
      else this.spent.row(2).int8(old.txNum).int4(vout);
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

  /** COPY data of the outputs still unspent at the end of the batch. */
  utxos(): BinaryCopy {
    const out = this.utxoOut.reset(this.utxoRows.length + 64);
    const end = this.utxoRows.length;
    let runStart = -1;
    let runRows = 0;
    for (let r = 0; r < this.rowCount; r++) {
      if (this.rowDead[r] === 1) {
        if (runStart >= 0) out.raw(this.utxoRows.slice(runStart, this.rowStart[r]!), runRows);
        runStart = -1;
        runRows = 0;
      } else {
        if (runStart < 0) runStart = this.rowStart[r]!;
        runRows++;
      }
    }
    if (runStart >= 0) out.raw(this.utxoRows.slice(runStart, end), runRows);
    return out;
  }
}
