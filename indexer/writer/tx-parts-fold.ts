/**
 * The transaction parts' fold and its undo (docs/lean-layout.md "Transaction parts: the plan",
 * "The write side"). A block applied writes one `txs` row per transaction (chain-rows.ts); the
 * history fold (history-build.ts `foldHistory`, in its transaction, for the same blocks) moves the
 * rows of the blocks it folds into parts of 64 (`tx_parts`, src/db/tx-parts.ts) and their
 * txid → tx_num records into the txid buckets (src/db/txid-buckets.ts), so that a folded
 * transaction costs its content, not a row and two B-tree entries. An undo of a block below the
 * fold's height (a reorg deeper than the blocks kept unfolded) moves the parts of the blocks from
 * it up back into rows first, and cuts their records off the front of their buckets: the undo
 * then works on rows, as for any block. The readers read both places (src/db/tx-reads.ts). The
 * bulk finish folds its loaded rows the same way (bulk.ts), before the history fold. Both moves
 * are SQL, one pass each: the rows never travel to JavaScript.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import type { Database } from '../../src/db/schema.js';
import { FatalError } from '../../src/errors.js';
import { partOf, SQL_PARTS } from '../../src/db/tx-parts.js';
import { SQL_TXIDS, TXID_RECORD_BYTES } from '../../src/db/txid-buckets.js';
import { firstTxNum, txNumHeight } from '../../src/db/tx-num.js';
import { buildBase, type BucketParams } from '../../src/db/history-buckets.js';
import { recordLoadedTxids } from './txid-records.js';
import type { Trx } from './chain-rows.js';

/** What a fold of the parts did. */
export type PartsFold = { txs: number; parts: number; records: number };

/**
 * With `txid_bucket_params.fold` on (TX_PARTS; else nothing), moves the `txs` rows below the block `toHeight` into parts and their txids into the txid
 * buckets, in the caller's transaction (the history fold's, which holds its params row: no undo
 * meanwhile, and no block below `toHeight` is applied beside it; or the bulk finish's, which
 * holds the chain). Every row of `txs` is newer
 * than every part (each fold takes every row below its height, and an undo moves the parts from
 * its block up back into rows), so each bucket's new records go in front of its log. A block's
 * rows are whole (positions from 0 without a gap), so each part is: a gap is a corrupt index.
 * When no row is left (a fold of the whole chain: the bulk finish's, the switch's), `txs` is
 * truncated rather than left as dead rows for VACUUM.
 */
