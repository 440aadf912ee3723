/**
 * Runs the migrations of migrations/index.ts with Kysely's Migrator (static provider, so the
 * list is type-checked and independent of dist/ paths). Services call `assertSchemaCurrent` at
 * boot and fail fast when the database is behind or ahead of the code.
 * @module
 */
import { Migrator, NO_MIGRATIONS, sql, type Kysely, type MigrationResultSet } from 'kysely';
import { migrations } from '../../migrations/index.js';
import { FatalError } from '../errors.js';

function migrator(db: Kysely<unknown>): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
    // Each area numbers its migrations in its own range (migrations/index.ts), so a new API
    // migration (0011) may arrive after a streams one (0021) has run.
    allowUnorderedMigrations: true,
  });
}

function check(result: MigrationResultSet, what: string): string[] {
  if (result.error) {
    throw new FatalError('ERR_MIGRATION', `${what} failed: ${(result.error as Error).message ?? String(result.error)}`, {
      cause: result.error,
    });
  }
  return (result.results ?? []).map((r) => `${r.direction} ${r.migrationName}`);
}

/** Applies every pending migration; returns what ran. */
export async function migrateToLatest<T>(db: Kysely<T>): Promise<string[]> {
  return check(await migrator(db as Kysely<unknown>).migrateToLatest(), 'migrate to latest');
}

/** Reverts the last applied migration. */
export async function migrateDown<T>(db: Kysely<T>): Promise<string[]> {
  return check(await migrator(db as Kysely<unknown>).migrateDown(), 'migrate down');
}

/** Reverts every migration. */
export async function migrateToZero<T>(db: Kysely<T>): Promise<string[]> {
  return check(await migrator(db as Kysely<unknown>).migrateTo(NO_MIGRATIONS), 'migrate to zero');
}

export type MigrationStatus = { name: string; executedAt: Date | undefined }[];

export async function migrationStatus<T>(db: Kysely<T>): Promise<MigrationStatus> {
  const infos = await migrator(db as Kysely<unknown>).getMigrations();
  return infos.map((i) => ({ name: i.name, executedAt: i.executedAt }));
}

/** Throws a FatalError unless every known migration has run and no unknown one has. */
export async function assertSchemaCurrent<T>(db: Kysely<T>): Promise<void> {
  const status = await migrationStatus(db);
  const pending = status.filter((s) => !s.executedAt).map((s) => s.name);
  const known = new Set(status.map((s) => s.name));
  const applied = await sql<{ name: string }>`SELECT name FROM schema_migrations`
    .execute(db)
    .catch(() => ({ rows: [] as { name: string }[] }));
  const unknown = applied.rows.map((r) => r.name).filter((n) => !known.has(n));
  if (unknown.length > 0) {
    throw new FatalError(
      'ERR_SCHEMA_AHEAD',
      `database schema is ahead of the code: unknown migrations ${unknown.join(', ')}; run a newer Blockwire`,
    );
  }
  if (pending.length > 0) {
    throw new FatalError(
      'ERR_SCHEMA_BEHIND',
      `database schema is behind the code: pending migrations ${pending.join(', ')}; run \`blockwire migrate\``,
    );
  }
}
