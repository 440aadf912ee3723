/**
 * An address with a million confirmed transactions (pages at any depth cost the same), built
 * straight in PostgreSQL: 1,000 blocks of 1,000 transactions, history in 977 chunks of up to 1024
 * entries (as the bulk finish cuts them: test/support/history-rows.ts), one unspent output per
 * transaction. Walking every page by the Link header gives each
 * of the million entries exactly once, newest first, for history and for unspent outputs; the
 * page at depth 500,000 reached through a cursor is the same as the walk's. Speed at depth is
 * measured by bench/api (no timed assertion here).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { createApiHarness, walkPages, type ApiHarness } from './harness.js';
import { seedHistory } from '../../support/history-rows.js';
import { addressToScript } from '../../../src/bitcoin/address.js';
import { addressKey } from '../../../src/db/address-key.js';
import { encodeOuts } from '../../../src/db/packed.js';
import { txNum, sqlFirstTxNum } from '../../../src/db/tx-num.js';

const C = 'bcrt1qa5pzh3yzt94etaygkd4zlxkru7kkl6ssecgx6n';
const script = addressToScript(C, 'regtest');
const key = addressKey(script);
const BLOCKS = 1000;
const PER_BLOCK = 1000;

/** Display txids of every transaction, newest first (txid = SHA-256 of the 8-byte tx_num, as built below). */
function newestFirst(): string[] {
  const out: string[] = [];
  const b = Buffer.alloc(8);
  for (let h = BLOCKS; h >= 1; h--) {
    for (let p = PER_BLOCK - 1; p >= 0; p--) {
      b.writeBigInt64BE(txNum(h, p));
      out.push(createHash('sha256').update(b).digest().reverse().toString('hex'));
    }
  }
  return out;
}

describe('an address with a million transactions', () => {
  let h: ApiHarness;
  let expected: string[];
  beforeAll(async () => {
    h = await createApiHarness();
    const db = h.t.db;
    await sql`INSERT INTO txs (tx_num, txid, outs, ins)
      SELECT n, sha256(int8send(n)), ${encodeOuts([{ value: 1000n, script }])}, '\\x'::bytea
      FROM (SELECT ${sqlFirstTxNum(sql`h`)} | p AS n FROM generate_series(1, ${BLOCKS}) h, generate_series(0, ${PER_BLOCK - 1}) p) s`.execute(
      db,
    );
    await sql`INSERT INTO utxos (txid, vout, tx_num, addr_key, value, script) SELECT txid, 0, tx_num, ${key}::uuid, 1000, ${Buffer.from(script)} FROM txs`.execute(
      db,
    );
    // (the history as the bulk finish leaves it: 1024-entry chunks)
    const nums = Array.from({ length: BLOCKS * PER_BLOCK }, (_, i) => txNum(1 + Math.floor(i / PER_BLOCK), i % PER_BLOCK));
    await seedHistory(db, key, nums, 'bulk');
    await db
      .insertInto('balances')
      .values({ addr_key: key, balance: BigInt(BLOCKS * PER_BLOCK * 1000), utxo_count: BLOCKS * PER_BLOCK })
      .execute();
    await db
      .updateTable('chain_tip')
      .set({ height: BLOCKS, hash: Buffer.alloc(32, 1) })
      .execute();
    await sql`ANALYZE txs, utxos, history`.execute(db);
    expected = newestFirst();
  }, 300_000);
  afterAll(async () => h?.close());

  it('is stored as 977 history chunks of up to 1024 entries', async () => {
    const r = await sql<{
      chunks: number;
      entries: string;
    }>`SELECT count(*)::int4 AS chunks, sum(1 + length(rest) / 8)::text AS entries FROM history WHERE addr_key = ${key}::uuid`.execute(
      h.t.db,
    );
    expect(r.rows[0]).toEqual({ chunks: 977, entries: '1000000' });
    expect((await h.get(`/v1/addresses/${C}/balance`)).json()).toEqual({ balance: 1_000_000_000 });
  });

  it('history: every page by the Link header, each of the million entries once, newest first; the cursor at depth 500,000 gives the same page again', async () => {
    const { items, links } = await walkPages(h, `/v1/addresses/${C}/history?limit=10000`);
    expect(items.length).toBe(1_000_000);
    expect(items).toEqual(expected);
    const deep = links[49]!; // the link after 50 pages of 10,000: entries 500,000…
    const again = (await h.get(deep.replace('limit=10000', 'limit=25'))).json() as string[];
    expect(again).toEqual(expected.slice(500_000, 500_025));
    const last = (await h.get(links[links.length - 1]!)).json() as string[];
    expect(last).toEqual(expected.slice(990_000));
  }, 300_000);

  it('unspent outputs: every page, each of the million outputs once, newest first', async () => {
    const { items, links } = await walkPages(h, `/v1/addresses/${C}/unspentoutputs?limit=10000`);
    const seen = (items as { transaction_hash: string; index: number; value: number }[]).map((u) => u.transaction_hash);
    expect(seen.length).toBe(1_000_000);
    expect(seen).toEqual(expected);
    const deep = (await h.get(links[49]!.replace('limit=10000', 'limit=25'))).json() as { transaction_hash: string }[];
    expect(deep.map((u) => u.transaction_hash)).toEqual(expected.slice(500_000, 500_025));
  }, 300_000);
});
