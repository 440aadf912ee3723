/**
 * The API's database pool (src/api/api-db.ts): parameterized queries run as named prepared
 * statements, and its connections plan them generically (plan_cache_mode), so Postgres neither
 * parses nor plans the API's few query shapes again on every request.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApiDb } from '../../../src/api/api-db.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createMigratedDatabase('apidb');
});
afterAll(async () => {
  await t?.drop();
});

it('runs parameterized queries as prepared statements on connections that use generic plans', async () => {
  const db = createApiDb(t.url, { max: 1 });
  try {
    await sql`SELECT height FROM chain_tip WHERE id = ${1}`.execute(db);
    await sql`SELECT height FROM chain_tip WHERE id = ${1}`.execute(db);
    const mode = await sql<{ plan_cache_mode: string }>`SHOW plan_cache_mode`.execute(db);
    expect(mode.rows[0]!.plan_cache_mode).toBe('force_generic_plan');
    const prepared = await sql<{ statement: string; generic_plans: string; custom_plans: string }>`
      SELECT statement, generic_plans::text, custom_plans::text FROM pg_prepared_statements WHERE name LIKE 'bw_%' AND statement LIKE '%FROM chain_tip WHERE id = $1%'`.execute(db);
    expect(prepared.rows).toHaveLength(1);
    expect(Number(prepared.rows[0]!.custom_plans)).toBe(0);
    expect(Number(prepared.rows[0]!.generic_plans)).toBeGreaterThanOrEqual(1);
  } finally {
    await db.destroy();
  }
});
