/**
 * The bulk path's history entries of one batch, grouped by address key into `history` rows
 * without a hash table or per-entry objects: each entry is appended as (key as 4 big-endian
 * words, tx_num) to typed arrays, in chain order; `rows` sorts the batch's entries once by key
 * (a stable radix sort on the key's first word, the rare runs of one first word with several
 * keys ordered by the other words: rows come out in the keys' byte order) and cuts each key's
 * run into chunks. Stability keeps a key's
 * entries in chain order, ascending, so a repeat (a transaction touching an address twice) is
 * the entry just before it and is dropped. Appending and one sequential sort replace the former
 * per-batch open-addressing table, whose random probes and growth were a fifth of the load's CPU.
 * @module
 */
import { ENTRY_BYTES, writeEntry } from '../../src/db/history-entries.js';
import { BinaryCopy } from './copy-binary.js';

const RADIX_BITS = 16;
const BUCKETS = 1 << RADIX_BITS;

export class HistoryGroups {
  /** Keys, 4 words per entry. */
  private k = new Int32Array(4 << 16);
  private num = new Float64Array(1 << 16);
  private n = 0;

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

  /** Entry indexes in key order, each key's entries in the order they were added. */
  private sorted(): Uint32Array {
    const n = this.n;
    const k = this.k;
    const a = new Uint32Array(n);
    const b = new Uint32Array(n);
    const count = new Uint32Array(BUCKETS);
    // LSD: low half of the first word, then its high half; each pass is stable.
    for (let i = 0; i < n; i++) count[k[i * 4]! & 0xffff]!++;
    prefix(count);
    for (let i = 0; i < n; i++) b[count[k[i * 4]! & 0xffff]!++] = i;
    count.fill(0);
    for (let i = 0; i < n; i++) count[k[b[i]! * 4]! >>> 16]!++;
    prefix(count);
    for (let i = 0; i < n; i++) {
      const e = b[i]!;
      a[count[k[e * 4]! >>> 16]!++] = e;
    }
    // Runs of one first word holding more than one key: ordered by the other words (stable).
    for (let i = 0; i < n;) {
      const w0 = k[a[i]! * 4]!;
      let j = i + 1;
      let mixed = false;
      while (j < n && k[a[j]! * 4]! === w0) {
        if (!mixed && !sameKey(k, a[j]!, a[i]!)) mixed = true;
        j++;
      }
      if (mixed) {
        const run = Array.from(a.subarray(i, j));
        run.sort((x, y) => cmpWord(k, x, y, 1) || cmpWord(k, x, y, 2) || cmpWord(k, x, y, 3));
        a.set(run, i);
      }
      i = j;
    }
    return a;
  }

  /** History rows: per key, chunks of at most `max` ascending tx_nums (src/db/history-entries.ts). */
  rows(max: number): BinaryCopy {
    const n = this.n;
    const out = new BinaryCopy(n * 32 + 64);
    if (n === 0) return out;
    const order = this.sorted();
    const k = this.k;
    const num = this.num;
    let nums = new Float64Array(1024);
    let scratch = Buffer.allocUnsafe(max * ENTRY_BYTES);
    for (let i = 0; i < n;) {
      const first = order[i]!;
      // The key's entries without repeats.
      let m = 0;
      let j = i;
      for (; j < n && sameKey(k, order[j]!, first); j++) {
        const t = num[order[j]!]!;
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
          .bytea(scratch.subarray(0, (len - 1) * ENTRY_BYTES));
      }
      i = j;
    }
    return out;
  }
}

function sameKey(k: Int32Array, x: number, y: number): boolean {
  const a = x * 4;
  const b = y * 4;
  return k[a] === k[b] && k[a + 1] === k[b + 1] && k[a + 2] === k[b + 2] && k[a + 3] === k[b + 3];
}

/** Word `w` of two entries' keys compared as unsigned: keys end up in byte order. */
function cmpWord(k: Int32Array, x: number, y: number, w: number): number {
  return (k[x * 4 + w]! >>> 0) - (k[y * 4 + w]! >>> 0);
}

/** Counts → each bucket's first position. */
function prefix(count: Uint32Array): void {
  let sum = 0;
  for (let i = 0; i < count.length; i++) {
    const c = count[i]!;
    count[i] = sum;
    sum += c;
  }
}

function be32(b: Uint8Array, p: number): number {
  return (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]! | 0;
}
