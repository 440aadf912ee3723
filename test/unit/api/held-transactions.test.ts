/**
 * HeldTransactions (api/cache/held-transactions.ts): a held value comes back only for a row equal in
 * every field it was built from (a changed block hash, outputs, inputs, first-seen time or colors
 * drops it), the least recently used go first past the byte bound, and nothing larger
 * than the bound is held.
 */
import { describe, expect, it } from 'vitest';
import { HeldTransactions } from '../../../api/cache/held-transactions.js';

const row = (over: Record<string, unknown> = {}) => ({
  txid: Buffer.alloc(32, 1),
  tx_num: 5n,
  outs: Buffer.from('0102', 'hex'),
  ins: Buffer.from('03', 'hex'),
  first_seen: new Date(1_700_000_000_000),
  block_hash: Buffer.alloc(32, 9),
  block_time: 1_700_000_600,
  asset_colors: null,
  ...over,
});

describe('HeldTransactions', () => {
  it('answers only a row equal to the one the value was built from', () => {
    const held = new HeldTransactions<string>(1 << 20);
    held.set(row(), 3, 'built');
    expect(held.get(row())).toBe('built');
    // (a fresh Date and fresh Buffers with the same contents are the same row)
    expect(held.get(row({ first_seen: new Date(1_700_000_000_000), outs: Buffer.from('0102', 'hex') }))).toBe('built');
    const changes: Record<string, unknown>[] = [
      { block_hash: Buffer.alloc(32, 8) }, // the block was replaced by a reorg
      { tx_num: 6n },
      { outs: Buffer.from('0103', 'hex') },
      { ins: Buffer.from('04', 'hex') },
      { first_seen: null },
      { block_time: 1 },
      { asset_colors: Buffer.from('00', 'hex') },
    ];
    for (const change of changes) {
      held.set(row(), 3, 'built');
      expect(held.get(row(change)), JSON.stringify(Object.keys(change))).toBeUndefined();
      // (dropped: the unchanged row finds nothing either until it is built again)
      expect(held.get(row())).toBeUndefined();
    }
    expect(held.size).toEqual({ transactions: 0, bytes: 0 });
  });

  it('drops the least recently used past its bound and never holds what exceeds it', () => {
    const one = new HeldTransactions<string>(10_000);
    one.set(row(), 2, 'a');
    const perTx = one.size.bytes;
    const held = new HeldTransactions<string>(perTx * 2);
    const r = (i: number) => row({ txid: Buffer.alloc(32, i) });
    held.set(r(1), 2, 'a');
    held.set(r(2), 2, 'b');
    expect(held.get(r(1))).toBe('a'); // 1 is now the most recently used
    held.set(r(3), 2, 'c');
    expect(held.get(r(2))).toBeUndefined();
    expect(held.get(r(1))).toBe('a');
    expect(held.get(r(3))).toBe('c');
    expect(held.size).toEqual({ transactions: 2, bytes: perTx * 2 });
    held.set(r(4), 10_000, 'huge');
    expect(held.get(r(4))).toBeUndefined();
    expect(held.size.transactions).toBe(2);
  });
});
