/**
 * Streams: the relay's durable cursor and the pruning watermark (`stream_state`), the delivery
 * log of every webhook/SNS delivery with its dead letters (`deliveries`), secret rotation on
 * hooks and the first event a subscription may see (`subscriptions.start_seq`).
 * docs/schema.md "Streams" explains them; streams/README.md says who writes what.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE hooks
      ADD COLUMN previous_secret text,
      ADD COLUMN previous_secret_until timestamptz;

    ALTER TABLE subscriptions ADD COLUMN start_seq int8 NOT NULL DEFAULT 0;

    CREATE TABLE stream_state (
      name       text PRIMARY KEY CHECK (name IN ('relay', 'pruned')),
      seq        int8 NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    INSERT INTO stream_state (name, seq) VALUES ('relay', 0), ('pruned', 0);

    CREATE TABLE deliveries (
      id              text PRIMARY KEY,
      hook_id         text NOT NULL REFERENCES hooks (id),
      key_id          int8 NOT NULL,
      subscription_id text NOT NULL,
      event_id        int8 NOT NULL,
      event_type      text NOT NULL,
      payload         text NOT NULL,
      status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'dead')),
      attempts        int4 NOT NULL DEFAULT 0,
      redeliveries    int4 NOT NULL DEFAULT 0,
      last_status     int4,
      last_error      text,
      created_at      timestamptz NOT NULL DEFAULT now(),
      updated_at      timestamptz NOT NULL DEFAULT now(),
      next_attempt_at timestamptz,
      enqueued_at     timestamptz,
      delivered_at    timestamptz,
      dead_at         timestamptz
    );
    CREATE INDEX deliveries_hook ON deliveries (hook_id, event_id DESC, id DESC);
    CREATE INDEX deliveries_overdue ON deliveries (next_attempt_at) WHERE status = 'pending';
    CREATE INDEX deliveries_unqueued ON deliveries (created_at) WHERE status = 'pending' AND enqueued_at IS NULL;
    CREATE INDEX deliveries_updated ON deliveries (updated_at) WHERE status <> 'pending';
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE deliveries, stream_state;
    ALTER TABLE subscriptions DROP COLUMN start_seq;
    ALTER TABLE hooks DROP COLUMN previous_secret, DROP COLUMN previous_secret_until;
  `.execute(db);
}
