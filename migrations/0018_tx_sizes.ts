/**
 * Transaction sizes in the index: `txs.size` (serialized bytes, witness included) and
 * `txs.weight` (BIP141), written by every path that writes `txs` rows, so that the transaction
 * view gives size, vsize and weight without asking the node for the serialized transaction.
 * Rows written before this migration keep NULL (adding the columns rewrites nothing) and the
 * view asks the node for those, as it did for every row before.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE txs ADD COLUMN size int4, ADD COLUMN weight int4;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE txs DROP COLUMN size, DROP COLUMN weight;
  `.execute(db);
}
