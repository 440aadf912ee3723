/**
 * The circuit breaker of each hook (streams/breaker.ts), as the delivery workers last set it:
 * `closed`, `slowed` (failing: one delivery at a time), `open` (paused until `breaker_until`)
 * or `half_open` (one probe at a time). Shown on the hook (GET /v1/hooks/{id}); a worker
 * process adopts a pause another one started.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE hooks
    ADD COLUMN breaker_state text NOT NULL DEFAULT 'closed' CHECK (breaker_state IN ('closed', 'slowed', 'open', 'half_open')),
    ADD COLUMN breaker_until timestamptz`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE hooks DROP COLUMN breaker_state, DROP COLUMN breaker_until`.execute(db);
}
