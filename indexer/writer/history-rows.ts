/**
 * The history rows' undo in either place, and the params row as the writer reads it
 * (docs/lean-layout.md "Building the history buckets: the plan", "the deferred fold"). A block
 * applied writes every address's entries as `history` chunk rows (chain-rows.ts), whether the
 * history buckets are on or not; with them on (`busy` > 0) the indexer folds the rows of the
 * blocks below `folded`'s new value into the buckets when it is idle (history-build.ts): an
 * address with at most `busy` entries then has its older entries as records in its bucket
 * (`history_buckets`, the format in src/db/history-buckets.ts) and its newest ones, not folded
 * yet, in chunk rows; one with more keeps chunk rows. The readers read both places.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { FatalError } from '../../src/errors.js';
import { uuidHex } from '../../src/db/address-key.js';
import { bucketOf, RECORD_BYTES, type BucketParams } from '../../src/db/history-buckets.js';
import { int4Array } from '../../src/db/pg-array.js';
import { firstTxNum, txNumHeight } from '../../src/db/tx-num.js';
import { cutHistory, type Trx } from './chain-rows.js';

/** The params row as the writer uses it: the bucket bits, `busy` and the fold's height. */
export type HistoryLayout = BucketParams & { busy: number; folded: number };

/**
 * The params row, locked to the end of the caller's transaction: the writer's transactions that
 * work on the buckets (a fold, an undo, a switch) take it one after the other. A fold runs beside
 * the blocks being applied (they write chunk rows at the tip and read no params), not beside an
 * undo, which may cut the logs the fold writes.
 */
export async function readHistoryLayout(db: Kysely<Database> | Trx): Promise<HistoryLayout> {
  const r = await sql<HistoryLayout>`SELECT base, ext, split, busy, folded FROM history_bucket_params WHERE id = 1 FOR UPDATE`.execute(db);
  const p = r.rows[0];
  if (!p) throw new FatalError('ERR_INDEX_CORRUPT', 'history_bucket_params has no row');
  return p;
}

/**
 * Takes the entries at or above `lo` (the undone block's first tx_num) of `keys` (the block's
 * addresses) out of both places: their chunks, and, for a block below the fold's height (a reorg
 * deeper than the blocks kept unfolded), the front of their buckets' logs (a block's records are
 * the newest: each log becomes byte for byte what it was before the fold took the block), the fold's
 * height then the block's. An address the fold moved into chunks stays there with what is left
 * (the readers read it wherever it is; the fold leaves an address with an older chunk row in chunks).
 */
export async function undoHistory(trx: Trx, layout: HistoryLayout, keys: readonly string[], lo: number): Promise<void> {
  if (layout.busy > 0 && BigInt(lo) < firstTxNum(layout.folded)) {
    const buckets = [...new Set(keys.map((k) => bucketOf(Buffer.from(uuidHex(k), 'hex'), layout)))].sort((a, b) => a - b);
    await sql`
      WITH c AS MATERIALIZED (SELECT bucket, length(log) AS len, bw_hist_cut(log, bw_hist_tx(${lo}::int8)) AS cut
                                FROM history_buckets WHERE bucket = ANY(${int4Array(buckets)}::int4[])),
           up AS (UPDATE history_buckets b SET log = substring(b.log FROM c.cut + 1) FROM c WHERE b.bucket = c.bucket AND c.cut > 0 AND c.cut < c.len),
           del AS (DELETE FROM history_buckets b USING c WHERE b.bucket = c.bucket AND c.cut > 0 AND c.cut = c.len)
      UPDATE history_bucket_params SET records = records - (SELECT coalesce(sum(cut), 0) / ${RECORD_BYTES} FROM c),
                                       folded = ${txNumHeight(BigInt(lo))}
       WHERE id = 1`.execute(trx);
  }
  await cutHistory(trx, keys, lo);
}
