/**
 * The recent transactions' txid → tx_num cache (indexer/writer/txid-cache.ts) against a model:
 * random adds (many txids sharing a home slot or their whole 8-byte key, so probe chains are long
 * and entries supersede one another), undo cuts and evictions at the limit through the ring's
 * growths; backward-shift deletion must keep every probe chain whole.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TxidCache } from '../../../indexer/writer/txid-cache.js';
import { txNumOf } from '../../../src/db/tx-num.js';
import { seededRandom } from '../../support/chain-crash.js';

/** A txid whose first 4 bytes (the home slot) are one of `homes`, and whose next 4 are one of `seconds`. */
function txidFrom(rand: () => number, homes: number, seconds: number): Uint8Array {
  const t = new Uint8Array(randomBytes(32));
  const v = new DataView(t.buffer);
  v.setUint32(0, Math.floor(rand() * homes));
  v.setUint32(4, Math.floor(rand() * seconds));
  return t;
}

const keyOf = (t: Uint8Array) => Buffer.from(t.subarray(0, 8)).toString('hex');

describe('TxidCache', () => {
  it('agrees with a model through adds, cuts and evictions', () => {
    const rand = seededRandom(11);
    const limit = 5_000;
    const cache = new TxidCache(limit);
    // What the cache must answer: per key the entry that named it last, unless that one left.
    const named = new Map<string, { txNum: number; seq: number }>();
    const ring: { key: string; txNum: number; seq: number }[] = [];
    const leave = (e: { key: string; seq: number }) => {
      if (named.get(e.key)?.seq === e.seq) named.delete(e.key);
    };
    const seen: Uint8Array[] = [];
    let next = 0;
    let seq = 0;
    for (let i = 0; i < 60_000; i++) {
      const r = rand();
      if (r < 0.002 && ring.length > 0) {
        // An undo: entries at or above a recent tx_num go; numbering resumes there.
        const from = ring[Math.max(0, ring.length - 1 - Math.floor(rand() * 300))]!.txNum;
        cache.cut(from);
        while (ring.length > 0 && ring[ring.length - 1]!.txNum >= from) leave(ring.pop()!);
        next = from;
      } else {
        const txid = rand() < 0.1 && seen.length > 0 ? seen[Math.floor(rand() * seen.length)]! : txidFrom(rand, 64, 1_000_000);
        if (seen.length < 2_000) seen.push(txid);
        cache.add(txid, next);
        if (ring.length === limit) leave(ring.shift()!);
        ring.push({ key: keyOf(txid), txNum: next, seq });
        named.set(keyOf(txid), { txNum: next, seq });
        seq++;
        next++;
      }
      expect(cache.size).toBe(ring.length);
      if (i % 1_000 === 0 || i === 59_999) {
        for (const t of seen) expect(cache.get(t), keyOf(t)).toBe(named.get(keyOf(t))?.txNum);
        for (const e of ring.slice(-200)) {
          const t = Buffer.from(e.key.padEnd(64, '0'), 'hex');
          expect(cache.get(t)).toBe(named.get(e.key)?.txNum);
        }
      }
    }
    expect(named.size).toBeGreaterThan(limit / 2);
  });

  it('names a block’s transactions by their tx_num, cut back by an undo, empty after clear', () => {
    const cache = new TxidCache(100);
    const a = Array.from({ length: 5 }, () => new Uint8Array(randomBytes(32)));
    const b = Array.from({ length: 3 }, () => new Uint8Array(randomBytes(32)));
    cache.addBlock(7, a);
    cache.addBlock(8, b);
    expect(a.map((t) => cache.get(t))).toEqual(a.map((_, i) => txNumOf(7, i)));
    cache.cut(txNumOf(8, 0));
    expect(b.map((t) => cache.get(t))).toEqual([undefined, undefined, undefined]);
    expect(cache.get(a[4]!)).toBe(txNumOf(7, 4));
    cache.clear();
    expect(cache.size).toBe(0);
    expect(cache.get(a[0]!)).toBeUndefined();
  });

  it('adds a block handed over at the latest when next read or changed: a cut, a clear or another block before the flush see it', () => {
    const txids = (n: number) => Array.from({ length: n }, () => new Uint8Array(randomBytes(32)));
    const [a, b, c] = [txids(4), txids(3), txids(2)];
    // Read before the flush: there.
    const read = new TxidCache(100);
    read.addBlock(7, a);
    expect(read.get(a[3]!)).toBe(txNumOf(7, 3));
    // Cut (an undo of block 8) before the flush: the block handed over is cut, the one below stays.
    const cut = new TxidCache(100);
    cut.addBlock(7, a);
    cut.addBlock(8, b);
    cut.cut(txNumOf(8, 0));
    expect(cut.size).toBe(4);
    expect(b.map((t) => cut.get(t))).toEqual([undefined, undefined, undefined]);
    // Cleared before the flush (a bulk sync): nothing comes back with a later flush.
    const cleared = new TxidCache(100);
    cleared.addBlock(7, a);
    cleared.clear();
    cleared.flush();
    expect(cleared.size).toBe(0);
    expect(cleared.get(a[0]!)).toBeUndefined();
    // An entry added after blocks handed over comes after them (the newest names a shared key).
    const order = new TxidCache(100);
    order.addBlock(7, a);
    order.add(a[0]!, txNumOf(9, 0));
    order.addBlock(10, c);
    order.flush();
    expect(order.get(a[0]!)).toBe(txNumOf(9, 0));
    expect(order.get(c[1]!)).toBe(txNumOf(10, 1));
    expect(order.size).toBe(7);
  });

  it('keeps the newest entries once full, and nothing with a limit of 0', () => {
    const cache = new TxidCache(10);
    const txids = Array.from({ length: 25 }, () => new Uint8Array(randomBytes(32)));
    txids.forEach((t, i) => cache.add(t, i));
    expect(cache.size).toBe(10);
    expect(txids.map((t) => cache.get(t))).toEqual(txids.map((_, i) => (i >= 15 ? i : undefined)));
    const off = new TxidCache(0);
    off.addBlock(1, txids);
    expect(off.size).toBe(0);
    expect(off.get(txids[0]!)).toBeUndefined();
  });

  it('takes the blocks committed while it was filled: newer entries only, in order, the newer naming a shared key', () => {
    const blocks = Array.from({ length: 12 }, () => Array.from({ length: 4 }, () => new Uint8Array(randomBytes(32))));
    // Block 11 repeats block 3's first txid (BIP30's repeated coinbase): the newer position names it.
    blocks[11]![0] = blocks[3]![0]!;
    // The writer's cache, from empty at start: blocks 8–11 committed while the other was filled.
    const live = new TxidCache(1_000);
    for (let h = 8; h < 12; h++) live.addBlock(h, blocks[h]!);
    // The cache filled from the index (read while block 9 committed: it holds blocks 0–9).
    const filled = new TxidCache(1_000);
    for (let h = 0; h < 10; h++) filled.addBlock(h, blocks[h]!);
    filled.addNewer(live);
    const all = new TxidCache(1_000);
    blocks.forEach((b, h) => all.addBlock(h, b));
    expect(filled.size).toBe(48);
    for (const b of blocks) expect(b.map((t) => filled.get(t))).toEqual(b.map((t) => all.get(t)));
    expect(filled.get(blocks[3]![0]!)).toBe(txNumOf(11, 0));
    // An undo afterwards cuts what it took like the rest.
    filled.cut(txNumOf(11, 0));
    expect(filled.get(blocks[11]![1]!)).toBeUndefined();
    expect(filled.get(blocks[10]![3]!)).toBe(txNumOf(10, 3));
    // Filled empty (an index with no blocks yet): everything the writer added.
    const empty = new TxidCache(1_000);
    empty.addNewer(live);
    expect(blocks[9]!.map((t) => empty.get(t))).toEqual(blocks[9]!.map((_, i) => txNumOf(9, i)));
    expect(empty.size).toBe(16);
    // A limit of 0 takes nothing.
    const off = new TxidCache(0);
    off.addNewer(live);
    expect(off.size).toBe(0);
  });
});
