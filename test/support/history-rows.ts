/**
 * An address's confirmed history written for a test as the writer writes it, so that tests which
 * need a history (API pages, key checks, made-up chains) do not build the stored format
 * themselves (docs/lean-layout.md "Building the history buckets: the plan"). An address's history
 * is either `history` chunk rows (src/db/history-entries.ts), cut as the per-block path cuts them
 * (one chunk per block the key appears in) or as the bulk finish re-cuts them (chunks of
 * CHUNK_ENTRIES), or the key's records in its bucket (`history_buckets`, src/db/history-buckets.ts,
 * under the params row's bits). Tests that are about the chunks themselves (their layout, row
 * versions, the bulk finish, migrations) write `history` directly.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import { uuidHex } from '../../src/db/address-key.js';
import { bucketOf, keyTxNums, mergeLogs, recordsOf } from '../../src/db/history-buckets.js';
import { CHUNK_ENTRIES, encodeHistoryChunk } from '../../src/db/history-entries.js';
import { sqlHistorySkip } from '../../src/db/history-reads.js';
import type { Database } from '../../src/db/schema.js';
import { foldHistory } from '../../indexer/writer/history-build.js';
import { lockTip } from '../../indexer/writer/chain-rows.js';
import { txNumHeight } from '../../src/db/tx-num.js';

/** Where the entries go: chunks cut block by block (the per-block path) or as the bulk finish, or the key's bucket. */
export type HistoryCut = 'blocks' | 'bulk' | 'bucket';

/**
 * Adds `nums` (strictly ascending tx_nums, all above the key's entries so far: a later block's) to
 * the history of `key`, in one statement.
 */
export async function seedHistory(db: Kysely<Database>, key: string, nums: readonly bigint[], cut: HistoryCut = 'blocks'): Promise<void> {
  if (nums.length === 0) return;
  nums.forEach((n, i) => {
    if (i > 0 && n <= nums[i - 1]!) throw new RangeError(`seedHistory: entries must be strictly ascending (${n} after ${nums[i - 1]})`);
  });
  if (cut === 'bucket') return seedBucket(db, key, nums);
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

/** `nums` as records of `key` merged into its bucket's log (and counted in the params row), in one transaction. */
async function seedBucket(db: Kysely<Database>, key: string, nums: readonly bigint[]): Promise<void> {
  const k = Buffer.from(uuidHex(key), 'hex');
  await db.transaction().execute(async (trx) => {
    const p = await sql<{ base: number; ext: number; split: number }>`
      SELECT base, ext, split FROM history_bucket_params WHERE id = 1 FOR UPDATE`.execute(trx);
    const bucket = bucketOf(k, p.rows[0]!);
    const old = await sql<{ log: Buffer }>`SELECT log FROM history_buckets WHERE bucket = ${bucket}`.execute(trx);
    const log = old.rows[0]?.log ?? Buffer.alloc(0);
    const newest = keyTxNums(log, k, Number.POSITIVE_INFINITY, 1)[0];
    if (newest !== undefined && BigInt(newest) >= nums[0]!)
      throw new RangeError(`seedHistory: the key's history already reaches ${nums[0]} (entries are added for later blocks only)`);
    const merged = mergeLogs(log, recordsOf(nums.map((n) => [k, Number(n)] as const)));
    await sql`INSERT INTO history_buckets (bucket, log) VALUES (${bucket}, ${merged})
      ON CONFLICT (bucket) DO UPDATE SET log = excluded.log`.execute(trx);
    await sql`UPDATE history_bucket_params SET records = records + ${nums.length} WHERE id = 1`.execute(trx);
  });
}

/** Folds every block up to the tip into the history buckets, as an idle indexer folds them (nothing at `busy` 0). */
export async function foldAllHistory(db: Kysely<Database>): Promise<void> {
  await db.transaction().execute(async (trx) => foldHistory(trx, (await lockTip(trx)).height + 1));
}
