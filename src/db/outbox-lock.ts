/**
 * The outbox ordering lock (docs/schema.md "Ordering rule"): every transaction that inserts
 * into `outbox` takes this transaction-scoped advisory lock first, so `seq` values become visible
 * in increasing order and a relay reading `seq > cursor` never skips a late commit.
 * @module
 */
import { sql, type Kysely, type Transaction } from 'kysely';

/** Arbitrary constant: "BWOUTBOX" as ASCII, truncated to a signed int8. */
export const OUTBOX_LOCK = 0x42574f5554424f58n;

/** Takes the outbox lock for the rest of `trx`. */
export async function lockOutbox<DB>(trx: Transaction<DB> | Kysely<DB>): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${OUTBOX_LOCK.toString()}::int8)`.execute(trx);
}
