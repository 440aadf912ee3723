/**
 * Every read of the confirmed transactions outside the writer's own rows: each function is a FROM
 * item (a parenthesized subquery the caller names, `FROM ${txRowsAt(…)} t`) whose rows have the
 * columns of `TxRow`, whatever keeps them. A transaction is in one of two places
 * (docs/lean-layout.md "Transaction parts: the plan"): a `txs` row (the blocks not folded yet, and
 * every block of an index whose fold has not taken it), or a slot of a part (`tx_parts`,
 * src/db/tx-parts.ts), found by txid through the txid buckets (src/db/txid-buckets.ts). Each
 * subquery is the `UNION ALL` of the two; a transaction is never in both (the fold moves a range
 * of blocks' rows, and an undo moves them back, in one transaction). Only this module knows the
 * places. `test/unit/db/one-tx-reader.test.ts` fails on a statement that names `txs` or
 * `tx_parts` elsewhere (the writer, indexer/writer/, excepted).
 *
 * Their alias inside is `bw_tx` (and `bw_tp`, `bw_tb`, … for the parts'), so that a caller's
 * outer references (`sql.ref('t.txid')`) never resolve inside. A condition on the rows
 * (`txidConfirmed`) is an `EXISTS` per place, with its correlation in the subselect's own WHERE,
 * so that `NOT ${…}` is planned as anti-joins.
 * @module
 */
import { sql, type RawBuilder } from 'kysely';
import { txidIn, txidIs } from './txid-key.js';
import { spendsKeysSql } from './spent-groups.js';
import { SQL_PARTS } from './tx-parts.js';
import { SQL_TXIDS, txidBucket, txidTag } from './txid-buckets.js';

/** A confirmed transaction's indexed columns (src/db/packed.ts for `outs` and `ins`). */
export type TxRow = { tx_num: bigint; txid: Buffer; outs: Buffer; ins: Buffer; first_seen: Date | null };

const COLUMNS = sql.raw('bw_tx.tx_num, bw_tx.txid, bw_tx.outs, bw_tx.ins, bw_tx.first_seen');

/** The columns of slot `s` (SQL text) of the part `bw_tp`, whose tx_num is `n` (SQL text). */
const partColumns = (n: string, s: string) =>
  sql.raw(
    `(${n})::int8, ${SQL_PARTS.txidAt('bw_tp', s)}, ${SQL_PARTS.outsAt('bw_tp', s)}, ${SQL_PARTS.insAt('bw_tp', s)}, ${SQL_PARTS.seenAt('bw_tp', s)}`,
  );

/** Every slot `bw_s.s` of the part `bw_tp` (a LATERAL series), and its tx_num. */
const SLOTS = sql.raw(`CROSS JOIN LATERAL generate_series(0, ${SQL_PARTS.count('bw_tp')} - 1) AS bw_s(s)`);
const SLOT_TX_NUM = SQL_PARTS.txNumAt('bw_tp', 'bw_s.s');
const slotRows = partColumns(SLOT_TX_NUM, 'bw_s.s');

/**
 * The txid buckets' records: FROM items (`bw_tq` the params, `bw_tb` a bucket, `bw_g.i` its
 * records) for a statement whose WHERE names the txid with `recordWhere`.
 */
const RECORDS = `txid_bucket_params bw_tq
    JOIN txid_buckets bw_tb ON bw_tq.id = 1
    CROSS JOIN LATERAL generate_series(0, ${SQL_TXIDS.count('bw_tb.log')} - 1) AS bw_g(i)`;
const CANDIDATE_TX_NUM = SQL_TXIDS.txNumAt('bw_tb.log', 'bw_g.i');
/** The WHERE of `RECORDS` for the txid `txid` (a bytea expression): its bucket, the records that may be its. */
const recordWhere = (txid: RawBuilder<unknown>) =>
  sql`bw_tb.bucket = ${txidBucket(txid, 'bw_tq')} AND ${sql.raw(SQL_TXIDS.tagAt('bw_tb.log', 'bw_g.i'))} = ${txidTag(txid)}`;

