/**
 * Chain reads for the Electrum protocol: block headers and hashes by height, where a transaction
 * is (block or mempool), the mempool's fees for the fee histogram, and the chain events of the
 * outbox (`block.connected` / `block.disconnected`, written with every block applied or undone)
 * that tell an Electrum server the tip moved. Hashes are Buffers in internal byte order.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import { txRowsByTxid, txRowsFrom } from '../tx-reads.js';
import { firstTxNum, sqlTxNumHeight } from '../tx-num.js';

/** The indexed tip with its 80-byte header, or undefined while nothing is indexed. */
export async function readTipHeader(db: Kysely<Database>): Promise<{ height: number; hash: Buffer; header: Buffer } | undefined> {
  const r = await sql<{ height: number; hash: Buffer; header: Buffer }>`
    SELECT b.height, b.hash, b.header FROM chain_tip t JOIN blocks b ON b.height = t.height WHERE t.id = 1`.execute(db);
  return r.rows[0];
}

/** Headers of the main-chain blocks at heights `from` … `from + count - 1` that exist, in order. */
export async function readHeaders(db: Kysely<Database>, from: number, count: number): Promise<Buffer[]> {
  if (count <= 0) return [];
  const r = await sql<{ header: Buffer }>`
    SELECT header FROM blocks WHERE height >= ${from} AND height < ${from + count} ORDER BY height`.execute(db);
  return r.rows.map((x) => x.header);
}

/** Hashes of the main-chain blocks at heights `from` … `to` (inclusive), in order. */
export async function readBlockHashes(db: Kysely<Database>, from: number, to: number): Promise<Buffer[]> {
  const r = await sql<{ hash: Buffer }>`SELECT hash FROM blocks WHERE height >= ${from} AND height <= ${to} ORDER BY height`.execute(db);
  return r.rows.map((x) => x.hash);
}

/** The block at `height` (hash) and its txids in block order, or undefined above the tip. */
export async function readBlockTxids(db: Kysely<Database>, height: number): Promise<{ hash: Buffer; txids: Buffer[] } | undefined> {
  const lo = firstTxNum(height);
  const hi = firstTxNum(height + 1);
  const r = await sql<{ hash: Buffer; txids: Buffer | null }>`
    SELECT b.hash, (SELECT string_agg(t.txid, ''::bytea ORDER BY t.tx_num) FROM ${txRowsFrom(lo, hi)} t) AS txids
      FROM blocks b WHERE b.height = ${height}`.execute(db);
  const row = r.rows[0];
  if (!row) return undefined;
  const txids: Buffer[] = [];
  const all = row.txids ?? Buffer.alloc(0);
  for (let o = 0; o < all.length; o += 32) txids.push(all.subarray(o, o + 32));
  return { hash: row.hash, txids };
}

/** Where a transaction is: in a main-chain block (its hash and height), in the indexed mempool (its raw bytes), or unknown. */
export type TxPlace = { kind: 'block'; blockHash: Buffer; height: number } | { kind: 'mempool'; raw: Buffer } | { kind: 'unknown' };

export async function findTxPlace(db: Kysely<Database>, txid: Buffer): Promise<TxPlace> {
  const r = await sql<{ block_hash: Buffer | null; height: number | null; raw: Buffer | null }>`
    SELECT b.hash AS block_hash, b.height, NULL::bytea AS raw
      FROM ${txRowsByTxid(txid)} t JOIN blocks b ON b.height = ${sqlTxNumHeight(sql.ref('t.tx_num'))}
    UNION ALL
    SELECT NULL, NULL, raw FROM mempool_txs WHERE txid = ${txid}
    LIMIT 1`.execute(db);
  const row = r.rows[0];
  if (!row) return { kind: 'unknown' };
  if (row.raw) return { kind: 'mempool', raw: row.raw };
  return { kind: 'block', blockHash: row.block_hash!, height: row.height! };
}

/** Fee (sat) and virtual size of every indexed mempool transaction whose fee is known. */
export async function readMempoolFees(db: Kysely<Database>): Promise<{ fee: bigint; vsize: number }[]> {
  return db.selectFrom('mempool_txs').select(['fee', 'vsize']).where('fee', 'is not', null).execute() as Promise<
    { fee: bigint; vsize: number }[]
  >;
}

/** A chain event of the outbox, or a mempool event with the address keys it touches. */
export type ChainEvent =
  | { seq: bigint; type: 'block.connected' | 'block.disconnected'; height: number; hash: Buffer }
  | { seq: bigint; type: 'mempool.added' | 'mempool.removed'; txid: Buffer; keys: string[]; at: Date };

/** The newest outbox sequence number (0 when empty): a reader starts after it. */
export async function readNewestSeq(db: Kysely<Database>): Promise<bigint> {
  const r = await sql<{ seq: bigint | null }>`SELECT max(seq) AS seq FROM outbox`.execute(db);
  return r.rows[0]?.seq ?? 0n;
}

/**
 * Chain and mempool events with `seq > after`, in order, at most `limit`, and the highest seq
 * read (events of other types included), so the caller can move past them. Every outbox writer
 * takes the ordering lock (src/db/outbox-lock.ts): a later commit never has a smaller seq.
 * `read` counts the rows read (fewer than `limit`: nothing more for now).
 */
export async function readChainEvents(
  db: Kysely<Database>,
  after: bigint,
  limit: number,
): Promise<{ events: ChainEvent[]; upTo: bigint; read: number }> {
  const r = await sql<{
    seq: bigint;
    type: string;
    created_at: Date;
    height: number | null;
    block_hash: Buffer | null;
    txid: Buffer | null;
    data: unknown;
  }>`
    SELECT seq, type, created_at, height, block_hash, txid, CASE WHEN type LIKE 'mempool.%' THEN data END AS data
      FROM outbox WHERE seq > ${after} ORDER BY seq LIMIT ${limit}`.execute(db);
  let upTo = after;
  const events: ChainEvent[] = [];
  for (const row of r.rows) {
    upTo = row.seq;
    if ((row.type === 'block.connected' || row.type === 'block.disconnected') && row.height !== null && row.block_hash) {
      events.push({ seq: row.seq, type: row.type, height: row.height, hash: row.block_hash });
    } else if ((row.type === 'mempool.added' || row.type === 'mempool.removed') && row.txid) {
      const keys = (row.data as { keys?: unknown } | null)?.keys;
      events.push({
        seq: row.seq,
        type: row.type,
        txid: row.txid,
        keys: Array.isArray(keys) ? keys.filter((k): k is string => typeof k === 'string') : [],
        at: row.created_at,
      });
    }
  }
  return { events, upTo, read: r.rows.length };
}
