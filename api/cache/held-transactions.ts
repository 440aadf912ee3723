/**
 * Confirmed transactions the API process holds as it built them (inputs with the outputs they
 * spend, outputs, sizes, colors), so that looking up one it answered before costs only its `txs` row —
 * which the lookup's statement reads anyway — and not a call to the node for its outputs and
 * the outputs its inputs spend (api/node-transactions.ts; without a node, a second statement
 * for the rows of the transactions its inputs spend), nor decoding them and encoding their
 * addresses again. It is the bounded cache of the transactions read from the node.
 *
 * A held transaction is used only when the row the lookup read now equals, field by field, the
 * row it was built from (tx_num, block hash and time, packed outputs and input references, first
 * seen time, colors). That row names its block by hash, and a block hash fixes
 * every block below it, so the transactions its inputs name by tx_num (all in that block or
 * below) are still the ones read then: a reorg that replaced any of them replaced this block too,
 * and the row would name another hash or be gone. Only the spend state of its outputs (spent by
 * a block or by a mempool transaction) moves without the row changing; it comes from the same
 * statement every time and is never held. So a held answer is always the answer the rows give
 * now. Least recently used transactions go first once `maxBytes` is reached.
 *
 * With `changes` (chain notifications, src/db/chain-changes.ts) a lookup need not read the row
 * at all: the answer a statement gave is kept with the notification generation read before that
 * statement was sent, and a lookup whose read barrier (started after the request arrived) finds
 * the generation unchanged answers it as is — no write to any table that answer is read from
 * (tip included) committed between that statement and the request, so a statement now would read
 * the same rows.
 * @module
 */
import type { ConfirmedTxRow } from '../queries/chain.js';
import type { ChainChanges } from '../../src/db/chain-changes.js';

/** What a held transaction costs besides what `bytesOf` counts (map entry, records, key). */
const OVERHEAD_BYTES = 400;
/** A held input or output as built objects (hashes, amounts, scripts), beyond its packed bytes. */
const PER_ITEM_BYTES = 160;

/** The fields of a confirmed row a held transaction must find unchanged. */
type RowFields = Pick<ConfirmedTxRow, 'tx_num' | 'outs' | 'ins' | 'first_seen' | 'block_hash' | 'block_time' | 'asset_colors'>;

const sameBytes = (a: Buffer | null | undefined, b: Buffer | null | undefined) => (a == null || b == null ? a == b : a.equals(b));
const sameRow = (a: RowFields, b: RowFields) =>
  a.tx_num === b.tx_num &&
  a.block_time === b.block_time &&
  (a.first_seen?.getTime() ?? null) === (b.first_seen?.getTime() ?? null) &&
  a.block_hash.equals(b.block_hash) &&
  a.outs.equals(b.outs) &&
  a.ins.equals(b.ins) &&
  sameBytes(a.asset_colors, b.asset_colors);

type Held<T> = { row: RowFields; value: T; bytes: number };

export class HeldTransactions<T> {
  private readonly held = new Map<string, Held<T>>();
  private bytes = 0;
  constructor(
    readonly maxBytes: number,
    /** Chain notifications, when the process receives them (see the module comment). */
    readonly changes?: ChainChanges,
  ) {}

  /** Transactions held, and the bytes counted for them. */
  get size(): { transactions: number; bytes: number } {
    return { transactions: this.held.size, bytes: this.bytes };
  }

  /** What was held for the transaction of `row`, when it was built from a row equal to it. */
  get(row: RowFields & { txid: Buffer }): T | undefined {
    const key = row.txid.toString('latin1');
    const h = this.held.get(key);
    if (!h) return undefined;
    this.held.delete(key);
    if (!sameRow(h.row, row)) {
      this.bytes -= h.bytes;
      return undefined;
    }
    this.held.set(key, h); // (most recently used last)
    return h.value;
  }

  /** What is held for `txid`, unchecked (most recently used now); see the module comment for when it may be answered. */
  peek(txid: Buffer): T | undefined {
    const key = txid.toString('latin1');
    const h = this.held.get(key);
    if (!h) return undefined;
    this.held.delete(key);
    this.held.set(key, h);
    return h.value;
  }

  /** Holds `value`, built from `row` with `items` inputs and outputs. */
  set(row: RowFields & { txid: Buffer }, items: number, value: T): void {
    const bytes = OVERHEAD_BYTES + row.outs.length + row.ins.length + items * PER_ITEM_BYTES;
    if (bytes > this.maxBytes) return;
    const key = row.txid.toString('latin1');
    const old = this.held.get(key);
    if (old) {
      this.held.delete(key);
      this.bytes -= old.bytes;
    }
    const { tx_num, outs, ins, first_seen, block_hash, block_time, asset_colors } = row;
    this.held.set(key, { row: { tx_num, outs, ins, first_seen, block_hash, block_time, asset_colors }, value, bytes });
    this.bytes += bytes;
    for (const [k, h] of this.held) {
      if (this.bytes <= this.maxBytes) break;
      this.held.delete(k);
      this.bytes -= h.bytes;
    }
  }
}
