/**
 * The per-block writer's memory of recent transactions: txid → tx_num for the newest applied
 * transactions, so that a block's spend deletes the `utxos` rows of outputs created by recent
 * blocks by their key `(tx_num, vout)` instead of first finding each txid's `txs` row through
 * `txs_txid_key` (chain-rows.ts `spendUtxos`). Most outputs are spent young: on mainnet most
 * spent outputs had lived less than a day when spent, so a few hundred blocks' transactions
 * answer most of a block's prevouts.
 *
 * It is only a hint. An entry names the txid by its first 8 bytes (two txids sharing them share
 * an entry: the newer wins), and the spend deletes a row only when the row's own `txid` column is
 * the prevout's txid; a wrong, stale or colliding entry finds no row and the prevout goes through
 * the `txs` lookup, so no entry can delete another output. The run loop keeps one per leadership
 * (empty on start and on taking over the writer lock), adds a block's transactions only after its
 * transaction committed, cuts the entries of an undone block before the undo, and empties it for
 * a bulk sync (writes it did not see). Meanwhile it fills a new one from the index in the
 * background (`fillFromIndex`, ~1 s for a million transactions), adds to it the blocks committed
 * since (`addNewer`) and takes it in place of the first: a block arriving meanwhile is not held
 * up, and an undo or a bulk sync meanwhile discards the new one.
 *
 * Entries live in a ring in the order they were added (tx_num order: blocks are added in chain
 * order, and an undo cuts the newest), which gives the oldest to evict when the ring is full;
 * an open-addressing table of ring positions (linear probing, backward-shift deletion) finds
 * them. Typed arrays only: about 24–32 bytes per entry and nothing for the garbage collector.
 * (The bulk path's outpoint-cache.ts answers another question, per outpoint with its address
 * keys, for every unspent output; this one holds a txid's tx_num for recent transactions.)
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { txNumOf } from '../../src/db/tx-num.js';
import { txRowsFrom } from '../../src/db/tx-reads.js';

/** The smallest ring: a table grows from here, doubling, up to the limit. */
const MIN_RING = 1 << 12;

export class TxidCache {
  /** Ring positions hold the txid's first 8 bytes (two words) and the tx_num. */
  private keys = new Int32Array(0);
  private nums = new Float64Array(0);
  /** Slot → ring position + 1 (0: empty). At least twice the ring's size (load ≤ ½). */
  private table = new Int32Array(0);
  private mask = 0;
  /** Absolute counts: the oldest live entry and the next one; position = count % ring size. */
  private head = 0;
  private tail = 0;
  /** Blocks `addBlock` was given and not added yet (`flush`). */
  private pending: { height: number; txids: readonly Uint8Array[] }[] = [];

  /** `limit`: the most entries kept (0: none, the cache is off). */
  constructor(readonly limit: number) {}

  get size(): number {
    this.flush();
    return this.tail - this.head;
  }

  /** The tx_num the newest entry for `txid`'s key names, or undefined. */
  get(txid: Uint8Array): number | undefined {
    this.flush();
    if (this.tail === this.head) return undefined;
    const k0 = word(txid, 0);
    const k1 = word(txid, 4);
    const at = this.find(k0, k1);
    return at < 0 ? undefined : this.nums[this.table[at]! - 1];
  }

  /**
   * Adds the transactions of a committed block at `height` (in block order), at the latest
   * when the cache is next read or changed: the writer hands them over right after the commit
   * and the run loop `flush`es them once it has logged the block, off the block's latency (a
   * 4,000-transaction block's ~4 ms).
   */
  addBlock(height: number, txids: readonly Uint8Array[]): void {
    if (this.limit > 0) this.pending.push({ height, txids });
  }

  /** Adds the blocks `addBlock` was given; every other method does it first. */
  flush(): void {
    if (this.pending.length === 0) return;
    const blocks = this.pending;
    this.pending = [];
    for (const { height, txids } of blocks)
      for (let i = 0; i < txids.length; i++) this.addKey(word(txids[i]!, 0), word(txids[i]!, 4), txNumOf(height, i));
  }

  /** Drops the entries naming tx_nums at or above `fromTxNum` (an undone block's and above). */
  cut(fromTxNum: number): void {
    this.flush();
    const ring = this.nums.length;
    while (this.tail > this.head) {
      const pos = (this.tail - 1) % ring;
      if (this.nums[pos]! < fromTxNum) break;
      this.forget(pos);
      this.tail--;
    }
  }

  /** Drops every entry (memory is kept for reuse). */
  clear(): void {
    this.pending = [];
    this.table.fill(0);
    this.head = this.tail = 0;
  }

  /**
   * Adds `other`'s entries newer than this cache's newest, oldest first: the blocks the writer
   * committed while this cache was filled from the index (`fillFromIndex`), into `other`.
   */
  addNewer(other: TxidCache): void {
    other.flush();
    this.flush();
    const newest = this.tail > this.head ? this.nums[(this.tail - 1) % this.nums.length]! : -1;
    const ring = other.nums.length;
    for (let c = other.head; c < other.tail; c++) {
      const pos = c % ring;
      if (other.nums[pos]! > newest) this.addKey(other.keys[pos * 2]!, other.keys[pos * 2 + 1]!, other.nums[pos]!);
    }
  }

  /** Adds one transaction, the newest (tx_nums only grow, except after `cut`). */
  add(txid: Uint8Array, txNum: number): void {
    this.flush();
    this.addKey(word(txid, 0), word(txid, 4), txNum);
  }

