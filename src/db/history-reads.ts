/**
 * How a reader asks the confirmed history of an address key: the one seam every reader of an
 * address's history goes through (docs/lean-layout.md "Building the history buckets: the plan").
 * An address's entries are in one of two places: chunk rows (`(addr_key, first_tx_num) → rest`,
 * one chunk holding `1 + length(rest) / 8` entries: the busy addresses; in `history`, the newest
 * blocks' in `history_recent`, read together: `HISTORY_ROWS`) or the records of
 * its bucket in `history_buckets` (src/db/history-buckets.ts: the others, for the blocks the
 * fold has taken; their newer entries are chunk rows until the next fold,
 * indexer/writer/history-build.ts). Every fragment here reads both in one statement (an entry
 * is in one of them: the fold moves rows into records in one transaction), the bucket through the
 * params row joined in the same statement: a reader never combines one state's bucket bits with
 * another's rows.
 *
 * Each fragment takes the key as SQL (a uuid column reference such as `sql.ref('wa.addr_key')`, or
 * a bind parameter) and answers a correlated subquery, so a statement that reads many keys keeps
 * one index probe of each chunk table's key (`HISTORY_ROWS`) and one of `history_buckets_pkey`
 * per key.
 * @module
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { uuidHex } from './address-key.js';
import { keyEntries, SQL_BUCKETS } from './history-buckets.js';
import { decodeEntries, historyChunkEntries, newestEntries, SQL_HISTORY, sqlEntryAt } from './history-entries.js';
import type { Database } from './schema.js';

/**
 * SQL text: the FROM items that give the bucket row `hb` of the uuid `key` (SQL text) with the
 * params row `hp`; no row when the bucket has none.
 */
const BUCKET_OF = (key: string) =>
  `history_bucket_params hp JOIN history_buckets hb ON hp.id = 1 AND hb.bucket = ${SQL_BUCKETS.bucketOf(key, 'hp')}`;
/** The key as the column `hk.k` of a one-row FROM item, so that the text fragments can name it. */
const KEY_ROW = (key: RawBuilder<unknown>) => sql`(SELECT ${key}::uuid AS k) hk`;
const K8 = SQL_BUCKETS.key8('hk.k');
/**
 * SQL text: every history chunk row, those of `history` and those of the newest blocks waiting in
 * `history_recent` (indexer/writer/history-recent.ts: a row is in one of them, moved from the
 * second to the first in one transaction), with `row_xmin` (text), the transaction that wrote the
 * row in its table (a moved row is a new version), and `row_table`, the table it is in (for the
 * writer's undo, which cuts a row where it is). PostgreSQL pulls the UNION ALL up into an append
 * of the two tables: a condition on `addr_key` probes both keys, an `ORDER BY first_tx_num`
 * merges their index scans without a sort, and an unread column is not computed.
 */
export const HISTORY_ROWS = `(SELECT addr_key, first_tx_num, rest, xmin::text AS row_xmin, 'history'::text AS row_table FROM history
  UNION ALL SELECT addr_key, first_tx_num, rest, xmin::text, 'history_recent'::text FROM history_recent)`;
const ROWS = sql.raw(HISTORY_ROWS);
/** Above every tx_num. */
const AFTER_ALL = 1n << 62n;

const CHUNK_ENTRIES_OF = (table: string) => sql.raw(SQL_HISTORY.entries(table));

/** SQL (boolean): the key has at least one confirmed history entry. */
export function sqlHasHistory(key: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`(EXISTS (SELECT 1 FROM ${ROWS} h WHERE h.addr_key = ${key})
    OR EXISTS (SELECT 1 FROM ${KEY_ROW(key)} CROSS JOIN ${sql.raw(BUCKET_OF('hk.k'))} WHERE ${sql.raw(SQL_BUCKETS.has('hb.log', K8))}))`;
}

/** SQL (boolean): the key has no confirmed history entry (`NOT sqlHasHistory`, written as two anti-joins). */
export function sqlHasNoHistory(key: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`(NOT EXISTS (SELECT 1 FROM ${ROWS} h WHERE h.addr_key = ${key})
    AND NOT EXISTS (SELECT 1 FROM ${KEY_ROW(key)} CROSS JOIN ${sql.raw(BUCKET_OF('hk.k'))} WHERE ${sql.raw(SQL_BUCKETS.has('hb.log', K8))}))`;
}

