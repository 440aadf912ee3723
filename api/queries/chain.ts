/**
 * Reads of the chain tables for the REST API (blocks, tip, confirmed and mempool
 * transactions, spent flags). Read-only; the indexer writes these tables (docs/schema.md).
 * Hashes are Buffers in internal byte order.
 * @module
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { firstTxNum, sqlTxNumHeight } from '../../src/db/tx-num.js';
import { txRowsByTxid, txRowsByTxids, txRowsAtNums, txRowsFrom, unspentAt } from '../../src/db/tx-reads.js';

export type Tip = { height: number; hash: Buffer | null };

/**
 * The indexed tip as two columns (`tip_height`, `tip_hash`) of any statement, so that an answer
 * and the tip it was read at come from one snapshot (uncorrelated: read once per statement; null
 * while nothing is indexed).
 */
export const TIP_COLUMNS = sql`(SELECT height FROM chain_tip WHERE id = 1) AS tip_height, (SELECT hash FROM chain_tip WHERE id = 1) AS tip_hash`;

/** The tip of a row holding TIP_COLUMNS. */
export const tipOfRow = (row: { tip_height: number | null; tip_hash: Buffer | null }): Tip => ({
  height: row.tip_height ?? -1,
  hash: row.tip_hash,
});

/** The indexed tip (height -1 and hash null while nothing is indexed). */
export async function getIndexTip(db: Kysely<Database>): Promise<Tip> {
  const r = await db.selectFrom('chain_tip').select(['height', 'hash']).where('id', '=', 1).executeTakeFirst();
  return r ?? { height: -1, hash: null };
}

export type BlockRow = { height: number; hash: Buffer; prev_hash: Buffer; time: number; next_hash: Buffer | null };

/** A main-chain block by hash, with the hash of the block above it when there is one. */
export async function findBlockByHash(db: Kysely<Database>, hash: Buffer): Promise<BlockRow | undefined> {
  return db
    .selectFrom('blocks as b')
    .leftJoin('blocks as n', (j) => j.on(sql`n.height`, '=', sql`b.height + 1`))
    .select(['b.height', 'b.hash', 'b.prev_hash', 'b.time', 'n.hash as next_hash'])
    .where('b.hash', '=', hash)
    .executeTakeFirst();
}

/** Txids of the block at `height`, in block order. */
export async function listBlockTxids(db: Kysely<Database>, height: number): Promise<Buffer[]> {
  const r = await sql<{ txid: Buffer }>`
    SELECT t.txid FROM ${txRowsFrom(firstTxNum(height), firstTxNum(height + 1))} t ORDER BY t.tx_num`.execute(db);
  return r.rows.map((x) => x.txid);
}

export type ConfirmedTxRow = {
  tx_num: bigint;
  txid: Buffer;
  outs: Buffer;
  ins: Buffer;
  first_seen: Date | null;
  block_hash: Buffer;
  block_time: number;
  /** Its outputs still unspent by any block (in `utxos`). */
  unspent_vouts: number[];
  /** Its outputs spent by a mempool transaction. */
  mempool_spent_vouts: number[];
  /** Open Assets colors of its outputs, when it carries a valid marker (src/db/asset-colors.ts). */
  asset_colors?: Buffer | null;
  /** The indexed tip the statement saw (TIP_COLUMNS). */
  tip_height: number | null;
  tip_hash: Buffer | null;
};

/** The columns of ConfirmedTxRow for the transaction row `t` (src/db/tx-reads.ts) joined with its block `b`. */
const confirmedTxColumns = sql`t.tx_num, t.txid, t.outs, t.ins, t.first_seen, b.hash AS block_hash, b.time AS block_time,
           ARRAY(SELECT vout FROM utxos WHERE tx_num = t.tx_num) AS unspent_vouts,
           ARRAY(SELECT prev_vout FROM mempool_spends WHERE prev_txid = t.txid) AS mempool_spent_vouts,
           (SELECT colors FROM asset_txs WHERE tx_num = t.tx_num) AS asset_colors, ${TIP_COLUMNS}`;

