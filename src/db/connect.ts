/**
 * Opens a Kysely instance over a pg Pool. int8 columns come back as `bigint` (amounts are
 * `sats: bigint` everywhere), set per pool rather than on pg's global type registry.
 * @module
 */
import pg from 'pg';
import { CompiledQuery, Kysely, PostgresDialect, type DatabaseConnection, type Transaction } from 'kysely';
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
  /** Sees the text of every statement the pool's clients send, COPY included (tests count statements). */
  onQuery?: (text: string) => void;
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
    const onQuery = opts.onQuery;
    if (onQuery) {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const q = args[0] as string | { text?: string };
        onQuery(typeof q === 'string' ? q : (q.text ?? ''));
        return query(...args);
      };
    }
  });
  return pool;
}

/** The pg client under each connection of createDb's Kysely instances (Kysely keeps it private). */
const clients = new WeakMap<DatabaseConnection, pg.ClientBase>();

/** A Kysely instance over a new pool; destroy() closes the pool. */
export function createDb(url: string, opts: DbOptions = {}): Kysely<Database> {
  const pool = createPool(url, opts);
  // A new connection is matched to its client by backend pid: which client Kysely wrapped is
  // not told, and pool events interleave when several connect at once.
  const byPid = new Map<number, pg.PoolClient>();
  const pidOf = (c: pg.PoolClient) => (c as unknown as { processID: number }).processID;
  pool.on('connect', (c) => byPid.set(pidOf(c), c));
  pool.on('remove', (c) => byPid.delete(pidOf(c)));
  const onCreateConnection = async (conn: DatabaseConnection) => {
    const r = await conn.executeQuery<{ pid: number }>(CompiledQuery.raw('SELECT pg_backend_pid() AS pid'));
    const client = byPid.get(r.rows[0]!.pid);
    if (client) clients.set(conn, client);
  };
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool, onCreateConnection }) });
}

/**
 * Runs `use` with the pg client a transaction of a createDb instance runs on, for what Kysely
 * cannot send (COPY … FROM STDIN), holding the transaction's connection meanwhile: the
 * transaction's Kysely queries issued in the meantime wait for `use` to end, as they wait for
 * one another, so the client never holds two queries at once and statements issued without
 * awaiting go out in the order they were issued.
 */
export async function withClientOf<T>(trx: Transaction<Database>, use: (client: pg.ClientBase) => Promise<T>): Promise<T> {
  return trx.getExecutor().provideConnection(async (conn) => {
    const c = clients.get(conn);
    if (!c) throw new Error('withClientOf: the transaction does not run on a createDb pool');
    return use(c);
  });
}
