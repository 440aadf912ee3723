/**
 * `txs` found by txid through a B-tree on the txid's first 8 bytes as an int8 (`txid_key`)
 * instead of a hash index on the whole txid: 22 instead of 36 bytes per transaction (on the
 * 20,000-block bench corpus 1,331 against 2,138 MB, built in 30 against 62 s). Lookups compare
 * the full txid on the row (`txidIs`/`txidIn` in src/db/txid-key.ts); txids are hashes, so
 * rows sharing a key are rare and only cost a row read.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION txid_key(txid bytea) RETURNS int8
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
      AS $$ SELECT ('x' || encode(substring(txid FROM 1 FOR 8), 'hex'))::bit(64)::int8 $$;
    CREATE INDEX txs_txid_key ON txs (txid_key(txid));
    DROP INDEX IF EXISTS txs_txid;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE INDEX txs_txid ON txs USING hash (txid);
    DROP INDEX IF EXISTS txs_txid_key;
    DROP FUNCTION txid_key(bytea);
  `.execute(db);
}
