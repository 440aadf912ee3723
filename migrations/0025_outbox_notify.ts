/**
 * New events as they commit: a statement trigger on `outbox` sends `NOTIFY blockwire_outbox`
 * (streams/outbox-wakeup.ts), so the relay reads the outbox when a writer's transaction commits
 * instead of on its next poll. Every writer is covered, whoever it is (the indexer's blocks,
 * mempool and reorgs, the bulk sync, the stamper, a test or a bench): the trigger is on the
 * table. One notification per statement, folded into one per transaction by PostgreSQL and
 * delivered at commit: no cost per row.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE FUNCTION blockwire_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('blockwire_outbox', ''); RETURN NULL; END $$`.execute(
    db,
  );
  await sql`CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION blockwire_outbox_notify()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER outbox_notify ON outbox`.execute(db);
  await sql`DROP FUNCTION blockwire_outbox_notify()`.execute(db);
}
