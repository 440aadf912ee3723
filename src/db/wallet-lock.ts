/**
 * The wallet lock: one transaction-scoped advisory lock held by every writer of wallets' address
 * sets and balance summaries (the API creating or extending a wallet, the indexer writing a
 * block's or a mempool change's balances and rows), from before it reads them until it commits.
 * So a wallet created while a block is applied either is seen by that block's transaction or
 * sees that block's rows: never neither (docs/wallets.md "Gap limit").
 * @module
 */
import type { Kysely, Transaction } from 'kysely';
import { takeXactLock } from './xact-lock.js';
import type { Database } from './schema.js';

/** Arbitrary constant: "BWWALLET" as ASCII, as a signed int8. */
const WALLET_LOCK = 0x425757414c4c4554n;

/** The statement taking the lock, as text (for the bulk path's plain pg client). */
export const LOCK_WALLETS_SQL = `SELECT pg_advisory_xact_lock(${WALLET_LOCK.toString()}::int8)`;

/** Takes the wallet lock for the rest of the transaction (once per transaction: several blocks may share one). */
export async function lockWallets(trx: Kysely<Database> | Transaction<Database>): Promise<void> {
  await takeXactLock(trx, WALLET_LOCK);
}
