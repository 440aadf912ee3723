/**
 * The newest blocks' rows kept apart until the indexer is idle: a live block's history chunk rows
 * (history-recent.ts) and its balance changes (balances-recent.ts). The run loop lets at most
 * RECENT_BLOCKS_MAX blocks wait, and moves them all in its idle turn (`moveRecentBlocks`).
 * @module
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { moveRecentHistory, RECENT_TABLE } from './history-recent.js';
import { moveRecentBalances, RECENT_BALANCES } from './balances-recent.js';

type Trx = Transaction<Database>;

/**
 * The most blocks whose rows wait apart between moves: a live block finding that many there
 * (blocks at the tip with no idle turn between them) writes into `history` and `balances`.
 */
export const RECENT_BLOCKS_MAX = 6;

/**
 * The run loop's move: every row of `history_recent` into `history` and every change of
 * `balances_recent` into `balances` (one transaction), then a VACUUM of both, so that the next
 * block's rows reuse their emptied pages rather than grow them by a block's worth of dead rows
 * until autovacuum comes (it checks a table once a minute, and blocks arriving faster would
 * rebuild the bloat the tables are there to avoid). A role that does not own the tables gets
 * PostgreSQL's warning and no vacuum (autovacuum then does it). `guard` proves the writer lock in
 * the transaction. The rows moved (chunk rows and balance changes).
 */
export async function moveRecentBlocks(db: Kysely<Database>, guard?: (trx: Trx) => Promise<void>): Promise<number> {
  const n = await db.transaction().execute(async (trx) => {
    if (guard) await guard(trx);
    return (await moveRecentHistory(trx)) + (await moveRecentBalances(trx));
  });
  if (n > 0) await sql.raw(`VACUUM (SKIP_LOCKED) ${RECENT_TABLE}, ${RECENT_BALANCES}`).execute(db);
  return n;
}