/** SQL (numeric, 0 for none): the number of the key's confirmed history entries (transactions). */
export function sqlHistoryCount(key: RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`((SELECT coalesce(sum(1 + length(h.rest) / 8), 0) FROM ${ROWS} h WHERE h.addr_key = ${key})
    + coalesce((SELECT ${sql.raw(SQL_BUCKETS.count('hb.log', K8))} FROM ${KEY_ROW(key)} CROSS JOIN ${sql.raw(BUCKET_OF('hk.k'))}), 0))`;
}

/**
 * SQL (boolean): the key has a history entry written for a block in `[lo, hi)` (tx_nums as SQL):
 * a record of the key in that range in its bucket, or a chunk starting in it (on the per-block
 * path every block writes its own chunk for each busy address it touches, so a chunk starting in
 * the range is the block's: what the Electrum tracker asks of blocks it has just seen applied; a
 * bulk-loaded chunk spanning the range's start is not found, as before).
 */
export function sqlHistoryTouched(key: RawBuilder<unknown>, lo: RawBuilder<unknown>, hi: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`(EXISTS (SELECT 1 FROM ${ROWS} h WHERE h.addr_key = ${key} AND h.first_tx_num >= ${lo} AND h.first_tx_num < ${hi})
    OR EXISTS (SELECT 1 FROM (SELECT ${key}::uuid AS k, ${lo}::int8 AS lo, ${hi}::int8 AS hi) hk CROSS JOIN ${sql.raw(BUCKET_OF('hk.k'))}
                WHERE ${sql.raw(SQL_BUCKETS.touched('hb.log', K8, 'hk.lo', 'hk.hi'))}))`;
}

/**
 * SQL (a subquery for a `LATERAL` join: rows `(f int8, i int4, n int8)`): the key's newest `limit`
 * entries `n` below `bound` (exclusive), newest first, each with its place (`f`, `i`: the chunk's
 * `first_tx_num` and the entry's index in it), the hint a cursor carries back; an entry from the
 * key's bucket has no place (`f` = `i` = −1: its cursor carries no hint). `atFirst`,
 * `atIndex` (a cursor's place, NULLs for none) are where the walk enters the cursor's chunk when
 * the entry there is still the bound (compared as bytes: a stale or made-up index finds nothing,
 * and the chunk is read from its end).
 *
 * Each part comes in order with no sort: chunks newest first through `history_pkey`, each chunk's
 * entries from its end, under one `LIMIT` (a sort would read every chunk; the plan test in
 * test/integration/api/api-db.test.ts holds the statement to it), and the bucket's records of
 * the key in the log's order (newest first), under its own. The chunks' `LIMIT` is exact: each
 * chunk below the bound gives at least one entry. The two parts, at most `limit` rows each, are
 * merged newest first: an address's older entries are in its bucket and its newer ones in chunk
 * rows until the next fold, and an identity built to be shared by a busy address and a bucket one
 * is in both; its pages must not depend on their size.
 *
 * The arguments are SQL text (column references of the enclosing statement, as SQL_HISTORY's
 * are), never values: the fragment is one piece of text, built once by its caller (a page's
 * statement is built on every request, and each kysely node costs it time).
 */
