/**
 * What the indexer needs to emit per-address events exactly once:
 * - `watched_txs`: the confirmed transactions of watched addresses, so each new block can emit
 *   `tx.confirmations` up to the subscription's target without scanning histories; rows of an
 *   undone block go with it, rows far below the tip are pruned.
 * - `watched_addresses` gains `address` (the text a subscriber gave), so outbox rows carry the
 *   address as the subscriber wrote it without the indexer reading tenancy tables.
 * docs/schema.md "Events" explains both.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE watched_txs (
      tx_num    int8 NOT NULL,
      addr_key  uuid NOT NULL,
      txid      bytea NOT NULL,
      received  int8 NOT NULL,
      sent      int8 NOT NULL,
      PRIMARY KEY (tx_num, addr_key)
    );

    CREATE OR REPLACE VIEW watched_addresses AS
      SELECT addr_key, max(confirmations) AS confirmations, min(address) AS address
      FROM subscriptions
      WHERE kind = 'address' AND deleted_at IS NULL
      GROUP BY addr_key;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP VIEW watched_addresses;
    CREATE VIEW watched_addresses AS
      SELECT addr_key, max(confirmations) AS confirmations
      FROM subscriptions
      WHERE kind = 'address' AND deleted_at IS NULL
      GROUP BY addr_key;
    DROP TABLE watched_txs;
  `.execute(db);
}