/**
 * A confirmed transaction by txid, with its block's hash and time and the spend state of its outputs, in one round trip.
 */
export async function findConfirmedTx(db: Kysely<Database>, txid: Buffer): Promise<ConfirmedTxRow | undefined> {
  const r = await sql<ConfirmedTxRow>`
    SELECT ${confirmedTxColumns}
    FROM ${txRowsByTxid(txid)} t JOIN blocks b ON b.height = ${sqlTxNumHeight(sql.ref('t.tx_num'))}`.execute(db);
  return r.rows[0];
}

/** findConfirmedTx of several txids in one statement, answers in their order. */
export async function findConfirmedTxs(db: Kysely<Database>, txids: readonly Buffer[]): Promise<(ConfirmedTxRow | undefined)[]> {
  const r = await sql<ConfirmedTxRow & { i: number }>`
    SELECT q.i::int4 AS i, c.*
    FROM unnest(${txids}::bytea[]) WITH ORDINALITY AS q(txid, i)
    CROSS JOIN LATERAL (
      SELECT ${confirmedTxColumns}
      FROM ${txRowsByTxid(sql.ref('q.txid'))} t JOIN blocks b ON b.height = ${sqlTxNumHeight(sql.ref('t.tx_num'))}) c`.execute(db);
  const out = new Array<ConfirmedTxRow | undefined>(txids.length).fill(undefined);
  for (const { i, ...row } of r.rows) out[i - 1] = row;
  return out;
}

/** Confirmed transactions by tx_num (prevouts of inputs): txid and packed outputs. */
export async function getTxsByNum(db: Kysely<Database>, nums: readonly bigint[]): Promise<Map<bigint, { txid: Buffer; outs: Buffer }>> {
  const out = new Map<bigint, { txid: Buffer; outs: Buffer }>();
  if (nums.length === 0) return out;
  const r = await sql<{ tx_num: bigint; txid: Buffer; outs: Buffer }>`
    SELECT t.tx_num, t.txid, t.outs FROM ${txRowsAtNums(nums)} t`.execute(db);
  for (const row of r.rows) out.set(row.tx_num, { txid: row.txid, outs: row.outs });
  return out;
}

/** Confirmed transactions by txid: tx_num and packed outputs (prevouts of a mempool tx's inputs). */
export async function getTxsByTxid(db: Kysely<Database>, txids: readonly Buffer[]): Promise<Map<string, { tx_num: bigint; outs: Buffer }>> {
  const out = new Map<string, { tx_num: bigint; outs: Buffer }>();
  if (txids.length === 0) return out;
  const r = await sql<{ tx_num: bigint; txid: Buffer; outs: Buffer }>`
    SELECT t.tx_num, t.txid, t.outs FROM ${txRowsByTxids(txids)} t`.execute(db);
  for (const row of r.rows) out.set(row.txid.toString('hex'), { tx_num: row.tx_num, outs: row.outs });
  return out;
}

export type MempoolTxRow = { txid: Buffer; raw: Buffer; first_seen: Date; assets: Buffer | null };

export async function findMempoolTx(db: Kysely<Database>, txid: Buffer): Promise<MempoolTxRow | undefined> {
  return db.selectFrom('mempool_txs').select(['txid', 'raw', 'first_seen', 'assets']).where('txid', '=', txid).executeTakeFirst();
}

/**
 * Open Assets colors (src/db/asset-colors.ts) of confirmed transactions by tx_num and of mempool
 * ones by txid (hex, internal order); only colored transactions are in the maps.
 */
