/**
 * bench/history-layout's bucket candidates (docs/lean-layout.md "Bucket logs"): many entries per
 * row, each row an append log keyed by a hash prefix (record formats: bench/bucket-log.ts).
 * - history buckets (`bw_hist_buckets_<n>`, one table per `--bucket-addresses` value n):
 *   `(bucket int4 primary key, log bytea)`, fill factor 70 so that a block's appends are HOT
 *   updates on their own page; a bucket is the address key's top bits, about n addresses each;
 *   `log` = 13-byte records (key bytes 4..11, tx_num) in chain order. Addresses with more than
 *   `--busy` entries keep today's chunk rows (`bw_hist_busy`, shared with the block rows).
 * - transaction parts (`bw_tx_parts`): `(part int8 primary key = tx_num >> 6, txids, lens, outs,
 *   ins)`, 64 transactions a row, with a GIN on `spent_tx_groups(ins)` (who spent an output, as
 *   today's spends GIN on `txs`); and txid buckets (`bw_txid_buckets`): 9-byte records (txid bytes
 *   4..7, tx_num), about `--txid-bucket-txids` a bucket: txid → tx_num without a row per txid.
 * A block's rows: history and txid records appended with one upsert each (`log || excluded.log`),
 * parts by COPY; undo cuts each touched bucket's log before its first record at or above the
 * block's first tx_num (`bw_log_cut`, logCut in SQL) and deletes the block's parts.
 * @module
 */
import type pg from 'pg';
import { BinaryCopy, copyIn } from '../indexer/writer/copy-binary.js';
import { firstTxNum as firstTxNumBig } from '../src/db/tx-num.js';
import type { BlockRows } from '../indexer/writer/derive.js';
import {
  bucketBits,
  bucketOf,
  histRecords,
  HIST_RECORD,
  packPart,
  PART_SHIFT,
  txidMatches,
  txidRecord,
  TXID_RECORD,
} from './bucket-log.js';

const firstTxNum = (height: number) => Number(firstTxNumBig(height));

/**
 * A history bucket table's spec, `--bucket-addresses`'s items: the addresses a bucket holds, and
 * `n` after it for logs stored newest first (new records in front: a same-page update then
 * leaves the old log as an unchanged suffix, which PostgreSQL does not log again).
 */
export const histBucketTable = (spec: string) => `bw_hist_buckets_${spec}`;
export const newestFirst = (spec: string): boolean => spec.endsWith('n');
export function bucketAddresses(spec: string): number {
  const n = Number(newestFirst(spec) ? spec.slice(0, -1) : spec);
  if (!(Number.isInteger(n) && n > 0))
    throw new Error(`--bucket-addresses: ${spec} is not a positive integer (with n after it: newest first)`);
  return n;
}
/** Fill factor of the bucket tables: room on each page for the new versions of its rows. */
const BUCKET_FILL = 70;

/** The address key (uuid text) as its 16 bytes. */
export const keyBytes = (key: string): Buffer => Buffer.from(key.replace(/-/g, ''), 'hex');

/** A bytea's first 4 bytes as the unsigned top `bits` bits, in SQL. */
const sqlBucket = (bytes: string, bits: number) =>
  bits === 0 ? '0' : `((('x' || encode(substring(${bytes} FROM 1 FOR 4), 'hex'))::bit(32)::int8 >> ${32 - bits})::int4)`;
/** A tx_num as 5 bytes big-endian, in SQL. */
const sqlTxNum5 = (n: string) => `substring(int8send(${n}) FROM 4 FOR 5)`;

/** The SQL functions the candidates use: the undo's log cut, LEB128 of a length. */
export async function createFunctions(c: pg.Client): Promise<void> {
  await c.query(`
    CREATE OR REPLACE FUNCTION bw_log_cut(log bytea, rec int4, first int8) RETURNS int4
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
    DECLARE at int4 := length(log);
    BEGIN
      WHILE at > 0 AND ('x' || encode(substring(log FROM at - 4 FOR 5), 'hex'))::bit(40)::int8 >= first LOOP
        at := at - rec;
      END LOOP;
      RETURN at;
    END $$;
    CREATE OR REPLACE FUNCTION bw_log_cut_front(log bytea, rec int4, first int8) RETURNS int4
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
    DECLARE at int4 := 0; n int4 := length(log);
    BEGIN
      WHILE at < n AND ('x' || encode(substring(log FROM at + rec - 4 FOR 5), 'hex'))::bit(40)::int8 >= first LOOP
        at := at + rec;
      END LOOP;
      RETURN at;
    END $$;
    CREATE OR REPLACE FUNCTION bw_leb(n int4) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
      SELECT CASE WHEN n < 128 THEN set_byte('\\x00'::bytea, 0, n)
        WHEN n < 16384 THEN set_byte(set_byte('\\x0000'::bytea, 0, (n & 127) | 128), 1, n >> 7)
        WHEN n < 2097152 THEN set_byte(set_byte(set_byte('\\x000000'::bytea, 0, (n & 127) | 128), 1, ((n >> 7) & 127) | 128), 2, n >> 14)
        ELSE set_byte(set_byte(set_byte(set_byte('\\x00000000'::bytea, 0, (n & 127) | 128), 1, ((n >> 7) & 127) | 128), 2, ((n >> 14) & 127) | 128), 3, n >> 21)
      END $$`);
}

