/**
 * The per-block writer's history rows in either place (docs/lean-layout.md "Building the history
 * buckets: the plan", "The write side"): an address with more than `busy` entries keeps them in
 * `history` chunk rows, any other in its bucket's log (`history_buckets`, the format in
 * src/db/history-buckets.ts). `busy` 0 (the params row's value until the buckets' build lands)
 * puts every address in chunks: the chunk rows are then written exactly as before and the buckets
 * stay empty.
 *
 * The rule that makes the place a function of the chain: an address is in `history` exactly when
 * its entry count is above `busy`. Counts only grow with height, so a block moves an address that
 * passes `busy` from its bucket into chunks ("crossing"), and the undo of that block moves it back.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { FatalError } from '../../src/errors.js';
import { uuidHex } from '../../src/db/address-key.js';
import {
  bucketOf,
  compareRecords,
  keyCounts,
  keyTxNums,
  mergeLogs,
  RECORD_BYTES,
  recordsOf,
  withoutKey,
  withoutRepeats,
  writeRecord,
  type BucketParams,
} from '../../src/db/history-buckets.js';
import { decodeEntries, historyChunkEntries, historyChunks, restOf } from '../../src/db/history-entries.js';
import { byteaArray, int4Array, uuidArray } from '../../src/db/pg-array.js';
import { cutHistory, insertHistoryChunks, type Trx } from './chain-rows.js';

/** The params row as the writer uses it: the bucket bits and `busy`. */
export type HistoryLayout = BucketParams & { busy: number };

type HistoryChunk = ReturnType<typeof historyChunks>[number];

/** The params row (once per transaction: only the writer changes it, under the chain lock). */
export async function readHistoryLayout(db: Kysely<Database> | Trx): Promise<HistoryLayout> {
  const r = await sql<HistoryLayout>`SELECT base, ext, split, busy FROM history_bucket_params WHERE id = 1`.execute(db);
  const p = r.rows[0];
  if (!p) throw new FatalError('ERR_INDEX_CORRUPT', 'history_bucket_params has no row');
  return p;
}

const keyBytes = (key: string): Buffer => Buffer.from(uuidHex(key), 'hex');

/**
 * Writes the history entries of a block (or of consecutive blocks: `entries` per key ascending,
 * all above the index's), with `chunks` the chunk rows the busy keys get (`historyChunks` of each
 * block, so that a busy key's rows are those each block alone would write). With `busy` 0 only
 * the chunks are written. Otherwise one statement inserts the busy keys' chunks (a key is busy
 * when it has chunk rows) and prepends the other keys' records to their buckets, and returns the
 * logs longer than `busy` records; a key of the block with more than `busy` records there has
 * crossed, and its records move into chunk rows.
 */
