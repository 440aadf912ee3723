/**
 * Transaction parts without a stored copy of their spends keys (docs/lean-layout.md
 * "Transaction parts: the plan"): `tx_parts.spent_groups` (the distinct groups its transactions'
 * inputs spend from, int8[], ~11 % of the table: 585 bytes a part on the 2,000-block corpus) is
 * what `spent_tx_groups` (0022) reads from `ins` anyway, since a part's `ins` are its
 * transactions' input references back to back: the GIN indexes that expression instead, as
 * `txs_spent_groups` does for rows without a `spent_group`. And the part's byte columns are
 * stored EXTERNAL: out of line without a compression attempt (random txids and tags do not
 * compress: measured, pglz kept every one of them as it was, at ~2 s of a 5 s copy of the
 * corpus's parts).
 * An index with parts in it keeps their bytes (the dropped column's space is reused as rows are
 * written, or given back by VACUUM FULL); `down` puts the column back from `ins`.
 */
import { sql, type Kysely } from 'kysely';

const BYTE_COLUMNS = ['txids', 'ends', 'outs', 'ins', 'seen'];

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX tx_parts_spent_groups`.execute(db);
  await sql`ALTER TABLE tx_parts DROP COLUMN spent_groups`.execute(db);
  await sql.raw(`ALTER TABLE tx_parts ${BYTE_COLUMNS.map((c) => `ALTER COLUMN ${c} SET STORAGE EXTERNAL`).join(', ')}`).execute(db);
  await sql`CREATE INDEX tx_parts_spent_groups ON tx_parts USING gin (spent_tx_groups(ins))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX tx_parts_spent_groups`.execute(db);
  await sql.raw(`ALTER TABLE tx_parts ${BYTE_COLUMNS.map((c) => `ALTER COLUMN ${c} SET STORAGE EXTENDED`).join(', ')}`).execute(db);
  await sql`ALTER TABLE tx_parts ADD COLUMN spent_groups int8[]`.execute(db);
  await sql`UPDATE tx_parts SET spent_groups = coalesce((SELECT array_agg(DISTINCT g ORDER BY g) FROM unnest(spent_tx_groups(ins)) AS g), '{}')`.execute(
    db,
  );
  await sql`ALTER TABLE tx_parts ALTER COLUMN spent_groups SET NOT NULL`.execute(db);
  await sql`CREATE INDEX tx_parts_spent_groups ON tx_parts USING gin (spent_groups)`.execute(db);
}
