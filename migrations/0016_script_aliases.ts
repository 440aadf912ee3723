/**
 * Script aliases: the index keeps a P2PK output under its key's P2PKH address key and a bare
 * multisig output under each of its keys' P2PKH address keys, so the key of the output's own
 * script (the first 16 bytes of its SHA-256: what an Electrum script hash names) finds nothing.
 * `script_aliases` maps that own key to the address key the outputs are kept under. A row is a
 * function of the script alone, so it is never wrong and never removed (an alias whose outputs a
 * reorg undid leads to a key where the exact per-script reads find nothing). `keyed`: the
 * outputs carry `addr_key` in utxos/mempool_outputs (P2PK); bare multisig outputs do not (they
 * count in no balance) and are found through the key's history.
 *
 * Backfill: the P2PK outputs already unspent or in the mempool (their rows hold the script and
 * the key). The history of P2PK outputs spent before this migration, and bare multisig outputs,
 * are aliased only when the index is built again (docs/electrum.md).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE script_aliases (
      script_key uuid PRIMARY KEY,
      addr_key   uuid NOT NULL,
      keyed      boolean NOT NULL
    );
    INSERT INTO script_aliases (script_key, addr_key, keyed)
    SELECT DISTINCT encode(substring(sha256(script) FROM 1 FOR 16), 'hex')::uuid, addr_key, true
      FROM (SELECT script, addr_key FROM utxos UNION ALL SELECT script, addr_key FROM mempool_outputs) o
     WHERE addr_key IS NOT NULL
       AND ((length(script) = 35 AND get_byte(script, 0) = 33) OR (length(script) = 67 AND get_byte(script, 0) = 65))
       AND get_byte(script, length(script) - 1) = 172
    ON CONFLICT DO NOTHING;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE script_aliases`.execute(db);
}
