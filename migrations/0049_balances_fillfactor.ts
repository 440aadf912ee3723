/**
 * `balances` keeps 20 % of each heap page free (fillfactor 80), so that a block's balance updates
 * are HOT: the new row version stays on its page and `balances_pkey` gets no new entry. At fill
 * factor 100 every page is full and each update moves the row to another page with a new index
 * entry (a 4,000-transaction block updates ~3,700 rows and inserts and deletes ~6,000 each).
 * Pages written from now on keep the room: the bulk finish (TRUNCATE, INSERT) fills a new table
 * to 80 %, and an existing table's full pages gain room as their rows are deleted; no rewrite here.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE balances SET (fillfactor = 80)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE balances RESET (fillfactor)`.execute(db);
}