export async function writeHistory(
  trx: Trx,
  layout: HistoryLayout,
  entries: ReadonlyMap<string, readonly number[]>,
  chunks: readonly HistoryChunk[],
): Promise<void> {
  if (layout.busy === 0) return insertHistoryChunks(trx, chunks);
  if (entries.size === 0) return;
  const recs: { key: string; bucket: number; rec: Buffer }[] = [];
  const bucketOfKey = new Map<string, number>();
  for (const [key, nums] of entries) {
    const kb = keyBytes(key);
    const bucket = bucketOf(kb, layout);
    bucketOfKey.set(key, bucket);
    for (const n of nums) {
      const rec = Buffer.allocUnsafe(RECORD_BYTES);
      writeRecord(rec, 0, kb, n);
      recs.push({ key, bucket, rec });
    }
  }
  // Canonical order (newest first, then the key bytes descending): each bucket's records are
  // aggregated in it and prepended, so every log stays canonical.
  recs.sort((a, b) => compareRecords(a.rec, 0, b.rec, 0));
  const sorted = [...chunks].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.first - b.first));
  const r = await sql<{ bucket: number | null; log: Buffer | null; busy: string | null }>`
    WITH e AS (SELECT * FROM unnest(${uuidArray(recs.map((x) => x.key))}::uuid[], ${int4Array(recs.map((x) => x.bucket))}::int4[],
                                    ${byteaArray(recs.map((x) => x.rec))}::bytea[]) WITH ORDINALITY AS e(k, bucket, rec, o)),
         busy AS MATERIALIZED (SELECT DISTINCT e.k FROM e WHERE EXISTS (SELECT 1 FROM history h WHERE h.addr_key = e.k)),
         chunks AS (INSERT INTO history (addr_key, first_tx_num, rest)
                    SELECT c.k, c.f, c.r
                      FROM unnest(${uuidArray(sorted.map((c) => c.key))}::uuid[], ${sorted.map((c) => String(c.first))}::int8[],
                                  ${byteaArray(sorted.map((c) => restOf(c.entries)))}::bytea[]) AS c(k, f, r)
                     WHERE c.k IN (SELECT k FROM busy)),
         added AS (UPDATE history_bucket_params SET records = records + (SELECT count(*) FROM e WHERE e.k NOT IN (SELECT k FROM busy))
                    WHERE id = 1),
         agg AS MATERIALIZED (SELECT e.bucket, string_agg(e.rec, ''::bytea ORDER BY e.o) AS log FROM e
                               WHERE e.k NOT IN (SELECT k FROM busy) GROUP BY e.bucket),
         upd AS (UPDATE history_buckets b SET log = agg.log || b.log FROM agg WHERE b.bucket = agg.bucket RETURNING b.bucket, b.log),
         ins AS (INSERT INTO history_buckets (bucket, log)
                 SELECT agg.bucket, agg.log FROM agg WHERE agg.bucket NOT IN (SELECT bucket FROM upd)
                 ORDER BY agg.bucket
                 RETURNING bucket, log),
         up AS (SELECT bucket, log FROM upd UNION ALL SELECT bucket, log FROM ins)
    SELECT bucket, log, NULL::text AS busy FROM up WHERE length(log) > ${layout.busy * RECORD_BYTES}
    UNION ALL
    SELECT NULL, NULL, k::text FROM busy WHERE EXISTS (SELECT 1 FROM up WHERE length(log) > ${layout.busy * RECORD_BYTES})`.execute(trx);
  const long = r.rows.filter((x) => x.busy === null) as { bucket: number; log: Buffer }[];
  if (long.length === 0) return;
  const busyKeys = new Set(r.rows.flatMap((x) => (x.busy === null ? [] : [x.busy])));
  await moveCrossed(trx, layout, entries, chunks, bucketOfKey, busyKeys, long);
}

/**
 * Moves the keys of the block that passed `busy` in the given logs out of their buckets into chunk
 * rows: their entries before the block (the turn) cut into chunks of CHUNK_ENTRIES, then the
 * block's own chunk rows, as a busy key gets them (so a chunk starts in the block: what
 * `sqlHistoryTouched` finds). Only keys of the block that had no chunk rows can cross. An
 * identity over `busy` that no such key matches (two addresses built to share it, their records
 * counted together) stays where it is: a built pair must not be able to stop the writer.
 */
async function moveCrossed(
  trx: Trx,
  layout: HistoryLayout,
  entries: ReadonlyMap<string, readonly number[]>,
  blockChunks: readonly HistoryChunk[],
  bucketOfKey: ReadonlyMap<string, number>,
  busyKeys: ReadonlySet<string>,
  logs: readonly { bucket: number; log: Buffer }[],
): Promise<void> {
  const rows: HistoryChunk[] = [];
  const changed: { bucket: number; log: Buffer }[] = [];
  let moved = 0;
  for (const { bucket, log } of logs) {
    let left = log;
    for (const [k8, n] of keyCounts(log)) {
      if (n <= layout.busy) continue;
      // Before the block every address of a bucket had at most `busy` records: one that has more
      // now is one of the block's. Two keys of the block sharing the identity (built to) both get
      // its older records: they cannot be told apart.
      const keys = [...entries.keys()].filter(
        (k) => !busyKeys.has(k) && bucketOfKey.get(k) === bucket && keyBytes(k).subarray(4, 12).toString('hex') === k8,
      );
      if (keys.length === 0) continue;
      const kb = keyBytes(keys[0]!);
      const first = Math.min(...keys.map((k) => entries.get(k)![0]!));
      // (a pair in one transaction left the same record twice: once in the chunks)
      const older = [...new Set(keyTxNums(log, kb, first))].reverse();
      for (const k of keys) rows.push(...historyChunks(new Map([[k, older]])), ...blockChunks.filter((c) => c.key === k));
      left = withoutKey(left, kb);
      moved += n;
    }
    if (left !== log) changed.push({ bucket, log: left });
  }
  if (moved === 0) return;
  await sql`
    WITH l AS (SELECT * FROM unnest(${int4Array(changed.map((x) => x.bucket))}::int4[], ${byteaArray(changed.map((x) => x.log))}::bytea[]) AS l(bucket, log)),
         up AS (UPDATE history_buckets b SET log = l.log FROM l WHERE b.bucket = l.bucket AND length(l.log) > 0),
         del AS (DELETE FROM history_buckets b USING l WHERE b.bucket = l.bucket AND length(l.log) = 0)
    UPDATE history_bucket_params SET records = records - ${moved} WHERE id = 1`.execute(trx);
  await insertHistoryChunks(trx, rows);
}

