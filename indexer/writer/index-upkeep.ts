/**
 * Index upkeep the writer does while it is idle, off any block's path. `txs_spent_groups` is a
 * GIN with `fastupdate` (src/db/chain-indexes.ts): an insert appends its entries to the index's
 * pending list, and the statement that takes the list past `gin_pending_list_limit` (1 MB) merges
 * the whole list into the index itself. On the live path that is every ~6 blocks of 4,000
 * transactions (~20 pages of entries each), and that block's commit waits ~50–100 ms more for
 * it. Merged after each applied block, once the indexer has caught up and nothing else is due,
 * the list stays far below the limit and no block pays for it; while catching up, the blocks'
 * own inserts still merge it, as before.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { chainIndex } from '../../src/db/chain-indexes.js';

const PENDING_GIN = chainIndex('txs_spent_groups').name;

/**
 * Merges the pending entries of the chain's GIN indexes into them (`gin_clean_pending_list`);
 * returns the pending pages merged, or null when the index does not exist (dropped by a bulk
 * sync that has not finished).
 */
export async function mergePendingIndexEntries(db: Kysely<Database>): Promise<number | null> {
  const r = await sql<{ pages: string | null }>`SELECT gin_clean_pending_list(to_regclass(${PENDING_GIN})) AS pages`.execute(db);
  const pages = r.rows[0]?.pages;
  return pages === null || pages === undefined ? null : Number(pages);
}
