/**
 * What the console (api/console/) shows of webhook deliveries beyond their status: each
 * delivery's last attempt — when it was sent (the `webhook-timestamp` it was signed with), how
 * long the receiver took to answer, and the first bytes of its answer — and per hook and minute
 * the attempts that delivered and those that failed (`hook_attempt_minutes`, the last hour's
 * chart; kept a day, pruned by the relay with the delivery log). Both are written by the
 * statement that records attempt outcomes (src/db/queries/tenancy-deliveries.ts recordOutcomes).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE deliveries
      ADD COLUMN last_attempt_at timestamptz,
      ADD COLUMN last_latency_ms int4,
      ADD COLUMN last_response text;
    CREATE TABLE hook_attempt_minutes (
      hook_id   text NOT NULL REFERENCES hooks (id),
      minute    timestamptz NOT NULL,
      delivered int4 NOT NULL DEFAULT 0,
      failed    int4 NOT NULL DEFAULT 0,
      PRIMARY KEY (hook_id, minute)
    );
    CREATE INDEX hook_attempt_minutes_minute ON hook_attempt_minutes (minute);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE hook_attempt_minutes;
    ALTER TABLE deliveries DROP COLUMN last_attempt_at, DROP COLUMN last_latency_ms, DROP COLUMN last_response;
  `.execute(db);
}
