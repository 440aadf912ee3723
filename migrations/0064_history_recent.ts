/**
 * `history_recent`: the chunk rows of the newest blocks, apart from `history` (docs/lean-layout.md
 * "The newest blocks' chunk rows apart"; indexer/writer/history-recent.ts): the same columns and
 * key (src/db/chain-indexes.ts), the chain change trigger of 0019 (a held history page is read
 * from it too). Created empty: an existing index's chunk rows stay where they are. `down` moves
 * its rows into `history` first.
 */
import { sql, type Kysely } from 'kysely';
import { chainIndex, createIndexSql } from '../src/db/chain-indexes.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE history_recent (
      addr_key     uuid NOT NULL,
      first_tx_num int8 NOT NULL,
      rest         bytea NOT NULL
    )`.execute(db);
  await sql.raw(createIndexSql(chainIndex('history_recent_pkey'))).execute(db);
  await sql`CREATE TRIGGER history_recent_chain_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON history_recent
      FOR EACH STATEMENT EXECUTE FUNCTION blockwire_chain_notify()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`INSERT INTO history (addr_key, first_tx_num, rest) SELECT * FROM history_recent ORDER BY addr_key, first_tx_num`.execute(db);
  await sql`DROP TABLE history_recent`.execute(db);
}
