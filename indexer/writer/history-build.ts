/**
 * The fold: chunk rows written in bulk moved into the layout `busy` says (docs/lean-layout.md
 * "Building the history buckets: the plan"). What the bulk finish runs on an index that keeps
 * history in buckets (the batches write every address's entries as chunk rows), and what
 * `buildHistoryBuckets` (history-switch.ts) runs to move an index from `busy` 0 to buckets. The
 * per-block writer then follows on (history-rows.ts).
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { uuidHex } from '../../src/db/address-key.js';
import { bucketOf, buildBase, keyTxNums, RECORD_BYTES, SQL_BUCKETS, withoutKey } from '../../src/db/history-buckets.js';
import { firstTxNum } from '../../src/db/tx-num.js';
import { historyChunks, restOf, SQL_HISTORY } from '../../src/db/history-entries.js';
import { chainIndexSql } from '../../src/db/chain-indexes.js';
import { CHAIN_CHANNEL } from '../../src/db/chain-changes.js';
import { byteaArray, int4Array, uuidArray } from '../../src/db/pg-array.js';
import { lockTip, type Trx } from './chain-rows.js';
import { readHistoryLayout } from './history-rows.js';

/** What a fold did. */
export type BucketFold = {
  base: number;
  busy: number;
  /** The records in the buckets afterwards. */
  records: number;
  /** The addresses whose chunk rows were folded. */
  keys: number;
  /** Of those, the ones left in chunk rows (more than `busy` entries). */
  busyKeys: number;
  /** Addresses that had records in their bucket and passed `busy`: their records moved into chunk rows. */
  crossed: number;
  /** Whether `history` was written anew (most of its rows moved: a DELETE would leave their space in it). */
  rewritten: boolean;
  /** Milliseconds by step. */
  ms: Record<string, number>;
};

/**
 * Folds the chunk rows of the blocks from the params row's `folded` up to `toHeight` (exclusive)
 * into the layout the row says (nothing at `busy` 0), and moves `folded` to `toHeight`. Every
 * address of those rows without a chunk row below `folded` (one that has is busy, and keeps its
 * rows) and with at most `busy` entries in those rows and its bucket's records (its newer chunk
 * rows, of blocks an undo may still take, are not counted: a crossing is never undone, so an
 * address's place depends on the folded chain only) gets those rows' entries as records
 * prepended to its bucket (they are newer than every record there, which are the blocks below
 * `folded`); one with more keeps its rows, and its
 * records, if any, move into chunk rows of CHUNK_ENTRIES below its others (it crossed). A row
 * that starts below `toHeight` and ends at or above it (a bulk-merged chunk: the bulk finish folds
 * to its tip, so only a made-up index has one) keeps its address out of this fold. Into empty
 * buckets a fold of the whole chain (the bulk finish's, the switch's: `chooseBase`) chooses `base`
 * (`opts.base`, else `buildBase` of the records: ~47 a bucket; nothing to fold leaves it); the
 * indexer's folds keep the row's. When the moved rows are most of `history`, the table is written
 * anew with what stays (a DELETE would leave their space: the size the buckets are for), unless
 * `rewrite` is false: a reader's snapshot taken before the fold's commit would find the new table
 * empty, so the indexer's folds, beside a serving API, delete (the space goes to later rows). Runs in
 * the caller's transaction, which must hold the chain (`chain_tip` locked: no block applied or
 * undone meanwhile).
 */
