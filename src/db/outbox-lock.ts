/**
 * The outbox ordering lock (docs/schema.md "Ordering rule"): every transaction that inserts
 * into `outbox` takes this transaction-scoped advisory lock first, so `seq` values become visible
 * in increasing order and a relay reading `seq > cursor` never skips a late commit.
 * @module
 */
import { sql, type Kysely, type Transaction } from 'kysely';

/** Arbitrary constant: "BWOUTBOX" as ASCII, truncated to a signed int8. */
export const OUTBOX_LOCK = 0x42574f5554424f58n;

/** Transactions holding the lock: it lasts until they end, so asking again is a round trip for nothing. */
const holding = new WeakSet<object>();

/** Takes the outbox lock for the rest of `trx` (once per transaction: several blocks may share one). */
export async function lockOutbox<DB>(trx: Transaction<DB> | Kysely<DB>): Promise<void> {
  if (holding.has(trx)) return;
  await sql`SELECT pg_advisory_xact_lock(${OUTBOX_LOCK.toString()}::int8)`.execute(trx);
  if (trx.isTransaction) holding.add(trx);
}
