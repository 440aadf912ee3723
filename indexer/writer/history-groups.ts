/**
 * The bulk path's history entries of one batch, grouped by address key into `history` rows
 * without a hash table or per-entry objects: each entry is appended as (key as 4 big-endian
 * words, tx_num) to typed arrays, in chain order; `rows` sorts the batch's entries once by key
 * (a counting scatter of whole entries into buckets by the key's first bits, then each
 * bucket that holds several keys sorted by key and tx_num: rows come out in the keys' byte
 * order) and cuts each key's run into chunks. A key's entries stay in chain order, ascending,
 * so a repeat (a transaction touching an address twice) is the entry just before it and is
 * dropped. Appending and one sequential sort replace the former per-batch open-addressing
 * table, whose random probes and growth were a fifth of the load's CPU; scattering whole entries
 * once (instead of sorting an index array, then reading the entries through it) leaves one
 * random write per entry.
 * @module
 */
import { ENTRY_BYTES, writeEntry } from '../../src/db/history-entries.js';
import { BinaryCopy } from './copy-binary.js';

/** At most 2^20 buckets (a 4 MB count array). */
const MAX_BUCKET_BITS = 20;

export class HistoryGroups {
  /** Keys, 4 words per entry. */
  private k = new Int32Array(4 << 16);
  private num = new Float64Array(1 << 16);
  private n = 0;
  /** The sorted copy (`sorted`), kept for the next batch's. */
  private sk = new Int32Array(0);
  private snum = new Float64Array(0);

  /** Entries added so far (repeats included). */
  get entries(): number {
    return this.n;
  }

  add(w0: number, w1: number, w2: number, w3: number, txNum: number): void {
    const e = this.n;
    if (e === this.num.length) this.grow();
    const o = e * 4;
    const k = this.k;
    k[o] = w0;
    k[o + 1] = w1;
    k[o + 2] = w2;
    k[o + 3] = w3;
    this.num[e] = txNum;
    this.n = e + 1;
  }

  /** Forgets every entry, keeping the arrays (a recycled batch's, bulk-batch.ts). */
  reset(): void {
    this.n = 0;
  }

  /** Adds the entry of the 16-byte key `b`. */
  addBytes(b: Uint8Array, txNum: number): void {
    this.add(be32(b, 0), be32(b, 4), be32(b, 8), be32(b, 12), txNum);
  }

  private grow(): void {
    const k = new Int32Array(this.k.length * 2);
    k.set(this.k);
    this.k = k;
    const t = new Float64Array(this.num.length * 2);
    t.set(this.num);
    this.num = t;
  }

  /**
   * The entries in key order, each key's in the order they were added (ascending tx_nums), copied
   * into new contiguous arrays: one counting pass on the first word's high bits (keys are
   * hashes, so the buckets are even: about four entries each), one scatter of whole entries in
   * bucket order (stable: a key's entries keep their order), then each bucket sorted by the
   * whole key where it holds more than one key. Each entry is written once at a random place and
   * read sequentially otherwise, so the cut that follows reads memory in order too.
   */
  private sorted(): { k: Int32Array; num: Float64Array } {
    const n = this.n;
    const k = this.k;
    const num = this.num;
    if (this.snum.length < n) {
      this.sk = new Int32Array(this.k.length);
      this.snum = new Float64Array(this.num.length);
    }
    const sk = this.sk;
    const snum = this.snum;
    // About four entries a bucket: most buckets then hold one key and need no sort.
    const bits = Math.max(8, Math.min(MAX_BUCKET_BITS, Math.ceil(Math.log2(n + 1)) - 2));
    const shift = 32 - bits;
    const buckets = 1 << bits;
    const start = new Uint32Array(buckets + 1);
    for (let i = 0; i < n; i++) start[(k[i * 4]! >>> shift) + 1]!++;
    for (let b = 0; b < buckets; b++) start[b + 1]! += start[b]!;
    const at = start.slice(0, buckets);
    for (let i = 0; i < n; i++) {
      const o = i * 4;
      const d = at[k[o]! >>> shift]!++;
      const q = d * 4;
      sk[q] = k[o]!;
      sk[q + 1] = k[o + 1]!;
      sk[q + 2] = k[o + 2]!;
      sk[q + 3] = k[o + 3]!;
      snum[d] = num[i]!;
    }
    for (let b = 0; b < buckets; b++) {
      const lo = start[b]!;
      const hi = start[b + 1]!;
      if (hi - lo < 2) continue;
      let mixed = false;
      for (let i = lo + 1; i < hi && !mixed; i++) mixed = !sameKey(sk, i, lo);
      if (mixed) sortRange(sk, snum, lo, hi);
    }
    return { k: sk, num: snum };
  }

