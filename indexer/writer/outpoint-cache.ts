/**
 * The bulk path's in-memory set of unspent outputs (Core's coins cache, for our needs): per
 * outpoint the creating tx_num and the address keys, so that inputs resolve without a database
 * lookup. Open addressing with linear probing over typed arrays (about 50–70 bytes per entry,
 * no per-entry objects for the garbage collector) and backward-shift deletion (no tombstones).
 * A slot's fields lie together (10 words, 40 bytes: one or two cache lines), beside a byte array
 * of flags that probing scans: a lookup in a table far larger than the CPU's caches costs one or
 * two misses instead of one per field. Where the output's row is kept while its batch is built
 * follows from its tx_num (bulk-batch.ts), so a slot holds no more than the outpoint, the tx_num
 * and the key.
 * Outpoints are keyed by the first 12 bytes of the txid and the vout: txids are hashes, so 96
 * bits never collide in practice (a full 180M-entry set has a ~2^-42 chance).
 * The table can be bounded (IMPORT_MEMORY_MB): `evictTo` drops the oldest entries, which the
 * bulk path then reads back from PostgreSQL when an input spends one (bulk.ts).
 * @module
 */
import { uuidHex, uuidText, uuidTextOfBytes } from '../../src/db/address-key.js';
import type { ScriptKeys } from './address-keys.js';

const F_USED = 1;
const F_SINGLE = 2;
const F_MULTI = 4;

/**
 * Words of one slot (W): txid words 0–2, then VOUT, the tx_num as a float64 (words 4–5: index
 * slot * W / 2 + TXNUM of the Float64Array view), and the key's words from KEY.
 */
const [W, VOUT, TXNUM, KEY] = [10, 3, 2, 6] as const;
/** Bytes of one slot of the table (its 10 words and its flags byte). */
export const SLOT_BYTES = W * 4 + 1;
/** A multisig entry's keys live in a Map beside the table: its estimated cost per entry. */
const MULTI_ENTRY_BYTES = 200;
/** Largest share of the slots in use before the table grows (linear probing slows beyond). */
const MAX_LOAD = 0.75;

/**
 * The most entries a table may hold within `bytes`, counting the moment it grows (the old
 * and the new table, 1.5 × the new one's size, live at once): three quarters of the largest
 * power-of-two capacity whose growth fits. At least 768 (the smallest table).
 */
export function entriesWithin(bytes: number): number {
  let cap = 1 << 10;
  while (cap * 2 * SLOT_BYTES * 1.5 <= bytes) cap *= 2;
  return Math.floor(cap * MAX_LOAD);
}

function rd32(b: Uint8Array, p: number): number {
  return b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24) | 0;
}

/** A found entry's values. */
export interface CachedOutpoint {
  slot: number;
  txNum: number;
  keys: ScriptKeys;
}

export class OutpointCache {
  private cap: number;
  private mask: number;
  /** The slots' words, and tx_nums through a float64 view of the same memory. */
  private w!: Int32Array;
  private t!: Float64Array;
  private flags!: Uint8Array;
  private readonly multi = new Map<string, readonly (string | Uint8Array)[]>();
  size = 0;

  constructor(capacity = 1 << 16) {
    let cap = 1 << 10;
    while (cap < capacity) cap *= 2;
    this.cap = cap;
    this.mask = cap - 1;
    this.alloc(cap);
  }

  private alloc(cap: number): void {
    this.w = new Int32Array(cap * W);
    this.t = new Float64Array(this.w.buffer);
    this.flags = new Uint8Array(cap);
  }

  /** Bytes held by the table. */
  get bytes(): number {
    return this.cap * SLOT_BYTES + this.multi.size * MULTI_ENTRY_BYTES;
  }

  /**
   * Drops the oldest entries (smallest tx_num: outputs far back in the chain are spent least
   * often) until about `keep` are left; 0 drops every one. Returns how many were dropped. The
   * table keeps its capacity.
   */
  evictTo(keep: number): number {
    if (this.size <= keep) return 0;
    let threshold = Infinity;
    if (keep > 0) {
      // The tx_num below which about size - keep entries lie, from an even sample of the table.
      const sample: number[] = [];
      const step = Math.max(1, Math.floor(this.cap / 8192));
      for (let s = 0; s < this.cap; s += step) if (this.flags[s] !== 0) sample.push(this.txNumAt(s));
      sample.sort((a, b) => a - b);
      threshold = sample[Math.min(sample.length - 1, Math.floor((sample.length * (this.size - keep)) / this.size))] ?? Infinity;
    }
    const before = this.size;
    // Backward-shift deletion moves later entries into the freed slot: look at it again. An
    // entry moved from the table's start to its end (a probe chain that wraps) is met again by
    // the second pass.
    for (let pass = 0; pass < 2; pass++) {
      for (let s = 0; s < this.cap; s++) {
        while (this.flags[s] !== 0 && this.txNumAt(s) < threshold) this.delete(s);
      }
    }
    return before - this.size;
  }

  private home(k0: number, vout: number): number {
    return ((k0 ^ Math.imul(vout + 1, 0x9e3779b1)) >>> 0) & this.mask;
  }

  /** The slot of an outpoint, or -1. */
  find(txid: Uint8Array, vout: number): number {
    return this.findAt(txid, 0, vout);
  }

  /** The slot of the outpoint whose txid is at `bytes[at..at + 32)`, or -1. */
  findAt(bytes: Uint8Array, at: number, vout: number): number {
    const a = rd32(bytes, at);
    const b = rd32(bytes, at + 4);
    const c = rd32(bytes, at + 8);
    let i = this.home(a, vout);
    const f = this.flags;
    const w = this.w;
    while (f[i] !== 0) {
      const o = i * W;
      if (w[o] === a && w[o + VOUT] === vout && w[o + 1] === b && w[o + 2] === c) return i;
      i = (i + 1) & this.mask;
    }
    return -1;
  }