/**
 * The parts' transactions found through the txid buckets: `RECORDS` and `bw_tp`, a record's part,
 * for a statement whose WHERE names the txid with `candidateWhere`. The txid is named there only,
 * so that the rows an EXISTS finds are correlated in its WHERE alone (an anti-join for
 * `NOT EXISTS`). A record's tx_num is decoded once, in the lateral `bw_c` (`OFFSET 0` keeps it
 * from being pulled up): written out in each column that needs it, it made the statement
 * several times longer, its planning dearer than its run, and its execution decode the same
 * bytes some forty times per candidate.
 */
const CANDIDATES = sql.raw(`${RECORDS}
    CROSS JOIN LATERAL (SELECT ${CANDIDATE_TX_NUM} AS n OFFSET 0) bw_c
    JOIN tx_parts bw_tp ON bw_tp.part = ${SQL_PARTS.partOf('bw_c.n')}`);
/** The WHERE of `CANDIDATES` for the txid `txid` (a bytea expression): `recordWhere`, the part's txid settling it. */
const candidateWhere = (txid: RawBuilder<unknown>) =>
  sql`(${recordWhere(txid)}
      AND ${sql.raw(SQL_PARTS.txidAt('bw_tp', SQL_PARTS.slotOf('bw_c.n')))} = (${txid})::bytea)`;
const candidateRows = partColumns('bw_c.n', SQL_PARTS.slotOf('bw_c.n'));

/**
 * The tx_nums (column `tx_num`) that may be the parts' transactions with txid `txid` (a bytea
 * expression, a lateral reference): the records of its bucket whose bytes match it, not settled
 * against the part's txid. The parts' arm of the writer's spend (indexer/writer/chain-rows.ts
 * `spendStatement`, whose `txs` arm is its own through `txs_txid_key`), which settles each
 * candidate against the txid of the `utxos` row it would delete: reading the part's txids here
 * would cost a part row and its out-of-line txids for each of a block's ~8,000 inputs.
 */
export function partTxNumCandidates(txid: RawBuilder<unknown>): RawBuilder<{ tx_num: bigint }> {
  return sql<{ tx_num: bigint }>`(SELECT ${sql.raw(CANDIDATE_TX_NUM)} AS tx_num FROM ${sql.raw(RECORDS)} WHERE ${recordWhere(txid)})`;
}

/** The transaction `num` (an int8 expression: a column of the caller's, a parameter). */
export function txRowAt(num: RawBuilder<unknown>): RawBuilder<TxRow> {
  return sql<TxRow>`(SELECT ${COLUMNS} FROM txs bw_tx WHERE bw_tx.tx_num = ${num}
    UNION ALL
    SELECT ${partColumns('bw_n.n', SQL_PARTS.slotOf('bw_n.n'))}
      FROM (SELECT (${num})::int8 AS n) bw_n JOIN tx_parts bw_tp ON bw_tp.part = ${sql.raw(SQL_PARTS.partOf('bw_n.n'))}
     WHERE ${sql.raw(SQL_PARTS.slotOf('bw_n.n'))} < ${sql.raw(SQL_PARTS.count('bw_tp'))})`;
}

/** The transactions whose tx_num is in the int8[] expression `nums` (distinct). */
function txRowsAt(nums: RawBuilder<unknown>): RawBuilder<TxRow> {
  return sql<TxRow>`(SELECT ${COLUMNS} FROM txs bw_tx WHERE bw_tx.tx_num = ANY(${nums})
    UNION ALL
    SELECT ${partColumns('bw_n.n', SQL_PARTS.slotOf('bw_n.n'))}
      FROM unnest(${nums}) AS bw_n(n) JOIN tx_parts bw_tp ON bw_tp.part = ${sql.raw(SQL_PARTS.partOf('bw_n.n'))}
     WHERE ${sql.raw(SQL_PARTS.slotOf('bw_n.n'))} < ${sql.raw(SQL_PARTS.count('bw_tp'))})`;
}