  /**
   * History rows: per key, chunks of at most `max` ascending tx_nums (src/db/history-entries.ts),
   * into `into` (emptied first) when given.
   */
  rows(max: number, into?: BinaryCopy): BinaryCopy {
    const n = this.n;
    const out = into ? into.reset(n * 32 + 64) : new BinaryCopy(n * 32 + 64);
    if (n === 0) return out;
    const { k, num } = this.sorted();
    let nums = new Float64Array(1024);
    let scratch = Buffer.allocUnsafe(max * ENTRY_BYTES);
    for (let i = 0; i < n;) {
      const first = i;
      // The key's entries without repeats.
      let m = 0;
      let j = i;
      for (; j < n && sameKey(k, j, first); j++) {
        const t = num[j]!;
        if (m > 0 && nums[m - 1] === t) continue;
        if (m === nums.length) {
          const g = new Float64Array(m * 2);
          g.set(nums);
          nums = g;
        }
        nums[m++] = t;
      }
      const o = first * 4;
      for (let c = 0; c < m; c += max) {
        const len = Math.min(max, m - c);
        if (scratch.length < len * ENTRY_BYTES) scratch = Buffer.allocUnsafe(len * ENTRY_BYTES);
        // `rest`: the entries after the first (the first is the row's first_tx_num).
        for (let x = 1; x < len; x++) writeEntry(scratch, (x - 1) * ENTRY_BYTES, nums[c + x]!);
        out
          .row(3)
          .uuidWords(k[o]!, k[o + 1]!, k[o + 2]!, k[o + 3]!)
          .int8(nums[c]!)
          .byteaRange(scratch, 0, (len - 1) * ENTRY_BYTES);
      }
      i = j;
    }
    return out;
  }
}

/**
 * Sorts entries [lo, hi) of one bucket by key (words as unsigned: byte order), then tx_num: a
 * key's entries stay ascending. Insertion sort for the usual few dozen entries; a bucket that
 * holds a busy address beside others is sorted through an index array.
 */
function sortRange(k: Int32Array, num: Float64Array, lo: number, hi: number): void {
  if (hi - lo <= 32) {
    for (let i = lo + 1; i < hi; i++) {
      const w0 = k[i * 4]!;
      const w1 = k[i * 4 + 1]!;
      const w2 = k[i * 4 + 2]!;
      const w3 = k[i * 4 + 3]!;
      const t = num[i]!;
      let j = i - 1;
      while (j >= lo && cmpEntry(k, num, j, w0, w1, w2, w3, t) > 0) {
        k[(j + 1) * 4] = k[j * 4]!;
        k[(j + 1) * 4 + 1] = k[j * 4 + 1]!;
        k[(j + 1) * 4 + 2] = k[j * 4 + 2]!;
        k[(j + 1) * 4 + 3] = k[j * 4 + 3]!;
        num[j + 1] = num[j]!;
        j--;
      }
      k[(j + 1) * 4] = w0;
      k[(j + 1) * 4 + 1] = w1;
      k[(j + 1) * 4 + 2] = w2;
      k[(j + 1) * 4 + 3] = w3;
      num[j + 1] = t;
    }
    return;
  }
  const idx = Array.from({ length: hi - lo }, (_, i) => lo + i);
  idx.sort((x, y) => cmpEntry(k, num, x, k[y * 4]!, k[y * 4 + 1]!, k[y * 4 + 2]!, k[y * 4 + 3]!, num[y]!));
  const ck = k.slice(lo * 4, hi * 4);
  const cn = num.slice(lo, hi);
  for (let i = 0; i < idx.length; i++) {
    const from = idx[i]! - lo;
    const to = lo + i;
    k[to * 4] = ck[from * 4]!;
    k[to * 4 + 1] = ck[from * 4 + 1]!;
    k[to * 4 + 2] = ck[from * 4 + 2]!;
    k[to * 4 + 3] = ck[from * 4 + 3]!;
    num[to] = cn[from]!;
  }
}

/** Entry `x` against the entry (w0..w3, t): keys as unsigned words, then tx_num. */
function cmpEntry(k: Int32Array, num: Float64Array, x: number, w0: number, w1: number, w2: number, w3: number, t: number): number {
  const o = x * 4;
  return (
    (k[o]! >>> 0) - (w0 >>> 0) ||
    (k[o + 1]! >>> 0) - (w1 >>> 0) ||
    (k[o + 2]! >>> 0) - (w2 >>> 0) ||
    (k[o + 3]! >>> 0) - (w3 >>> 0) ||
    num[x]! - t
  );
}

function sameKey(k: Int32Array, x: number, y: number): boolean {
  const a = x * 4;
  const b = y * 4;
  return k[a] === k[b] && k[a + 1] === k[b + 1] && k[a + 2] === k[b + 2] && k[a + 3] === k[b + 3];
}

function be32(b: Uint8Array, p: number): number {
  return (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]! | 0;
}