export async function foldTxParts(trx: Kysely<Database>, toHeight: number, opts: { chooseBase?: boolean } = {}): Promise<PartsFold> {
  const hi = firstTxNum(toHeight);
  const first = await sql<{ n: string | null }>`SELECT min(tx_num)::text AS n FROM txs`.execute(trx);
  if (first.rows[0]?.n == null || BigInt(first.rows[0].n) >= hi) return { txs: 0, parts: 0, records: 0 };
  const fromHeight = txNumHeight(BigInt(first.rows[0].n));
  const lo = firstTxNum(fromHeight).toString();
  // Into empty buckets (the first fold: the bulk finish's, most often), their count from the
  // records, as the history buckets' (~47 a bucket); they do not grow after it.
  const empty = await sql<{ fold: boolean; n: string | null }>`
    SELECT p.fold, CASE WHEN p.fold AND p.records = 0 THEN (SELECT count(*) FROM txs WHERE tx_num < ${hi.toString()}::int8)::text END AS n
      FROM txid_bucket_params p WHERE p.id = 1 FOR UPDATE`.execute(trx);
  if (empty.rows[0]?.fold !== true) return { txs: 0, parts: 0, records: 0 };
  if (empty.rows[0].n != null && opts.chooseBase !== false) await setBase(trx, Number(empty.rows[0].n));
  const records = await prependRecords(
    trx,
    `SELECT t.txid, t.tx_num FROM txs t WHERE t.tx_num >= ${lo}::int8 AND t.tx_num < ${hi.toString()}::int8`,
  );
  const w = await sql<{ txs: string; parts: string; gaps: string }>`${sql.raw(partsFromRows(lo, hi.toString()))}`.execute(trx);
  const txs = Number(w.rows[0]?.txs ?? 0);
  const parts = Number(w.rows[0]?.parts ?? 0);
  if (Number(w.rows[0]?.gaps ?? 0) > 0)
    throw new FatalError('ERR_INDEX_CORRUPT', `txs lacks a transaction of blocks ${fromHeight}..${toHeight} (a part's slots run from 0)`);
  if (records !== txs)
    throw new FatalError('ERR_INDEX_CORRUPT', `the fold of blocks ${fromHeight}..${toHeight} found ${txs} rows, ${records} txids`);
  const rest = await sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM txs WHERE tx_num >= ${hi.toString()}::int8) AS any`.execute(trx);
  if (rest.rows[0]!.any) await sql`DELETE FROM txs WHERE tx_num < ${hi.toString()}::int8`.execute(trx);
  else await sql`TRUNCATE txs`.execute(trx);
  return { txs, parts, records };
}

/** The buckets' count for `records` records (empty buckets: their first fold). */
async function setBase(trx: Kysely<Database>, records: number): Promise<void> {
  await sql`UPDATE txid_bucket_params SET base = ${buildBase(records)}, ext = 0, split = 0 WHERE id = 1`.execute(trx);
}

/**
 * Prepends the records of the transactions `rows` gives (SQL text of a FROM item with the
 * columns txid, tx_num; all newer than every record in the buckets) to their buckets and counts
 * them in the params row; returns how many.
 */
async function prependRecords(trx: Kysely<Database>, rows: string): Promise<number> {
  const r = await sql<{ n: string }>`
    WITH r AS MATERIALIZED (
      SELECT ${sql.raw(SQL_TXIDS.bucketOf('t.txid', 'p'))} AS bucket, t.tx_num, ${sql.raw(SQL_TXIDS.record('t.txid', 't.tx_num'))} AS rec
        FROM (${sql.raw(rows)}) t CROSS JOIN txid_bucket_params p WHERE p.id = 1),
    ins AS (INSERT INTO txid_buckets (bucket, log)
      SELECT bucket, string_agg(rec, ''::bytea ORDER BY tx_num DESC) FROM r GROUP BY bucket
      ON CONFLICT (bucket) DO UPDATE SET log = excluded.log || txid_buckets.log)
    UPDATE txid_bucket_params SET records = records + (SELECT count(*) FROM r) WHERE id = 1 RETURNING (SELECT count(*) FROM r)::text AS n`.execute(
    trx,
  );
  return Number(r.rows[0]?.n ?? 0);
}

/**
 * The bulk finish's fold, with transaction parts on: the `txs` rows below `toHeight` (blocks the
 * per-block path applied before the bulk sync began) as `foldTxParts` folds them, then the
 * records of the parts the batches wrote (the blocks from `loadedFrom` up: the newest) into their
 * buckets, built in JavaScript (txid-records.ts: a counting sort by bucket, under `memoryBytes`).
 * Into empty buckets, the count is chosen from both. Run again after it committed (a second
 * finish), it finds nothing to do: every part's transactions are counted in the params row. In
 * the caller's transaction on `client` (`trx` runs on it), which holds the chain.
 */
export async function foldLoadedTxParts(
  trx: Kysely<Database>,
  client: pg.ClientBase,
  loadedFrom: number,
  toHeight: number,
  opts: { memoryBytes?: number } = {},
): Promise<PartsFold> {
  const from = partOf(firstTxNum(loadedFrom));
  // (one scan of the parts: the lengths come from their TOAST pointers, no value is read)
  const state = await sql<{ records: string; unrecorded: string; loaded: string; loadedParts: string; rows: string }>`
    SELECT p.records::text AS records, (${sql.raw(UNRECORDED('q.held', 'p'))})::text AS unrecorded, q.loaded::text AS loaded,
           q.parts::text AS "loadedParts", (SELECT count(*) FROM txs WHERE tx_num < ${firstTxNum(toHeight).toString()}::int8)::text AS rows
      FROM txid_bucket_params p,
           (SELECT ${sql.raw(HELD('t'))} AS held,
                   coalesce(sum(${sql.raw(SQL_PARTS.count('t'))}) FILTER (WHERE t.part >= ${from.toString()}::int8), 0) AS loaded,
                   count(*) FILTER (WHERE t.part >= ${from.toString()}::int8) AS parts FROM tx_parts t) q
     WHERE p.id = 1 FOR UPDATE OF p`.execute(trx);
  const s = state.rows[0]!;
  const unrecorded = Number(s.unrecorded);
  if (Number(s.records) === 0 && Number(s.rows) + unrecorded > 0) await setBase(trx, Number(s.rows) + unrecorded);
  const folded = await foldTxParts(trx, toHeight, { chooseBase: false });
  if (unrecorded === 0) return folded;
  if (unrecorded !== Number(s.loaded))
    throw new FatalError(
      'ERR_INDEX_CORRUPT',
      `${unrecorded} transactions in parts have no txid record, ${s.loaded} were loaded from block ${loadedFrom}`,
    );
  const params = (await sql<BucketParams>`SELECT base, ext, split FROM txid_bucket_params WHERE id = 1`.execute(trx)).rows[0]!;
  const records = await recordLoadedTxids(client, from, unrecorded, params, opts);
  return { txs: folded.txs + records, parts: folded.parts + Number(s.loadedParts), records: folded.records + records };
}

/** The transactions the parts `t` (a `tx_parts` alias, aggregated) hold (int8). */
const HELD = (t: string) => `coalesce(sum(${SQL_PARTS.count(t)}), 0)`;
/** Of `held` (int8) transactions in parts, those without a txid record under the params row `p`. */
const UNRECORDED = (held: string, p: string) => `(${held}) - ${p}.records`;

/**
 * How many transactions the parts hold without a txid record in the buckets: those a bulk
 * sync's batches wrote that its finish has not recorded yet (`foldLoadedTxParts` records them),
 * also when TX_PARTS went off since. 0 outside a bulk sync.
 */
export async function unrecordedTxs(db: Kysely<Database>): Promise<number> {
  const r = await sql<{ n: string }>`
    SELECT (${sql.raw(UNRECORDED(`(SELECT ${HELD('t')} FROM tx_parts t)`, 'p'))})::text AS n FROM txid_bucket_params p WHERE p.id = 1`.execute(
    db,
  );
  return Number(r.rows[0]?.n ?? 0);
}

/**
 * The statement folding the `txs` rows with tx_num in [lo, hi) (whole blocks) into parts: one
 * pass, sorted by part then tx_num, each part's columns as `encodePart` and `encodeSeen` give
 * them (src/db/tx-parts.ts `SQL_PARTS.ofRows`; the tests hold the two to each other). Returns the
 * transactions and parts written, and the parts whose slots do not run from 0 without a gap.
 */
function partsFromRows(lo: string, hi: string): string {
  return `WITH p AS (${SQL_PARTS.ofRows(
    `SELECT t.tx_num, t.txid, t.outs, t.ins, (extract(epoch FROM t.first_seen) * 1000000)::int8 AS seen_us
       FROM txs t WHERE t.tx_num >= ${lo}::int8 AND t.tx_num < ${hi}::int8`,
  )}),
    w AS (INSERT INTO tx_parts (part, txids, ends, outs, ins, seen) SELECT part, txids, ends, outs, ins, seen FROM p)
    SELECT coalesce(sum(n), 0)::text AS txs, count(*)::text AS parts, count(*) FILTER (WHERE top + 1 <> n)::text AS gaps FROM p`;
}

/**
 * TX_PARTS on the index (src/config.ts): whether the history fold moves transactions into parts
 * from now on. `true` or `false` switch it either way at any time: parts already written stay and
 * are read (and undone) as before, and a fold switched on takes every row below its height (on an
 * index with many blocks, one long transaction). `'auto'` (the default) switches it on for an
 * index without blocks, transactions or parts only, and leaves any other as it is. Returns
 * whether it changed.
 */
export async function applyTxParts(db: Kysely<Database>, setting: boolean | 'auto'): Promise<boolean> {
  const r =
    setting === 'auto'
      ? await sql`UPDATE txid_bucket_params SET fold = true
           WHERE id = 1 AND NOT fold AND (SELECT height FROM chain_tip WHERE id = 1) < 0
             AND NOT EXISTS (SELECT 1 FROM txs) AND NOT EXISTS (SELECT 1 FROM tx_parts)`.execute(db)
      : await sql`UPDATE txid_bucket_params SET fold = ${setting} WHERE id = 1 AND fold <> ${setting}`.execute(db);
  return Number(r.numAffectedRows ?? 0) > 0;
}

/**
 * Moves the parts of the blocks from the tx_num `lo` up (a block's first: a part never spans two
 * blocks) back into `txs` rows and cuts their txids' records off the front of their buckets (they
 * are the newest: each log becomes byte for byte what it was before the fold took them), in the
 * caller's transaction (the undo's, which holds the history params row: no fold meanwhile). The
 * rows' `spent_group` is null (always a correct value: src/db/spent-groups.ts). Returns the
 * transactions moved back (0 when the parts hold none of those blocks).
 */
export async function unfoldTxParts(trx: Trx, lo: bigint): Promise<number> {
  const from = `${partOf(lo)}`;
  const slot = 'bw_s.s';
  const moved = await sql<{ n: string; cut: string }>`
    WITH m AS MATERIALIZED (
      INSERT INTO txs (tx_num, txid, outs, ins, first_seen, spent_group)
      SELECT ${sql.raw(SQL_PARTS.txNumAt('bw_tp', slot))}, ${sql.raw(SQL_PARTS.txidAt('bw_tp', slot))}, ${sql.raw(SQL_PARTS.outsAt('bw_tp', slot))},
             ${sql.raw(SQL_PARTS.insAt('bw_tp', slot))}, ${sql.raw(SQL_PARTS.seenAt('bw_tp', slot))}, NULL
        FROM tx_parts bw_tp CROSS JOIN LATERAL generate_series(0, ${sql.raw(SQL_PARTS.count('bw_tp'))} - 1) AS bw_s(s)
       WHERE bw_tp.part >= ${from}::int8
      RETURNING txid),
    b AS MATERIALIZED (
      SELECT bk.bucket, length(bk.log) AS len, bw_txid_cut(bk.log, bw_hist_tx(${lo.toString()}::int8)) AS cut
        FROM txid_buckets bk
       WHERE bk.bucket IN (SELECT DISTINCT ${sql.raw(SQL_TXIDS.bucketOf('m.txid', 'p'))} FROM m CROSS JOIN txid_bucket_params p WHERE p.id = 1)),
    up AS (UPDATE txid_buckets bk SET log = substring(bk.log FROM b.cut + 1) FROM b WHERE bk.bucket = b.bucket AND b.cut > 0 AND b.cut < b.len),
    del AS (DELETE FROM txid_buckets bk USING b WHERE bk.bucket = b.bucket AND b.cut > 0 AND b.cut = b.len),
    parts AS (DELETE FROM tx_parts WHERE part >= ${from}::int8)
    UPDATE txid_bucket_params SET records = records - (SELECT coalesce(sum(cut), 0) / ${TXID_RECORD_BYTES} FROM b) WHERE id = 1
    RETURNING (SELECT count(*) FROM m)::text AS n, (SELECT coalesce(sum(cut), 0) / ${TXID_RECORD_BYTES} FROM b)::text AS cut`.execute(trx);
  const n = Number(moved.rows[0]?.n ?? 0);
  const cut = Number(moved.rows[0]?.cut ?? 0);
  if (n !== cut) throw new FatalError('ERR_INDEX_CORRUPT', `the undo moved ${n} transactions back from parts and cut ${cut} txid records`);
  return n;
}