export function sqlHistoryPageEntries(p: { key: string; bound: string; limit: string; atFirst: string; atIndex: string }): RawBuilder<{
  f: bigint;
  i: number;
  n: bigint;
}> {
  return sql.raw(`(SELECT c.f, s.i, s.n
      FROM LATERAL (SELECT h.first_tx_num AS f, ${SQL_HISTORY.entries('h')} AS e FROM ${HISTORY_ROWS} h
                     WHERE h.addr_key = ${p.key} AND h.first_tx_num < ${p.bound}
                     ORDER BY h.first_tx_num DESC
                     LIMIT ${p.limit}) c,
           LATERAL (SELECT g.i, ${SQL_HISTORY.entryAt('c.e', 'g.i')} AS n
                      FROM generate_series(CASE WHEN c.f = ${p.atFirst} AND ${SQL_HISTORY.entryBytesAt('c.e', p.atIndex)} = ${SQL_HISTORY.entry(p.bound)}
                                                THEN ${p.atIndex} - 1 ELSE ${SQL_HISTORY.count('c.e')} - 1 END, 0, -1) AS g(i)) s
     WHERE s.n < ${p.bound}
     LIMIT ${p.limit})
    UNION ALL
    (SELECT -1::int8, -1::int4, t.tx_num
       FROM ${BUCKET_OF(p.key)}
       CROSS JOIN LATERAL (${SQL_BUCKETS.txNums('hb.log', SQL_BUCKETS.key8(p.key), p.bound, p.limit)}) t)
    ORDER BY n DESC
    LIMIT ${p.limit}`);
}

/**
 * SQL (int8, NULL when the key has no more than `skip` entries): the exclusive tx_num bound below
 * which the key's entries after its `skip` newest lie (its `skip`-th newest entry, 0-based, + 1;
 * `skip` ≥ 0). Chunk sizes come from their lengths: only the chunk the skip ends in is read whole;
 * past the key's chunk entries, its records in its bucket are scanned in the log's order (the
 * fold moves an address's oldest entries into its bucket: its records are older than its chunk
 * entries).
 */
export function sqlHistorySkip(key: RawBuilder<unknown>, skip: RawBuilder<unknown>): RawBuilder<bigint | null> {
  // (the key's entries in chunk rows: its records in its bucket are older, the fold's order)
  const chunked = sql`(SELECT coalesce(sum(1 + length(rest)::int8 / 8), 0) FROM ${ROWS} h WHERE addr_key = ${key})`;
  return sql`coalesce((SELECT ${sqlEntryAt(CHUNK_ENTRIES_OF('h'), sql`(c.size - 1 - (${skip}::int8 - (c.cum - c.size)))::int4`)} + 1
      FROM (SELECT f, size, cum FROM (SELECT first_tx_num AS f, 1 + length(rest)::int8 / 8 AS size,
                                             sum(1 + length(rest)::int8 / 8) OVER (ORDER BY first_tx_num DESC) AS cum
                                        FROM ${ROWS} h WHERE addr_key = ${key}) w
             WHERE cum > ${skip}::int8 ORDER BY f DESC LIMIT 1) c
      JOIN ${ROWS} h ON h.addr_key = ${key} AND h.first_tx_num = c.f),
    (SELECT t.tx_num + 1 FROM (SELECT ${key}::uuid AS k, ${skip}::int8 - ${chunked} AS skip) hk CROSS JOIN ${sql.raw(BUCKET_OF('hk.k'))}
       CROSS JOIN LATERAL (${sql.raw(SQL_BUCKETS.txNums('hb.log', K8, '9223372036854775807', 'hk.skip + 1'))}) t
      OFFSET greatest(${skip}::int8 - ${chunked}, 0) LIMIT 1))`;
}

/**
 * Every confirmed history entry (tx_num) of each of `keys`, ascending, in the order of `keys` (a
 * key given twice gets its entries twice; a key without history an empty list). One statement in
 * the caller's snapshot (a transaction, when it needs its other reads to agree): what the readers
 * that take a script's or an address's whole history read (Electrum histories and statuses, bare
 * multisig outputs, address statistics).
 */
export async function readHistoryEntries(db: Kysely<Database>, keys: readonly string[]): Promise<bigint[][]> {
  return (await readHistoryPlaces(db, keys)).entries;
}

/**
 * `readHistoryEntries`, and for each key whether its entries came from its bucket (`inBucket`): a
 * bucket record names its address by 8 of the key's 16 bytes (with the bucket's bits, `base` + 64
 * in all), so two addresses built to share them read each other's records; a reader that must
 * not trust that (the script-hash readers) proves those entries against the transactions.
 */
