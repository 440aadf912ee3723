/**
 * `utxos` keyed by `(tx_num, vout)` instead of `(txid, vout)`. tx_num is chain order, so a
 * block's new outputs append at the right edge of the key instead of landing on a random leaf
 * each (a 4,000-transaction block writes ~8,000 of them); the key's entries shrink from 36 to 12
 * bytes. Readers that start from a txid find its tx_num through `txs_txid_key` first
 * (src/db/txid-key.ts `unspentAt`).
 * Both keys come from the chain tables' one set of definitions (src/db/chain-indexes.ts), which
 * the bulk finish builds too: the utxos key is rebuilt to it, and the txs key takes its fill
 * factor (100: the bulk finish built it full, the per-block path had it at the default 90; the
 * setting only governs pages split from now on, so no rebuild).
 * During a bulk sync (keys dropped until its finish, which builds them from the same
 * definitions) only the old utxos key's absence is ensured.
 */
import { sql, type Kysely } from 'kysely';
import { chainIndex, createIndexSql, dropIndexSql } from '../src/db/chain-indexes.js';

const bulkActive = async (db: Kysely<unknown>) =>
  (
    await sql<{
      active: boolean;
    }>`SELECT coalesce((value->>'active')::boolean, false) AS active FROM sync_state WHERE key = 'bulk'`.execute(db)
  ).rows[0]?.active === true;

const UTXOS_KEY = chainIndex('utxos_pkey');
const TXS_KEY = chainIndex('txs_pkey');

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql.raw(dropIndexSql(UTXOS_KEY)).execute(db);
  if (await bulkActive(db)) return;
  await sql.raw(createIndexSql(UTXOS_KEY)).execute(db);
  await sql.raw(`ALTER INDEX ${TXS_KEY.name} SET (${TXS_KEY.with})`).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(dropIndexSql(UTXOS_KEY)).execute(db);
  if (await bulkActive(db)) return;
  await sql`ALTER TABLE utxos ADD PRIMARY KEY (txid, vout)`.execute(db);
  await sql.raw(`ALTER INDEX ${TXS_KEY.name} RESET (fillfactor)`).execute(db);
}
