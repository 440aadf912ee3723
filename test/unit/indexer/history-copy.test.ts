/**
 * chain-rows.ts `historyCopy`: a block's history chunks as binary COPY rows in (addr_key,
 * first_tx_num) order, the order its keys' text sorts in, whether keys differ in their first 8
 * hex digits (compared as numbers) or share them (compared as text), and an address's chunks
 * by their first entry. Read back with the COPY reader and compared with a plain sort.
 */
import { describe, expect, it } from 'vitest';
import { historyCopy } from '../../../indexer/writer/chain-rows.js';
import { eachCopyRow } from '../../../indexer/writer/copy-binary.js';
import { uuidText } from '../../../src/db/address-key.js';
import { seededRandom } from '../../support/chain-crash.js';

type Chunk = { key: string; first: number; entries: number[] };

const hex = (rand: () => number, n: number) => Array.from({ length: n }, () => Math.floor(rand() * 16).toString(16)).join('');

function rowsOf(chunks: Chunk[]): { key: string; first: number }[] {
  const out: { key: string; first: number }[] = [];
  eachCopyRow(historyCopy(chunks).finish(), 3, (data, at, len) => {
    expect(len[0]).toBe(16);
    out.push({ key: uuidText(data.toString('hex', at[0]!, at[0]! + 16)), first: Number(data.readBigInt64BE(at[1]!)) });
  });
  return out;
}

describe('historyCopy', () => {
  it('writes the chunks in (key, first entry) order: random keys, shared 8-digit heads, an address in several chunks', () => {
    const rand = seededRandom(34);
    const heads = Array.from({ length: 5 }, () => hex(rand, 8));
    const chunks: Chunk[] = [];
    for (let i = 0; i < 3000; i++) {
      // a third share one of five heads, so that the text decides between them
      const head = i % 3 === 0 ? heads[i % 5]! : hex(rand, 8);
      const key = uuidText(head + hex(rand, 24));
      const first = Math.floor(rand() * 2 ** 40);
      chunks.push({ key, first, entries: [first] });
      if (i % 7 === 0) chunks.push({ key, first: first - 1000, entries: [first - 1000, first - 999] });
    }
    // heads at the ends of the range, and a key whose head sorts before every other
    for (const head of ['00000000', 'ffffffff']) chunks.push({ key: uuidText(head + hex(rand, 24)), first: 5, entries: [5] });
    const expected = [...chunks]
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.first - b.first))
      .map((c) => ({ key: c.key, first: c.first }));
    const rows = rowsOf(chunks);
    expect(rows).toEqual(expected);
    expect(rows[0]!.key.startsWith('00000000')).toBe(true);
    expect(rows[rows.length - 1]!.key.startsWith('ffffffff')).toBe(true);
  });

  it('writes nothing but the header and trailer for no chunks', () => {
    expect(rowsOf([])).toEqual([]);
  });
});
