/**
 * `history_bucket_params.folded`: the height below which the history of the addresses with at
 * most `busy` entries is in their buckets (docs/lean-layout.md "the deferred fold"). With buckets
 * on, the per-block writer writes every address's entries as chunk rows, as at `busy` 0, and the
 * indexer folds the rows of all but the newest 6 blocks into the buckets when it is idle and
 * enough blocks have gathered (indexer/writer/history-build.ts): a live block no longer rewrites
 * the buckets it touches. 0 on an index that has never folded (every index at `busy` 0). A change
 * of the catalog, quick at any size; `down` drops the column (the next fold of older code would
 * then read the newest chunk rows as folded: migrate down only an index with `busy` 0).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE history_bucket_params ADD COLUMN folded int4 NOT NULL DEFAULT 0 CHECK (folded >= 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE history_bucket_params DROP COLUMN folded`.execute(db);
}
