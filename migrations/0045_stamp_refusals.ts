/**
 * How long the node has refused a stamp transaction: `refusals` counts the sends refused in a row
 * (reset when the node accepts it), `refused_since` is the first of them. A live transaction the
 * node keeps refusing is a stamper that cannot make progress: /healthz, `blockwire status` and
 * /metrics report it (src/ops/state.ts).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE stamp_txs ADD COLUMN refusals int4 NOT NULL DEFAULT 0, ADD COLUMN refused_since timestamptz;
    CREATE INDEX stamp_txs_refused ON stamp_txs (refusals) WHERE status IN ('signed', 'broadcast') AND refusals > 0;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE stamp_txs DROP COLUMN refusals, DROP COLUMN refused_since`.execute(db);
}