export async function getAssetColors(
  db: Kysely<Database>,
  q: { txNums: readonly bigint[]; txids: readonly Buffer[] },
): Promise<{ byNum: Map<bigint, Buffer>; byTxid: Map<string, Buffer> }> {
  const byNum = new Map<bigint, Buffer>();
  const byTxid = new Map<string, Buffer>();
  const [confirmed, mempool] = await Promise.all([
    q.txNums.length === 0
      ? { rows: [] }
      : sql<{
          tx_num: bigint;
          colors: Buffer;
        }>`SELECT tx_num, colors FROM asset_txs WHERE tx_num = ANY(${[...new Set(q.txNums)].map(String)}::int8[])`.execute(db),
    q.txids.length === 0
      ? { rows: [] }
      : sql<{
          txid: Buffer;
          assets: Buffer;
        }>`SELECT txid, assets FROM mempool_txs WHERE txid = ANY(${q.txids}::bytea[]) AND assets IS NOT NULL`.execute(db),
  ]);
  for (const r of confirmed.rows) byNum.set(r.tx_num, r.colors);
  for (const r of mempool.rows) byTxid.set(r.txid.toString('hex'), r.assets);
  return { byNum, byTxid };
}

type Outpoint = { txid: Buffer; vout: number };
type OutputsByOutpoint = Map<string, { value: bigint; script: Buffer }>;

/** Value and script of each of `outpoints` that `join` (of `q(txid, vout)`, as `o`) finds, by `txid hex:vout`. */
async function outputsAt(db: Kysely<Database>, outpoints: readonly Outpoint[], join: RawBuilder<unknown>): Promise<OutputsByOutpoint> {
  const out: OutputsByOutpoint = new Map();
  if (outpoints.length === 0) return out;
  const r = await sql<{ txid: Buffer; vout: number; value: bigint; script: Buffer }>`
    SELECT q.txid, q.vout, o.value, o.script
    FROM unnest(${outpoints.map((o) => o.txid)}::bytea[], ${outpoints.map((o) => o.vout)}::int4[]) AS q(txid, vout)
    ${join}`.execute(db);
  for (const row of r.rows) out.set(`${row.txid.toString('hex')}:${row.vout}`, { value: row.value, script: row.script });
  return out;
}

/** Outputs of mempool transactions by outpoint (prevouts of a mempool tx spending another). */
export const getMempoolOutputs = (db: Kysely<Database>, outpoints: readonly Outpoint[]): Promise<OutputsByOutpoint> =>
  outputsAt(db, outpoints, sql`JOIN mempool_outputs o ON o.txid = q.txid AND o.vout = q.vout`);

/**
 * Confirmed outputs no block has spent (`utxos`), by outpoint: the confirmed prevouts of a
 * mempool transaction, which are unspent while it is in the mempool.
 */
export const getUnspentOutputs = (db: Kysely<Database>, outpoints: readonly Outpoint[]): Promise<OutputsByOutpoint> =>
  outputsAt(db, outpoints, sql`JOIN LATERAL (${unspentAt(sql.ref('q.txid'), sql.ref('q.vout'))}) o ON true`);

/**
 * Which outputs of transaction `txid` are still unspent by any block (present in `utxos`) and
 * which are spent by a mempool transaction.
 */
export async function getOutputSpendState(
  db: Kysely<Database>,
  txid: Buffer,
): Promise<{ unspent: Set<number>; mempoolSpent: Set<number> }> {
  const r = await sql<{ vout: number; src: string }>`
    SELECT u.vout, 'u' AS src FROM ${txRowsByTxid(txid)} t JOIN utxos u ON u.tx_num = t.tx_num
    UNION ALL
    SELECT prev_vout AS vout, 's' AS src FROM mempool_spends WHERE prev_txid = ${txid}`.execute(db);
  const unspent = new Set<number>();
  const mempoolSpent = new Set<number>();
  for (const row of r.rows) (row.src === 'u' ? unspent : mempoolSpent).add(row.vout);
  return { unspent, mempoolSpent };
}

/** Does a block or mempool transaction already have this txid? (for idempotent broadcast) */
export async function txKnown(db: Kysely<Database>, txid: Buffer): Promise<'confirmed' | 'mempool' | undefined> {
  const r = await sql<{ where: string }>`
    SELECT 'confirmed' AS where FROM ${txRowsByTxid(txid)} t
    UNION ALL SELECT 'mempool' FROM mempool_txs WHERE txid = ${txid} LIMIT 1`.execute(db);
  return r.rows[0]?.where as 'confirmed' | 'mempool' | undefined;
}
