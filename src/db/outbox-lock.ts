/**
 * The outbox ordering lock (docs/schema.md "Ordering rule"): every transaction that inserts
 * into `outbox` takes this transaction-scoped advisory lock first, so `seq` values become visible
 * in increasing order and a relay reading `seq > cursor` never skips a late commit.
 * @module
 */
import type { Kysely, Transaction } from 'kysely';
import { takeXactLock } from './xact-lock.js';

/** Arbitrary constant: "BWOUTBOX" as ASCII, truncated to a signed int8. */
export const OUTBOX_LOCK = 0x42574f5554424f58n;

/** Takes the outbox lock for the rest of `trx` (once per transaction: several blocks may share one). */
export async function lockOutbox<DB>(trx: Transaction<DB> | Kysely<DB>): Promise<void> {
  await takeXactLock(trx, OUTBOX_LOCK);
}
