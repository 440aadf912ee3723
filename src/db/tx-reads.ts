/**
 * Every read of the confirmed transactions outside the writer: each function is a FROM item
 * (a parenthesized subquery the caller names, `FROM ${txRowsAt(…)} t`) whose rows have the
 * columns of `TxRow`, whatever keeps them. Today that is `txs`, one row per transaction; the
 * layout of docs/lean-layout.md "Transaction parts: the plan" keeps the blocks not folded yet
 * there and the others in parts of 64 with txid → tx_num as bucket logs, and only this module
 * changes. `test/unit/db/one-tx-reader.test.ts` fails on a statement that names `txs`
 * elsewhere (the writer, indexer/writer/, excepted).
 *
 * The subqueries are simple (one table, a condition), so PostgreSQL pulls them up into the
 * statement and plans it as if it named `txs` itself (not inside an `EXISTS`, which then runs per
 * row: `txidConfirmed` is the condition for that); their alias is `bw_tx`, so that a caller's
 * outer references (`sql.ref('t.txid')`) never resolve inside.
 * @module
 */
import { sql, type RawBuilder } from 'kysely';
import { txidIn, txidIs } from './txid-key.js';
import { spendsKeysSql } from './spent-groups.js';

/** A confirmed transaction's indexed columns (src/db/packed.ts for `outs` and `ins`). */
export type TxRow = { tx_num: bigint; txid: Buffer; outs: Buffer; ins: Buffer; first_seen: Date | null };

const COLUMNS = sql.raw('bw_tx.tx_num, bw_tx.txid, bw_tx.outs, bw_tx.ins, bw_tx.first_seen');

/** The transaction `num` (an int8 expression: a column of the caller's, a parameter). */
export function txRowAt(num: RawBuilder<unknown>): RawBuilder<TxRow> {
  return sql<TxRow>`(SELECT ${COLUMNS} FROM txs bw_tx WHERE bw_tx.tx_num = ${num})`;
}

/** The transactions whose tx_num is in the int8[] expression `nums`. */
function txRowsAt(nums: RawBuilder<unknown>): RawBuilder<TxRow> {
  return sql<TxRow>`(SELECT ${COLUMNS} FROM txs bw_tx WHERE bw_tx.tx_num = ANY(${nums}))`;
}

/** The transactions whose tx_num is in the bigints `nums` (a parameter). */
export function txRowsAtNums(nums: Iterable<bigint>): RawBuilder<TxRow> {
  return txRowsAt(sql`${[...new Set(nums)].map(String)}::int8[]`);
}

/** The transactions with `lo ≤ tx_num < hi` (a block's: `firstTxNum(h)`, `firstTxNum(h + 1)`); `hi` null: no bound. */
export function txRowsFrom(lo: RawBuilder<unknown> | bigint, hi: RawBuilder<unknown> | bigint | null): RawBuilder<TxRow> {
  return sql<TxRow>`(SELECT ${COLUMNS} FROM txs bw_tx WHERE bw_tx.tx_num >= (${lo})::int8${hi === null ? sql`` : sql` AND bw_tx.tx_num < (${hi})::int8`})`;
}

/** The transactions with txid `txid` (a bytea expression): one, or two for BIP30's duplicate coinbases. */
export function txRowsByTxid(txid: unknown): RawBuilder<TxRow> {
  return sql<TxRow>`(SELECT ${COLUMNS} FROM txs bw_tx WHERE ${txidIs(sql.ref('bw_tx.txid'), txid)})`;
}

/** The transactions whose txid is one of `txids`. */
export function txRowsByTxids(txids: readonly Uint8Array[]): RawBuilder<TxRow> {
  return sql<TxRow>`(SELECT ${COLUMNS} FROM txs bw_tx WHERE ${txidIn(sql.ref('bw_tx.txid'), txids)})`;
}

/**
 * The transactions with an input spending an output of the group `group` (an int4 expression,
 * `sqlSpentGroupOf` of the spent transaction's tx_num): a superset of the spenders of its outputs,
 * which the caller settles from `ins`.
 */
export function txRowsSpending(group: RawBuilder<unknown>): RawBuilder<TxRow> {
  return sql<TxRow>`(SELECT ${COLUMNS} FROM txs bw_tx WHERE ${sql.raw(spendsKeysSql('bw_tx'))} @> ARRAY[${group}] AND length(bw_tx.ins) > 0)`;
}

/**
 * Whether a confirmed transaction has txid `txid` (a bytea expression), as a boolean condition:
 * `EXISTS` with its correlation in the subselect's own WHERE, so that `NOT ${…}` is planned as an
 * anti-join (an EXISTS over one of the FROM items above is a subplan run per row).
 */
export function txidConfirmed(txid: unknown): RawBuilder<boolean> {
  return sql<boolean>`EXISTS (SELECT 1 FROM txs bw_tx WHERE ${txidIs(sql.ref('bw_tx.txid'), txid)})`;
}

/**
 * The confirmed unspent output `(txid, vout)` as a subquery over `utxos` (its columns): `utxos`
 * is keyed by `(tx_num, vout)` (migrations/0009_utxos_tx_num.ts), so the txid is first turned
 * into its tx_num. Two transactions share a txid only for BIP30's duplicate coinbases, and then
 * at most one of them still has the output. Join it `LATERAL (…) u ON true`, or test it with
 * `EXISTS (…)`.
 */
export function unspentAt(txid: RawBuilder<unknown>, vout: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`SELECT u.* FROM ${txRowsByTxid(txid)} bw_ut JOIN utxos u ON u.tx_num = bw_ut.tx_num AND u.vout = ${vout}`;
}
