/**
 * Each wallet's balance summary on its row (indexer/wallet-balances.ts): `confirmed`, the sum of
 * `balances` over its distinct address keys, and `unconfirmed`, the mempool's net change over
 * them, kept by every writer in the transaction that changes either side; a balance request
 * reads one row. Existing wallets are summed here.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE wallets ADD COLUMN confirmed int8 NOT NULL DEFAULT 0, ADD COLUMN unconfirmed int8 NOT NULL DEFAULT 0;
    UPDATE wallets w SET (confirmed, unconfirmed) = (SELECT
      (SELECT coalesce(sum((SELECT b.balance FROM balances b WHERE b.addr_key = k.addr_key)), 0)::int8
         FROM (SELECT DISTINCT addr_key FROM wallet_addresses WHERE wallet_id = w.id) k),
      (SELECT coalesce(sum((SELECT sum(m.received - m.sent) FROM mempool_addresses m WHERE m.addr_key = k.addr_key)), 0)::int8
         FROM (SELECT DISTINCT addr_key FROM wallet_addresses WHERE wallet_id = w.id) k))
     WHERE w.deleted_at IS NULL;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE wallets DROP COLUMN confirmed, DROP COLUMN unconfirmed`.execute(db);
}
