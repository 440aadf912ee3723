/**
 * The newest blocks' balance changes, apart (docs/lean-layout.md "The newest blocks' balance
 * changes apart"): a live block (one at the node's tip, as for its history chunk rows:
 * history-recent.ts) writes its per-address changes into `balances_recent`, a row per address,
 * and the run loop adds them into `balances` when it is idle (recent-blocks.ts). A block's
 * ~16,000 changes merged into `balances` are as many random probes of `balances_pkey` and as many
 * heap updates, inserts and deletes, each on a page of its own; copied into a table that holds a
 * few blocks, they are appended, and the merge is paid in the quiet between blocks.
 *
 * Where a change waits does not change an answer: every reader adds an address's waiting changes
 * to its row (src/db/balance-reads.ts `BALANCE_ROWS`). Undo takes a block's changes back from
 * `balances` whichever table holds them (chain-rows.ts `addBalances`, negated): the sum is right,
 * and a `balances` row below zero meanwhile is made whole by the next move. A bulk sync's finish
 * computes `balances` anew from `utxos` and empties this table with it (bulk.ts).
 * @module
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../src/db/schema.js';

type Trx = Transaction<Database>;

/** The table a live block's balance changes go to. */
export const RECENT_BALANCES = 'balances_recent';

/**
 * SQL text: the actions of a MERGE INTO `balances` AS b of per-address changes `d` (`addr_key`,
 * `sats`, `n`, each key once): a row reaching 0 sats and 0 outputs goes away.
 */
export const BALANCE_MERGE_ACTIONS = `ON b.addr_key = d.addr_key
    WHEN MATCHED AND b.balance + d.sats = 0 AND b.utxo_count + d.n = 0 THEN DELETE
    WHEN MATCHED THEN UPDATE SET balance = b.balance + d.sats, utxo_count = b.utxo_count + d.n
    WHEN NOT MATCHED THEN INSERT (addr_key, balance, utxo_count) VALUES (d.addr_key, d.sats, d.n)`;

/**
 * SQL statements, in order, in one transaction: every change waiting in `balances_recent` added
 * into `balances` (an address's changes summed first), then deleted. The lock (which the inserts
 * of a live block and another move wait for, readers not) makes two moves one after the other:
 * the later one's statements see the earlier one's commit and find nothing left to add.
 */
const MOVE_RECENT_BALANCES: readonly string[] = [
  `LOCK TABLE ${RECENT_BALANCES} IN SHARE ROW EXCLUSIVE MODE`,
  `MERGE INTO balances AS b
    USING (SELECT addr_key, sum(balance)::int8 AS sats, sum(utxo_count)::int4 AS n FROM ${RECENT_BALANCES}
            GROUP BY addr_key HAVING sum(balance) <> 0 OR sum(utxo_count) <> 0 ORDER BY addr_key) AS d
    ${BALANCE_MERGE_ACTIONS}`,
  `DELETE FROM ${RECENT_BALANCES}`,
];

/** Moves the waiting balance changes into `balances` in the caller's transaction; the rows moved. */
export async function moveRecentBalances(trx: Trx | Kysely<Database>): Promise<number> {
  let moved = 0;
  for (const text of MOVE_RECENT_BALANCES) {
    const r = await sql.raw(text).execute(trx);
    if (text.startsWith('DELETE')) moved = Number(r.numAffectedRows ?? 0n);
  }
  return moved;
}
