/**
 * Block reads for the REST API: a main-chain block by hash or height with its header and median
 * time past, the recent blocks, a block's transactions by position, and what a Merkle proof
 * needs (the block's txids and header). Each is one statement that also reads the indexed tip,
 * so an answer is of one snapshot. Hashes are Buffers in internal byte order.
 * @module
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { firstTxNum, sqlFirstTxNum, sqlTxNumHeight, sqlTxNumPosition } from '../../src/db/tx-num.js';
import { txRowsByTxid, txRowsFrom } from '../../src/db/tx-reads.js';
import { TIP_COLUMNS } from './chain.js';

export type BlockHeaderRow = {
  height: number;
  hash: Buffer;
  prev_hash: Buffer;
  header: Buffer;
  time: number;
  tx_count: number;
  size: number;
  weight: number;
  /** Core's median time past: the middle of the sorted times of this block and the ten before it. */
  median_time: number;
  next_hash: Buffer | null;
  tip_height: number;
};

/** MTP as GetMedianTimePast takes it: element n/2 of the sorted times of up to 11 blocks. */
const MEDIAN_TIME = (height: RawBuilder<unknown>) => sql<number>`(SELECT (array_agg(m.time ORDER BY m.time))[count(*) / 2 + 1]
      FROM blocks m WHERE m.height BETWEEN ${height} - 10 AND ${height})`;

const BLOCK_COLUMNS = sql`b.height, b.hash, b.prev_hash, b.header, b.time, b.tx_count, b.size, b.weight,
  ${MEDIAN_TIME(sql.ref('b.height'))} AS median_time,
  (SELECT n.hash FROM blocks n WHERE n.height = b.height + 1) AS next_hash,
  (SELECT height FROM chain_tip WHERE id = 1) AS tip_height`;

/** A main-chain block by hash or height. */
export async function findBlockHeader(
  db: Kysely<Database>,
  by: { hash: Buffer } | { height: number },
): Promise<BlockHeaderRow | undefined> {
  const where = 'hash' in by ? sql`b.hash = ${by.hash}` : sql`b.height = ${by.height}`;
  const r = await sql<BlockHeaderRow>`SELECT ${BLOCK_COLUMNS} FROM blocks b WHERE ${where}`.execute(db);
  return r.rows[0];
}

/** Up to `limit` main-chain blocks at or below `fromHeight` (the tip when null), newest first. */
export async function listRecentBlocks(
  db: Kysely<Database>,
  fromHeight: number | null,
  limit: number,
): Promise<{ tipHeight: number; blocks: BlockHeaderRow[] }> {
  const from = fromHeight === null ? sql`(SELECT height FROM chain_tip WHERE id = 1)` : sql`${fromHeight}::int4`;
  const r = await sql<BlockHeaderRow>`
    SELECT ${BLOCK_COLUMNS} FROM blocks b WHERE b.height <= ${from} ORDER BY b.height DESC LIMIT ${limit}`.execute(db);
  const tip =
    r.rows[0]?.tip_height ?? (await db.selectFrom('chain_tip').select('height').where('id', '=', 1).executeTakeFirst())?.height ?? -1;
  return { tipHeight: tip, blocks: r.rows };
}

export type MerkleData = {
  height: number;
  /** The transaction's position in its block. */
  pos: number;
  header: Buffer;
  block_hash: Buffer;
  /** Every txid of the block in block order, 32 bytes each. */
  txids: Buffer;
  tip_height: number;
  tip_hash: Buffer | null;
};

/**
 * What the inclusion proof of confirmed transaction `txid` is made of, in one statement: its
 * block's header and every txid of the block (an index range of one block's rows).
 */
export async function getMerkleData(db: Kysely<Database>, txid: Buffer): Promise<MerkleData | undefined> {
  const r = await sql<MerkleData>`
    SELECT ${sqlTxNumHeight(sql.ref('t.tx_num'))} AS height, ${sqlTxNumPosition(sql.ref('t.tx_num'))} AS pos, b.header, b.hash AS block_hash,
           (SELECT string_agg(a.txid, ''::bytea ORDER BY a.tx_num)
              FROM ${txRowsFrom(sqlFirstTxNum(sqlTxNumHeight(sql.ref('t.tx_num'))), sqlFirstTxNum(sql`${sqlTxNumHeight(sql.ref('t.tx_num'))} + 1`))} a) AS txids,
           ${TIP_COLUMNS}
      FROM ${txRowsByTxid(txid)} t JOIN blocks b ON b.height = ${sqlTxNumHeight(sql.ref('t.tx_num'))}
     ORDER BY t.tx_num DESC LIMIT 1`.execute(db);
  return r.rows[0];
}

export type BlockTxRow = {
  tx_num: bigint;
  txid: Buffer;
  outs: Buffer;
  ins: Buffer;
  first_seen: Date | null;
  unspent_vouts: number[];
  mempool_spent_vouts: number[];
};

/** Transactions of the block at `height` from position `fromPos` on, at most `limit`, in block order. */
export async function listBlockTxs(db: Kysely<Database>, height: number, fromPos: number, limit: number): Promise<BlockTxRow[]> {
  const r = await sql<BlockTxRow>`
    SELECT t.tx_num, t.txid, t.outs, t.ins, t.first_seen,
           ARRAY(SELECT vout FROM utxos WHERE tx_num = t.tx_num) AS unspent_vouts,
           ARRAY(SELECT prev_vout FROM mempool_spends WHERE prev_txid = t.txid) AS mempool_spent_vouts
      FROM ${txRowsFrom(firstTxNum(height) + BigInt(fromPos), firstTxNum(height + 1))} t
     ORDER BY t.tx_num LIMIT ${limit}`.execute(db);
  return r.rows;
}

/**
 * Where a transaction is: its block (hash, height, position) when confirmed, its raw bytes when
 * in the mempool; and the indexed tip the statement saw.
 */
export type TxPlace = (
  { block_hash: Buffer; height: number; pos: number; raw: null } | { block_hash: null; height: null; pos: null; raw: Buffer }
) & {
  tip_height: number;
  tip_hash: Buffer | null;
};

/** Finds a confirmed (latest, for BIP30's duplicates) or mempool transaction in one statement. */
export async function findTxPlace(db: Kysely<Database>, txid: Buffer): Promise<TxPlace | undefined> {
  const r = await sql<TxPlace>`
    SELECT p.*, ${TIP_COLUMNS} FROM (
      (SELECT b.hash AS block_hash, b.height, ${sqlTxNumPosition(sql.ref('t.tx_num'))} AS pos, NULL::bytea AS raw
         FROM ${txRowsByTxid(txid)} t JOIN blocks b ON b.height = ${sqlTxNumHeight(sql.ref('t.tx_num'))}
        ORDER BY t.tx_num DESC LIMIT 1)
      UNION ALL
      (SELECT NULL, NULL, NULL, raw FROM mempool_txs WHERE txid = ${txid})
      LIMIT 1) p`.execute(db);
  const row = r.rows[0];
  return row && { ...row, tip_height: row.tip_height ?? -1 };
}