export async function readHistoryPlaces(
  db: Kysely<Database>,
  keys: readonly string[],
): Promise<{ entries: bigint[][]; inBucket: boolean[] }> {
  const out: bigint[][] = keys.map(() => []);
  const inBucket = keys.map(() => false);
  if (keys.length === 0) return { entries: out, inBucket };
  // (a key's chunk rows first, then the bucket log of each key that has records in it)
  const r = await sql<{ i: number; first_tx_num: bigint | null; rest: Buffer | null; log: Buffer | null }>`
    WITH q AS MATERIALIZED (SELECT * FROM unnest(${keys}::uuid[]) WITH ORDINALITY AS q(k, i))
    SELECT q.i::int4 AS i, h.first_tx_num, h.rest, NULL::bytea AS log FROM q JOIN ${ROWS} h ON h.addr_key = q.k
    UNION ALL
    SELECT q.i::int4, NULL, NULL, hb.log FROM q CROSS JOIN ${sql.raw(BUCKET_OF('q.k'))}
     WHERE ${sql.raw(SQL_BUCKETS.has('hb.log', SQL_BUCKETS.key8('q.k')))}`.execute(db);
  // A key's chunks never overlap: in ascending order of their first entry, their entries ascend.
  // The join gives a key's chunks in that order when it reads them through history_pkey or from
  // rows appended block by block; a key whose chunks came otherwise has its entries sorted
  // (Postgres sorting every row would carry the chunks' bytes through its sort), as has one with
  // entries in both places (its older ones folded into its bucket, or two keys of one identity in
  // the bucket table: docs/lean-layout.md).
  const last = new Array<bigint>(keys.length).fill(-1n);
  const unsorted = new Set<number>();
  for (const c of r.rows) {
    const j = c.i - 1;
    if (c.log) {
      const nums = decodeEntries(keyEntries(c.log, Buffer.from(uuidHex(keys[j]!), 'hex')));
      if (out[j]!.length > 0) unsorted.add(j);
      inBucket[j] = nums.length > 0;
      out[j]!.push(...nums);
      last[j] = AFTER_ALL; // (a chunk after them: sorted)
      continue;
    }
    if (c.first_tx_num! < last[j]!) unsorted.add(j);
    last[j] = c.first_tx_num!;
    // (a chunk holds at most CHUNK_ENTRIES entries: few enough to spread)
    out[j]!.push(...decodeEntries(historyChunkEntries(c.first_tx_num!, c.rest!)));
  }
  for (const j of unsorted) out[j]!.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { entries: out, inBucket };
}

/**
 * The `limit` newest distinct entries below `bound` (exclusive) of `keys` together, newest first
 * (a wallet's merged history page). Each key gives its newest `limit` chunks below the bound (each
 * holds at least one entry below it, so the page's entries are among them), or its records in its
 * bucket as one more ascending run, merged from each run's end (`newestEntries`): the cost is the
 * chunks and logs read plus `limit` steps, however many entries the keys hold.
 */
export async function readNewestHistory(db: Kysely<Database>, keys: readonly string[], bound: bigint, limit: number): Promise<bigint[]> {
  const rows = await sql<{ k: string; first_tx_num: bigint | null; rest: Buffer | null; log: Buffer | null }>`
    WITH q AS MATERIALIZED (SELECT k FROM unnest(${keys}::uuid[]) AS q(k))
    SELECT q.k, c.first_tx_num, c.rest, NULL::bytea AS log
      FROM q CROSS JOIN LATERAL (SELECT first_tx_num, rest FROM ${ROWS} h WHERE h.addr_key = q.k AND h.first_tx_num < ${bound}
                                  ORDER BY first_tx_num DESC LIMIT ${limit}) c
    UNION ALL
    SELECT q.k, NULL, NULL, hb.log FROM q CROSS JOIN ${sql.raw(BUCKET_OF('q.k'))}
     WHERE ${sql.raw(SQL_BUCKETS.has('hb.log', SQL_BUCKETS.key8('q.k')))}`.execute(db);
  return newestEntries(
    rows.rows.map((c) => (c.log ? keyEntries(c.log, Buffer.from(uuidHex(c.k), 'hex')) : historyChunkEntries(c.first_tx_num!, c.rest!))),
    bound,
    limit,
  );
}