/** Bucket bits of history table `n`: from the number of addresses outside the busy ones. */
export async function histBits(c: pg.Client, spec: string): Promise<number> {
  const r = await c.query<{ b: string }>(`SELECT obj_description($1::regclass, 'pg_class') AS b`, [histBucketTable(spec)]);
  return Number(r.rows[0]!.b);
}

/**
 * `bw_hist_buckets_<n>` from `bw_entries` (every (address, tx_num) once) less the busy
 * addresses; the bucket bits are kept as the table's comment.
 */
export async function buildHistBuckets(c: pg.Client, spec: string, q: (label: string, text: string) => Promise<void>): Promise<void> {
  const n = bucketAddresses(spec);
  const desc = newestFirst(spec) ? ' DESC' : '';
  const count = Number(
    (
      await c.query<{ n: string }>(
        `SELECT count(DISTINCT addr_key)::text AS n FROM bw_entries e WHERE NOT EXISTS (SELECT 1 FROM bw_busy_keys b WHERE b.addr_key = e.addr_key)`,
      )
    ).rows[0]!.n,
  );
  const bits = bucketBits(count, n);
  const t = histBucketTable(spec);
  await q(
    `history buckets of ~${n} addresses${desc ? ', newest first' : ''} (${count} addresses, ${bits} bits)`,
    `DROP TABLE IF EXISTS ${t};
     CREATE TABLE ${t} (bucket int4 PRIMARY KEY, log bytea NOT NULL) WITH (fillfactor = ${BUCKET_FILL}, autovacuum_enabled = off);
     ALTER TABLE ${t} ALTER COLUMN log SET STORAGE MAIN;
     COMMENT ON TABLE ${t} IS '${bits}';
     INSERT INTO ${t}
       SELECT ${sqlBucket('uuid_send(addr_key)', bits)},
              string_agg(substring(uuid_send(addr_key) FROM 5 FOR 8) || ${sqlTxNum5('tx_num')}, ''::bytea ORDER BY tx_num${desc}, addr_key${desc})
       FROM bw_entries e WHERE NOT EXISTS (SELECT 1 FROM bw_busy_keys b WHERE b.addr_key = e.addr_key)
       GROUP BY 1 ORDER BY 1`,
  );
}

/** `bw_tx_parts` (with its spends GIN) and `bw_txid_buckets` from `txs`; the txid bucket bits as the table's comment. */
export async function buildTxParts(c: pg.Client, perBucket: number, q: (label: string, text: string) => Promise<void>): Promise<void> {
  const count = Number((await c.query<{ n: string }>(`SELECT count(*)::text AS n FROM txs`)).rows[0]!.n);
  const bits = bucketBits(count, perBucket);
  await q(
    'transaction parts of 64 + spends GIN',
    `DROP TABLE IF EXISTS bw_tx_parts;
     CREATE TABLE bw_tx_parts (part int8 PRIMARY KEY, txids bytea NOT NULL, lens bytea NOT NULL, outs bytea NOT NULL, ins bytea NOT NULL)
       WITH (autovacuum_enabled = off);
     ALTER TABLE bw_tx_parts ALTER COLUMN txids SET STORAGE EXTERNAL;
     INSERT INTO bw_tx_parts
       SELECT tx_num >> ${PART_SHIFT}, string_agg(txid, ''::bytea ORDER BY tx_num),
              string_agg(bw_leb(length(outs)) || bw_leb(length(ins)), ''::bytea ORDER BY tx_num),
              string_agg(outs, ''::bytea ORDER BY tx_num), string_agg(ins, ''::bytea ORDER BY tx_num)
       FROM txs GROUP BY 1 ORDER BY 1;
     CREATE INDEX bw_tx_parts_spent ON bw_tx_parts USING gin (spent_tx_groups(ins))
       WITH (fastupdate = on, gin_pending_list_limit = 1024) WHERE length(ins) > 0`,
  );
  await q(
    `txid buckets of ~${perBucket} (${count} txids, ${bits} bits)`,
    `DROP TABLE IF EXISTS bw_txid_buckets;
     CREATE TABLE bw_txid_buckets (bucket int4 PRIMARY KEY, log bytea NOT NULL) WITH (fillfactor = ${BUCKET_FILL}, autovacuum_enabled = off);
     ALTER TABLE bw_txid_buckets ALTER COLUMN log SET STORAGE MAIN;
     COMMENT ON TABLE bw_txid_buckets IS '${bits}';
     INSERT INTO bw_txid_buckets
       SELECT ${sqlBucket('txid', bits)}, string_agg(substring(txid FROM 5 FOR 4) || ${sqlTxNum5('tx_num')}, ''::bytea ORDER BY tx_num)
       FROM txs GROUP BY 1 ORDER BY 1`,
  );
}

