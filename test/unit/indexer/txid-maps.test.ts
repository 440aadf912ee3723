/**
 * txid-maps.ts against the straightforward Maps it replaces (string keys: the txid's bytes as
 * latin1, `:vout` appended), on random txids and on txids made to collide in the bytes the maps
 * key by (same first 4 bytes, outpoints whose keys coincide).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { OutpointMap, TxidMap } from '../../../indexer/writer/txid-maps.js';

const key = (txid: Uint8Array) => Buffer.from(txid).toString('latin1');

/** `n` txids, every `shared`-th one sharing its first 4 bytes with the one before. */
function txids(n: number, shared: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const t = new Uint8Array(randomBytes(32));
    if (i > 0 && i % shared === 0) t.set(out[i - 1]!.subarray(0, 4));
    out.push(t);
  }
  return out;
}

describe('TxidMap', () => {
  it('gives what a Map keyed by the txid string gives, colliding prefixes included', () => {
    const ids = txids(3000, 3);
    const mine = new TxidMap<number>();
    const plain = new Map<string, number>();
    ids.forEach((t, i) => {
      if (i % 2 === 0) {
        mine.set(t, i);
        plain.set(key(t), i);
      }
    });
    // overwrite some, through a copy of the txid (equal bytes, another array)
    for (let i = 0; i < ids.length; i += 10) {
      mine.set(new Uint8Array(ids[i]!), -i);
      plain.set(key(ids[i]!), -i);
    }
    for (const t of [...ids, ...txids(200, 2)]) expect(mine.get(new Uint8Array(t))).toBe(plain.get(key(t)));
  });
});

describe('OutpointMap', () => {
  it('gives what a Map keyed by txid:vout gives, colliding keys included', () => {
    const ids = txids(2000, 2);
    const mine = new OutpointMap<string>();
    const plain = new Map<string, string>();
    const outpoints: [Uint8Array, number][] = [];
    ids.forEach((t, i) => {
      for (const vout of [0, 1, i % 7, 0x3fffffff, 2 ** 31 + 5]) outpoints.push([t, vout]);
    });
    // the same key from another txid and vout: the txid's low bits xor the vout's mix
    const a = ids[0]!;
    const b = new Uint8Array(a);
    b[31] = b[31]! ^ 1;
    outpoints.push([a, 3], [b, 3]);
    outpoints.forEach(([t, vout], i) => {
      if (i % 3 !== 0) {
        mine.set(t, vout, `v${i}`);
        plain.set(`${key(t)}:${vout}`, `v${i}`);
      }
    });
    expect(mine.size).toBe(plain.size);
    for (const [t, vout] of outpoints) {
      expect(mine.get(new Uint8Array(t), vout)).toBe(plain.get(`${key(t)}:${vout}`));
      expect(mine.has(t, vout)).toBe(plain.has(`${key(t)}:${vout}`));
    }
    const copied = new OutpointMap<string>().setAll(mine);
    const seen = new Map<string, string>();
    copied.forEach((t, vout, v) => seen.set(`${key(t)}:${vout}`, v));
    expect(seen).toEqual(plain);
  });

  it('chains entries whose keys collide', () => {
    // t1 and t2 share their first 4 bytes: the same vout gives both the same integer key
    const t1 = new Uint8Array(32).fill(1);
    const t2 = new Uint8Array(32).fill(1);
    t2[5] = 9;
    const m = new OutpointMap<number>();
    m.set(t1, 7, 1).set(t2, 7, 2).set(t1, 8, 3);
    expect([m.get(t1, 7), m.get(t2, 7), m.get(t1, 8), m.get(t2, 8), m.size]).toEqual([1, 2, 3, undefined, 3]);
    m.set(t2, 7, 20);
    expect([m.get(t1, 7), m.get(t2, 7), m.size]).toEqual([1, 20, 3]);
  });
});