  private addKey(k0: number, k1: number, txNum: number): void {
    if (this.limit === 0) return;
    if (this.tail - this.head === this.nums.length) {
      if (this.nums.length < this.limit) this.grow();
      else {
        this.forget(this.head % this.nums.length);
        this.head++;
      }
    }
    const pos = this.tail % this.nums.length;
    this.tail++;
    this.keys[pos * 2] = k0;
    this.keys[pos * 2 + 1] = k1;
    this.nums[pos] = txNum;
    const at = this.find(k0, k1);
    if (at >= 0) {
      // The same key again (BIP30's repeated coinbase txid, or two txids sharing 8 bytes): the newer names it.
      this.table[at] = pos + 1;
      return;
    }
    let s = k0 & this.mask;
    while (this.table[s] !== 0) s = (s + 1) & this.mask;
    this.table[s] = pos + 1;
  }

  /** The slot holding the key, or -1. */
  private find(k0: number, k1: number): number {
    for (let s = k0 & this.mask; ; s = (s + 1) & this.mask) {
      const p = this.table[s]!;
      if (p === 0) return -1;
      if (this.keys[(p - 1) * 2] === k0 && this.keys[(p - 1) * 2 + 1] === k1) return s;
    }
  }

  /** Removes ring position `pos` from the table, unless a newer entry with its key took its slot. */
  private forget(pos: number): void {
    const at = this.find(this.keys[pos * 2]!, this.keys[pos * 2 + 1]!);
    if (at < 0 || this.table[at] !== pos + 1) return;
    // Backward-shift deletion: later entries of the probe run move up so none is cut off.
    let hole = at;
    for (let s = (at + 1) & this.mask; this.table[s] !== 0; s = (s + 1) & this.mask) {
      const home = this.keys[(this.table[s]! - 1) * 2]! & this.mask;
      // An entry may fill the hole unless its home lies cyclically in (hole, s].
      const stays = hole <= s ? hole < home && home <= s : hole < home || home <= s;
      if (stays) continue;
      this.table[hole] = this.table[s]!;
      hole = s;
    }
    this.table[hole] = 0;
  }

  /**
   * Doubles the ring (up to the limit) and rebuilds the table over the live entries, oldest first;
   * an entry whose key a newer one took (and perhaps gave up since, in a cut) stays out of it.
   */
  private grow(): void {
    const ring = Math.min(this.limit, Math.max(MIN_RING, this.nums.length * 2));
    const keys = new Int32Array(ring * 2);
    const nums = new Float64Array(ring);
    const named: boolean[] = [];
    for (let i = 0, n = this.tail - this.head; i < n; i++) {
      const from = (this.head + i) % this.nums.length;
      keys[i * 2] = this.keys[from * 2]!;
      keys[i * 2 + 1] = this.keys[from * 2 + 1]!;
      nums[i] = this.nums[from]!;
      named.push(this.table[this.find(keys[i * 2]!, keys[i * 2 + 1]!)] === from + 1);
    }
    let slots = 1;
    while (slots < ring * 2) slots *= 2;
    this.keys = keys;
    this.nums = nums;
    this.table = new Int32Array(slots);
    this.mask = slots - 1;
    this.head = 0;
    this.tail = named.length;
    named.forEach((yes, i) => {
      if (!yes) return;
      let s = keys[i * 2]! & this.mask;
      while (this.table[s] !== 0) s = (s + 1) & this.mask;
      this.table[s] = i + 1;
    });
  }
}

/** Bytes `at`…`at + 3` of a txid as a signed 32-bit word (little-endian). */
function word(b: Uint8Array, at: number): number {
  return b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24);
}

/**
 * Fills `cache` (empty: a started indexer, a new leader, after a bulk sync) with the index's
 * newest transactions, up to its limit, so that the first blocks after a start spend by key as
 * the later ones do rather than through `txs_txid_key` (random reads of an index and a table that
 * a restart found cold). Whole blocks, oldest first; one row a block (its txids packed in
 * tx_num order: a block's positions run from 0 without a gap). Returns the transactions added.
 */
export async function fillFromIndex(db: Kysely<Database>, cache: TxidCache): Promise<number> {
  if (cache.limit === 0 || cache.size > 0) return 0;
  // The lowest height whose blocks from there to the tip hold at most `limit` transactions.
  const from = await sql<{ height: number | null }>`
    SELECT min(height) AS height FROM (
      SELECT height, sum(tx_count) OVER (ORDER BY height DESC) AS n FROM blocks) b
     WHERE n <= ${cache.limit}`.execute(db);
  const low = from.rows[0]?.height;
  if (low === null || low === undefined) return 0;
  const r = await sql<{ height: number; txids: Buffer }>`
    SELECT (t.tx_num >> 20)::int4 AS height, string_agg(t.txid, ''::bytea ORDER BY t.tx_num) AS txids
      FROM ${txRowsFrom(BigInt(txNumOf(low, 0)), null)} t
     GROUP BY 1 ORDER BY 1`.execute(db);
  let added = 0;
  for (const row of r.rows) {
    const txids: Uint8Array[] = [];
    for (let at = 0; at + 32 <= row.txids.length; at += 32) txids.push(row.txids.subarray(at, at + 32));
    cache.addBlock(row.height, txids);
    added += txids.length;
    // A turn of the event loop between blocks: the roles that share this process answer meanwhile
    // (a million transactions take 0.2–0.4 s to add).
    await new Promise((resolve) => setImmediate(resolve));
  }
  return added;
}
