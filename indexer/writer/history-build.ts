/**
 * The fold: chunk rows written in bulk moved into the layout `busy` says (docs/lean-layout.md
 * "Building the history buckets: the plan"). What the bulk finish runs on an index that keeps
 * history in buckets (the batches write every address's entries as chunk rows), and what
 * `buildHistoryBuckets` (history-switch.ts) runs to move an index from `busy` 0 to buckets. The
 * per-block writer then follows on (history-rows.ts).
 * @module
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type pg from 'pg';
import type { Database } from '../../src/db/schema.js';
import { uuidHex } from '../../src/db/address-key.js';
import {
  type BucketParams,
  bucketOf,
  buildBase,
  keyTxNums,
  RECORD_BYTES,
  RecordSorter,
  sortRecords,
  SQL_BUCKETS,
  withoutKey,
  writeRecord,
} from '../../src/db/history-buckets.js';
import { firstTxNum } from '../../src/db/tx-num.js';
import { CHUNK_ENTRIES, ENTRY_BYTES, historyChunks, readEntry, restOf, SQL_HISTORY } from '../../src/db/history-entries.js';
import { chainIndexSql } from '../../src/db/chain-indexes.js';
import { CHAIN_CHANNEL } from '../../src/db/chain-changes.js';
import { byteaArray, int4Array, uuidArray } from '../../src/db/pg-array.js';
import { lockTip, readTip, type Trx } from './chain-rows.js';
import { withClientOf } from '../../src/db/connect.js';
import { copyIn, copyOut, CopyRowReader, BinaryCopy } from './copy-binary.js';
import { copyOutInto } from './copy-out.js';
import { readHistoryLayout, type HistoryLayout } from './history-rows.js';
import { foldTxParts } from './tx-parts-fold.js';
import { moveRecentHistory } from './history-recent.js';

/** Milliseconds by step: `lap(name)` records the time since the previous lap (or the start). */
function laps(): { ms: Record<string, number>; lap: (name: string) => void } {
  const ms: Record<string, number> = {};
  let t0 = performance.now();
  return {
    ms,
    lap: (name) => {
      const now = performance.now();
      ms[name] = Math.round(now - t0);
      t0 = now;
    },
  };
}

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

/** How a fold chooses the base and treats `history`. */
export type FoldOptions = {
  base?: number;
  chooseBase?: boolean;
  rewrite?: boolean;
  /** False: fold a whole chain by the general statements too (tests compare the two). */
  stream?: boolean;
  /** The bytes of `history` a whole-chain fold reads per statement (STREAM_SLICE_BYTES; tests make it small to cut many slices). */
  sliceBytes?: number;
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
 * the caller's transaction, which holds the params row (`readHistoryLayout` locks it: no undo
 * meanwhile) and in which no block below `toHeight` is applied: the indexer's folds stop below
 * `tip − lag` (blocks are applied at the tip, beside the fold), the bulk finish and the switch
 * hold the chain. The rows below `toHeight` that wait in `history_recent` (a live block's:
 * history-recent.ts) are moved into `history` first. A whole chain into empty buckets (the bulk finish's, the switch's) is
 * streamed through JavaScript instead (`foldWholeChain`: the same rows, a fraction of the time).
 */
