/**
 * Tenancy: API keys (stored as SHA-256 digests), delivery targets (hooks) and subscriptions,
 * and the `watched_addresses` view through which the indexer learns which addresses need
 * per-address events (the indexer reads the view, never the API's tables).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE api_keys (
      id          bigserial PRIMARY KEY,
      name        text NOT NULL,
      key_hash    bytea NOT NULL UNIQUE,
      prefix      text NOT NULL,
      scopes      text[] NOT NULL DEFAULT ARRAY['read','write'],
      rate_limit  int4,
      created_at  timestamptz NOT NULL DEFAULT now(),
      revoked_at  timestamptz
    );

    CREATE TABLE hooks (
      id          text PRIMARY KEY,
      key_id      int8 NOT NULL REFERENCES api_keys (id),
      type        text NOT NULL CHECK (type IN ('http', 'sns')),
      url         text,
      secret      text,
      topic_arn   text,
      region      text,
      disabled_at timestamptz,
      disabled_reason text,
      created_at  timestamptz NOT NULL DEFAULT now(),
      deleted_at  timestamptz
    );
    CREATE INDEX hooks_key ON hooks (key_id) WHERE deleted_at IS NULL;

    CREATE TABLE subscriptions (
      id            text PRIMARY KEY,
      key_id        int8 NOT NULL REFERENCES api_keys (id),
      kind          text NOT NULL CHECK (kind IN ('address', 'chain')),
      address       text,
      addr_key      uuid,
      hook_id       text REFERENCES hooks (id),
      confirmations int4 NOT NULL DEFAULT 6 CHECK (confirmations BETWEEN 1 AND 100),
      created_at    timestamptz NOT NULL DEFAULT now(),
      deleted_at    timestamptz,
      CHECK ((kind = 'address') = (addr_key IS NOT NULL AND address IS NOT NULL))
    );
    CREATE INDEX subscriptions_key ON subscriptions (key_id) WHERE deleted_at IS NULL;
    CREATE INDEX subscriptions_addr ON subscriptions (addr_key) WHERE deleted_at IS NULL;

    CREATE VIEW watched_addresses AS
      SELECT addr_key, max(confirmations) AS confirmations
      FROM subscriptions
      WHERE kind = 'address' AND deleted_at IS NULL
      GROUP BY addr_key;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP VIEW watched_addresses; DROP TABLE subscriptions, hooks, api_keys;`.execute(db);
}
