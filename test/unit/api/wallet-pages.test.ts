/**
 * How the wallet routes cut their pages (api/wallet-pages.ts), driven by fixtures/wallet-pages.json:
 * rows as a query returns them (read with limit + 1), the page answered and where the next one
 * resumes. Unspent outputs are [tx_num or null in the mempool, vout].
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cutPage, unspentPage } from '../../../api/wallet-pages.js';

type Out = [string | null, number];
type Fixtures = {
  cutPage: { description: string; rows: number[]; limit: number; page: number[]; last: number | null }[];
  unspentPage: { description: string; rows: Out[]; limit: number; page: Out[]; next: Out | null }[];
};

const fixtures = JSON.parse(readFileSync(new URL('./fixtures/wallet-pages.json', import.meta.url), 'utf8')) as Fixtures;
const toRow = ([txNum, vout]: Out) => ({ txNum: txNum === null ? null : BigInt(txNum), vout });
const toOut = (r: { txNum: bigint | null; vout: number }): Out => [r.txNum === null ? null : String(r.txNum), r.vout];

describe('cutPage', () => {
  for (const c of fixtures.cutPage) {
    it(c.description, () => {
      const r = cutPage(c.rows, c.limit);
      expect({ page: r.rows, last: r.last ?? null }).toEqual({ page: c.page, last: c.last });
    });
  }
});

describe('unspentPage', () => {
  for (const c of fixtures.unspentPage) {
    it(c.description, () => {
      const r = unspentPage(c.rows.map(toRow), c.limit);
      expect({ page: r.rows.map(toOut), next: r.next ? toOut(r.next) : null }).toEqual({ page: c.page, next: c.next });
    });
  }
});
