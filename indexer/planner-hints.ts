/**
 * Planner hints for the indexer's per-block and mempool transactions: `preferIndexLookups` turns
 * hash and merge joins off for the rest of the transaction (SET LOCAL). Every per-block statement
 * joins a few thousand keys (an unnest of the block's outpoints, addresses…) to a large table;
 * PostgreSQL's estimate puts a hash join over a sequential scan of the whole table (every unspent
 * output, every balance) close to, and often below, the index lookups. At a million rows that scan
 * made deleting 8,000 spent outputs ~0.9 s instead of ~0.13 s; the planner only turns to the index
 * once the table dwarfs the keys. The bulk mode and the API keep the planner's choice.
 * test/integration/indexer/keyed-plans.test.ts checks the plans with and without the hints.
 * @module
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../src/db/schema.js';

/** Pins the transaction's join plans to index lookups (until it ends). */
export async function preferIndexLookups(trx: Transaction<Database> | Kysely<Database>): Promise<void> {
  await sql`SELECT set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`.execute(trx);
}