export async function foldHistory(trx: Trx, toHeight: number, opts: FoldOptions = {}): Promise<BucketFold> {
  const layout = await readHistoryLayout(trx);
  const { ms, lap } = laps();
  // The transactions below the same height move into parts (after a bulk finish, which folded the
  // history as it read it, every loaded block's: its own fold finds nothing left to fold).
  if (layout.busy > 0 && (await foldTxParts(trx, toHeight)).txs > 0) lap('transaction parts');
  if (layout.busy === 0 || toHeight <= layout.folded)
    return { base: layout.base, busy: layout.busy, records: 0, keys: 0, busyKeys: 0, crossed: 0, rewritten: false, ms };
  const busy = layout.busy;
  const from = String(firstTxNum(layout.folded));
  const to = String(firstTxNum(toHeight));
  // The rows it folds that wait in history_recent first (history-recent.ts: a live block's).
  await moveRecentHistory(trx, firstTxNum(toHeight));
  // A whole chain: streamed, reading every row (so under the chain lock: no block applied meanwhile).
  if (opts.stream !== false && layout.folded === 0 && toHeight > (await readTip(trx)).height && toHeight > (await lockTip(trx)).height) {
    const empty = !(await sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM history_buckets) AS any`.execute(trx)).rows[0]!.any;
    if (empty) return foldWholeChain(trx, layout, toHeight, opts);
  }
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
    await replaceHistory(
      trx,
      sql`SELECT h.addr_key, h.first_tx_num, h.rest FROM history h
           WHERE h.first_tx_num >= ${to}::int8 OR NOT EXISTS (SELECT 1 FROM bw_fold f WHERE f.k = h.addr_key AND f.stay)`,
    );
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
 * `history` written anew with the rows `rows` selects (what stays of it), in key order, its key
 * built: a fold's DELETE of most rows would leave their space in the table.
 */
async function replaceHistory(trx: Trx, rows: RawBuilder<unknown>): Promise<void> {
  // (the new table has no chain change trigger: the NOTIFY says what it would, src/db/chain-changes.ts)
  await sql`CREATE TABLE bw_history_left (addr_key, first_tx_num, rest) AS
    SELECT * FROM (${rows}) r ORDER BY addr_key, first_tx_num`.execute(trx);
  await sql`ALTER TABLE bw_history_left ALTER COLUMN addr_key SET NOT NULL, ALTER COLUMN first_tx_num SET NOT NULL,
    ALTER COLUMN rest SET NOT NULL`.execute(trx);
  await sql`DROP TABLE history`.execute(trx);
  await sql`ALTER TABLE bw_history_left RENAME TO history`.execute(trx);
  for (const s of chainIndexSql('create', ['history'])) await sql.raw(s).execute(trx);
  await sql.raw(`NOTIFY ${CHAIN_CHANNEL}`).execute(trx);
}

/**
 * A condition on `addr_key` for a slice of the key space: the keys whose top `bits` bits are `s`
 * (all of them at 0 bits).
 */
function keySlice(s: number, bits: number): string {
  const bound = (v: number) => `'${(v * 2 ** (32 - bits)).toString(16).padStart(8, '0')}-0000-0000-0000-000000000000'::uuid`;
  const where = [s > 0 ? `addr_key >= ${bound(s)}` : '', s + 1 < 2 ** bits ? `addr_key < ${bound(s + 1)}` : ''].filter((w) => w);
  return where.length > 0 ? where.join(' AND ') : 'true';
}

/** `history`'s addresses, rows and entries, and those of the addresses that would stay in buckets at `busy` (`historyCounts`). */
type HistoryCounts = { keys: string; busy_keys: string; stay: string; stay_rows: string; rows: string; bytes: string };
/** The counts of the addresses of `history` the condition `where` on `addr_key` keeps. */
const historyCounts = (busy: number, where = 'true') => `
  SELECT count(*)::text AS keys, count(*) FILTER (WHERE n > ${busy})::text AS busy_keys,
         coalesce(sum(n) FILTER (WHERE n <= ${busy}), 0)::text AS stay,
         coalesce(sum(rows) FILTER (WHERE n <= ${busy}), 0)::text AS stay_rows,
         coalesce(sum(rows), 0)::text AS rows, pg_table_size('history')::text AS bytes
    FROM (SELECT sum(1 + length(rest) / ${ENTRY_BYTES}) AS n, count(*) AS rows FROM history WHERE ${where} GROUP BY addr_key) a`;

/** The size of `history` below which the bulk finish's fold counts every address for the base (above, a sample: `sampleStayingEntries`). */
const SAMPLE_BYTES = 16 * 2 ** 20;

/** The deepest sample `sampleStayingEntries` takes: the first 2^-8 of the key space. */
const MAX_SAMPLE_SHIFT = 8;

/**
 * The entries of `history`'s addresses with at most `busy` entries (those that stay in buckets),
 * counted in the addresses of slice `slice` of `2^bits` equal slices of the key space (all of
 * them at 0 bits).
 */
export async function countStayingEntries(client: pg.ClientBase, busy: number, slice = 0, bits = 0): Promise<number> {
  return Number((await client.query<HistoryCounts>(historyCounts(busy, keySlice(slice, bits)))).rows[0]!.stay);
}

/**
 * The entries of `history`'s addresses that stay in buckets at `busy`, estimated from the first
 * 2^-shift of the key space scaled by 2^shift (the keys are hashes: spread evenly): grouping
 * every address of the bulk finish's unsorted rows by key took 19 of the 32 s of its history
 * step on the 2,000-block corpus, the sample a fraction of it. `shift` grows with the table, from
 * 0 (an exact count) below `sampleBytes` to MAX_SAMPLE_SHIFT.
 */
export async function sampleStayingEntries(
  client: pg.ClientBase,
  busy: number,
  sampleBytes = SAMPLE_BYTES,
): Promise<{ estimate: number; shift: number }> {
  const bytes = Number((await client.query<{ b: string }>(`SELECT pg_table_size('history')::text AS b`)).rows[0]!.b);
  const shift = Math.min(MAX_SAMPLE_SHIFT, Math.max(0, Math.floor(Math.log2(bytes / sampleBytes))));
  return { estimate: (await countStayingEntries(client, busy, 0, shift)) * 2 ** shift, shift };
}

/** Bytes of COPY data the bulk finish's fold holds before writing it. */
const LOADED_FLUSH_BYTES = 8 * 2 ** 20;

/**
 * The bulk finish's history step for a fresh index with buckets on (`busy` > 0, empty buckets,
 * nothing folded yet: the initial sync), in place of its merge: the loaded chunk rows (the
 * batches', with no key) are read once, sorted by key, on a connection `openReader` opens (its
 * COPY streams while this one writes), and folded as they come (`FoldStream`): the addresses with
 * at most `busy` entries into their buckets, the others' entries cut into chunk rows of
 * CHUNK_ENTRIES in a new `history` (what the merge would have cut), which replaces the old one.
 * One count of the entries per address first chooses `base` (`buildBase`). All in `client`'s
 * transaction (the finish's history part), which the reader's snapshot follows: the batches are
 * committed and nothing else writes `history` during the finish. Null (nothing done) for any
 * other index: the finish merges, then `foldHistory` folds.
 */
export async function foldLoadedHistory(client: pg.ClientBase, openReader: () => Promise<pg.ClientBase>): Promise<BucketFold | null> {
  const layout = (
    await client.query<HistoryLayout>('SELECT base, ext, split, busy, folded FROM history_bucket_params WHERE id = 1 FOR UPDATE')
  ).rows[0];
  if (!layout || layout.busy === 0 || layout.folded !== 0) return null;
  if ((await client.query('SELECT 1 FROM history_buckets LIMIT 1')).rows.length > 0) return null;
  const { ms, lap } = laps();
  const busy = layout.busy;
  const tip = (await client.query<{ height: number }>('SELECT height FROM chain_tip WHERE id = 1')).rows[0]?.height ?? -1;
  await client.query(`SET LOCAL work_mem = '512MB'`);
  // The base from the entries that stay, counted in a sample of the key space.
  const { estimate } = await sampleStayingEntries(client, busy);
  lap('keys');
  const params: BucketParams = estimate > 0 ? { base: buildBase(estimate), ext: 0, split: 0 } : layout;
  const chunks = new BinaryCopy(1 << 16);
  const stream = new FoldStream(params, busy, { chunks });
  await client.query(`CREATE TABLE history_folded (addr_key uuid NOT NULL, first_tx_num int8 NOT NULL, rest bytea NOT NULL)`);
  const flush = async (min: number) => {
    if (stream.buckets.length >= min && stream.buckets.rows > 0) {
      await copyIn(client, 'history_buckets (bucket, log)', stream.buckets.finish());
      stream.buckets.reset();
    }
    if (chunks.length >= min && chunks.rows > 0) {
      await copyIn(client, 'history_folded (addr_key, first_tx_num, rest)', chunks.finish());
      chunks.reset();
    }
  };
  // (serial, as the merge it replaces: the finish's other parts take the cores)
  const reader = await openReader();
  await reader.query('SET max_parallel_workers_per_gather = 0');
  await copyOutInto(reader, 'SELECT addr_key, first_tx_num, rest FROM history ORDER BY addr_key, first_tx_num', stream.reader(), () =>
    flush(LOADED_FLUSH_BYTES),
  );
  stream.endSlice();
  await flush(0);
  const stay = stream.stay;
  lap('records');
  // (the new table has no chain change trigger: the NOTIFY says what it would, src/db/chain-changes.ts)
  await client.query(`DROP TABLE history; ALTER TABLE history_folded RENAME TO history; NOTIFY ${CHAIN_CHANNEL}`);
  await client.query('UPDATE history_bucket_params SET base = $1, ext = $2, split = $3, records = $4, folded = $5 WHERE id = 1', [
    params.base,
    params.ext,
    params.split,
    stay,
    tip + 1,
  ]);
  lap('history replaced');
  return {
    base: params.base,
    busy,
    records: stay,
    keys: stream.keys,
    busyKeys: stream.busyKeys,
    crossed: 0,
    rewritten: true,
    ms,
  };
}

/** Bytes of `history` a whole-chain fold reads per statement (its slices of the key space: the memory it holds at once). */
const STREAM_SLICE_BYTES = 32 * 2 ** 20;

/**
 * `foldHistory` of a whole chain into empty buckets (the bulk finish's and the switch's: `folded`
 * 0, every row below `toHeight`), streamed rather than sorted: the records of 24 M entries sorted
 * by bucket in one statement spill to files (37 s on the 2,000-block corpus), where rows read in
 * key order through `history_pkey` arrive bucket by bucket (a bucket is a run of keys: its id is
 * the key's top bits, `base` of them, with `ext`'s from the key's next bytes), so each bucket's
 * few dozen records are sorted alone, here. Per address the same rule as the statements: at most
 * `busy` entries go to its bucket, the others stay in chunk rows (nothing crosses: the buckets are
 * empty). One statement counts the entries per address (for `base`), then slices of the key space
 * (the key's top bits, never more than `base`: a bucket is in one slice) are read by binary COPY
 * and their buckets written by COPY, all in the caller's transaction.
 */
async function foldWholeChain(trx: Trx, layout: HistoryLayout, toHeight: number, opts: FoldOptions): Promise<BucketFold> {
  const { ms, lap } = laps();
  const busy = layout.busy;
  // (the count's grouping in memory, as the general statements' sort)
  await sql`SET LOCAL work_mem = '512MB'`.execute(trx);
  const t = (await sql<HistoryCounts>`${sql.raw(historyCounts(busy))}`.execute(trx)).rows[0]!;
  lap('keys');
  const stay = Number(t.stay);
  let params: BucketParams = { base: layout.base, ext: layout.ext, split: layout.split };
  if (opts.base !== undefined || (opts.chooseBase === true && stay > 0)) {
    params = { base: opts.base ?? buildBase(stay), ext: 0, split: 0 };
    await sql`UPDATE history_bucket_params SET base = ${params.base}, ext = 0, split = 0 WHERE id = 1`.execute(trx);
  }
  const busyKeys = new BinaryCopy();
  const stream = new FoldStream(params, busy, { busyKeys });
  const run = async (client: pg.ClientBase) => {
    await client.query('CREATE TEMP TABLE bw_busy (k uuid PRIMARY KEY) ON COMMIT DROP');
    const bits = Math.min(params.base, Math.max(0, Math.ceil(Math.log2(Number(t.bytes) / (opts.sliceBytes ?? STREAM_SLICE_BYTES)))));
    for (let s = 0; s < 2 ** bits; s++) {
      const reader = stream.reader();
      reader.feed(
        await copyOut(
          client,
          `SELECT addr_key, first_tx_num, rest FROM history WHERE ${keySlice(s, bits)} ORDER BY addr_key, first_tx_num`,
        ),
      );
      reader.end();
      stream.endSlice();
      if (stream.buckets.rows > 0) await copyIn(client, 'history_buckets (bucket, log)', stream.buckets.finish());
      stream.buckets.reset();
    }
    if (busyKeys.rows > 0) await copyIn(client, 'bw_busy (k)', busyKeys.finish());
    await client.query('ANALYZE bw_busy');
  };
  // (nothing stays when every address is busy: none of their rows moves)
  if (stay > 0) await withClientOf(trx, run);
  lap('records');
  const rewritten = stay > 0 && opts.rewrite !== false && Number(t.stay_rows) * 2 > Number(t.rows);
  if (rewritten) {
    await replaceHistory(trx, sql`SELECT h.addr_key, h.first_tx_num, h.rest FROM bw_busy b JOIN history h ON h.addr_key = b.k`);
  } else if (stay > 0) {
    await sql`DELETE FROM history h WHERE NOT EXISTS (SELECT 1 FROM bw_busy b WHERE b.k = h.addr_key)`.execute(trx);
  }
  lap(rewritten ? 'history rewritten' : 'history deleted');
  const r = await sql<{ records: string }>`
    UPDATE history_bucket_params SET records = records + ${stay}, folded = ${toHeight} WHERE id = 1 RETURNING records::text`.execute(trx);
  return {
    base: params.base,
    busy,
    records: Number(r.rows[0]!.records),
    keys: Number(t.keys),
    busyKeys: Number(t.busy_keys),
    crossed: 0,
    rewritten,
    ms,
  };
}

/**
 * Folds `history` rows fed in key order (addr_key, then first_tx_num: `reader`, binary COPY of
 * those three columns) into the layout `busy` says, for empty buckets: each address with at most
 * `busy` entries gives them as records to its bucket (`buckets`: COPY rows of history_buckets,
 * each bucket's log sorted canonically); each with more is a busy key (`busyKeys`, when given) and,
 * when `chunks` is given, its entries cut into chunk rows of CHUNK_ENTRIES (COPY rows of
 * `history`: what the bulk finish's merge cuts). An address's entries are copied out of the
 * COPY data as they come, so the data may arrive in pieces cut anywhere. With `ext` and `split` 0
 * (a base just chosen) a bucket is a run of keys, written as soon as the run ends; otherwise its
 * records are gathered until `endSlice` (a slice of the key space holds whole buckets).
 */
class FoldStream {
  readonly buckets = new BinaryCopy(1 << 16);
  /** A reader of one COPY's data (a slice's) into this fold. */
  reader(): CopyRowReader {
    return new CopyRowReader(3, (d, at, len) => this.row(d, at[0]!, at[1]!, at[2]!, len[2]!));
  }
  /** The entries that went to buckets, the addresses read, and those of them left in chunks. */
  stay = 0;
  keys = 0;
  busyKeys = 0;
  private recs = Buffer.allocUnsafe(1 << 16);
  private sorted = Buffer.allocUnsafe(1 << 16);
  private readonly sorter = new RecordSorter();
  private readonly key = Buffer.alloc(16);
  private readonly runs: boolean;
  private readonly shift: number;
  private readonly gathered = new Map<number, Buffer[]>();
  /** The current address's entries (8 bytes each) not written yet, and their number. */
  private ent: Buffer;
  private m = 0;
  /** The current address's entries so far, and whether they passed `busy`. */
  private n = 0;
  private over = false;
  private hasKey = false;
  private bucket = -1;
  private used = 0;

  constructor(
    private readonly params: BucketParams,
    private readonly busy: number,
    private readonly out: { busyKeys?: BinaryCopy; chunks?: BinaryCopy },
  ) {
    this.runs = params.ext === 0 && params.split === 0;
    this.shift = 32 - params.base;
    this.ent = Buffer.allocUnsafe(ENTRY_BYTES * (Math.max(busy, CHUNK_ENTRIES) + 1));
  }

  /** The bucket rows gathered since the last slice's end (outside runs), written to `buckets`. */
  endSlice(): void {
    this.endAddress();
    this.flushRun();
    for (const b of [...this.gathered.keys()].sort((x, y) => x - y))
      this.buckets
        .row(2)
        .int4(b)
        .bytea(sortRecords(Buffer.concat(this.gathered.get(b)!)));
    this.gathered.clear();
  }

  private row(d: Buffer, keyAt: number, firstAt: number, restAt: number, restLen: number): void {
    const key = this.key;
    if (
      !this.hasKey ||
      d.readUInt32BE(keyAt) !== key.readUInt32BE(0) ||
      d.readUInt32BE(keyAt + 4) !== key.readUInt32BE(4) ||
      d.readUInt32BE(keyAt + 8) !== key.readUInt32BE(8) ||
      d.readUInt32BE(keyAt + 12) !== key.readUInt32BE(12)
    ) {
      this.endAddress();
      for (let j = 0; j < 16; j++) key[j] = d[keyAt + j]!;
      this.hasKey = true;
    }
    this.push(d, firstAt);
    for (let at = restAt, end = restAt + restLen; at < end; at += ENTRY_BYTES) this.push(d, at);
  }

  private push(d: Buffer, at: number): void {
    this.n++;
    if (this.n > this.busy && !this.over) {
      this.over = true;
      if (!this.out.chunks) this.m = 0;
    }
    if (this.over && !this.out.chunks) return;
    const ent = this.ent;
    for (let j = 0, w = this.m * ENTRY_BYTES; j < ENTRY_BYTES; j++) ent[w + j] = d[at + j]!;
    this.m++;
    while (this.over && this.m >= CHUNK_ENTRIES) this.chunk(CHUNK_ENTRIES);
  }

  /** The first `count` entries held as a chunk row of the current address. */
  private chunk(count: number): void {
    const ent = this.ent;
    this.out
      .chunks!.row(3)
      .uuidBytes(this.key)
      .int8(readEntry(ent, 0))
      .byteaRange(ent, ENTRY_BYTES, count * ENTRY_BYTES);
    ent.copyWithin(0, count * ENTRY_BYTES, this.m * ENTRY_BYTES);
    this.m -= count;
  }

  private endAddress(): void {
    if (!this.hasKey) return;
    this.hasKey = false;
    this.keys++;
    const key = this.key;
    if (this.over) {
      this.busyKeys++;
      if (this.out.chunks && this.m > 0) this.chunk(this.m);
      this.out.busyKeys?.row(1).uuidBytes(key);
    } else {
      this.stay += this.n;
      const b = this.runs ? (this.shift === 32 ? 0 : key.readUInt32BE(0) >>> this.shift) : bucketOf(key, this.params);
      if (this.runs && b !== this.bucket) {
        this.flushRun();
        this.bucket = b;
      }
      const need = this.used + this.m * RECORD_BYTES;
      if (this.recs.length < need) {
        const grown = Buffer.allocUnsafe(2 * need);
        this.recs.copy(grown, 0, 0, this.used);
        this.recs = grown;
      }
      const start = this.used;
      for (let i = 0; i < this.m; i++) this.record(i * ENTRY_BYTES);
      if (!this.runs) {
        const list = this.gathered.get(b) ?? [];
        list.push(Buffer.from(this.recs.subarray(start, this.used)));
        this.gathered.set(b, list);
        this.used = 0;
      }
    }
    this.n = 0;
    this.m = 0;
    this.over = false;
  }

  /** Appends the record of the current key and the held entry at `ent[at..at + 8)`. */
  private record(at: number): void {
    writeRecord(this.recs, this.used, this.key, readEntry(this.ent, at));
    this.used += RECORD_BYTES;
  }

  /** The current run's bucket, its records sorted, written to `buckets`. */
  private flushRun(): void {
    if (this.used === 0 || !this.runs) return;
    if (this.sorted.length < this.used) this.sorted = Buffer.allocUnsafe(2 * this.used);
    this.sorter.sortInto(this.recs, this.used / RECORD_BYTES, this.sorted);
    this.buckets.row(2).int4(this.bucket).bytea(this.sorted.subarray(0, this.used));
    this.used = 0;
  }
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
/**
 * The most blocks one fold takes: about 20 s of PostgreSQL's work on 4,000-transaction blocks, the
 * longest an undo or the indexer's stop waits for a fold (after a long catch-up the rest follow,
 * a slice at a time while the chain is quiet).
 */
const FOLD_MOST = FOLD_BLOCKS;

/**
 * The indexer's fold, when it is due: with history buckets on and at least `every` blocks below
 * the newest `lag` not folded yet, folds them (`foldHistory` up to `tip − lag + 1`, at most `most`
 * blocks) in one transaction that locks the params row, not the chain: blocks arriving meanwhile
 * are applied beside it (an undo waits for it). Null when not due. `guard` proves the writer lock first, as every write transaction of the writer does.
 */
export async function foldHistoryWhenDue(
  db: Kysely<Database>,
  opts: { guard?: (trx: Trx) => Promise<void>; lag?: number; every?: number; most?: number } = {},
): Promise<BucketFold | null> {
  const lag = opts.lag ?? FOLD_LAG;
  const every = opts.every ?? FOLD_BLOCKS;
  const most = opts.most ?? FOLD_MOST;
  // (at least the tip unfolded: the fold holds the params row, not the chain, so it must stay below the blocks being applied)
  if (!Number.isInteger(lag) || lag < 1) throw new RangeError(`lag must be a positive integer, got ${lag}`);
  const due = (tip: number, p: { busy: number; folded: number }) => p.busy > 0 && tip - lag + 1 - p.folded >= every;
  // (read without a lock first: an idle indexer asks after every applied block)
  const peek = await sql<{ height: number; busy: number; folded: number }>`
    SELECT t.height, p.busy, p.folded FROM chain_tip t, history_bucket_params p WHERE t.id = 1 AND p.id = 1`.execute(db);
  const now = peek.rows[0];
  if (!now || !due(now.height, now)) return null;
  return db.transaction().execute(async (trx) => {
    if (opts.guard) await opts.guard(trx);
    // (the params row locked, not the chain: blocks applied meanwhile are above `tip − lag`)
    const layout = await readHistoryLayout(trx);
    const tip = (await readTip(trx)).height;
    if (!due(tip, layout)) return null;
    return foldHistory(trx, Math.min(tip - lag + 1, layout.folded + most), { rewrite: false });
  });
}
