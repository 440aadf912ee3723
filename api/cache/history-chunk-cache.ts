/**
 * History chunks the API process holds, with their entries' txids, so that a page deep in a busy
 * address's history need not have Postgres read, decompress and cut an 8 KB chunk and look up
 * 25 txids again: a client paging through an address reads about forty 25-entry pages from each
 * 1,024-entry chunk. A held chunk is only ever used together with a check, in the page's own
 * statement, that the chunk's row is still the version it was read from (its `xmin`: every insert
 * or update of a row gives the new version the writing transaction's id, and vacuum's freezing
 * keeps it). The txids stay right with it: `txs` rows change only when their block is undone, and
 * the same transaction cuts every history chunk holding an entry of that block (indexer/writer/apply.ts
 * `undoBlock`), so a chunk whose version is unchanged still names the same transactions. The
 * version is the xmin with the server's start time (`pg_postmaster_start_time()`): a restore,
 * point-in-time recovery or failover, which can hand out transaction ids again, is a restart.
 * (New blocks add chunks of their own; chunk rows change only when a reorg cuts them or the bulk
 * sync's end re-cuts them all.) A chunk changed since it was read is thus never answered from
 * here; the statement then cuts the page itself, as without this cache, and the chunk is read again
 * in the background (`want`: one statement per chunk, at most `maxLoads` at a time, never in a
 * page's statement, whose other pages would wait for its 1,024 txid lookups).
 * Least recently used chunks go first once `maxBytes` is reached; entries also expire after
 * `ttlMs` (a transaction id repeats only after 2^32 transactions, far beyond any ttl).
 *
 * With `changes` (chain notifications, src/db/chain-changes.ts) a page of a held chunk that a
 * statement found unchanged after generation g, while the generation is still g after a read
 * barrier started after the request came, is answered without a statement (`unchanged`): no
 * write to `history`, `txs` or `chain_tip` committed since, so the chunk, its txids and the tip
 * the last page answered at g carried are still those.
 * @module
 */
import type { ChainChanges } from '../../src/db/chain-changes.js';
import { HistoryEntries, type HistoryChunk, type HistoryPage } from '../queries/address.js';

/**
 * The page a held chunk gives, the version of the chunk the statement must still find, and the
 * chain generation (src/db/chain-changes.ts) read before the last statement that found it so.
 */
export type HeldPage = { version: string; chain: HistoryEntries; checked: number | undefined };

type Held = HistoryChunk & { at: number; checked?: number };

/** What a held chunk costs besides its entries and txids (key, map entry, record), counted against maxBytes. */
const OVERHEAD_BYTES = 160;
/** The map key of chunk `first` of an address. */
const keyOf = (addrKey: string, first: bigint) => `${addrKey}/${first}`;
const bytesOf = (c: HistoryChunk) => c.entries.length + c.txids.length + OVERHEAD_BYTES;

export type HistoryChunkCacheOptions = {
  maxBytes: number;
  /** Reads chunk `first` of the address (readHistoryChunk), for `want`. */
  load?: (addrKey: string, first: bigint) => Promise<HistoryChunk | undefined>;
  /** Most background loads at a time (default 2); `want` skips a chunk beyond it. */
  maxLoads?: number;
  /** Told of a failed background load (the chunk is simply not held). */
  onLoadError?: (err: unknown) => void;
  ttlMs?: number;
  /** The clock of the time to live, in ms (default Date.now). */
  now?: () => number;
  /** Chain notifications, when the process receives them: held pages answered without a statement (see the module comment). */
  changes?: ChainChanges;
};

export class HistoryChunkCache {
  readonly maxBytes: number;
  private readonly chunks = new Map<string, Held>();
  private readonly loading = new Map<string, Promise<void>>();
  private bytes = 0;
  /** Bumped by clear(): reads begun before it are not held. */
  private generation = 0;
  private readonly ttlMs: number;
  private readonly now: () => number;
  /** The tip of the last page answered, and the chain generation read before its statement. */
  private lastTip: { generation: number; tip: HistoryPage['tip'] } | undefined;
  constructor(private readonly opts: HistoryChunkCacheOptions) {
    this.maxBytes = opts.maxBytes;
    this.ttlMs = opts.ttlMs ?? 10 * 60_000;
    this.now = opts.now ?? Date.now;
  }

  /** Chunks held, and the bytes counted for them. */
  get size(): { chunks: number; bytes: number } {
    return { chunks: this.chunks.size, bytes: this.bytes };
  }