export async function foldHistory(
  trx: Trx,
  toHeight: number,
  opts: { base?: number; chooseBase?: boolean; rewrite?: boolean } = {},
): Promise<BucketFold> {
  const layout = await readHistoryLayout(trx);
  const ms: Record<string, number> = {};
  if (layout.busy === 0 || toHeight <= layout.folded)
    return { base: layout.base, busy: layout.busy, records: 0, keys: 0, busyKeys: 0, crossed: 0, rewritten: false, ms };
  const busy = layout.busy;
  const from = String(firstTxNum(layout.folded));
  const to = String(firstTxNum(toHeight));
  let t0 = performance.now();
  const lap = (name: string) => {
    const now = performance.now();
    ms[name] = Math.round(now - t0);
    t0 = now;
  };
  // The records' sort (every folded entry, by bucket) in memory rather than in files, as the bulk
  // finish's index builds sort (maintenance_work_mem, 512 MB).
  await sql`SET LOCAL work_mem = '512MB'`.execute(trx);
  await sql`DROP TABLE IF EXISTS bw_fold`.execute(trx);
  // n: the entries to fold (rows starting below `to`). The newer rows are not counted: their
  // blocks may still be undone, and a crossing stays (the place is the folded chain's function).
  const last = `CASE WHEN length(rest) = 0 THEN first_tx_num ELSE ${SQL_HISTORY.txNumAt('rest', 'length(rest) / 8 - 1')} END`;
  await sql`CREATE TEMP TABLE bw_fold ON COMMIT DROP AS
    SELECT addr_key AS k, coalesce(sum(1 + length(rest) / 8) FILTER (WHERE first_tx_num < ${to}::int8), 0)::int8 AS n,
           count(*) FILTER (WHERE first_tx_num < ${to}::int8)::int8 AS rows,
           coalesce(bool_or(first_tx_num < ${to}::int8 AND ${sql.raw(last)} >= ${to}::int8), false) AS straddles,
           0::int8 AS old, false AS stay
      FROM history WHERE first_tx_num >= ${from}::int8 GROUP BY addr_key
    HAVING count(*) FILTER (WHERE first_tx_num < ${to}::int8) > 0`.execute(trx);
  // An address with a chunk row below `from` is busy already.
  if (layout.folded > 0)
    await sql`DELETE FROM bw_fold f WHERE EXISTS (SELECT 1 FROM history h WHERE h.addr_key = f.k AND h.first_tx_num < ${from}::int8)`.execute(
      trx,
    );
  await sql`ANALYZE bw_fold`.execute(trx);
  lap('keys');
  const empty = !(await sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM history_buckets) AS any`.execute(trx)).rows[0]!.any;
  // An address's records in its bucket, counted where they could take it past busy (a bucket
  // with few records enough leaves every address of it under busy, whatever its share).
  if (!empty)
    await sql`UPDATE bw_fold f SET old = coalesce((SELECT CASE WHEN length(hb.log) / ${RECORD_BYTES} + f.n <= ${busy} THEN 0
                                                            ELSE ${sql.raw(SQL_BUCKETS.count('hb.log', SQL_BUCKETS.key8('f.k')))} END
                 FROM history_bucket_params hp JOIN history_buckets hb ON hp.id = 1 AND hb.bucket = ${sql.raw(SQL_BUCKETS.bucketOf('f.k', 'hp'))}), 0)`.execute(
      trx,
    );
  await sql`UPDATE bw_fold SET stay = true WHERE n + old <= ${busy} AND NOT straddles`.execute(trx);
  lap('counts');
  const t = await sql<{ stay: string; keys: string; busy_keys: string; stay_rows: string }>`
    SELECT coalesce(sum(n) FILTER (WHERE stay), 0)::text AS stay, count(*)::text AS keys,
           count(*) FILTER (WHERE n + old > ${busy})::text AS busy_keys,
           coalesce(sum(rows) FILTER (WHERE stay), 0)::text AS stay_rows FROM bw_fold`.execute(trx);
  const stay = Number(t.rows[0]!.stay);
  let base = layout.base;
  // (into empty buckets with nothing to fold the base stays: a later fold fills them)
  if (empty && (opts.base !== undefined || (opts.chooseBase === true && stay > 0))) {
    base = opts.base ?? buildBase(stay);
    await sql`UPDATE history_bucket_params SET base = ${base}, ext = 0, split = 0 WHERE id = 1`.execute(trx);
  }
  const crossed = empty ? 0 : await moveCrossedKeys(trx, { ...layout, base });
  lap('crossed');
  // Each entry of an address that stays as its record (the key's bytes 4..11, then the tx field),
  // in canonical order (tx field, then key bytes, both descending: the tx_num orders as the tx
  // field), before the bucket's log. Per chunk row its bucket and key bytes; per entry its tx_num
  // from the row's bytes (`txNumAt`: no text cast, no copy of the row's entries per entry).
  const restEntry = SQL_HISTORY.txNumAt('c.r', 'g.i - 1');
  await sql`
    INSERT INTO history_buckets (bucket, log)
    SELECT bucket, string_agg(k8 || ${sql.raw(SQL_BUCKETS.txField('n'))}, ''::bytea ORDER BY n DESC, k8 DESC)
      FROM (SELECT c.bucket, c.k8, CASE WHEN g.i = 0 THEN c.f ELSE ${sql.raw(restEntry)} END AS n
              FROM (SELECT ${sql.raw(SQL_BUCKETS.bucketOf('h.addr_key', 'hp'))} AS bucket, ${sql.raw(SQL_BUCKETS.key8('h.addr_key'))} AS k8,
                           h.first_tx_num AS f, h.rest AS r
                      FROM history_bucket_params hp
                      JOIN bw_fold f ON hp.id = 1 AND f.stay
                      JOIN history h ON h.addr_key = f.k AND h.first_tx_num >= ${from}::int8 AND h.first_tx_num < ${to}::int8
                    OFFSET 0) c
              CROSS JOIN LATERAL generate_series(0, length(c.r) / 8) AS g(i)) r
     GROUP BY bucket
    ON CONFLICT (bucket) DO UPDATE SET log = excluded.log || history_buckets.log`.execute(trx);
  lap('records');
  // (history's rows counted only where it may be written anew: a scan of the whole table)
  const rewritten =
    opts.rewrite !== false &&
    Number(t.rows[0]!.stay_rows) * 2 > Number((await sql<{ n: string }>`SELECT count(*)::text AS n FROM history`.execute(trx)).rows[0]!.n);
  if (rewritten) {
    // (the new table has no chain change trigger: the NOTIFY says what it would, src/db/chain-changes.ts)
    await sql`CREATE TABLE bw_history_left (addr_key, first_tx_num, rest) AS
      SELECT h.addr_key, h.first_tx_num, h.rest FROM history h
       WHERE h.first_tx_num >= ${to}::int8 OR NOT EXISTS (SELECT 1 FROM bw_fold f WHERE f.k = h.addr_key AND f.stay)
       ORDER BY h.addr_key, h.first_tx_num`.execute(trx);
    await sql`ALTER TABLE bw_history_left ALTER COLUMN addr_key SET NOT NULL, ALTER COLUMN first_tx_num SET NOT NULL,
      ALTER COLUMN rest SET NOT NULL`.execute(trx);
    await sql`DROP TABLE history`.execute(trx);
    await sql`ALTER TABLE bw_history_left RENAME TO history`.execute(trx);
    for (const s of chainIndexSql('create', ['history'])) await sql.raw(s).execute(trx);
    await sql.raw(`NOTIFY ${CHAIN_CHANNEL}`).execute(trx);
  } else {
    await sql`DELETE FROM history h USING bw_fold f
               WHERE f.k = h.addr_key AND f.stay AND h.first_tx_num >= ${from}::int8 AND h.first_tx_num < ${to}::int8`.execute(trx);
  }
  lap(rewritten ? 'history rewritten' : 'history deleted');
  const r = await sql<{ records: string }>`
    UPDATE history_bucket_params SET records = records + ${stay}, folded = ${toHeight} WHERE id = 1 RETURNING records::text`.execute(trx);
  return {
    base,
    busy,
    records: Number(r.rows[0]!.records),
    keys: Number(t.rows[0]!.keys),
    busyKeys: Number(t.rows[0]!.busy_keys),
    crossed,
    rewritten,
    ms,
  };
}

/**
 * The addresses of `bw_fold` with records in their bucket that pass `busy` with the folded rows:
 * their records leave the log and become chunk rows (CHUNK_ENTRIES each, below the folded rows,
 * which all start at or above the fold's `from`). Two addresses of the fold built to share an
 * identity both get its records once each (they cannot be told apart). Returns how many
 * addresses crossed.
 */
async function moveCrossedKeys(trx: Trx, layout: { base: number; ext: number; split: number; busy: number }): Promise<number> {
  const keys = (
    await sql<{ k: string }>`SELECT k::text AS k FROM bw_fold WHERE old > 0 AND n + old > ${layout.busy} ORDER BY k`.execute(trx)
  ).rows.map((r) => r.k);
  if (keys.length === 0) return 0;
  const keyOf = (k: string) => Buffer.from(uuidHex(k), 'hex');
  const buckets = [...new Set(keys.map((k) => bucketOf(keyOf(k), layout)))].sort((a, b) => a - b);
  const old = await sql<{ bucket: number; log: Buffer }>`
    SELECT bucket, log FROM history_buckets WHERE bucket = ANY(${int4Array(buckets)}::int4[]) ORDER BY bucket FOR UPDATE`.execute(trx);
  const logOf = new Map(old.rows.map((x) => [x.bucket, x.log]));
  const left = new Map<number, Buffer>();
  const rows: ReturnType<typeof historyChunks> = [];
  let moved = 0;
  for (const k of keys) {
    const kb = keyOf(k);
    const b = bucketOf(kb, layout);
    // (from the log as it was: a second key of the same identity gets the same records; two such
    // keys in one transaction left the same record twice: once in the chunks)
    const nums = [...new Set(keyTxNums(logOf.get(b)!, kb))].reverse();
    rows.push(...historyChunks(new Map([[k, nums]])));
    const before = left.get(b) ?? logOf.get(b)!;
    const after = withoutKey(before, kb);
    moved += (before.length - after.length) / RECORD_BYTES;
    left.set(b, after);
  }
  await sql`
    WITH l AS (SELECT * FROM unnest(${int4Array([...left.keys()])}::int4[], ${byteaArray([...left.values()])}::bytea[]) AS l(bucket, log)),
         up AS (UPDATE history_buckets b SET log = l.log FROM l WHERE b.bucket = l.bucket AND length(l.log) > 0),
         del AS (DELETE FROM history_buckets b USING l WHERE b.bucket = l.bucket AND length(l.log) = 0)
    UPDATE history_bucket_params SET records = records - ${moved} WHERE id = 1`.execute(trx);
  // (an INSERT, not insertHistoryChunks's COPY: the bulk finish's transaction is on its own client)
  await sql`INSERT INTO history (addr_key, first_tx_num, rest)
    SELECT * FROM unnest(${uuidArray(rows.map((c) => c.key))}::uuid[], ${rows.map((c) => String(c.first))}::int8[],
                         ${byteaArray(rows.map((c) => restOf(c.entries)))}::bytea[])`.execute(trx);
  return keys.length;
}

/** Blocks the indexer leaves unfolded below its tip (a reorg this deep undoes chunk rows only). */
export const FOLD_LAG = 6;
/** Blocks gathered before an idle indexer folds them (a day of mainnet's). */
export const FOLD_BLOCKS = 144;
/** The most blocks one fold takes (after a long catch-up block by block the rest follow, a slice after each block). */
const FOLD_MOST = 4 * FOLD_BLOCKS;

/**
 * The indexer's fold, when it is due: with history buckets on and at least `every` blocks below
 * the newest `lag` not folded yet, folds them (`foldHistory` up to `tip − lag + 1`, at most `most`
 * blocks) in one transaction that locks the chain (a block arriving meanwhile waits for it). Null
 * when not due. `guard` proves the writer lock first, as every write transaction of the writer does.
 */
export async function foldHistoryWhenDue(
  db: Kysely<Database>,
  opts: { guard?: (trx: Trx) => Promise<void>; lag?: number; every?: number; most?: number } = {},
): Promise<BucketFold | null> {
  const lag = opts.lag ?? FOLD_LAG;
  const every = opts.every ?? FOLD_BLOCKS;
  const most = opts.most ?? FOLD_MOST;
  const due = (tip: number, p: { busy: number; folded: number }) => p.busy > 0 && tip - lag + 1 - p.folded >= every;
  // (read without a lock first: an idle indexer asks after every applied block)
  const peek = await sql<{ height: number; busy: number; folded: number }>`
    SELECT t.height, p.busy, p.folded FROM chain_tip t, history_bucket_params p WHERE t.id = 1 AND p.id = 1`.execute(db);
  const now = peek.rows[0];
  if (!now || !due(now.height, now)) return null;
  return db.transaction().execute(async (trx) => {
    if (opts.guard) await opts.guard(trx);
    const tip = (await lockTip(trx)).height;
    const layout = await readHistoryLayout(trx);
    if (!due(tip, layout)) return null;
    return foldHistory(trx, Math.min(tip - lag + 1, layout.folded + most), { rewrite: false });
  });
}