/**
 * Takes the entries at or above `lo` (the undone block's first tx_num) of `keys` (the block's
 * addresses) out of both places: the front of their buckets' logs (a block's records are the
 * newest: each log becomes byte for byte what it was before the block) and their chunks; then a
 * key left in chunks with 1..`busy` entries crossed in this block and moves back into its bucket.
 */
export async function undoHistory(trx: Trx, layout: HistoryLayout, keys: readonly string[], lo: number): Promise<void> {
  if (layout.busy > 0 && keys.length > 0) {
    const buckets = [...new Set(keys.map((k) => bucketOf(keyBytes(k), layout)))].sort((a, b) => a - b);
    await sql`
      WITH c AS MATERIALIZED (SELECT bucket, length(log) AS len, bw_hist_cut(log, bw_hist_tx(${lo}::int8)) AS cut
                                FROM history_buckets WHERE bucket = ANY(${int4Array(buckets)}::int4[])),
           up AS (UPDATE history_buckets b SET log = substring(b.log FROM c.cut + 1) FROM c WHERE b.bucket = c.bucket AND c.cut > 0 AND c.cut < c.len),
           del AS (DELETE FROM history_buckets b USING c WHERE b.bucket = c.bucket AND c.cut > 0 AND c.cut = c.len)
      UPDATE history_bucket_params SET records = records - (SELECT coalesce(sum(cut), 0) / ${RECORD_BYTES} FROM c) WHERE id = 1`.execute(
      trx,
    );
  }
  await cutHistory(trx, keys, lo);
  if (layout.busy > 0 && keys.length > 0) await moveBack(trx, layout, keys);
}

/** Moves the keys of `keys` left in chunk rows with 1..`busy` entries back into their buckets. */
async function moveBack(trx: Trx, layout: HistoryLayout, keys: readonly string[]): Promise<void> {
  // (each chunk holds an entry at least: busy + 1 chunks tell whether a key has more than busy)
  const r = await sql<{ addr_key: string; first_tx_num: bigint; rest: Buffer }>`
    SELECT h.addr_key, h.first_tx_num, h.rest FROM history h
     WHERE h.addr_key IN (SELECT k FROM unnest(${uuidArray(keys)}::uuid[]) AS k
                           WHERE (SELECT sum(1 + length(c.rest) / 8) FROM (SELECT rest FROM history WHERE addr_key = k
                                                                             ORDER BY first_tx_num LIMIT ${layout.busy + 1}) c) <= ${layout.busy})
     ORDER BY h.addr_key, h.first_tx_num`.execute(trx);
  if (r.rows.length === 0) return;
  // Each moved key's entries as records, by bucket.
  const byBucket = new Map<number, [Uint8Array, number][]>();
  const movedKeys = new Set<string>();
  for (const row of r.rows) {
    const kb = keyBytes(row.addr_key);
    const b = bucketOf(kb, layout);
    let list = byBucket.get(b);
    if (!list) byBucket.set(b, (list = []));
    for (const n of decodeEntries(historyChunkEntries(row.first_tx_num, row.rest))) list.push([kb, Number(n)]);
    movedKeys.add(row.addr_key);
  }
  let moved = 0;
  for (const list of byBucket.values()) moved += list.length;
  const buckets = [...byBucket.keys()].sort((a, b) => a - b);
  const old = await sql<{ bucket: number; log: Buffer }>`
    SELECT bucket, log FROM history_buckets WHERE bucket = ANY(${int4Array(buckets)}::int4[]) FOR UPDATE`.execute(trx);
  const logOf = new Map(old.rows.map((x) => [x.bucket, x.log]));
  // (two keys built to share an identity, both moved back, bring the same records twice: once each)
  const logs = buckets.map((b) => withoutRepeats(mergeLogs(logOf.get(b) ?? Buffer.alloc(0), recordsOf(byBucket.get(b)!))));
  await sql`
    WITH d AS (DELETE FROM history WHERE addr_key = ANY(${uuidArray([...movedKeys])}::uuid[])),
         p AS (UPDATE history_bucket_params SET records = records + ${moved} WHERE id = 1)
    INSERT INTO history_buckets (bucket, log)
    SELECT * FROM unnest(${int4Array(buckets)}::int4[], ${byteaArray(logs)}::bytea[])
    ON CONFLICT (bucket) DO UPDATE SET log = excluded.log`.execute(trx);
}
