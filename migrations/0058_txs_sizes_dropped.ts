/**
 * `txs` stops keeping each transaction's serialized size and weight (`size`, `weight`, int4 each,
 * since 0018_tx_sizes): the node answers them with the transaction the views are built of
 * (`getrawtransaction <txid> 2 <blockhash>` gives `size` and `weight` beside the outputs and
 * prevouts the views take from it since 0053_tagged_outs; api/node-transactions.ts), so the view
 * of a confirmed transaction needs nothing more from the node than before, and a block's pages
 * no second call. 8 bytes less per row: on the 2,000-block bench corpus `txs`'s heap is 621.3
 * instead of 662.8 MB (the database 1.036 instead of 1.055 × the raw blocks).
 *
 * Dropping a column changes the catalog only: rows written from now on leave the bytes out,
 * rows written before keep them until `txs` is rewritten (`VACUUM (FULL) txs`, or pg_repack
 * online; docs/operations.md "Upgrading"), which the migration does not do under its lock.
 * `down` adds the columns back empty: that code asks the node for the sizes of a row without
 * them, as it did for rows indexed before 0018.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE txs DROP COLUMN size, DROP COLUMN weight`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE txs ADD COLUMN size int4, ADD COLUMN weight int4`.execute(db);
}
