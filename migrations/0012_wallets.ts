/**
 * Wallets (docs/wallets.md): a key's output descriptors and the addresses derived from them.
 * - `wallets`: one per POST /wallets, soft-deleted (its id stays taken).
 * - `wallet_chains`: one per single-path descriptor a wallet tracks (a multipath `<0;1>` one is
 *   two chains: receive and change): how far it is derived and the highest index used or
 *   reserved; derivation keeps `derived = used_max + 1 + gap_limit`.
 * - `wallet_addresses`: every derived address with its addr_key, text, path and reservation.
 *   Written by the API (creation, reservation) and by the indexer (gap extension when a block or
 *   mempool transaction uses an address), both under the wallet lock (src/db/wallet-lock.ts).
 * - subscriptions may name a wallet (`kind = 'wallet'`), and `watched_addresses` then includes
 *   every address of the wallet, so the indexer emits their events as for watched addresses.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE wallets (
      id          text PRIMARY KEY,
      key_id      int8 NOT NULL REFERENCES api_keys (id),
      network     text NOT NULL,
      descriptors text[] NOT NULL,
      gap_limit   int4 NOT NULL CHECK (gap_limit BETWEEN 1 AND 1000),
      created_at  timestamptz NOT NULL DEFAULT now(),
      deleted_at  timestamptz
    );
    CREATE INDEX wallets_key ON wallets (key_id) WHERE deleted_at IS NULL;

    CREATE TABLE wallet_chains (
      wallet_id  text NOT NULL REFERENCES wallets (id),
      chain      int2 NOT NULL,
      descriptor text NOT NULL,
      change     boolean NOT NULL,
      gap_limit  int4 NOT NULL,
      derived    int4 NOT NULL DEFAULT 0,
      used_max   int4 NOT NULL DEFAULT -1,
      PRIMARY KEY (wallet_id, chain)
    );

    CREATE TABLE wallet_addresses (
      wallet_id   text NOT NULL,
      chain       int2 NOT NULL,
      idx         int4 NOT NULL,
      addr_key    uuid NOT NULL,
      address     text NOT NULL,
      path        text NOT NULL,
      reserved_at timestamptz,
      PRIMARY KEY (wallet_id, chain, idx),
      FOREIGN KEY (wallet_id, chain) REFERENCES wallet_chains (wallet_id, chain) ON DELETE CASCADE
    );
    CREATE INDEX wallet_addresses_key ON wallet_addresses (addr_key);

    ALTER TABLE subscriptions ADD COLUMN wallet_id text REFERENCES wallets (id);
    ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_kind_check;
    ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_kind_check CHECK (kind IN ('address', 'chain', 'wallet'));
    ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_wallet_check CHECK ((kind = 'wallet') = (wallet_id IS NOT NULL));
    CREATE INDEX subscriptions_wallet ON subscriptions (wallet_id) WHERE deleted_at IS NULL;

    CREATE OR REPLACE VIEW watched_addresses AS
      SELECT addr_key, max(confirmations) AS confirmations, min(address) AS address
      FROM (
        SELECT addr_key, confirmations, address FROM subscriptions
         WHERE kind = 'address' AND deleted_at IS NULL
        UNION ALL
        SELECT wa.addr_key, s.confirmations, wa.address
          FROM subscriptions s JOIN wallet_addresses wa ON wa.wallet_id = s.wallet_id
         WHERE s.kind = 'wallet' AND s.deleted_at IS NULL
      ) w
      GROUP BY addr_key;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE VIEW watched_addresses AS
      SELECT addr_key, max(confirmations) AS confirmations, min(address) AS address
      FROM subscriptions
      WHERE kind = 'address' AND deleted_at IS NULL
      GROUP BY addr_key;
    DELETE FROM subscriptions WHERE kind = 'wallet';
    DROP INDEX subscriptions_wallet;
    ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_wallet_check;
    ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_kind_check;
    ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_kind_check CHECK (kind IN ('address', 'chain'));
    ALTER TABLE subscriptions DROP COLUMN wallet_id;
    DROP TABLE wallet_addresses, wallet_chains, wallets;
  `.execute(db);
}
