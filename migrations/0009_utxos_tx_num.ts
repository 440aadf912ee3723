/**
 * `utxos` keyed by `(tx_num, vout)` instead of `(txid, vout)`. tx_num is chain order, so a
 * block's new outputs append at the right edge of the key instead of landing on a random leaf
 * each (a 4,000-transaction block writes ~8,000 of them); the key's entries shrink from 36 to 12
 * bytes. Readers that start from a txid find its tx_num through `txs_txid_key` first
 * (src/db/txid-key.ts `unspentAt`). The key grows only at its right edge (undo re-inserts the
 * few outputs a block spent), so it is built full, like the txs key.
 * During a bulk sync (its keys dropped until its finish, which builds the new one) only the old
 * key's absence is ensured.
 */
import { sql, type Kysely } from 'kysely';

const bulkActive = async (db: Kysely<unknown>) =>
  (await sql<{ active: boolean }>`SELECT coalesce((value->>'active')::boolean, false) AS active FROM sync_state WHERE key = 'bulk'`.execute(db)).rows[0]?.active === true;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE utxos DROP CONSTRAINT IF EXISTS utxos_pkey`.execute(db);
  if (await bulkActive(db)) return;
  await sql`ALTER TABLE utxos ADD PRIMARY KEY (tx_num, vout) WITH (fillfactor = 100)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE utxos DROP CONSTRAINT IF EXISTS utxos_pkey`.execute(db);
  if (await bulkActive(db)) return;
  await sql`ALTER TABLE utxos ADD PRIMARY KEY (txid, vout)`.execute(db);
}