export async function txidBits(c: pg.Client): Promise<number> {
  return Number((await c.query<{ b: string }>(`SELECT obj_description('bw_txid_buckets'::regclass, 'pg_class') AS b`)).rows[0]!.b);
}

/** Removes what blocks from `height` on wrote to the bucket candidates (undo of a reused index's live blocks). */
export async function trimBuckets(c: pg.Client, tables: readonly string[], height: number): Promise<void> {
  const first = firstTxNum(height);
  for (const t of tables) {
    if (t === 'bw_tx_parts') {
      await c.query(`DELETE FROM bw_tx_parts WHERE part >= ${first / 2 ** PART_SHIFT}`);
      continue;
    }
    const rec = t === 'bw_txid_buckets' ? TXID_RECORD : HIST_RECORD;
    if (newestFirst(t))
      await c.query(`UPDATE ${t} SET log = substring(log FROM bw_log_cut_front(log, ${rec}, ${first}) + 1)
                     WHERE bw_log_cut_front(log, ${rec}, ${first}) > 0`);
    else
      await c.query(`UPDATE ${t} SET log = substring(log FROM 1 FOR bw_log_cut(log, ${rec}, ${first}))
                     WHERE bw_log_cut(log, ${rec}, ${first}) < length(log)`);
    await c.query(`DELETE FROM ${t} WHERE length(log) = 0`);
  }
}

/** One upsert appending each bucket's records (one row per bucket, records in chain order). */
export async function appendLogs(c: pg.Client, table: string, logs: Map<number, Buffer[]>): Promise<void> {
  const buckets = [...logs.keys()].sort((a, b) => a - b);
  await c.query(
    `INSERT INTO ${table} AS b (bucket, log) SELECT * FROM unnest($1::int4[], $2::bytea[])
       ON CONFLICT (bucket) DO UPDATE SET log = ${newestFirst(table) ? 'excluded.log || b.log' : 'b.log || excluded.log'}`,
    [buckets, buckets.map((k) => Buffer.concat(logs.get(k)!))],
  );
}

/** The block's history records by bucket, each bucket's in chain order or, `newest`, the reverse (busy addresses left out). */
export function histLogs(rows: BlockRows, bits: number, busyKeys: ReadonlySet<string>, newest = false): Map<number, Buffer[]> {
  const recs: { bucket: number; txNum: number; rec: Buffer }[] = [];
  for (const [key, nums] of rows.history) {
    if (busyKeys.has(key)) continue;
    const kb = keyBytes(key);
    const bucket = bucketOf(kb, bits);
    nums.forEach((n) => recs.push({ bucket, txNum: n, rec: histRecords(kb, [n]) }));
  }
  recs.sort((a, b) => (newest ? b.txNum - a.txNum : a.txNum - b.txNum));
  const logs = new Map<number, Buffer[]>();
  for (const r of recs) (logs.get(r.bucket) ?? logs.set(r.bucket, []).get(r.bucket)!).push(r.rec);
  return logs;
}

/** Undo of a block at `height` in a bucket table: each touched bucket cut before the block's first tx_num (one update, then a delete of the emptied ones). */
export async function cutLogs(c: pg.Client, table: string, buckets: readonly number[], height: number): Promise<void> {
  const rec = table === 'bw_txid_buckets' ? TXID_RECORD : HIST_RECORD;
  const first = firstTxNum(height);
  await c.query(
    newestFirst(table)
      ? `UPDATE ${table} SET log = substring(log FROM bw_log_cut_front(log, ${rec}, ${first}) + 1) WHERE bucket = ANY($1::int4[])`
      : `UPDATE ${table} SET log = substring(log FROM 1 FOR bw_log_cut(log, ${rec}, ${first})) WHERE bucket = ANY($1::int4[])`,
    [buckets],
  );
  // A bucket the block created is left empty: gone, as before the block.
  await c.query(`DELETE FROM ${table} WHERE bucket = ANY($1::int4[]) AND length(log) = 0`, [buckets]);
}

