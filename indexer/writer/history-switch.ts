/**
 * The switch of an index to history buckets (docs/lean-layout.md "Building the history buckets:
 * the plan"): `blockwire history-buckets --busy N` (cli/history-buckets.ts), and `bench/live.ts
 * --history-busy N` on an imported corpus.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { FatalError } from '../../src/errors.js';
import { bulkActive } from './bulk.js';
import { foldHistory, type BucketFold } from './history-build.js';
import { readHistoryLayout } from './history-rows.js';

/**
 * Moves an index whose history is all in chunk rows (`busy` 0, buckets empty) to `busy`: sets it,
 * then folds every chunk row (`foldHistory` from tx_num 0). One transaction under the chain lock
 * (`chain_tip` row), so the per-block writer waits.
 */
export async function buildHistoryBuckets(db: Kysely<Database>, opts: { busy: number; base?: number }): Promise<BucketFold> {
  if (!Number.isInteger(opts.busy) || opts.busy < 1) throw new RangeError(`busy must be a positive integer, got ${opts.busy}`);
  return db.transaction().execute(async (trx) => {
    await sql`SELECT 1 FROM chain_tip WHERE id = 1 FOR UPDATE`.execute(trx);
    const now = await readHistoryLayout(trx);
    const filled = await sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM history_buckets) AS any`.execute(trx);
    if (await bulkActive(trx)) throw new FatalError('ERR_INDEX_LAYOUT', 'a bulk sync is under way: let it finish first');
    if (now.busy !== 0 || filled.rows[0]!.any)
      throw new FatalError(
        'ERR_INDEX_LAYOUT',
        `the history buckets are on already (busy ${now.busy}): build them into an index with busy 0 only`,
      );
    await sql`UPDATE history_bucket_params SET busy = ${opts.busy} WHERE id = 1`.execute(trx);
    return foldHistory(trx, 0n, opts.base === undefined ? {} : { base: opts.base });
  });
}
