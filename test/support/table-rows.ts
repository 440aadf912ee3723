/**
 * Every row of some tables as text, per table, in a stable order: what a migration test compares
 * before and after to show it left those tables (the tenants' keys, hooks, wallets...) as they were.
 * @module
 */
import { sql, type Kysely } from 'kysely';

/** Each table's rows as `x::text`, sorted. */
export async function tableRows(db: Kysely<unknown>, tables: readonly string[]): Promise<Record<string, string[]>> {
  const all: Record<string, string[]> = {};
  for (const name of tables)
    all[name] = (await sql<{ row: string }>`SELECT x::text AS row FROM ${sql.table(name)} x ORDER BY 1`.execute(db)).rows.map((r) => r.row);
  return all;
}