  /**
   * The `count` entries below entry `index` of chunk `first` of the address, newest first, when the
   * chunk is held, its entry at `index` is `before` (the cursor's bound) and at least `count`
   * entries lie below it in this chunk; undefined otherwise (the statement cuts the page).
   */
  page(addrKey: string, first: bigint, index: number, before: bigint, count: number): HeldPage | undefined {
    if (index < count) return undefined;
    const key = keyOf(addrKey, first);
    const held = this.chunks.get(key);
    if (!held) return undefined;
    if (this.now() - held.at > this.ttlMs) {
      this.drop(key, held);
      return undefined;
    }
    const e = held.entries;
    if ((index + 1) * 8 > e.length || e.readBigInt64BE(index * 8) !== before) return undefined;
    this.chunks.delete(key); // most recently used last
    this.chunks.set(key, held);
    // HistoryEntries' layout: txids 32 bytes each, positions (tx_num, chunk first, index) 20.
    const txids = Buffer.allocUnsafe(count * 32);
    const positions = Buffer.allocUnsafe(count * 20);
    for (let k = 0; k < count; k++) {
      const i = index - 1 - k;
      held.txids.copy(txids, k * 32, i * 32, i * 32 + 32);
      e.copy(positions, k * 20, i * 8, i * 8 + 8);
      positions.writeBigInt64BE(first, k * 20 + 8);
      positions.writeInt32BE(i, k * 20 + 16);
    }
    return { version: held.version, chain: new HistoryEntries(txids, positions), checked: held.checked };
  }

  /** The chain generation to read before a page's statement is sent (undefined without chain notifications). */
  get chainGeneration(): number | undefined {
    return this.opts.changes?.generation;
  }

  /**
   * The tip to answer `held` with, without a statement, when a statement found its chunk at its
   * version after `generation` (read before this request's statement would be sent) and nothing
   * changed since; undefined otherwise (the statement must run).
   */
  async unchanged(held: HeldPage, generation: number | undefined): Promise<HistoryPage['tip'] | undefined> {
    const changes = this.opts.changes;
    if (!changes || generation === undefined || held.checked !== generation || this.lastTip?.generation !== generation) return undefined;
    const tip = this.lastTip.tip;
    return (await changes.unchangedSince(generation)) ? tip : undefined;
  }

  /**
   * A page was answered with `tip` after chain generation `generation` was read; `from`: the held
   * chunk it came from (at `version`), which the statement (or the unchanged chain) found so.
   */
  answered(generation: number | undefined, tip: HistoryPage['tip'], from?: { addrKey: string; first: bigint; version: string }): void {
    if (generation === undefined) return;
    this.lastTip = { generation, tip };
    if (!from) return;
    const held = this.chunks.get(keyOf(from.addrKey, from.first));
    if (held?.version === from.version) held.checked = generation;
  }

  /** Holds chunk `first` of the address as a statement read it. */
  put(addrKey: string, first: bigint, chunk: HistoryChunk): void {
    if (chunk.txids.length !== chunk.entries.length * 4 || bytesOf(chunk) > this.maxBytes) return;
    const key = keyOf(addrKey, first);
    const old = this.chunks.get(key);
    if (old) this.drop(key, old);
    this.chunks.set(key, { ...chunk, at: this.now() });
    this.bytes += bytesOf(chunk);
    for (const [k, v] of this.chunks) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(k, v);
    }
  }

  /**
   * Reads chunk `first` of the address in the background and holds it, unless it is being read
   * already or `maxLoads` reads are under way. A failed read is forgotten (the next page asks again).
   */
  want(addrKey: string, first: bigint): void {
    const key = keyOf(addrKey, first);
    const load = this.opts.load;
    if (!load || this.loading.has(key) || this.loading.size >= (this.opts.maxLoads ?? 2)) return;
    const generation = this.generation;
    const p = load(addrKey, first)
      .then((chunk) => {
        // (a read that began before clear() may come from the database that was cleared away)
        if (chunk && generation === this.generation) this.put(addrKey, first, chunk);
      })
      .catch((err: unknown) => this.opts.onLoadError?.(err))
      .finally(() => this.loading.delete(key));
    this.loading.set(key, p);
  }

  /** Whether chunk `first` of the address is held (whatever its version). */
  holds(addrKey: string, first: bigint): boolean {
    return this.chunks.has(keyOf(addrKey, first));
  }

  /** Resolves once the background reads under way have ended (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.loading.size > 0) await Promise.all(this.loading.values());
  }

  /** Forgets every chunk (after a failed statement: the database may not be the one they came from). */
  clear(): void {
    this.chunks.clear();
    this.bytes = 0;
    this.generation++;
  }

  private drop(key: string, held: Held): void {
    this.chunks.delete(key);
    this.bytes -= bytesOf(held);
  }
}
