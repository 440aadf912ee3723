/**
 * The switch of an index to history buckets (docs/lean-layout.md "Building the history buckets:
 * the plan"): `blockwire history-buckets --busy N` (cli/history-buckets.ts), and `bench/live.ts
 * --history-busy N` on an imported corpus.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { FatalError } from '../../src/errors.js';
import { HISTORY_ROWS } from '../../src/db/history-reads.js';
import { bulkActive } from './bulk.js';
import { foldHistory, type BucketFold } from './history-build.js';
import { readHistoryLayout } from './history-rows.js';
import { lockTip, type Trx } from './chain-rows.js';

/**
 * Moves an index whose history is all in chunk rows (`busy` 0, buckets empty) to `busy`: sets it,
 * then folds every chunk row (`foldHistory` from height 0 to the tip), deleting the folded rows
 * (a reader's snapshot from before the commit still finds them: the table is not replaced), then,
 * after the commit, `VACUUM (FULL, ANALYZE) history` gives their space back (it keeps every row's
 * visibility) and `ANALYZE history_buckets`. One transaction under the chain lock (`chain_tip`
 * row), so the per-block writer waits; `guard` proves the writer lock in it. `base` (the bucket
 * count's bits) only for an index with blocks: into an empty one the first import's finish
 * chooses it from the records it folds.
 */
export async function buildHistoryBuckets(
  db: Kysely<Database>,
  opts: { busy: number; base?: number; guard?: (trx: Trx) => Promise<void> },
): Promise<BucketFold> {
  if (!Number.isInteger(opts.busy) || opts.busy < 1) throw new RangeError(`busy must be a positive integer, got ${opts.busy}`);
  const fold = await db.transaction().execute(async (trx) => {
    if (opts.guard) await opts.guard(trx);
    const tip = (await lockTip(trx)).height;
    const now = await readHistoryLayout(trx);
    const filled = await sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM history_buckets) AS any`.execute(trx);
    if (await bulkActive(trx)) throw new FatalError('ERR_INDEX_LAYOUT', 'a bulk sync is under way: let it finish first');
    if (now.busy !== 0 || filled.rows[0]!.any)
      throw new FatalError(
        'ERR_INDEX_LAYOUT',
        `the history buckets are on already (busy ${now.busy}): build them into an index with busy 0 only`,
      );
    if (tip < 0 && opts.base !== undefined)
      throw new FatalError(
        'ERR_INDEX_LAYOUT',
        'the index is empty: the first import or sync chooses the bucket count from the records it folds (switch on without a base)',
      );
    await sql`UPDATE history_bucket_params SET busy = ${opts.busy}, folded = 0 WHERE id = 1`.execute(trx);
    return foldHistory(trx, tip + 1, { rewrite: false, ...(opts.base === undefined ? { chooseBase: true } : { base: opts.base }) });
  });
  if (fold.keys > 0) {
    await sql`VACUUM (FULL, ANALYZE) history`.execute(db);
    await sql`ANALYZE history_buckets`.execute(db);
  }
  return fold;
}

/**
 * HISTORY_BUSY on the index (src/config.ts): an empty index (no block, nothing in either history
 * table) still at `busy` 0 takes `busy` (its first import or bulk sync then folds into the
 * buckets and chooses their count); any other keeps its own (an index with blocks, or one switched
 * by `blockwire history-buckets` before its first block), which is returned for the caller to
 * log. One transaction under the chain lock; `guard` proves the writer lock in it.
 */
export async function applyHistoryBusy(
  db: Kysely<Database>,
  busy: number,
  opts: { guard?: (trx: Trx) => Promise<void> } = {},
): Promise<{ applied: boolean; busy: number }> {
  if (!Number.isInteger(busy) || busy < 0) throw new RangeError(`busy must be a non-negative integer, got ${busy}`);
  return db.transaction().execute(async (trx) => {
    if (opts.guard) await opts.guard(trx);
    const tip = (await lockTip(trx)).height;
    const now = await readHistoryLayout(trx);
    if (now.busy === busy || now.busy !== 0) return { applied: false, busy: now.busy };
    const rows = await sql<{ any: boolean }>`
      SELECT EXISTS (SELECT 1 FROM ${sql.raw(HISTORY_ROWS)} h) OR EXISTS (SELECT 1 FROM history_buckets) AS any`.execute(trx);
    if (tip >= 0 || rows.rows[0]!.any) return { applied: false, busy: now.busy };
    await sql`UPDATE history_bucket_params SET busy = ${busy}, folded = 0 WHERE id = 1`.execute(trx);
    return { applied: true, busy };
  });
}
