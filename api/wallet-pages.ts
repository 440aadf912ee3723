/**
 * How the wallet routes (api/routes/wallets.ts) cut their pages, apart from the requests: pure
 * steps over the rows a query read with `limit + 1` (the extra row says that more follow). A
 * plain list answers `limit` rows and the position of the last; the unspent outputs answer every
 * mempool output on the first page (they have no position to resume from), then confirmed ones
 * up to `limit` in all.
 * @module
 */

/** The first `limit` of `rows` (read with `limit + 1`), and the last one answered when more follow. */
export function cutPage<T>(rows: readonly T[], limit: number): { rows: T[]; last: T | undefined } {
  if (rows.length <= limit) return { rows: [...rows], last: undefined };
  const page = rows.slice(0, limit);
  return { rows: page, last: page[limit - 1] };
}

/** Where the next page of unspent outputs resumes: after this confirmed output (in tx_num, vout order). */
export type UnspentAfter = { txNum: bigint; vout: number };

/** Above every tx_num: the next page starts at the newest confirmed output. */
const ABOVE_ALL = 1n << 62n;

/**
 * A page of unspent outputs, mempool ones (`txNum` null) first: all of them, then confirmed ones
 * up to `limit` rows in all; `next` when confirmed outputs are left over (a page that the mempool
 * filled resumes at the newest confirmed output).
 */
export function unspentPage<T extends { txNum: bigint | null; vout: number }>(
  rows: readonly T[],
  limit: number,
): { rows: T[]; next: UnspentAfter | undefined } {
  const inMempool = rows.findIndex((u) => u.txNum !== null);
  const mempoolCount = inMempool < 0 ? rows.length : inMempool;
  const room = Math.max(0, limit - mempoolCount);
  if (rows.length - mempoolCount <= room) return { rows: [...rows], next: undefined };
  const page = rows.slice(0, mempoolCount + room);
  const last = room > 0 ? page[page.length - 1]! : undefined;
  return { rows: page, next: last ? { txNum: last.txNum!, vout: last.vout } : { txNum: ABOVE_ALL, vout: 0 } };
}
