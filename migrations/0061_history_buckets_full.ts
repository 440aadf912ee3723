/**
 * `history_buckets` fills its pages (fillfactor 100, from 70). The 30 % left free was for a
 * block's records prepended to the buckets it touches in the block's own transaction, each new
 * row version staying on its page (HOT). Blocks no longer touch the buckets (0060: the indexer
 * folds 138 blocks or more at once when idle), and a fold rewrites every bucket its records fall
 * in, all in one transaction: no old version is freed before it commits, so the room a page
 * keeps is taken by its first few rows, and the table settles at its content plus the fold's
 * share of rewritten rows whatever the fill factor (on the 2,000-block corpus, where a fold of
 * 90 blocks rewrites nearly every bucket: 607 MB at fill factor 70 and 583–607 MB at 100 after
 * two folds, from 456 and 317 MB after the import). At 100 a freshly built table holds its logs
 * with no gap (317 MB against 456); on a long chain, where a fold of 138 blocks rewrites a few
 * percent of the buckets, it stays near that. Pages written from now on fill: the bulk finish
 * and `blockwire history-buckets` write the buckets into an empty table; an existing table's
 * pages fill as the folds rewrite their rows; no rewrite here.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE history_buckets SET (fillfactor = 100)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE history_buckets SET (fillfactor = 70)`.execute(db);
}
