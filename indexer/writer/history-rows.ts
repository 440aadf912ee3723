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
  buildBase,
  SQL_BUCKETS,
  compareRecords,
  keyCounts,
  keyTxNums,
  mergeLogs,
  RECORD_BYTES,
  recordsOf,
  withoutKey,
  writeRecord,
  type BucketParams,
} from '../../src/db/history-buckets.js';
import { CHUNK_ENTRIES, historyChunks, SQL_HISTORY } from '../../src/db/history-entries.js';
import { byteaArray, int4Array, uuidArray } from '../../src/db/pg-array.js';
import { cutHistory, insertHistoryChunks, type Trx } from './chain-rows.js';

/** The params row as the writer uses it: the bucket bits and `busy`. */
export type HistoryLayout = BucketParams & { busy: number };

type HistoryChunk = ReturnType<typeof historyChunks>[number];

/** The params row (once per transaction: only the writer changes it, under the chain lock). */
export async function readHistoryLayout(trx: Trx): Promise<HistoryLayout> {
  const r = await sql<HistoryLayout>`SELECT base, ext, split, busy FROM history_bucket_params WHERE id = 1`.execute(trx);
  const p = r.rows[0];
  if (!p) throw new FatalError('ERR_INDEX_CORRUPT', 'history_bucket_params has no row');
  return p;
}

const keyBytes = (key: string): Buffer => Buffer.from(uuidHex(key), 'hex');

/** A key's entries (ascending) as chunk rows of at most CHUNK_ENTRIES, as the bulk finish cuts them. */
function chunksOf(key: string, nums: readonly number[]): HistoryChunk[] {
  const out: HistoryChunk[] = [];
  for (let i = 0; i < nums.length; i += CHUNK_ENTRIES) {
    const part = nums.slice(i, i + CHUNK_ENTRIES);
    out.push({ key, first: part[0]!, entries: part });
  }
  return out;
}

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

/** The entries after a chunk's first, 8 bytes each (the `rest` column). */
function restOf(nums: readonly number[]): Buffer {
  const out = Buffer.allocUnsafe((nums.length - 1) * 8);
  for (let i = 1; i < nums.length; i++) out.writeBigInt64BE(BigInt(nums[i]!), (i - 1) * 8);
  return out;
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
      for (const k of keys) rows.push(...chunksOf(k, older), ...blockChunks.filter((c) => c.key === k));
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
  const back = new Map<string, [Uint8Array, number][]>();
  for (const row of r.rows) {
    const kb = keyBytes(row.addr_key);
    let list = back.get(row.addr_key);
    if (!list) back.set(row.addr_key, (list = []));
    list.push([kb, Number(row.first_tx_num)]);
    for (let at = 0; at < row.rest.length; at += 8) list.push([kb, Number(row.rest.readBigInt64BE(at))]);
  }
  const byBucket = new Map<number, [Uint8Array, number][]>();
  let moved = 0;
  for (const list of back.values()) {
    const b = bucketOf(list[0]![0], layout);
    byBucket.set(b, [...(byBucket.get(b) ?? []), ...list]);
    moved += list.length;
  }
  const buckets = [...byBucket.keys()].sort((a, b) => a - b);
  const old = await sql<{ bucket: number; log: Buffer }>`
    SELECT bucket, log FROM history_buckets WHERE bucket = ANY(${int4Array(buckets)}::int4[]) FOR UPDATE`.execute(trx);
  const logOf = new Map(old.rows.map((x) => [x.bucket, x.log]));
  // (two keys built to share an identity, both moved back, bring the same records twice: once each)
  const logs = buckets.map((b) => withoutRepeats(mergeLogs(logOf.get(b) ?? Buffer.alloc(0), recordsOf(byBucket.get(b)!))));
  await sql`
    WITH d AS (DELETE FROM history WHERE addr_key = ANY(${uuidArray([...back.keys()])}::uuid[])),
         p AS (UPDATE history_bucket_params SET records = records + ${moved} WHERE id = 1)
    INSERT INTO history_buckets (bucket, log)
    SELECT * FROM unnest(${int4Array(buckets)}::int4[], ${byteaArray(logs)}::bytea[])
    ON CONFLICT (bucket) DO UPDATE SET log = excluded.log`.execute(trx);
}

/** A canonical log without its repeated records (identical records are adjacent in it). */
function withoutRepeats(log: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at < log.length; at += RECORD_BYTES)
    if (at === 0 || log.compare(log, at - RECORD_BYTES, at, at, at + RECORD_BYTES) !== 0) parts.push(log.subarray(at, at + RECORD_BYTES));
  return parts.length * RECORD_BYTES === log.length ? log : Buffer.concat(parts);
}

/** What `buildHistoryBuckets` did. */
export type BucketBuild = { base: number; busy: number; records: number; keys: number; busyKeys: number };

/**
 * Moves an index whose history is all in chunk rows (`busy` 0, buckets empty) to `busy`: the
 * entries of every address with at most `busy` of them become records in their buckets (base
 * `base`, else `buildBase` of the record count: ~47 records a bucket), canonical, and leave
 * `history`; the busy addresses keep their chunk rows. One transaction under the chain lock
 * (`chain_tip` row), so the per-block writer waits. What the bulk finish and the migration that
 * switches the buckets on are to run (docs/lean-layout.md), and what the live bench runs on an
 * imported index to measure the buckets (`bench/live.ts --history-busy`).
 */
export async function buildHistoryBuckets(db: Kysely<Database>, opts: { busy: number; base?: number }): Promise<BucketBuild> {
  if (!Number.isInteger(opts.busy) || opts.busy < 1) throw new RangeError(`busy must be a positive integer, got ${opts.busy}`);
  return db.transaction().execute(async (trx) => {
    await sql`SELECT 1 FROM chain_tip WHERE id = 1 FOR UPDATE`.execute(trx);
    const now = await readHistoryLayout(trx);
    const filled = await sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM history_buckets) AS any`.execute(trx);
    const bulk = await sql<{ active: boolean }>`
      SELECT coalesce((value->>'active')::boolean, false) AS active FROM sync_state WHERE key = 'bulk'`.execute(trx);
    if (bulk.rows[0]?.active) throw new FatalError('ERR_INDEX_LAYOUT', 'a bulk sync is under way: let it finish first');
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
    // Each entry of a non-busy key as its record: the key's bytes 4..11, then the tx field (height
    // in 3 bytes, position in 2: the tx_num's height << 16 | position, its low 5 bytes).
    await sql`
      INSERT INTO history_buckets (bucket, log)
      SELECT bucket, string_agg(k8 || tx, ''::bytea ORDER BY tx DESC, k8 DESC)
        FROM (SELECT bw_hist_bucket(h.addr_key, ${base}::int4, 0, 0) AS bucket, ${sql.raw(SQL_BUCKETS.key8('h.addr_key'))} AS k8,
                     substring(int8send(((e.n >> 20) << 16) | (e.n & 65535)) FROM 4 FOR 5) AS tx
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