/** A digest of buckets' logs (a check that undo gives back the logs as they were). */
export async function logsDigest(c: pg.Client, table: string, buckets: readonly number[]): Promise<string> {
  const r = await c.query<{ d: string }>(
    `SELECT md5(string_agg(int4send(bucket) || log, ''::bytea ORDER BY bucket)) AS d FROM ${table} WHERE bucket = ANY($1::int4[])`,
    [buckets],
  );
  return r.rows[0]!.d;
}

/** The block's txid records by bucket, in chain order. */
export function txidLogs(rows: BlockRows, bits: number): Map<number, Buffer[]> {
  const logs = new Map<number, Buffer[]>();
  for (const t of rows.txs) {
    const bucket = bucketOf(t.txid, bits);
    (logs.get(bucket) ?? logs.set(bucket, []).get(bucket)!).push(txidRecord(t.txid, t.txNum));
  }
  return logs;
}

/** The block's parts, by binary COPY. */
export async function copyParts(c: pg.Client, rows: BlockRows): Promise<void> {
  const copy = new BinaryCopy();
  for (let i = 0; i < rows.txs.length;) {
    const part = Math.floor(rows.txs[i]!.txNum / 2 ** PART_SHIFT);
    let j = i;
    while (j < rows.txs.length && Math.floor(rows.txs[j]!.txNum / 2 ** PART_SHIFT) === part) j++;
    const p = packPart(rows.txs.slice(i, j));
    copy.row(5).int8(part).bytea(p.txids).bytea(p.lens).bytea(p.outs).bytea(p.ins);
    i = j;
  }
  await copyIn(c, 'bw_tx_parts (part, txids, lens, outs, ins)', copy.finish());
}

export async function deleteParts(c: pg.Client, height: number): Promise<void> {
  await c.query(
    `DELETE FROM bw_tx_parts WHERE part >= ${firstTxNum(height) / 2 ** PART_SHIFT} AND part < ${firstTxNum(height + 1) / 2 ** PART_SHIFT}`,
  );
}

/** A txid's 32 bytes at tx_num `n` from its part (a slice of the uncompressed, out-of-line column). */
const PART_TXID = `SELECT substring(txids FROM ($1::int8 & ${2 ** PART_SHIFT - 1})::int4 * 32 + 1 FOR 32) AS t FROM bw_tx_parts WHERE part = $1::int8 >> ${PART_SHIFT}`;

export async function partTxid(c: pg.Client, txNum: number): Promise<Buffer | undefined> {
  return (await c.query<{ t: Buffer }>({ name: 'part-txid', text: PART_TXID, values: [txNum] })).rows[0]?.t;
}

/**
 * txids → tx_nums through the txid buckets: one statement reads the buckets, the records are
 * matched here; a txid with more than one match (two txids sharing the bucket and bytes 4..7) is
 * settled by its parts. Returns the tx_num of each txid (undefined: not found) and how many
 * needed a part.
 */
export async function resolveTxids(
  c: pg.Client,
  txids: readonly Uint8Array[],
  bits: number,
  verify = false,
): Promise<{ nums: (number | undefined)[]; settled: number }> {
  const buckets = [...new Set(txids.map((t) => bucketOf(t, bits)))];
  const r = await c.query<{ bucket: number; log: Buffer }>({
    name: 'txid-buckets',
    text: `SELECT b.bucket, b.log FROM unnest($1::int4[]) AS u(bucket) JOIN bw_txid_buckets b USING (bucket)`,
    values: [buckets],
  });
  const logs = new Map(r.rows.map((x) => [x.bucket, x.log]));
  let settled = 0;
  const nums: (number | undefined)[] = [];
  for (const t of txids) {
    const log = logs.get(bucketOf(t, bits));
    const m = log ? txidMatches(log, t) : [];
    if (m.length === 1 && !verify) nums.push(m[0]);
    else if (m.length === 0) nums.push(undefined);
    else {
      settled++;
      let hit: number | undefined;
      for (const n of m) if ((await partTxid(c, n))?.equals(t)) hit = n;
      nums.push(hit);
    }
  }
  return { nums, settled };
}
