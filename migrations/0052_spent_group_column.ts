/**
 * The spends index reads a column where it can: `txs.spent_group int4`, the one group of
 * transactions (tx_num >> 4, in 32 bits) a transaction spends from, written by the indexer with
 * the row (it resolves every prevout's tx_num anyway), null when it spends from several groups.
 * The GIN index's expression takes the column when set and decodes `ins` with
 * `spent_tx_groups` (0022_spent_groups_fast.ts) otherwise, so it has the same keys for the same
 * rows as 0008's index on `spent_tx_groups(ins)`, and lookups read what they read before
 * (src/db/spent-groups.ts). The PL/pgSQL function then runs for the rows that spend from several
 * groups only (a quarter of them on the bench corpus): the slowest step of the bulk finish and a
 * call per row of a block's txs insert. The column costs 4 bytes a row at most (often none: it
 * fits the row's alignment padding); an int8[] of the groups cost ~37.
 * An existing index keeps its rows as they are (the column null: the function answers for them,
 * as before) and gets the index on the new expression, built before the old one goes; during a
 * bulk sync (indexes dropped until its finish, which builds them from src/db/chain-indexes.ts)
 * the index is left to the finish (an old one is dropped).
 */
import { sql, type Kysely } from 'kysely';
import { chainIndex, createIndexSql } from '../src/db/chain-indexes.js';

const SPENDS = chainIndex('txs_spent_groups');

const bulkActive = async (db: Kysely<unknown>) =>
  (
    await sql<{
      active: boolean;
    }>`SELECT coalesce((value->>'active')::boolean, false) AS active FROM sync_state WHERE key = 'bulk'`.execute(db)
  ).rows[0]?.active === true;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE txs ADD COLUMN spent_group int4`.execute(db);
  if (await bulkActive(db)) {
    await sql`DROP INDEX IF EXISTS txs_spent_groups`.execute(db);
    return;
  }
  await sql`ALTER INDEX IF EXISTS txs_spent_groups RENAME TO txs_spent_groups_0008`.execute(db);
  await sql.raw(createIndexSql(SPENDS)).execute(db);
  await sql`DROP INDEX IF EXISTS txs_spent_groups_0008`.execute(db);
}

/** 0008's index again; the column goes. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX IF EXISTS txs_spent_groups;
    ALTER TABLE txs DROP COLUMN spent_group;
  `.execute(db);
  if (await bulkActive(db)) return;
  await sql`CREATE INDEX txs_spent_groups ON txs USING gin (spent_tx_groups(ins)) WITH (fastupdate = on, gin_pending_list_limit = 1024) WHERE length(ins) > 0`.execute(
    db,
  );
}
