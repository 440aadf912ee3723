/**
 * Stamp events in the outbox, one row per stamp, for the API key that made it (`key_id`):
 * `stamp.confirmed` when the transaction carrying it enters a block of the index,
 * `stamp.unconfirmed` when that block leaves the main chain (reorg). The tracker writes them in
 * the same Postgres transaction as the state change they report, after taking the outbox lock
 * (src/db/outbox-lock.ts), so none is lost or repeated by a crash. docs/events.md "Stamps".
 * @module
 */
import { sql } from 'kysely';
import { hashToHex } from '../src/bitcoin/hash.js';
import { lockOutbox } from '../src/db/outbox-lock.js';
import { stampsOfTx } from './ledger.js';
import type { StampTrx } from './tables.js';

export type StampEventType = 'stamp.confirmed' | 'stamp.unconfirmed';

/** Appends one event per stamp of `txid`; returns how many. */
export async function appendStampEvents(
  trx: StampTrx,
  type: StampEventType,
  txid: Buffer,
  block: { hash: Buffer; height: number } | null,
  confirmations: number,
): Promise<number> {
  const stamps = await stampsOfTx(trx, txid);
  if (stamps.length === 0) return 0;
  await lockOutbox(trx);
  const txHex = hashToHex(txid);
  const data = stamps.map((s) => JSON.stringify({ stampid: `${txHex}-${s.vout}`, hash: s.hash.toString('hex') }));
  // The outbox `type` column is text: `stamp.unconfirmed` is stored as is (streams decode it).
  await sql`
    INSERT INTO outbox (type, key_id, txid, block_hash, height, confirmations, data)
    SELECT ${type}, k, ${txid}, ${block?.hash ?? null}, ${block?.height ?? null}, ${confirmations}, d::jsonb
    FROM unnest(${stamps.map((s) => s.key_id.toString())}::int8[], ${data}::text[]) AS x(k, d)`.execute(trx);
  return stamps.length;
}
