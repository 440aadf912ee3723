/**
 * The per-block statements join a block's keys (thousands of outpoints or addresses) to tables
 * of millions of rows. Left to itself PostgreSQL often picks a hash join over a sequential scan
 * of the whole table for them; `preferIndexLookups` (indexer/planner-hints.ts: called before the tip lock of every block
 * transaction and in every mempool change) keeps them on index lookups. Checked on the real statements'
 * shapes against a real PostgreSQL: the planner's own choice first (so the test shows the
 * setting matters), then the choice inside a transaction that called preferIndexLookups.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createHash } from 'node:crypto';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { preferIndexLookups } from '../../../indexer/planner-hints.js';
import { txidIs } from '../../../src/db/txid-key.js';
import { spendStatement } from '../../../indexer/writer/chain-rows.js';
import { BALANCE_ROWS, balanceOfSql, sqlBalanceOf } from '../../../src/db/balance-reads.js';

const ROWS = 300_000;
const KEYS = 8_000;
const txidOf = (i: number) => createHash('sha256').update(String(i)).digest();
const uuidOf = (i: number) => {
  const h = createHash('md5').update(String(i)).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

let t: TestDatabase;

beforeAll(async () => {
  t = await createMigratedDatabase('plans');
  await sql`
    INSERT INTO utxos (txid, vout, tx_num, addr_key, value, script)
    SELECT sha256(i::text::bytea), 0, i, md5(i::text)::uuid, 1000, '\\x0014'::bytea || sha256(i::text::bytea)
    FROM generate_series(1, ${ROWS}) i`.execute(t.db);
  await sql`
    INSERT INTO txs (tx_num, txid, outs, ins)
    SELECT i, sha256(i::text::bytea), ''::bytea, ''::bytea FROM generate_series(1, ${ROWS}) i`.execute(t.db);
  await sql`INSERT INTO balances (addr_key, balance, utxo_count) SELECT md5(i::text)::uuid, 1000, 1 FROM generate_series(1, ${ROWS}) i`.execute(
    t.db,
  );
  await sql`ANALYZE utxos`.execute(t.db);
  await sql`ANALYZE txs`.execute(t.db);
  await sql`ANALYZE balances`.execute(t.db);
}, 120_000);

afterAll(async () => {
  await t?.drop();
});

/** EXPLAIN (no execution) of the block statements' shapes, with or without preferIndexLookups first. */
async function plans(keyed: boolean): Promise<{ spend: string; spendByKey: string; both: string; balances: string; coinbases: string }> {
  const picks = Array.from({ length: KEYS }, (_, k) => 1 + ((k * 37) % ROWS));
  return t.db.transaction().execute(async (trx) => {
    if (keyed) await preferIndexLookups(trx);
    // The writer's spend statement (chain-rows.ts spendStatement): the outpoints the recent
    // transactions' cache gave a tx_num (keyed), the others looked up by txid, and both at once.
    const explain = (q: ReturnType<typeof spendStatement>) => sql<{ 'QUERY PLAN': string }>`EXPLAIN ${q}`.execute(trx);
    const looked = picks.map((n) => ({ txid: txidOf(n), vout: 0 }));
    const keyedOnes = picks.map((n) => ({ txid: txidOf(n), vout: 0, txNum: n }));
    const spend = await explain(spendStatement([], looked));
    const byKey = await explain(spendStatement(keyedOnes, []));
    const both = await explain(spendStatement(keyedOnes.slice(0, KEYS / 2), looked.slice(KEYS / 2)));
    const keys = picks.map(uuidOf);
    const bal = await sql<{ 'QUERY PLAN': string }>`
      EXPLAIN MERGE INTO balances AS b
      USING (SELECT * FROM unnest(${keys}::uuid[], ${keys.map(() => '5')}::int8[], ${keys.map(() => 1)}::int4[]) AS d(addr_key, sats, n)) AS d
      ON b.addr_key = d.addr_key
      WHEN MATCHED THEN UPDATE SET balance = b.balance + d.sats, utxo_count = b.utxo_count + d.n
      WHEN NOT MATCHED THEN INSERT (addr_key, balance, utxo_count) VALUES (d.addr_key, d.sats, d.n)`.execute(trx);
    // BIP30's overwritten coinbase outputs, for the coinbases of a turn of 50 blocks.
    const coinbases = picks.slice(0, 50);
    const cb = await sql<{ 'QUERY PLAN': string }>`
      EXPLAIN DELETE FROM utxos u
       USING (SELECT * FROM unnest(${coinbases.map(txidOf)}::bytea[], ${coinbases.map((n) => String(n + ROWS))}::int8[]) AS c(txid, tx_num)) c, txs t
      WHERE ${txidIs(sql.ref('t.txid'), sql.ref('c.txid'))} AND t.tx_num <> c.tx_num AND u.tx_num = t.tx_num
      RETURNING u.addr_key, u.value`.execute(trx);
    const text = (r: { rows: { 'QUERY PLAN': string }[] }) => r.rows.map((x) => x['QUERY PLAN']).join('\n');
    return { spend: text(spend), spendByKey: text(byKey), both: text(both), balances: text(bal), coinbases: text(cb) };
  });
}

