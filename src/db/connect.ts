/**
 * Opens a Kysely instance over a pg Pool. int8 columns come back as `bigint` (amounts are
 * `sats: bigint` everywhere), set per pool rather than on pg's global type registry.
 * @module
 */
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import type { Database } from './schema.js';

const INT8 = 20;
const INT8_ARRAY = 1016;

/** pg type parsing: int8 and int8[] as bigint (for pools and for single clients alike). */
export const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8) return (v: string) => BigInt(v);
    if (oid === INT8_ARRAY) {
      const parseArray = pg.types.getTypeParser(1009 as Parameters<typeof pg.types.getTypeParser>[0]) as (v: string) => (string | null)[];
      return (v: string) => parseArray(v).map((x) => (x === null ? null : BigInt(x)));
    }
    return pg.types.getTypeParser(oid, format);
  },
} as unknown as pg.CustomTypesConfig;

export type DbOptions = {
  /** Pool size; the API wants a few, the indexer one or two. */
  max?: number;
  applicationName?: string;
  /** Time limit of opening a connection in ms (unset: none). */
  connectTimeoutMs?: number;
  /** Per-statement timeout in ms (0 = none). */
  statementTimeoutMs?: number;
  /**
   * Session settings for every connection of the pool: a SET queued when it connects, ahead of
   * its first query (not the `options` startup parameter, which PgBouncer refuses).
   */
  settings?: Record<string, string>;
};

/** A pg Pool with Blockwire's type parsing. */
export function createPool(url: string, opts: DbOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    application_name: opts.applicationName ?? 'blockwire',
    types: pgTypes,
    ...(opts.statementTimeoutMs ? { statement_timeout: opts.statementTimeoutMs } : {}),
    ...(opts.connectTimeoutMs ? { connectionTimeoutMillis: opts.connectTimeoutMs } : {}),
  });
  // An idle client losing its connection (Postgres restart) must not crash the process;
  // the next query on the pool reconnects.
  pool.on('error', () => {});
  // pg-pool listens for errors only while a client is idle: one checked out between two
  // statements (inside a transaction) would otherwise throw an uncaught 'error' when the
  // server goes away. The failure still reaches the caller through its next query.
  pool.on('connect', (client) => {
    client.on('error', () => {});
    // Queued before any query the pool hands the client for; a failure surfaces there.
    for (const [k, v] of Object.entries(opts.settings ?? {})) void client.query(`SELECT set_config($1, $2, false)`, [k, v]).catch(() => {});
  });
  return pool;
}

/** A Kysely instance over a new pool; destroy() closes the pool. */
export function createDb(url: string, opts: DbOptions = {}): Kysely<Database> {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: createPool(url, opts) }) });
}
