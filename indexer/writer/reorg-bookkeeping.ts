/**
 * Reorg bookkeeping in the write transactions: undo remembers the tx.reorged transactions of
 * watched addresses in `reorged_txs`; apply and the mempool sync forget those whose story goes on;
 * indexer/reorged.ts decides how the rest end and forgets them here (`settleReorged`).
 * @module
 */
import { sql } from 'kysely';
import { decodeIns } from '../../src/db/packed.js';
import { txNumOf } from '../../src/db/tx-num.js';
import { FatalError } from '../../src/errors.js';
import { hashKey, type StoredTx } from './derive.js';
import type { OutboxEvent } from '../events.js';
import { toBuffer } from '../mempool-rows.js';
import type { Trx } from './chain-rows.js';

/**
 * Records the block's tx.reorged transactions in `reorged_txs` (with the outpoints they spend)
 * until indexer/reorged.ts knows their end, and lowers the fork bound of rows already waiting:
 * a conflicting spend in the new branch is at or above the lowest height undone since.
 */
export async function rememberReorged(
  trx: Trx,
  height: number,
  blockTxs: readonly StoredTx[],
  prevTxs: ReadonlyMap<number, Pick<StoredTx, 'txid'>>,
  events: readonly OutboxEvent[],
): Promise<void> {
  await sql`UPDATE reorged_txs SET since_height = ${height} WHERE since_height > ${height}`.execute(trx);
  const reorged = events.filter((e) => e.type === 'tx.reorged');
  if (reorged.length === 0) return;
  const lo = txNumOf(height, 0);
  const byTxid = new Map(blockTxs.map((t) => [hashKey(t.txid), t]));
  const spendsOf = new Map<string, Buffer>();
  for (const e of reorged) {
    const k = hashKey(e.txid!);
    if (spendsOf.has(k)) continue;
    const refs = decodeIns(byTxid.get(k)!.ins);
    const out = Buffer.alloc(refs.length * 36);
    refs.forEach((ref, i) => {
      const n = Number(ref.txNum);
      const prev = n < lo ? prevTxs.get(n) : blockTxs[n - lo];
      if (!prev) throw new FatalError('ERR_INDEX_CORRUPT', `undo of block ${height}: no stored tx at tx_num ${n}`);
      toBuffer(prev.txid).copy(out, i * 36);
      out.writeUInt32LE(ref.vout, i * 36 + 32);
    });
    spendsOf.set(k, out);
  }
  await sql`
    INSERT INTO reorged_txs (txid, addr_key, address, received, sent, spends, since_height)
    SELECT u.*, ${height}::int4 FROM unnest(${reorged.map((e) => toBuffer(e.txid!))}::bytea[], ${reorged.map((e) => e.addrKey!)}::uuid[], ${reorged.map((e) => e.address!)}::text[],
      ${reorged.map((e) => e.received!.toString())}::int8[], ${reorged.map((e) => e.sent!.toString())}::int8[], ${reorged.map((e) => spendsOf.get(hashKey(e.txid!))!)}::bytea[])
      AS u(txid, addr_key, address, received, sent, spends)
    ON CONFLICT (txid, addr_key) DO UPDATE SET address = EXCLUDED.address, received = EXCLUDED.received, sent = EXCLUDED.sent, spends = EXCLUDED.spends,
      since_height = EXCLUDED.since_height, reorged_at = now()`.execute(trx);
}

/**
 * A reorged transaction whose story goes on (a tx.confirmed or tx.unconfirmed among `events`)
 * leaves `reorged_txs` in the same transaction, so that reorged.ts never ends it a second time
 * (say, replaced again after it came back to the mempool and left it).
 */
export async function forgetReorged(trx: Trx, events: readonly OutboxEvent[]): Promise<void> {
  const ids = new Map<string, Buffer>();
  for (const e of events)
    if ((e.type === 'tx.confirmed' || e.type === 'tx.unconfirmed') && e.txid) ids.set(hashKey(e.txid), toBuffer(e.txid));
  await settleReorged(trx, [...ids.values()]);
}

/** Forgets the reorged transactions `txids` (every address's row): their story has ended (reorged.ts) or goes on. */
export async function settleReorged(trx: Trx, txids: readonly Buffer[]): Promise<void> {
  if (txids.length === 0) return;
  await sql`DELETE FROM reorged_txs WHERE txid = ANY(${txids}::bytea[])`.execute(trx);
}
