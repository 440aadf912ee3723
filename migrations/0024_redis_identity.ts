/**
 * The Redis server the delivery jobs were last enqueued on (`stream_state.redis_run_id`, its
 * `INFO server` run_id, on the `relay` row). A relay that finds Redis under another run id (a
 * Sentinel failover promoted a replica, or the server restarted from its append-only file) may
 * have lost jobs that were not yet replicated or written: it re-creates every pending
 * delivery's missing job at once, in event order, before it relays anything new
 * (streams/relay.ts), instead of waiting for the age-based rescue.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE stream_state ADD COLUMN redis_run_id text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE stream_state DROP COLUMN redis_run_id`.execute(db);
}
