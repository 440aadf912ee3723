/**
 * A straightforward model of the history buckets' format (src/db/history-buckets.ts), for the
 * unit and SQL cross-checks: records as objects and hex strings, tx_nums as bigint through
 * src/db/tx-num.ts, bucket ids from the key's bits as a string of '0'/'1', plain sorting; and
 * fast-check generators of keys, entries and parameters with the edge values forced in.
 * @module
 */
import fc from 'fast-check';
import { txNum } from '../../src/db/tx-num.js';

export interface RefRecord {
  /** The key's bytes 4..11, 16 lower-case hex digits. */
  k8: string;
  height: number;
  pos: number;
}

/** The record's 13 bytes as 26 hex digits. */
export function refHex(r: RefRecord): string {
  return r.k8 + r.height.toString(16).padStart(6, '0') + r.pos.toString(16).padStart(4, '0');
}

/** The records of a log, read from its hex (26 digits each). */
export function refDecode(log: Uint8Array): RefRecord[] {
  const hex = Buffer.from(log).toString('hex');
  const out: RefRecord[] = [];
  for (let i = 0; i < hex.length; i += 26)
    out.push({ k8: hex.slice(i, i + 16), height: parseInt(hex.slice(i + 16, i + 22), 16), pos: parseInt(hex.slice(i + 22, i + 26), 16) });
  return out;
}

export const refTxNum = (r: RefRecord): bigint => txNum(r.height, r.pos);

/** Canonical order by plain string comparison: tx field (height, position) descending, then key bytes descending. */
export function refSort(rs: readonly RefRecord[]): RefRecord[] {
  const tx = (r: RefRecord) => refHex(r).slice(16);
  return [...rs].sort((a, b) => (tx(a) !== tx(b) ? (tx(a) < tx(b) ? 1 : -1) : a.k8 === b.k8 ? 0 : a.k8 < b.k8 ? 1 : -1));
}

export const refLog = (rs: readonly RefRecord[]): Buffer => Buffer.from(rs.map(refHex).join(''), 'hex');

const bitsOf = (key: Uint8Array) => [...key.subarray(0, 8)].map((b) => b.toString(2).padStart(8, '0')).join('');

/** The bucket: `base` top bits of bytes 0..3 as a number, plus bit j of bytes 4..7 (from the top) × 2^(base + j), with the split rule. */
export function refBucket(key: Uint8Array, base: number, ext: number, split: number): number {
  const bits = bitsOf(key);
  const at = (e: number) => {
    let b = base === 0 ? 0n : BigInt('0b' + bits.slice(0, base));
    for (let j = 0; j < e; j++) if (bits[32 + j] === '1') b += 1n << BigInt(base + j);
    return Number(b);
  };
  return at(ext) < split ? at(ext + 1) : at(ext);
}

/** A key's bytes 4..11 as hex. */
export const refK8 = (key: Uint8Array): string => Buffer.from(key.subarray(4, 12)).toString('hex');

/** 16-byte keys: random, all zero, all 0xff, and pairs sharing bytes 4..11 (two addresses one record identity). */
export const keyArb: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 6, arbitrary: fc.uint8Array({ minLength: 16, maxLength: 16 }) },
  { weight: 1, arbitrary: fc.constant(new Uint8Array(16)) },
  { weight: 1, arbitrary: fc.constant(new Uint8Array(16).fill(0xff)) },
);

/** A few keys, some sharing their 8 record bytes with another one. */
export const keysArb: fc.Arbitrary<Uint8Array[]> = fc
  .tuple(fc.array(keyArb, { minLength: 1, maxLength: 6 }), fc.array(fc.uint8Array({ minLength: 8, maxLength: 8 }), { maxLength: 2 }))
  .map(([keys, heads]) => [
    ...keys,
    ...heads.map((h) => {
      const k = Uint8Array.from(keys[0]!);
      k.set(h.subarray(0, 4), 0);
      k.set(h.subarray(4), 12);
      return k;
    }),
  ]);

/** Heights and positions with their edges forced: 0, the greatest a record holds, and neighbours. */
export const heightArb = fc.oneof(
  fc.constantFrom(0, 1, 2 ** 24 - 1, 2 ** 24 - 2),
  fc.integer({ min: 0, max: 2 ** 24 - 1 }),
  fc.integer({ min: 0, max: 40 }),
);
export const posArb = fc.oneof(fc.constantFrom(0, 1, 65_535, 65_534), fc.integer({ min: 0, max: 65_535 }), fc.integer({ min: 0, max: 5 }));

/** A set of keys and entries on them (distinct (key, tx_num) pairs are not required: a log may repeat one). */
export const entriesArb: fc.Arbitrary<{ keys: Uint8Array[]; entries: [Uint8Array, number][] }> = keysArb.chain((keys) =>
  fc
    .array(fc.tuple(fc.nat({ max: keys.length - 1 }), heightArb, posArb), { maxLength: 60 })
    .map((es) => ({ keys, entries: es.map(([k, h, p]) => [keys[k]!, Number(txNum(h, p))] as [Uint8Array, number]) })),
);

/** Bucket parameters with the edges of base, ext and split. */
export const paramsArb: fc.Arbitrary<{ base: number; ext: number; split: number }> = fc
  .integer({ min: 0, max: 31 })
  .chain((base) => fc.tuple(fc.constant(base), fc.oneof(fc.constant(0), fc.constant(31 - base), fc.integer({ min: 0, max: 31 - base }))))
  .chain(([base, ext]) => {
    const n = 2 ** (base + ext);
    const split = base + ext >= 31 ? fc.constant(0) : fc.oneof(fc.constantFrom(0, 1, n - 1), fc.integer({ min: 0, max: n - 1 }));
    return split.map((s) => ({ base, ext, split: Math.min(s, n - 1) }));
  });
