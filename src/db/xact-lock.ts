/**
 * Transaction-scoped advisory locks (`pg_advisory_xact_lock`), each asked for once per
 * transaction: the lock lasts until the transaction ends, so asking again (several blocks may
 * share one transaction) is a round trip for nothing. The outbox and wallet locks are two of them.
 * @module
 */
import { sql, type Kysely, type Transaction } from 'kysely';

/** The keys each open transaction holds. */
const held = new WeakMap<object, Set<bigint>>();

/** Takes the advisory lock `key` for the rest of `trx` (at once, outside a transaction). */
export async function takeXactLock<DB>(trx: Transaction<DB> | Kysely<DB>, key: bigint): Promise<void> {
  const keys = held.get(trx);
  if (keys?.has(key)) return;
  await sql`SELECT pg_advisory_xact_lock(${key.toString()}::int8)`.execute(trx);
  if (!trx.isTransaction) return;
  if (keys) keys.add(key);
  else held.set(trx, new Set([key]));
}
