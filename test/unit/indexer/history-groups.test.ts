/**
 * The bulk path's history grouping (append, one radix sort, cut) against the straightforward
 * version, a Map from key to its ascending tx_nums: random entries in chain order over keys
 * that share their first word (the sort's tie-break), their first 16 bits, or nothing, with
 * repeats (a transaction touching an address twice), keys with more entries than a chunk holds,
 * and enough entries to grow the arrays. The COPY rows are decoded and compared row by row.
 */
import { describe, expect, it } from 'vitest';
import { HistoryGroups } from '../../../indexer/writer/history-groups.js';
import { seededRandom } from '../../support/chain-crash.js';

type Row = { key: string; first: number; rest: number[] };

/** The rows of a binary COPY of (uuid, int8, bytea), as written by BinaryCopy. */
function decodeRows(data: Buffer): Row[] {
  expect(data.subarray(0, 11).toString('latin1')).toBe('PGCOPY\n\xff\r\n\0');
  let p = 19 + data.readInt32BE(15);
  const rows: Row[] = [];
  for (;;) {
    const fields = data.readInt16BE(p);
    p += 2;
    if (fields === -1) break;
    expect(fields).toBe(3);
    expect(data.readInt32BE(p)).toBe(16);
    const key = data.subarray(p + 4, p + 20).toString('hex');
    p += 20;
    expect(data.readInt32BE(p)).toBe(8);
    const first = Number(data.readBigInt64BE(p + 4));
    p += 12;
    const len = data.readInt32BE(p);
    p += 4;
    const rest: number[] = [];
    for (let q = p; q < p + len; q += 8) rest.push(Number(data.readBigUInt64BE(q)));
    p += len;
    rows.push({ key, first, rest });
  }
  expect(p).toBe(data.length);
  return rows;
}

/** The straightforward grouping: per key its distinct tx_nums in order, cut every `max`. */
function modelRows(entries: readonly { key: Buffer; txNum: number }[], max: number): Row[] {
  const byKey = new Map<string, number[]>();
  for (const e of entries) {
    const id = e.key.toString('hex');
    const list = byKey.get(id) ?? [];
    if (list[list.length - 1] !== e.txNum) list.push(e.txNum);
    byKey.set(id, list);
  }
  const rows: Row[] = [];
  for (const [key, nums] of byKey) {
    for (let c = 0; c < nums.length; c += max) {
      const chunk = nums.slice(c, c + max);
      rows.push({ key, first: chunk[0]!, rest: chunk.slice(1) });
    }
  }
  return rows;
}

const byKeyThenFirst = (a: Row, b: Row) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.first - b.first);

describe('HistoryGroups', () => {
  it('groups like a Map through 200,000 entries over colliding keys', () => {
    const rand = seededRandom(23);
    const keys: Buffer[] = [];
    for (let i = 0; i < 3000; i++) {
      const k = Buffer.alloc(16);
      for (let j = 0; j < 16; j++) k[j] = Math.floor(rand() * 256);
      // Every fifth key shares its first word with an earlier one, every seventh its first 16 bits.
      if (i > 0 && i % 5 === 0) keys[Math.floor(rand() * i)]!.copy(k, 0, 0, 4);
      else if (i > 0 && i % 7 === 0) keys[Math.floor(rand() * i)]!.copy(k, 0, 0, 2);
      keys.push(k);
    }
    const g = new HistoryGroups();
    const entries: { key: Buffer; txNum: number }[] = [];
    let txNum = 5 * 2 ** 20;
    for (let i = 0; i < 200_000; i++) {
      if (rand() < 0.4) txNum += 1 + Math.floor(rand() * 3);
      // A few hot keys (more entries than a chunk), most drawn from the whole pool.
      const key = rand() < 0.1 ? keys[Math.floor(rand() * 3)]! : keys[Math.floor(rand() * keys.length)]!;
      g.addBytes(key, txNum);
      entries.push({ key, txNum });
    }
    expect(g.entries).toBe(200_000);
    const max = 1024;
    const got = decodeRows(g.rows(max).finish());
    const want = modelRows(entries, max);
    expect(got.some((r) => r.rest.length === max - 1)).toBe(true);
    expect(new Set(got.map((r) => r.key.slice(0, 8))).size).toBeLessThan(new Set(got.map((r) => r.key)).size);
    // Rows come out in key order, each key's chunks in chain order.
    expect(got).toEqual([...got].sort(byKeyThenFirst));
    expect(got).toEqual(want.sort(byKeyThenFirst));
  });

  it('orders the keys of a small bucket (a few keys sharing their first 16 bits)', () => {
    const rand = seededRandom(29);
    // 8 keys per bucket in 3 buckets (24 entries each), entries added in descending key order, interleaved.
    const keys: Buffer[] = [];
    for (const prefix of [0xfffe, 0x8000, 0x0001]) {
      for (let i = 0; i < 8; i++) {
        const k = Buffer.alloc(16);
        for (let j = 2; j < 16; j++) k[j] = Math.floor(rand() * 256);
        k.writeUInt16BE(prefix, 0);
        keys.push(k);
      }
    }
    keys.sort((a, b) => Buffer.compare(b, a));
    const g = new HistoryGroups();
    const entries: { key: Buffer; txNum: number }[] = [];
    for (let txNum = 1; txNum <= 3; txNum++) {
      for (const key of keys) {
        g.addBytes(key, txNum);
        entries.push({ key, txNum });
      }
    }
    const got = decodeRows(g.rows(1024).finish());
    expect(got).toEqual(modelRows(entries, 1024).sort(byKeyThenFirst));
    expect(got.map((r) => r.rest)).toEqual(got.map(() => [2, 3]));
  });

  it('gives no rows for no entries, one row for one', () => {
    expect(decodeRows(new HistoryGroups().rows(1024).finish())).toEqual([]);
    const g = new HistoryGroups();
    const key = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
    g.addBytes(key, 7);
    g.addBytes(key, 7);
    expect(decodeRows(g.rows(1024).finish())).toEqual([{ key: key.toString('hex'), first: 7, rest: [] }]);
  });
});
