/**
 * Chain tables: blocks, transactions (outputs and input references packed per row), unspent
 * outputs, balances, address history (chunked), the mempool, the tip, sync checkpoints and the
 * event outbox. docs/schema.md explains every table, its key, its writer and its undo rule.
 * Only the indexer writes these tables (one Postgres transaction per block).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE blocks (
      height     int4 PRIMARY KEY,
      hash       bytea NOT NULL,
      prev_hash  bytea NOT NULL,
      header     bytea NOT NULL,
      time       int4 NOT NULL,
      tx_count   int4 NOT NULL,
      size       int4 NOT NULL,
      weight     int4 NOT NULL
    );
    CREATE UNIQUE INDEX blocks_hash ON blocks (hash);

    CREATE TABLE txs (
      tx_num     int8 PRIMARY KEY,
      txid       bytea NOT NULL,
      outs       bytea NOT NULL,
      ins        bytea NOT NULL,
      first_seen timestamptz
    );
    CREATE INDEX txs_txid ON txs USING hash (txid);

    CREATE TABLE utxos (
      txid       bytea NOT NULL,
      vout       int4 NOT NULL,
      tx_num     int8 NOT NULL,
      addr_key   uuid,
      value      int8 NOT NULL,
      script     bytea NOT NULL,
      PRIMARY KEY (txid, vout)
    );
    CREATE INDEX utxos_addr ON utxos (addr_key, tx_num DESC, vout DESC) WHERE addr_key IS NOT NULL;

    CREATE TABLE balances (
      addr_key   uuid PRIMARY KEY,
      balance    int8 NOT NULL,
      utxo_count int4 NOT NULL
    );

    CREATE TABLE history (
      addr_key     uuid NOT NULL,
      first_tx_num int8 NOT NULL,
      last_tx_num  int8 NOT NULL,
      n            int4 NOT NULL,
      entries      bytea NOT NULL,
      PRIMARY KEY (addr_key, first_tx_num)
    );

    CREATE TABLE mempool_txs (
      txid        bytea PRIMARY KEY,
      raw         bytea NOT NULL,
      first_seen  timestamptz NOT NULL,
      fee         int8,
      vsize       int4 NOT NULL
    );
    CREATE TABLE mempool_outputs (
      txid      bytea NOT NULL,
      vout      int4 NOT NULL,
      addr_key  uuid,
      value     int8 NOT NULL,
      script    bytea NOT NULL,
      PRIMARY KEY (txid, vout)
    );
    CREATE INDEX mempool_outputs_addr ON mempool_outputs (addr_key) WHERE addr_key IS NOT NULL;
    CREATE TABLE mempool_spends (
      prev_txid  bytea NOT NULL,
      prev_vout  int4 NOT NULL,
      txid       bytea NOT NULL,
      PRIMARY KEY (prev_txid, prev_vout)
    );
    CREATE INDEX mempool_spends_txid ON mempool_spends (txid);
    CREATE TABLE mempool_addresses (
      addr_key  uuid NOT NULL,
      txid      bytea NOT NULL,
      received  int8 NOT NULL,
      sent      int8 NOT NULL,
      PRIMARY KEY (addr_key, txid)
    );
    CREATE INDEX mempool_addresses_txid ON mempool_addresses (txid);

    CREATE TABLE chain_tip (
      id         int2 PRIMARY KEY DEFAULT 1 CHECK (id = 1),
      height     int4 NOT NULL,
      hash       bytea,
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    INSERT INTO chain_tip (id, height, hash) VALUES (1, -1, NULL);

    CREATE TABLE sync_state (
      key        text PRIMARY KEY,
      value      jsonb NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE outbox (
      seq           bigserial PRIMARY KEY,
      created_at    timestamptz NOT NULL DEFAULT now(),
      type          text NOT NULL,
      key_id        int8,
      addr_key      uuid,
      address       text,
      txid          bytea,
      block_hash    bytea,
      height        int4,
      confirmations int4,
      received      int8,
      sent          int8,
      replaced_by   bytea,
      data          jsonb
    );
    CREATE INDEX outbox_created_at ON outbox (created_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE outbox, sync_state, chain_tip, mempool_addresses, mempool_spends, mempool_outputs,
      mempool_txs, history, balances, utxos, txs, blocks;
  `.execute(db);
}
