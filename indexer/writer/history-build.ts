/**
 * The history buckets built from the chunk rows of an index (docs/lean-layout.md "Building the
 * history buckets: the plan"): what the bulk finish and the migration that switches the buckets
 * on are to run, and what the live bench runs on an imported index (`bench/live.ts
 * --history-busy`). The per-block writer then follows on (history-rows.ts).
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { FatalError } from '../../src/errors.js';
import { buildBase, SQL_BUCKETS } from '../../src/db/history-buckets.js';
import { SQL_HISTORY } from '../../src/db/history-entries.js';
import { bulkActive } from './bulk.js';
import { readHistoryLayout } from './history-rows.js';

/** What `buildHistoryBuckets` did. */
export type BucketBuild = { base: number; busy: number; records: number; keys: number; busyKeys: number };

/**
 * Moves an index whose history is all in chunk rows (`busy` 0, buckets empty) to `busy`: the
 * entries of every address with at most `busy` of them become records in their buckets (base
 * `base`, else `buildBase` of the record count: ~47 records a bucket), canonical, and leave
 * `history`; the busy addresses keep their chunk rows. One transaction under the chain lock
 * (`chain_tip` row), so the per-block writer waits. What the bulk finish and the migration that
 * switches the buckets on are to run.
 */
export async function buildHistoryBuckets(db: Kysely<Database>, opts: { busy: number; base?: number }): Promise<BucketBuild> {
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
    await sql`CREATE TEMP TABLE bw_hist_keys ON COMMIT DROP AS
      SELECT addr_key, sum(1 + length(rest) / 8)::int8 AS n FROM history GROUP BY addr_key`.execute(trx);
    const t = await sql<{ records: string; keys: string; busy_keys: string }>`
      SELECT coalesce(sum(n) FILTER (WHERE n <= ${opts.busy}), 0)::text AS records, count(*)::text AS keys,
             count(*) FILTER (WHERE n > ${opts.busy})::text AS busy_keys FROM bw_hist_keys`.execute(trx);
    const records = Number(t.rows[0]!.records);
    const base = opts.base ?? buildBase(records);
    // Each entry of a non-busy key as its record (the key's bytes 4..11, then the tx field), in
    // canonical order: tx field, then key bytes, both descending.
    await sql`
      INSERT INTO history_buckets (bucket, log)
      SELECT bucket, string_agg(k8 || tx, ''::bytea ORDER BY tx DESC, k8 DESC)
        FROM (SELECT bw_hist_bucket(h.addr_key, ${base}::int4, 0, 0) AS bucket, ${sql.raw(SQL_BUCKETS.key8('h.addr_key'))} AS k8,
                     ${sql.raw(SQL_BUCKETS.txField('e.n'))} AS tx
                FROM history h JOIN bw_hist_keys k ON k.addr_key = h.addr_key AND k.n <= ${opts.busy}
                CROSS JOIN LATERAL (SELECT ${sql.raw(SQL_HISTORY.entryAt(SQL_HISTORY.entries('h'), 'g.i'))} AS n
                                      FROM generate_series(0, length(h.rest) / 8) AS g(i)) e) r
       GROUP BY bucket ORDER BY bucket`.execute(trx);
    await sql`DELETE FROM history h USING bw_hist_keys k WHERE k.addr_key = h.addr_key AND k.n <= ${opts.busy}`.execute(trx);
    await sql`UPDATE history_bucket_params SET base = ${base}, ext = 0, split = 0, busy = ${opts.busy}, records = ${records} WHERE id = 1`.execute(
      trx,
    );
    return { base, busy: opts.busy, records, keys: Number(t.rows[0]!.keys), busyKeys: Number(t.rows[0]!.busy_keys) };
  });
}
