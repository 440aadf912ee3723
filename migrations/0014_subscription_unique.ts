/**
 * One live subscription per (key, kind, address, wallet, hook, confirmations): a unique index
 * decides between concurrent identical POST /subscriptions (a check-then-insert let 20 at once
 * create up to 8, and every event was delivered once per copy). Copies made before this
 * migration are deleted (soft, like any deletion), the oldest of each group kept.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    UPDATE subscriptions s SET deleted_at = now()
    FROM (
      SELECT id, row_number() OVER (
        PARTITION BY key_id, kind, addr_key, wallet_id, hook_id, confirmations ORDER BY created_at, id
      ) AS n
      FROM subscriptions WHERE deleted_at IS NULL
    ) d
    WHERE s.id = d.id AND d.n > 1;
    CREATE UNIQUE INDEX subscriptions_one_live
      ON subscriptions (key_id, kind, addr_key, wallet_id, hook_id, confirmations) NULLS NOT DISTINCT
      WHERE deleted_at IS NULL;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX subscriptions_one_live`.execute(db);
}
