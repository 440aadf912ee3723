/**
 * The bulk path's derive step: blocks are turned straight into binary COPY rows for one batch
 * (blocks, txs, unspent outputs, spends of earlier batches, (address, tx) history pairs) with
 * no per-row objects, strings or maps: address keys stay 16-byte binaries, inputs resolve
 * through the outpoint cache (outputs of the same block and batch included, since each
 * transaction's outputs enter the cache right after it). The rows equal what derive.ts gives
 * the per-block path (bulk.test.ts compares whole indexes).
 * @module
 */
import type { DecodedBlock } from '../src/bitcoin/block.js';
import { HEADER_BYTES } from '../src/bitcoin/block.js';
import { PackedWriter } from '../src/db/packed.js';
import { isUnspendable, scriptKeyBytes } from './address-keys.js';
import { BinaryCopy } from './copy-binary.js';
import { MissingPrevoutError, txNumOf } from './derive.js';
import type { OutpointCache } from './outpoint-cache.js';

/** A batch of blocks as COPY data, built block by block. */
export class BulkBatch {
  readonly blocks = new BinaryCopy(1 << 12);
  readonly txs = new BinaryCopy(1 << 22);
  /** Outputs created in this batch; rows spent within the batch are cut out at the end. */
  private readonly utxoRows = new BinaryCopy(1 << 22);
  private rowStart = new Int32Array(1 << 16);
  private rowDead = new Uint8Array(1 << 16);
  private rowCount = 0;
  readonly spent = new BinaryCopy(1 << 20);
  /** (addr_key, tx_num) pairs, duplicates included (the SQL that builds chunks removes them). */
  readonly pairs = new BinaryCopy(1 << 22);
  readonly blockHashes: Buffer[] = [];
  readonly heights: number[] = [];
  txCount = 0;
  lastHash: Uint8Array | null = null;
  lastHeight = -1;
  private readonly outsW = new PackedWriter(1 << 12);
  private readonly insW = new PackedWriter(1 << 10);

  constructor(
    readonly id: number,
    private readonly cache: OutpointCache,
  ) {}

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

  /** An earlier output leaves the unspent set: cut from this batch's rows or recorded as spent. */
  private spend(slot: number, vout: number): void {
    const c = this.cache;
    if (c.batchAt(slot) === this.id) this.rowDead[c.rowAt(slot)] = 1;
    else this.spent.row(2).int8(c.txNumAt(slot)).int4(vout);
  }

  /** Adds the block at `height`. @throws MissingPrevoutError when an input's output is unknown. */
  addBlock(block: DecodedBlock, height: number): void {
    const c = this.cache;
    const header = block.bytes.subarray(0, HEADER_BYTES);
    this.blocks.row(8).int4(height).bytea(block.hash).bytea(block.header.prevHash).bytea(header).int4(block.header.time).int4(block.txs.length).int4(block.size).int4(block.weight);
    this.blockHashes.push(Buffer.from(block.hash));
    this.heights.push(height);
    const txs = block.txs;
    for (let i = 0; i < txs.length; i++) {
      const tx = txs[i]!;
      const txNum = txNumOf(height, i);
      const insW = this.insW;
      insW.len = 0;
      if (!(i === 0 && tx.isCoinbase)) {
        for (const input of tx.inputs) {
          const slot = c.find(input.prevTxid, input.vout);
          if (slot < 0) throw new MissingPrevoutError(input.prevTxid, input.vout, tx.txid);
          insW.uleb(c.txNumAt(slot));
          insW.uleb(input.vout);
          const kind = c.keyKind(slot);
          if (kind === 1) this.pairs.row(2).uuidWords(c.keyWord(slot, 0), c.keyWord(slot, 1), c.keyWord(slot, 2), c.keyWord(slot, 3)).int8(txNum);
          else if (kind === 2) for (const k of c.multiKeysAt(slot)) this.pairs.row(2).uuidBytes(k as Uint8Array).int8(txNum);
          this.spend(slot, input.vout);
          c.delete(slot);
        }
      }
      const outsW = this.outsW;
      outsW.len = 0;
      const outputs = tx.outputs;
      for (let v = 0; v < outputs.length; v++) {
        const out = outputs[v]!;
        outsW.uleb(out.value);
        outsW.uleb(out.script.length);
        outsW.bytes(out.script);
        const keys = scriptKeyBytes(out.script);
        if (keys instanceof Uint8Array) this.pairs.row(2).uuidBytes(keys).int8(txNum);
        else if (keys !== null) for (const k of keys) this.pairs.row(2).uuidBytes(k).int8(txNum);
        if (isUnspendable(out.script)) continue;
        const row = this.pushRow(this.utxoRows.length);
        this.utxoRows.row(6).bytea(tx.txid).int4(v).int8(txNum);
        if (keys instanceof Uint8Array) this.utxoRows.uuidBytes(keys);
        else this.utxoRows.null();
        this.utxoRows.int8(out.value).bytea(out.script);
        const old = c.insert(tx.txid, v, txNum, keys, this.id, row);
        if (old !== null) {
          // BIP30: a duplicate coinbase overwrote an unspent output, which is gone for good.
          if (old.batch === this.id) this.rowDead[old.row] = 1;
          else this.spent.row(2).int8(old.txNum).int4(v);
        }
      }
      this.txs.row(4).int8(txNum).bytea(tx.txid).bytea(outsW.view(0, outsW.len)).bytea(insW.view(0, insW.len));
    }
    this.txCount += txs.length;
    this.lastHash = block.hash;
    this.lastHeight = height;
  }

  /** COPY data of the outputs still unspent at the end of the batch. */
  utxos(): BinaryCopy {
    const out = new BinaryCopy(this.utxoRows.length + 64);
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
