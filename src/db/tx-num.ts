/**
 * The tx_num format, JS and SQL. A confirmed transaction's number is height × 2^20 + its
 * position in the block. It orders transactions in chain order, gives the height without a
 * lookup, and makes "everything above height h" one range (`tx_num >= firstTxNum(h + 1)`).
 * 2^20 positions per block is far above the consensus maximum (a 4 MWU block holds fewer than
 * 25,000 transactions). In SQL a tx_num is an int8; the fragments below are the only place
 * statements take it apart.
 * @module
 */
import { sql, type Expression, type RawBuilder } from 'kysely';

const TX_NUM_SHIFT = 20;
/** 2^20: the positions of one block; tx_num = height × TX_NUM_SPAN + position. */
export const TX_NUM_SPAN = 2 ** TX_NUM_SHIFT;
const POSITIONS = 1n << BigInt(TX_NUM_SHIFT);

/** The tx_num of position `pos` in the block at `height`. */
export function txNum(height: number, pos: number): bigint {
  if (!Number.isInteger(height) || height < 0) throw new RangeError(`height must be a non-negative integer, got ${height}`);
  if (!Number.isInteger(pos) || pos < 0 || pos >= Number(POSITIONS))
    throw new RangeError(`position must be in [0, ${POSITIONS}), got ${pos}`);
  return (BigInt(height) << BigInt(TX_NUM_SHIFT)) | BigInt(pos);
}

/** The tx_num as a number, unchecked, for the indexer's hot loops (exact for any height below 2^33). */
export function txNumOf(height: number, pos: number): number {
  return height * TX_NUM_SPAN + pos;
}

/** The first tx_num of the block at `height`. */
export function firstTxNum(height: number): bigint {
  return txNum(height, 0);
}

/** The height of a tx_num. */
export function txNumHeight(n: bigint): number {
  return Number(n >> BigInt(TX_NUM_SHIFT));
}

/** The position in its block of a tx_num. */
export function txNumPosition(n: bigint): number {
  return Number(n & (POSITIONS - 1n));
}

type SqlInt = Expression<unknown> | RawBuilder<unknown>;

/** SQL: the height (int4) of the int8 tx_num `n`, e.g. `sqlTxNumHeight(sql.ref('t.tx_num'))`. */
export function sqlTxNumHeight(n: SqlInt): RawBuilder<number> {
  return sql<number>`((${n} >> ${sql.lit(TX_NUM_SHIFT)})::int4)`;
}

/** SQL: the position in its block of the int8 tx_num `n`. */
export function sqlTxNumPosition(n: SqlInt): RawBuilder<number> {
  return sql<number>`((${n} & ${sql.lit(TX_NUM_SPAN - 1)})::int4)`;
}

/** SQL: the first tx_num (int8) of the block at height `height` (any integer expression). */
export function sqlFirstTxNum(height: SqlInt): RawBuilder<string> {
  return sql<string>`((${height})::int8 << ${sql.lit(TX_NUM_SHIFT)})`;
}
