/**
 * How a reader asks the confirmed history of an address key: the one seam every reader of
 * `history` goes through (docs/lean-layout.md "Building the history buckets: the plan", step 2).
 * Today each fragment is implemented on the `history` chunk rows (`(addr_key, first_tx_num) →
 * rest`, one chunk holding `1 + length(rest) / 8` entries). At the switch (step 3) only these
 * implementations change: presence becomes `bw_hist_has(key)` (a busy key's chunk `EXISTS` or
 * the key's records in its bucket, `history-buckets.ts`), a count becomes the busy chunks' sum
 * plus the bucket's record count, the touched check a record of the key in the range; the readers
 * stay as they are. Presence, counts and the touched check are here so far; the page's entries
 * and a keys' entries read (`readHistoryEntries`) are the rest of step 2.
 *
 * Each fragment takes the key as SQL (a uuid column reference such as `sql.ref('wa.addr_key')`, or
 * a bind parameter) and answers a correlated subquery, so a statement that reads many keys keeps
 * one index probe of `history_pkey` per key.
 * @module
 */
import { sql, type RawBuilder } from 'kysely';

/** SQL (boolean): the key has at least one confirmed history entry. */
export function sqlHasHistory(key: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`EXISTS (SELECT 1 FROM history h WHERE h.addr_key = ${key})`;
}

/** SQL (numeric, 0 for none): the number of the key's confirmed history entries (transactions). */
export function sqlHistoryCount(key: RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`(SELECT coalesce(sum(1 + length(h.rest) / 8), 0) FROM history h WHERE h.addr_key = ${key})`;
}

/**
 * SQL (boolean): the key has a history entry written for a block in `[lo, hi)` (tx_nums as SQL):
 * on the per-block path every block writes its own chunk for each address it touches, so a chunk
 * starting in the range is the block's (what the Electrum tracker asks of blocks it has just seen
 * applied; a bulk-loaded chunk spanning the range's start is not found, as before).
 */
export function sqlHistoryTouched(key: RawBuilder<unknown>, lo: RawBuilder<unknown>, hi: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`EXISTS (SELECT 1 FROM history h WHERE h.addr_key = ${key} AND h.first_tx_num >= ${lo} AND h.first_tx_num < ${hi})`;
}
