/**
 * Delivery batches: a pending delivery may be carried by a BullMQ job of several deliveries of
 * its hook (streams/queues.ts). `deliveries.job_id` names that job, so that the rescue of lost
 * jobs checks the right one and a replayed relay batch re-adds the same job (a no-op while it
 * exists); null = the delivery's own job (job id = delivery id, `-r<n>` for a redelivery series).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE deliveries ADD COLUMN job_id text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE deliveries DROP COLUMN job_id`.execute(db);
}
