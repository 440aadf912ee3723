/**
 * The bulk path's outpoint cache against a Map model: random inserts, finds and deletes through
 * several growths (backward-shift deletion must keep every probe chain intact), overwrites of
 * present outpoints (BIP30: replaced in their slot), single keys as strings or bytes, multisig
 * key lists; trimming to a bound keeps the newest
 * entries, each still found.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { entriesWithin, OutpointCache, SLOT_BYTES } from '../../../indexer/writer/outpoint-cache.js';
import { seededRandom } from '../../support/chain-crash.js';

describe('OutpointCache', () => {
  it('agrees with a Map through 60,000 random operations', () => {
    const rand = seededRandom(7);
    const cache = new OutpointCache(16);
    const model = new Map<string, { txid: Uint8Array; vout: number; txNum: number; key: string }>();
    const live: string[] = [];
    const keyOf = () => {
      const b = randomBytes(16).toString('hex');
      return `${b.slice(0, 8)}-${b.slice(8, 12)}-${b.slice(12, 16)}-${b.slice(16, 20)}-${b.slice(20)}`;
    };
    for (let i = 0; i < 60_000; i++) {
      const r = rand();
      if (r < 0.05 && live.length > 0) {
        // A duplicate: the entry is replaced where it lies, the old one's values returned.
        const id = live[Math.floor(rand() * live.length)]!;
        const e = model.get(id)!;
        const next = { ...e, txNum: Math.floor(rand() * 2 ** 40), key: keyOf() };
        expect(cache.insert(e.txid, e.vout, next.txNum, next.key)).toBe(e.txNum);
        model.set(id, next);
      } else if (r < 0.55 || live.length === 0) {
        const txid = new Uint8Array(randomBytes(32));
        // Shared txid prefixes with different vouts stress the probing.
        const vout = Math.floor(rand() * 4);
        const id = `${Buffer.from(txid).toString('hex')}:${vout}`;
        const e = { txid, vout, txNum: Math.floor(rand() * 2 ** 40), key: keyOf() };
        if (cache.insert(txid, vout, e.txNum, e.key) !== -1) throw new Error(`fresh outpoint ${id} reported as present`);
        model.set(id, e);
        live.push(id);
      } else {
        const j = Math.floor(rand() * live.length);
        const id = live[j]!;
        live[j] = live[live.length - 1]!;
        live.pop();
        const e = model.get(id)!;
        model.delete(id);
        const slot = cache.find(e.txid, e.vout);
        if (slot < 0 || cache.txNumAt(slot) !== e.txNum || cache.keysAt(slot) !== e.key) throw new Error(`entry ${id} lost at step ${i}`);
        cache.delete(slot);
        if (cache.find(e.txid, e.vout) !== -1) throw new Error(`entry ${id} still found after delete at step ${i}`);
      }
      if (i % 1000 === 0) expect(cache.size).toBe(model.size);
    }
    expect(cache.size).toBe(model.size);
    for (const e of model.values()) {
      const slot = cache.find(e.txid, e.vout);
      expect(cache.txNumAt(slot)).toBe(e.txNum);
      expect(cache.keysAt(slot)).toBe(e.key);
    }
  });

  it('stores keys as bytes, multisig lists and no key; an overwrite returns the old entry', () => {
    const cache = new OutpointCache();
    const txid = new Uint8Array(32).fill(7);
    const key = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
    expect(cache.insert(txid, 0, 42, key)).toBe(-1);
    const s0 = cache.find(txid, 0);
    expect(cache.keyKind(s0)).toBe(1);
    expect(cache.keysAt(s0)).toBe('00112233-4455-6677-8899-aabbccddeeff');
    expect([0, 1, 2, 3].map((i) => (cache.keyWord(s0, i) >>> 0).toString(16))).toEqual(['112233', '44556677', '8899aabb', 'ccddeeff']);
    cache.insert(txid, 1, 43, [key, Buffer.alloc(16, 1)]);
    expect(cache.keyKind(cache.find(txid, 1))).toBe(2);
    expect(cache.multiKeysAt(cache.find(txid, 1))).toHaveLength(2);
    cache.insert(txid, 2, 44, null);
    expect(cache.keyKind(cache.find(txid, 2))).toBe(0);
    expect(cache.keysAt(cache.find(txid, 2))).toBeNull();
    expect(cache.insert(txid, 0, 99, key)).toBe(42);
    expect(cache.txNumAt(cache.find(txid, 0))).toBe(99);
    expect(cache.size).toBe(3);
  });

  it('evictTo drops the oldest entries down to about the number asked, and every kept one is still found', () => {
    const rand = seededRandom(11);
    const cache = new OutpointCache(16);
    const all: { txid: Uint8Array; vout: number; txNum: number }[] = [];
    for (let i = 0; i < 20_000; i++) {
      const e = { txid: new Uint8Array(randomBytes(32)), vout: Math.floor(rand() * 3), txNum: i };
      cache.insert(e.txid, e.vout, e.txNum, i % 7 === 0 ? [Buffer.alloc(16, 1), Buffer.alloc(16, 2)] : Buffer.alloc(16, i % 251));
      all.push(e);
    }
    const capBytes = cache.bytes;
    const dropped = cache.evictTo(5_000);
    expect(dropped + cache.size).toBe(20_000);
    // The threshold comes from a sample: within a few per cent of the number asked.
    expect(cache.size).toBeGreaterThan(4_500);
    expect(cache.size).toBeLessThan(5_500);
    const threshold = 20_000 - cache.size;
    for (const e of all) {
      const slot = cache.find(e.txid, e.vout);
      if (e.txNum >= threshold) {
        expect(slot).toBeGreaterThanOrEqual(0);
        expect(cache.txNumAt(slot)).toBe(e.txNum);
        if (e.txNum % 7 === 0) expect(cache.multiKeysAt(slot)).toHaveLength(2);
      } else expect(slot).toBe(-1);
    }
    // The multisig keys of the dropped entries went with them.
    expect(cache.bytes).toBeLessThan(capBytes);
    const left = cache.size;
    expect(cache.evictTo(0)).toBe(left);
    expect(cache.size).toBe(0);
    for (const e of all.slice(-100)) expect(cache.find(e.txid, e.vout)).toBe(-1);
  });

  it('entriesWithin: a table that fits with its growth (1.5 × its slots), at least the smallest', () => {
    expect(entriesWithin(0)).toBe(768);
    for (const mb of [8, 100, 3440]) {
      const n = entriesWithin(mb * 2 ** 20);
      const cap = Math.round(n / 0.75);
      expect(cap * SLOT_BYTES * 1.5).toBeLessThanOrEqual(mb * 2 ** 20);
      expect(cap * 2 * SLOT_BYTES * 1.5).toBeGreaterThan(mb * 2 ** 20);
    }
  });
});
