/**
 * An address's confirmed history written for a test as the writer writes it, so that tests which
 * need a history (API pages, key checks, made-up chains) do not build the stored format
 * themselves: when the layout changes (docs/lean-layout.md "Building the history buckets: the
 * plan", step 3) only this helper follows it. Today the format is `history` chunk rows
 * (src/db/history-entries.ts), cut as the per-block path cuts them (one chunk per block the key
 * appears in) or as the bulk finish re-cuts them (chunks of CHUNK_ENTRIES). Tests that are about
 * the chunks themselves (their layout, row versions, the bulk finish, migrations) write `history`
 * directly.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import { CHUNK_ENTRIES, encodeHistoryChunk } from '../../src/db/history-entries.js';
import { sqlHistorySkip } from '../../src/db/history-reads.js';
import type { Database } from '../../src/db/schema.js';
import { txNumHeight } from '../../src/db/tx-num.js';

/** How the writer cut the entries: block by block (the per-block path), or as the bulk finish. */
export type HistoryCut = 'blocks' | 'bulk';

/**
 * Adds `nums` (strictly ascending tx_nums, all above the key's entries so far: a later block's) to
 * the history of `key`, in one statement.
 */
export async function seedHistory(db: Kysely<Database>, key: string, nums: readonly bigint[], cut: HistoryCut = 'blocks'): Promise<void> {
  if (nums.length === 0) return;
  nums.forEach((n, i) => {
    if (i > 0 && n <= nums[i - 1]!) throw new RangeError(`seedHistory: entries must be strictly ascending (${n} after ${nums[i - 1]})`);
  });
  // The runs a chunk may hold: every entry at once, or each block's.
  const runs: bigint[][] = [];
  for (const n of nums) {
    const last = runs[runs.length - 1];
    if (last && (cut === 'bulk' || txNumHeight(last[0]!) === txNumHeight(n))) last.push(n);
    else runs.push([n]);
  }
  const chunks = runs.flatMap((run) =>
    Array.from({ length: Math.ceil(run.length / CHUNK_ENTRIES) }, (_, c) =>
      encodeHistoryChunk(run.slice(c * CHUNK_ENTRIES, (c + 1) * CHUNK_ENTRIES)),
    ),
  );
  // (the key's newest entry + 1, through the readers' seam: where the skip of none of its entries ends)
  const r = await sql<{ ok: boolean }>`
    WITH ins AS (INSERT INTO history (addr_key, first_tx_num, rest)
                 SELECT ${key}::uuid, f, r FROM unnest(${chunks.map((c) => String(c.first_tx_num))}::int8[], ${chunks.map((c) => c.rest)}::bytea[]) AS u(f, r)
                  WHERE coalesce(${sqlHistorySkip(sql`${key}::uuid`, sql`0`)}, 0) <= ${nums[0]!}::int8
                 RETURNING 1)
    SELECT (SELECT count(*) FROM ins) > 0 AS ok`.execute(db);
  if (!r.rows[0]!.ok)
    throw new RangeError(`seedHistory: the key's history already reaches ${nums[0]} (entries are added for later blocks only)`);
}
