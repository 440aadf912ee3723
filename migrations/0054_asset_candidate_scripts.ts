/**
 * `bulk_asset_candidates` keeps, for each transaction carrying an Open Assets marker that a
 * bulk batch lists, the output its first input spends (`first_prev` tx_num, `first_vout`) and
 * that output's script (`first_script`): the issuance's asset ID is its HASH160, and since
 * 0053_tagged_outs no `txs` row keeps a script. The batch records the script when its own
 * blocks made the output; the bulk finish fills the others from `utxos`, where an earlier batch
 * left the output, before it removes the spent rows (indexer/writer/bulk.ts). Rows of a bulk
 * sync begun before this migration would have none: 0053 refuses to run during one.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE bulk_asset_candidates ADD COLUMN first_prev int8, ADD COLUMN first_vout int4, ADD COLUMN first_script bytea`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE bulk_asset_candidates DROP COLUMN first_prev, DROP COLUMN first_vout, DROP COLUMN first_script`.execute(db);
}