/** The transactions whose tx_num is in the bigints `nums` (a parameter). */
export function txRowsAtNums(nums: Iterable<bigint>): RawBuilder<TxRow> {
  return txRowsAt(sql`${[...new Set(nums)].map(String)}::int8[]`);
}

/** The transactions with `lo ≤ tx_num < hi` (a block's: `firstTxNum(h)`, `firstTxNum(h + 1)`); `hi` null: no bound. */
export function txRowsFrom(lo: RawBuilder<unknown> | bigint, hi: RawBuilder<unknown> | bigint | null): RawBuilder<TxRow> {
  const below = (n: string) => (hi === null ? sql`` : sql` AND ${sql.raw(n)} < (${hi})::int8`);
  return sql<TxRow>`(SELECT ${COLUMNS} FROM txs bw_tx WHERE bw_tx.tx_num >= (${lo})::int8${below('bw_tx.tx_num')}
    UNION ALL
    SELECT ${slotRows} FROM tx_parts bw_tp ${SLOTS}
     WHERE bw_tp.part >= ((${lo})::int8 >> 6)${hi === null ? sql`` : sql` AND bw_tp.part <= (((${hi})::int8 - 1) >> 6)`}
       AND ${sql.raw(SLOT_TX_NUM)} >= (${lo})::int8${below(SLOT_TX_NUM)})`;
}

/** The transactions with txid `txid` (a bytea expression): one, or two for BIP30's duplicate coinbases. */
export function txRowsByTxid(txid: unknown): RawBuilder<TxRow> {
  return sql<TxRow>`(SELECT ${COLUMNS} FROM txs bw_tx WHERE ${txidIs(sql.ref('bw_tx.txid'), txid)}
    UNION ALL
    SELECT ${candidateRows} FROM ${CANDIDATES} WHERE ${candidateWhere(sql`${txid}`)})`;
}

/** The transactions whose txid is one of `txids`. */
export function txRowsByTxids(txids: readonly Uint8Array[]): RawBuilder<TxRow> {
  return sql<TxRow>`(SELECT ${COLUMNS} FROM txs bw_tx WHERE ${txidIn(sql.ref('bw_tx.txid'), txids)}
    UNION ALL
    SELECT ${candidateRows} FROM (SELECT DISTINCT v AS txid FROM unnest(${txids}::bytea[]) AS v) bw_q CROSS JOIN ${CANDIDATES}
     WHERE ${candidateWhere(sql.ref('bw_q.txid'))})`;
}

/**
 * The transactions with an input spending an output of the group `group` (an int8 expression,
 * `sqlSpentGroupOf` of the spent transaction's tx_num): a superset of the spenders of its outputs,
 * which the caller settles from `ins` (from the parts, every transaction of a part one of whose
 * transactions spends from the group).
 */
export function txRowsSpending(group: RawBuilder<unknown>): RawBuilder<TxRow> {
  return sql<TxRow>`(SELECT ${COLUMNS} FROM txs bw_tx WHERE ${sql.raw(spendsKeysSql('bw_tx'))} @> ARRAY[${group}] AND length(bw_tx.ins) > 0
    UNION ALL
    SELECT ${slotRows} FROM tx_parts bw_tp ${SLOTS}
     WHERE spent_tx_groups(bw_tp.ins) @> ARRAY[(${group})::int8] AND length(${sql.raw(SQL_PARTS.insAt('bw_tp', 'bw_s.s'))}) > 0)`;
}

/**
 * Whether a confirmed transaction has txid `txid` (a bytea expression), as a boolean condition:
 * one `EXISTS` per place with its correlation in the subselect's own WHERE, so that `NOT ${…}`
 * is planned as anti-joins (an EXISTS over one of the FROM items above is a subplan run per row).
 */
export function txidConfirmed(txid: unknown): RawBuilder<boolean> {
  return sql<boolean>`(EXISTS (SELECT 1 FROM txs bw_tx WHERE ${txidIs(sql.ref('bw_tx.txid'), txid)})
    OR EXISTS (SELECT 1 FROM ${CANDIDATES} WHERE ${candidateWhere(sql`${txid}`)}))`;
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
