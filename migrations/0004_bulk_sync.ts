/**
 * Bulk sync bookkeeping: `bulk_spent` records, per bulk batch, the outputs of earlier batches
 * that the batch spent (tx_num, vout), appended instead of deleted from `utxos` (random deletes
 * run at a fraction of COPY speed). When the bulk sync finishes, `utxos` is
 * rebuilt without them and the table is emptied. Empty outside a bulk sync.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE bulk_spent (tx_num int8 NOT NULL, vout int4 NOT NULL)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE bulk_spent`.execute(db);
}
