/**
 * Open Assets colors, written by the indexer when it applies a block (and when it indexes a
 * mempool transaction), undone with the block: `asset_txs` holds one row per confirmed
 * transaction with a valid marker (src/db/asset-colors.ts packs its outputs' colors),
 * `mempool_txs.assets` the same for a mempool one; `bulk_asset_candidates` lists, during a bulk
 * sync, the transactions carrying a marker, colored in chain order by the bulk finish.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE asset_txs (tx_num int8 PRIMARY KEY, colors bytea NOT NULL);
    ALTER TABLE mempool_txs ADD COLUMN assets bytea;
    CREATE TABLE bulk_asset_candidates (tx_num int8 NOT NULL);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE bulk_asset_candidates; ALTER TABLE mempool_txs DROP COLUMN assets; DROP TABLE asset_txs;`.execute(db);
}