describe('per-block join plans', () => {
  it('the planner alone scans whole tables for a block of keys', async () => {
    const p = await plans(false);
    expect(p.spend).toMatch(/Seq Scan on (utxos|txs)/);
    expect(p.spendByKey).toMatch(/Seq Scan on utxos/);
    expect(p.balances).toMatch(/Seq Scan on balances/);
  });

  it('preferIndexLookups turns them into index lookups', async () => {
    const p = await plans(true);
    expect(p.spend).toMatch(/Index Scan using utxos_pkey on utxos/);
    expect(p.spend).toMatch(/Index Scan using txs_txid_key on txs/);
    expect(p.spend).not.toMatch(/Seq Scan/);
    expect(p.spendByKey).toMatch(/Index Scan using utxos_pkey on utxos/);
    expect(p.spendByKey).not.toMatch(/Seq Scan/);
    expect(p.both).toMatch(/Index Scan using utxos_pkey on utxos/);
    expect(p.both).toMatch(/Index Scan using txs_txid_key on txs/);
    expect(p.both).not.toMatch(/Seq Scan/);
    expect(p.balances).toMatch(/Index Scan using balances_pkey on balances/);
    expect(p.balances).not.toMatch(/Seq Scan on balances/);
    expect(p.coinbases).toMatch(/Index Scan using txs_txid_key on txs/);
    expect(p.coinbases).not.toMatch(/Seq Scan/);
  });
});

describe('balance reads (BALANCE_ROWS: balances with the newest blocks’ changes)', () => {
  it('a key, a batch of keys and a wallet’s keys probe both tables’ indexes, never scan balances', async () => {
    // A block's worth of changes waiting, for keys half of which have a balances row.
    await sql`INSERT INTO balances_recent (addr_key, balance, utxo_count)
      SELECT md5(i::text)::uuid, 7, 1 FROM generate_series(${ROWS - 8_000}::int4, ${ROWS + 8_000}::int4) i`.execute(t.db);
    await sql`ANALYZE balances_recent`.execute(t.db);
    const rows = sql.raw(BALANCE_ROWS);
    const plan = async (q: ReturnType<typeof sql>) =>
      (await sql<{ 'QUERY PLAN': string }>`EXPLAIN ${q}`.execute(t.db)).rows.map((x) => x['QUERY PLAN']).join('\n');
    const keys = Array.from({ length: 100 }, (_, k) => uuidOf(1 + k * 997));
    // As the API's balance reads (api/queries/address.ts, address-stats.ts) and the wallets' sums ask.
    const one = await plan(sql`SELECT ${sqlBalanceOf(sql`${keys[0]}`, 'balance')} AS confirmed`);
    const batch = await plan(sql`SELECT q.i, ${sql.raw(balanceOfSql('q.k', 'balance'))}, ${sql.raw(balanceOfSql('q.k', 'utxo_count'))}
      FROM unnest(${keys}::uuid[]) WITH ORDINALITY AS q(k, i)`);
    const wallet = await plan(
      sql`SELECT sum(${sql.raw(balanceOfSql('k.k', 'balance'))}) FROM (SELECT DISTINCT k FROM unnest(${keys}::uuid[]) AS k) k`,
    );
    for (const p of [one, batch, wallet]) {
      expect(p).toMatch(/Index (Only )?Scan using balances_pkey on balances/);
      expect(p).toMatch(/Index (Only )?Scan using balances_recent_addr on balances_recent/);
      expect(p).not.toMatch(/Seq Scan/);
    }
    // The whole-table form (a snapshot's) would scan both tables for a batch of keys: why readers of keys use the probes.
    const grouped = await plan(sql`SELECT q.i, b.balance FROM unnest(${keys}::uuid[]) WITH ORDINALITY AS q(k, i)
      LEFT JOIN LATERAL (SELECT b.balance FROM ${rows} b WHERE b.addr_key = q.k) b ON true`);
    expect(grouped).toMatch(/Seq Scan on balances/);
    // The sums, both ways: a key with a row and a change, one with a change alone, one with a row
    // alone, one whose change takes its row back to nothing (no row in the whole-table form), one with neither.
    await sql`INSERT INTO balances_recent VALUES (${uuidOf(2)}::uuid, -1000, -1)`.execute(t.db);
    const ask = [ROWS, ROWS + 1, 1, 2, ROWS + 9_000].map(uuidOf);
    const probed = await sql<{ balance: string; n: string }>`
      SELECT ${sql.raw(balanceOfSql('q.k', 'balance'))}::text AS balance, ${sql.raw(balanceOfSql('q.k', 'utxo_count'))}::text AS n
        FROM unnest(${ask}::uuid[]) WITH ORDINALITY AS q(k, i) ORDER BY q.i`.execute(t.db);
    expect(probed.rows.map((r) => [r.balance, r.n])).toEqual([
      ['1007', '2'],
      ['7', '1'],
      ['1000', '1'],
      ['0', '0'],
      ['0', '0'],
    ]);
    const listed = await sql<{ k: string; balance: string; n: number }>`
      SELECT b.addr_key::text AS k, b.balance::text AS balance, b.utxo_count AS n FROM ${rows} b
       WHERE b.addr_key = ANY(${ask}::uuid[]) ORDER BY b.balance`.execute(t.db);
    expect(listed.rows.map((r) => [r.k, r.balance, r.n])).toEqual([
      [ask[1], '7', 1],
      [ask[2], '1000', 1],
      [ask[0], '1007', 2],
    ]);
    await sql`TRUNCATE balances_recent`.execute(t.db);
  });
});
