/**
 * History chunks the API process holds, so that a page deep in a busy address's history need not
 * have Postgres read, decompress and cut its 8 KB chunk again: a client paging through an address
 * reads about forty 25-entry pages from each 1,024-entry chunk. A held chunk is only ever used
 * together with a check, in the page's own statement, that the chunk's row is still the version
 * it was read from (its `xmin`: every insert or update of a row gives the new version the writing
 * transaction's id, and vacuum's freezing keeps it), so a chunk changed by a new block or a reorg
 * is never answered from here; the statement then cuts the page itself, as without this cache.
 * Least recently used chunks go first once `maxBytes` is reached; entries also expire after
 * `ttlMs` (a transaction id repeats only after 2^32 transactions, far beyond any ttl).
 * @module
 */

/** The page a held chunk gives: the tx_nums of its entries, newest first, and the version to check. */
export type HeldPage = { xmin: string; nums: bigint[] };

type Held = { xmin: string; entries: Buffer; at: number };

/** What a held chunk costs besides its entries (key, map entry, record), counted against maxBytes. */
const OVERHEAD_BYTES = 160;

export class HistoryChunkCache {
  private readonly chunks = new Map<string, Held>();
  private bytes = 0;
  constructor(
    readonly maxBytes: number,
    private readonly ttlMs = 10 * 60_000,
  ) {}

  /** Chunks held, and the bytes counted for them. */
  get size(): { chunks: number; bytes: number } {
    return { chunks: this.chunks.size, bytes: this.bytes };
  }

  /**
   * The `count` entries below entry `index` of chunk `first` of the address, when the chunk is
   * held, its entry at `index` is `before` (the cursor's bound) and at least `count` entries lie
   * below it in this chunk; undefined otherwise (the statement cuts the page).
   */
  page(addrKey: string, first: bigint, index: number, before: bigint, count: number): HeldPage | undefined {
    if (index < count) return undefined;
    const key = `${addrKey}/${first}`;
    const held = this.chunks.get(key);
    if (!held) return undefined;
    if (Date.now() - held.at > this.ttlMs) {
      this.drop(key, held);
      return undefined;
    }
    const e = held.entries;
    if ((index + 1) * 8 > e.length || e.readBigInt64BE(index * 8) !== before) return undefined;
    this.chunks.delete(key); // most recently used last
    this.chunks.set(key, held);
    const nums = new Array<bigint>(count);
    for (let k = 0; k < count; k++) nums[k] = e.readBigInt64BE((index - 1 - k) * 8);
    return { xmin: held.xmin, nums };
  }

  /** Holds chunk `first` of the address as read by a statement: its row version and every entry (8 bytes each, ascending). */
  put(addrKey: string, first: bigint, xmin: string, entries: Buffer): void {
    if (entries.length + OVERHEAD_BYTES > this.maxBytes) return;
    const key = `${addrKey}/${first}`;
    const old = this.chunks.get(key);
    if (old) this.drop(key, old);
    this.chunks.set(key, { xmin, entries, at: Date.now() });
    this.bytes += entries.length + OVERHEAD_BYTES;
    for (const [k, v] of this.chunks) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(k, v);
    }
  }

  /** Forgets every chunk (after a failed statement: the database may not be the one they came from). */
  clear(): void {
    this.chunks.clear();
    this.bytes = 0;
  }

  private drop(key: string, held: Held): void {
    this.chunks.delete(key);
    this.bytes -= held.entries.length + OVERHEAD_BYTES;
  }
}
