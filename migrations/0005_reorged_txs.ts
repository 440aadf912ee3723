/**
 * `reorged_txs`: transactions of watched addresses that an undone block took out of the chain,
 * kept until the indexer knows how their story ends (indexer/reorged.ts): confirmed again or
 * back in the mempool (their events already went out: forgotten), double-spent by a confirmed
 * or mempool transaction (`tx.replaced`), or gone from the node for good (`tx.dropped`).
 * Written by the undo's own transaction, so a crash cannot lose one. docs/schema.md explains it.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE reorged_txs (
      txid          bytea NOT NULL,
      addr_key      uuid NOT NULL,
      address       text NOT NULL,
      received      int8 NOT NULL,
      sent          int8 NOT NULL,
      spends        bytea NOT NULL,
      since_height  int4 NOT NULL,
      reorged_at    timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (txid, addr_key)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE reorged_txs`.execute(db);
}
