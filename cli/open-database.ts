/**
 * Opens the configured database: DATABASE_URL when set, otherwise an embedded PostgreSQL
 * under BLOCKWIRE_DATA_DIR/postgres (started here, stopped by `close`). Creates the `blockwire`
 * database on the embedded server on first use.
 * @module
 */
import { join } from 'node:path';
import pg from 'pg';
import type { Kysely } from 'kysely';
import type { Config } from '../src/config.js';
import { createDb, type DbOptions } from '../src/db/connect.js';
import type { Database } from '../src/db/schema.js';
import { findRunningPostgres, startPostgres, type PostgresServer } from './embedded/postgres.js';

export type DatabaseHandle = {
  db: Kysely<Database>;
  url: string;
  /** Set when Blockwire started its own PostgreSQL. */
  embedded: PostgresServer | undefined;
  close(): Promise<void>;
};

const EMBEDDED_DB = 'blockwire';

/**
 * The URL of the embedded server's `blockwire` database. When another live Blockwire (a running
 * `blockwire start`) already serves this data directory, connects to its server — so `blockwire
 * keys`, `migrate` and `status` work beside it — and `server` is undefined (not ours to stop);
 * otherwise starts the server.
 */
async function ensureEmbeddedDatabase(
  dataDir: string,
  onLog?: (line: string) => void,
): Promise<{ server: PostgresServer | undefined; url: string }> {
  const pgDir = join(dataDir, 'postgres');
  const running = await findRunningPostgres(pgDir);
  const server = running?.ownedByOther ? undefined : await startPostgres({ dataDir: pgDir, ...(onLog ? { onLog } : {}) });
  const adminUrl = server ? server.url : running!.urlFor('postgres');
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const r = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [EMBEDDED_DB]);
    if (r.rowCount === 0) await client.query(`CREATE DATABASE ${EMBEDDED_DB}`);
  } finally {
    await client.end();
  }
  return { server, url: server ? server.urlFor(EMBEDDED_DB) : running!.urlFor(EMBEDDED_DB) };
}

export async function openDatabase(
  config: Config,
  opts: DbOptions & { quiet?: boolean; onLog?: (line: string) => void } = {},
): Promise<DatabaseHandle> {
  let url = config.databaseUrl;
  let embedded: PostgresServer | undefined;
  if (!url) {
    const e = await ensureEmbeddedDatabase(config.dataDir, opts.onLog);
    embedded = e.server;
    url = e.url;
  }
  const db = createDb(url, opts);
  return {
    db,
    url,
    embedded,
    async close() {
      await db.destroy();
      if (embedded) await embedded.stop();
    },
  };
}
