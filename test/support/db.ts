/**
 * An isolated database per test file on the run's PostgreSQL server (global-setup.ts).
 */
import { inject } from 'vitest';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Kysely } from 'kysely';
import { createDb } from '../../src/db/connect.js';
import type { Database } from '../../src/db/schema.js';

export type TestDatabase = {
  url: string;
  name: string;
  db: Kysely<Database>;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
};

function replaceDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Creates an empty database with a unique name (a copy of `template` when given). */
export async function createTestDatabase(prefix = 't', template?: string): Promise<TestDatabase> {
  const admin = inject('pgUrl');
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  } finally {
    await client.end();
  }
  const url = replaceDatabase(admin, name);
  const db = createDb(url, { max: 8 });
  return {
    url,
    name,
    db,
    async drop() {
      await db.destroy();
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A unique Redis key prefix / BullMQ prefix for one test (BullMQ forbids ':' inside names). */
export function uniqueRedisPrefix(label = 'test'): string {
  return `${label}-${randomBytes(6).toString('hex')}`;
}

/**
 * Creates a database with every migration applied: a copy of the run's migrated template
 * (global-setup.ts), then migrateToLatest, which finds nothing left to do unless a migration
 * came after the template was made.
 */
export async function createMigratedDatabase(prefix = 't'): Promise<TestDatabase> {
  const { migrateToLatest } = await import('../../src/db/migrate.js');
  const t = await createTestDatabase(prefix, inject('pgTemplate'));
  await migrateToLatest(t.db);
  return t;
}

/**
 * Applies every migration but `left` (an index of the layout before `left`, to test `left`
 * from): the rest of the list, in order, as migrateToLatest records them; with `andLater`,
 * only those before `left` (when a later one needs what `left` makes).
 */
export async function migrateAllBut(db: Kysely<Database>, left: string, opts: { andLater?: boolean } = {}): Promise<void> {
  const { Migrator } = await import('kysely');
  const { migrations } = await import('../../migrations/index.js');
  const rest = Object.fromEntries(Object.entries(migrations).filter(([name]) => (opts.andLater ? name < left : name !== left)));
  const r = await new Migrator({
    db: db as Kysely<unknown>,
    provider: { getMigrations: async () => rest },
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
    allowUnorderedMigrations: true,
  }).migrateToLatest();
  if (r.error) throw r.error;
}
