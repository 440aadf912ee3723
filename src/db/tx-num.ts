/**
 * A confirmed transaction's number: height × 2^20 + its position in the block. It orders
 * transactions in chain order, gives the height without a lookup, and makes "everything above
 * height h" one range (`tx_num >= firstTxNum(h + 1)`). 2^20 positions per block is far above
 * the consensus maximum (a 4 MWU block holds fewer than 25,000 transactions).
 * @module
 */

export const TX_NUM_SHIFT = 20;
const POSITIONS = 1n << BigInt(TX_NUM_SHIFT);

/** The tx_num of position `pos` in the block at `height`. */
export function txNum(height: number, pos: number): bigint {
  if (!Number.isInteger(height) || height < 0) throw new RangeError(`height must be a non-negative integer, got ${height}`);
  if (!Number.isInteger(pos) || pos < 0 || pos >= Number(POSITIONS)) throw new RangeError(`position must be in [0, ${POSITIONS}), got ${pos}`);
  return (BigInt(height) << BigInt(TX_NUM_SHIFT)) | BigInt(pos);
}

/** The first tx_num of the block at `height`. */
export function firstTxNum(height: number): bigint {
  return txNum(height, 0);
}

export function txNumHeight(n: bigint): number {
  return Number(n >> BigInt(TX_NUM_SHIFT));
}

export function txNumPosition(n: bigint): number {
  return Number(n & (POSITIONS - 1n));
}
