/**
 * The newest blocks' history chunk rows, apart (docs/lean-layout.md "The newest blocks' chunk
 * rows apart"): a live block (one at the node's tip) writes its chunk rows into `history_recent`,
 * a table that holds only the blocks since the last move, and the run loop moves them into
 * `history` when it is idle. A block's ~16,000 chunk rows are random keys: into `history`, whose
 * key holds every unfolded block's rows (and, after a fold, their dead entries and emptied pages),
 * each is a page of its own; into a table that holds a block or two, the COPY's key-ordered rows
 * fill a few pages. The move pays the random inserts in the quiet between blocks.
 *
 * Where a chunk row is does not change an answer: every reader reads both tables in one statement
 * (src/db/history-reads.ts `HISTORY_ROWS`), the undo cuts both (chain-rows.ts `cutHistory`), the
 * fold and a bulk sync move the rows they need first.
 * @module
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../src/db/schema.js';

type Trx = Transaction<Database>;

/** The table a live block's chunk rows go to. */
export const RECENT_TABLE = 'history_recent';

/**
 * SQL text: moves the chunk rows of `history_recent` starting below `below` (a tx_num; every row
 * without) into `history`, in key order. The rows inserted are the ones this statement deleted, so
 * that two moves racing (the fold's and the run loop's) never insert a row twice: the later one
 * waits for the earlier one's commit and skips the rows it deleted.
 */
export function moveRecentSql(below?: bigint | number): string {
  const where = below === undefined ? '' : ` WHERE first_tx_num < ${BigInt(below).toString()}`;
  return `WITH moved AS (DELETE FROM ${RECENT_TABLE}${where} RETURNING addr_key, first_tx_num, rest)
    INSERT INTO history (addr_key, first_tx_num, rest) SELECT * FROM moved ORDER BY addr_key, first_tx_num`;
}

/** Moves the chunk rows below `below` (all without) into `history`, in the caller's transaction; the rows moved. */
export async function moveRecentHistory(trx: Trx | Kysely<Database>, below?: bigint | number): Promise<number> {
  const r = await sql.raw(moveRecentSql(below)).execute(trx);
  return Number(r.numAffectedRows ?? 0n);
}
