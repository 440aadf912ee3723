/**
 * Mempool reads for the REST API, from the indexed mempool (`mempool_txs`): every transaction's
 * fee and vsize (the summary and the fee histogram are made from them) and the most recently
 * seen transactions, and the txids of them all. One statement each.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';

/** Fee and vsize of every indexed mempool transaction, highest fee rate first (fee null when neither the node nor the index knew it: last). */
export async function listMempoolFees(db: Kysely<Database>): Promise<{ fee: bigint | null; vsize: number }[]> {
  const r = await sql<{ fee: bigint | null; vsize: number }>`
    SELECT fee, vsize FROM mempool_txs ORDER BY fee::float8 / greatest(vsize, 1) DESC NULLS LAST`.execute(db);
  return r.rows;
}

/** The `limit` mempool transactions seen last, newest first: txid, fee, vsize and raw bytes. */
export async function listRecentMempool(
  db: Kysely<Database>,
  limit: number,
): Promise<{ txid: Buffer; fee: bigint | null; vsize: number; raw: Buffer }[]> {
  return db
    .selectFrom('mempool_txs')
    .select(['txid', 'fee', 'vsize', 'raw'])
    .orderBy('first_seen', 'desc')
    .orderBy('txid', 'desc')
    .limit(limit)
    .execute();
}

/** The txid of every indexed mempool transaction (in no particular order). */
export async function listMempoolTxids(db: Kysely<Database>): Promise<Buffer[]> {
  return (await db.selectFrom('mempool_txs').select('txid').execute()).map((r) => r.txid);
}
