/**
 * Chain change notifications: a statement trigger on each table a transaction lookup or a held
 * history page reads (`txs`, `blocks`, `history`, `mempool_spends`, `asset_txs`, `chain_tip`)
 * sends `NOTIFY blockwire_chain` (src/db/chain-changes.ts), so that an API process can answer
 * what it holds without reading it again while nothing changed. One notification per statement, and PostgreSQL
 * folds the repeats of one transaction into one: no cost per row.
 */
import { sql, type Kysely } from 'kysely';

const TABLES = ['txs', 'blocks', 'history', 'mempool_spends', 'asset_txs', 'chain_tip'];

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION blockwire_chain_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('blockwire_chain', '');
      RETURN NULL;
    END $$;
  `.execute(db);
  for (const t of TABLES) {
    await sql`CREATE TRIGGER ${sql.raw(`${t}_chain_notify`)} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${sql.table(t)}
      FOR EACH STATEMENT EXECUTE FUNCTION blockwire_chain_notify()`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of TABLES) await sql`DROP TRIGGER ${sql.raw(`${t}_chain_notify`)} ON ${sql.table(t)}`.execute(db);
  await sql`DROP FUNCTION blockwire_chain_notify()`.execute(db);
}