  txNumAt(slot: number): number {
    return this.t[slot * (W / 2) + TXNUM]!;
  }

  /** Kind of key at `slot`: 1 one address, 2 a multisig's keys, 0 none. */
  keyKind(slot: number): 0 | 1 | 2 {
    const fl = this.flags[slot]!;
    return fl & F_SINGLE ? 1 : fl & F_MULTI ? 2 : 0;
  }

  /** The 4 big-endian words of the single key at `slot` (keyKind 1). */
  keyWord(slot: number, i: number): number {
    return this.w[slot * W + KEY + i]!;
  }

  /** The keys of a multisig output at `slot` (keyKind 2), as given to insert. */
  multiKeysAt(slot: number): readonly (string | Uint8Array)[] {
    return this.multi.get(this.multiId(slot)) ?? [];
  }

  /** The address keys stored at `slot`, as uuid strings. */
  keysAt(slot: number): ScriptKeys {
    const fl = this.flags[slot]!;
    if (fl & F_SINGLE) {
      const k = this.w;
      const o = slot * W + KEY;
      const h = hex8(k[o]!) + hex8(k[o + 1]!) + hex8(k[o + 2]!) + hex8(k[o + 3]!);
      return uuidText(h);
    }
    if (fl & F_MULTI) return (this.multi.get(this.multiId(slot)) ?? []).map((k) => (typeof k === 'string' ? k : uuidTextOfBytes(k)));
    return null;
  }

  private multiId(slot: number): string {
    const o = slot * W;
    return `${this.w[o]}:${this.w[o + 1]}:${this.w[o + 2]}:${this.w[o + VOUT]}`;
  }

  /**
   * Adds an outpoint. When it is already present (a BIP30 duplicate coinbase), the old entry is
   * replaced in its slot and its tx_num returned, else -1. One probe: linear probing without
   * tombstones ends a failed search at the empty slot the entry goes to.
   */
  insert(txid: Uint8Array, vout: number, txNum: number, keys: ScriptKeys | Uint8Array | readonly Uint8Array[]): number {
    if (this.size + 1 > this.cap * MAX_LOAD) this.grow();
    const a = rd32(txid, 0);
    const b = rd32(txid, 4);
    const c = rd32(txid, 8);
    const f = this.flags;
    const w = this.w;
    let i = this.home(a, vout);
    let old = -1;
    while (f[i] !== 0) {
      const o = i * W;
      if (w[o] === a && w[o + VOUT] === vout && w[o + 1] === b && w[o + 2] === c) {
        old = this.txNumAt(i);
        if (f[i]! & F_MULTI) this.multi.delete(this.multiId(i));
        this.size--;
        break;
      }
      i = (i + 1) & this.mask;
    }
    const s = i * W;
    w[s] = a;
    w[s + 1] = b;
    w[s + 2] = c;
    w[s + VOUT] = vout;
    this.t[i * (W / 2) + TXNUM] = txNum;
    let fl = F_USED;
    const o = s + KEY;
    if (keys instanceof Uint8Array) {
      fl |= F_SINGLE;
      w[o] = rd32be(keys, 0);
      w[o + 1] = rd32be(keys, 4);
      w[o + 2] = rd32be(keys, 8);
      w[o + 3] = rd32be(keys, 12);
    } else if (typeof keys === 'string') {
      fl |= F_SINGLE;
      const h = uuidHex(keys);
      w[o] = parseInt(h.slice(0, 8), 16) | 0;
      w[o + 1] = parseInt(h.slice(8, 16), 16) | 0;
      w[o + 2] = parseInt(h.slice(16, 24), 16) | 0;
      w[o + 3] = parseInt(h.slice(24, 32), 16) | 0;
    } else if (keys !== null) {
      fl |= F_MULTI;
      this.multi.set(this.multiId(i), keys);
    }
    f[i] = fl;
    this.size++;
    return old;
  }

  /** Removes the entry at `slot` (backward-shift deletion keeps probe chains intact). */
  delete(slot: number): void {
    if (this.flags[slot]! & F_MULTI) this.multi.delete(this.multiId(slot));
    let i = slot;
    let j = slot;
    const f = this.flags;
    const w = this.w;
    f[i] = 0;
    for (;;) {
      j = (j + 1) & this.mask;
      if (f[j] === 0) break;
      const k = this.home(w[j * W]!, w[j * W + VOUT]!);
      // The entry at j may move to i unless its home lies cyclically in (i, j].
      const stays = i <= j ? i < k && k <= j : i < k || k <= j;
      if (stays) continue;
      const to = i * W;
      const from = j * W;
      for (let x = 0; x < W; x++) w[to + x] = w[from + x]!;
      f[i] = f[j]!;
      f[j] = 0;
      i = j;
    }
    this.size--;
  }

  private grow(): void {
    const ow = this.w;
    const of = this.flags;
    const oldCap = this.cap;
    this.cap *= 2;
    this.mask = this.cap - 1;
    this.alloc(this.cap);
    const w = this.w;
    for (let s = 0; s < oldCap; s++) {
      if (of[s] === 0) continue;
      const from = s * W;
      let i = this.home(ow[from]!, ow[from + VOUT]!);
      while (this.flags[i] !== 0) i = (i + 1) & this.mask;
      const to = i * W;
      for (let x = 0; x < W; x++) w[to + x] = ow[from + x]!;
      this.flags[i] = of[s]!;
    }
  }
}

function rd32be(b: Uint8Array, p: number): number {
  return (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]! | 0;
}

function hex8(v: number): string {
  return (v >>> 0).toString(16).padStart(8, '0');
}
