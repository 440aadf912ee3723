/**
 * `balances_recent`: the balance changes of the newest blocks, apart from `balances`
 * (docs/lean-layout.md "The newest blocks' balance changes apart"; indexer/writer/balances-recent.ts):
 * one row per address a live block changed, its change in sats and unspent outputs (not unique:
 * two blocks' changes of one address are two rows), keyed by address for the readers, which add
 * them to the address's `balances` row (src/db/balance-reads.ts). Created empty. `down` adds its
 * rows into `balances` first.
 */
import { sql, type Kysely } from 'kysely';
import { chainIndex, createIndexSql } from '../src/db/chain-indexes.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE balances_recent (
      addr_key   uuid NOT NULL,
      balance    int8 NOT NULL,
      utxo_count int4 NOT NULL
    )`.execute(db);
  await sql.raw(createIndexSql(chainIndex('balances_recent_addr'))).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`MERGE INTO balances AS b
    USING (SELECT addr_key, sum(balance)::int8 AS sats, sum(utxo_count)::int4 AS n FROM balances_recent
            GROUP BY addr_key HAVING sum(balance) <> 0 OR sum(utxo_count) <> 0) AS d
    ON b.addr_key = d.addr_key
    WHEN MATCHED AND b.balance + d.sats = 0 AND b.utxo_count + d.n = 0 THEN DELETE
    WHEN MATCHED THEN UPDATE SET balance = b.balance + d.sats, utxo_count = b.utxo_count + d.n
    WHEN NOT MATCHED THEN INSERT (addr_key, balance, utxo_count) VALUES (d.addr_key, d.sats, d.n)`.execute(db);
  await sql`DROP TABLE balances_recent`.execute(db);
}
