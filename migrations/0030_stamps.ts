/**
 * Stamping (stamp): stamp requests, the signed transactions that carry them (stored before
 * broadcast, every fee-bump version kept), every stamp id ever issued (old ids of replaced
 * versions keep resolving), coin locks with leases, and the tracker's leadership lease.
 * docs/schema.md "Stamping" and stamp/README.md explain the states. Only stamp writes them.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE stamp_txs (
      txid              bytea PRIMARY KEY,
      family            bytea NOT NULL,
      replaces          bytea,
      raw               bytea NOT NULL,
      fee               int8 NOT NULL,
      vsize             int4 NOT NULL,
      status            text NOT NULL CHECK (status IN ('signed', 'broadcast', 'confirmed', 'replaced', 'abandoned')),
      -- clock_timestamp: transactions stored together keep their order (parents first).
      created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
      broadcast_at      timestamptz,
      last_broadcast_at timestamptz,
      broadcast_height  int4,
      confirmed_height  int4,
      confirmed_hash    bytea,
      last_error        text
    );
    CREATE INDEX stamp_txs_live ON stamp_txs (created_at) WHERE status IN ('signed', 'broadcast');
    CREATE INDEX stamp_txs_family ON stamp_txs (family);
    CREATE INDEX stamp_txs_confirmed ON stamp_txs (confirmed_height) WHERE status = 'confirmed';
    CREATE INDEX stamp_txs_replaces ON stamp_txs (replaces) WHERE replaces IS NOT NULL;

    CREATE TABLE stamps (
      id              bigserial PRIMARY KEY,
      key_id          int8 NOT NULL REFERENCES api_keys (id),
      hash            bytea NOT NULL CHECK (length(hash) = 32),
      idempotency_key text,
      status          text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'placed')),
      txid            bytea,
      vout            int4,
      lease_owner     uuid,
      lease_until     timestamptz,
      created_at      timestamptz NOT NULL DEFAULT now(),
      placed_at       timestamptz,
      CHECK ((status = 'placed') = (txid IS NOT NULL AND vout IS NOT NULL))
    );
    CREATE UNIQUE INDEX stamps_idempotency ON stamps (key_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
    CREATE INDEX stamps_queued ON stamps (id) WHERE status = 'queued';
    CREATE INDEX stamps_txid ON stamps (txid);

    CREATE TABLE stamp_outputs (
      txid      bytea NOT NULL REFERENCES stamp_txs (txid),
      vout      int4 NOT NULL,
      stamp_id  int8 NOT NULL REFERENCES stamps (id),
      PRIMARY KEY (txid, vout)
    );
    CREATE INDEX stamp_outputs_stamp ON stamp_outputs (stamp_id);

    CREATE TABLE stamp_tx_inputs (
      txid       bytea NOT NULL REFERENCES stamp_txs (txid),
      vin        int4 NOT NULL,
      prev_txid  bytea NOT NULL,
      prev_vout  int4 NOT NULL,
      value      int8 NOT NULL,
      script     bytea NOT NULL,
      PRIMARY KEY (txid, vin)
    );
    CREATE INDEX stamp_tx_inputs_prev ON stamp_tx_inputs (prev_txid, prev_vout);

    CREATE TABLE stamp_change (
      txid    bytea NOT NULL REFERENCES stamp_txs (txid),
      vout    int4 NOT NULL,
      value   int8 NOT NULL,
      script  bytea NOT NULL,
      PRIMARY KEY (txid, vout)
    );

    CREATE TABLE stamp_coin_locks (
      txid        bytea NOT NULL,
      vout        int4 NOT NULL,
      owner       uuid NOT NULL,
      family      bytea,
      lease_until timestamptz,
      PRIMARY KEY (txid, vout),
      CHECK ((lease_until IS NULL) = (family IS NOT NULL))
    );
    CREATE INDEX stamp_coin_locks_owner ON stamp_coin_locks (owner);
    CREATE INDEX stamp_coin_locks_family ON stamp_coin_locks (family);

    CREATE TABLE stamp_leader (
      id     int2 PRIMARY KEY DEFAULT 1 CHECK (id = 1),
      owner  uuid,
      until  timestamptz
    );
    INSERT INTO stamp_leader (id) VALUES (1);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE stamp_leader, stamp_coin_locks, stamp_change, stamp_tx_inputs, stamp_outputs, stamps, stamp_txs;`.execute(db);
}
