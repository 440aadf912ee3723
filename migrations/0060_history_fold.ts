/**
 * `history_bucket_params.folded`: the height below which the history of the addresses with at
 * most `busy` entries is in their buckets (docs/lean-layout.md "the deferred fold"). With buckets
 * on, the per-block writer writes every address's entries as chunk rows, as at `busy` 0, and the
 * indexer folds the rows of all but the newest 6 blocks into the buckets when it is idle and
 * enough blocks have gathered (indexer/writer/history-build.ts): a live block no longer rewrites
 * the buckets it touches. 0 at `busy` 0. An index with buckets on from before it (the per-block
 * writer then wrote each block's records, the bulk finish folded its blocks) holds the records
 * of every block up to its tip, so `folded` starts there: the tip + 1, or, during a bulk sync
 * (the finish folds its loaded blocks), its start + 1. An undo below `folded` then cuts the
 * block's records as it must. A change of the catalog, quick at any size; `down` drops the column
 * (older code writes records block by block again, from chunk rows it would not fold: migrate
 * down only an index with `busy` 0).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE history_bucket_params ADD COLUMN folded int4 NOT NULL DEFAULT 0 CHECK (folded >= 0)`.execute(db);
  await sql`UPDATE history_bucket_params SET folded = greatest(0, coalesce(
      (SELECT (value->>'from')::int4 + 1 FROM sync_state WHERE key = 'bulk' AND (value->>'active')::boolean),
      (SELECT height + 1 FROM chain_tip WHERE id = 1), 0))
    WHERE id = 1 AND busy > 0`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE history_bucket_params DROP COLUMN folded`.execute(db);
}
