/**
 * A database pool with server-side prepared statements, for the roles that answer clients (the
 * API, the Electrum server): every parameterized query runs as a named statement (name = hash of
 * its text), so Postgres parses and plans each of a role's few query shapes once per connection
 * instead of per request (for these short keyed lookups parsing and planning cost more than
 * running them, most of all a transaction found by txid, which reads the parts through long
 * byte-decoding expressions: src/db/tx-reads.ts). The number of names is bounded; past it
 * queries run unnamed as usual. The pool's connections use generic plans only
 * (`plan_cache_mode = force_generic_plan`): every such query is a keyed lookup whose best plan does
 * not depend on the values, and Postgres otherwise kept re-planning the history page query on
 * each call, its planning costing several times its execution (figures: bench/README.md "api").
 * It is a SET when each connection opens; behind PgBouncer in transaction mode (where session
 * settings do not follow the client) set it for their database role instead: `ALTER ROLE … SET
 * plan_cache_mode = force_generic_plan` (docs/scaling.md).
 * @module
 */
import { createHash } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import type pg from 'pg';
import { createPool, type DbOptions } from './connect.js';
import type { Database } from './schema.js';

/** Distinct statement texts prepared at most (per process). */
const MAX_PREPARED = 512;

type QueryFn = (...args: unknown[]) => unknown;

/** Makes `client` run parameterized text queries as named (prepared) statements. */
function preparePooledClient(client: pg.PoolClient, names: Map<string, string>): void {
  const query = client.query.bind(client) as QueryFn;
  (client as unknown as { query: QueryFn }).query = (text: unknown, values?: unknown, cb?: unknown) => {
    if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0) return query(text, values, cb);
    let name = names.get(text);
    if (name === undefined && names.size < MAX_PREPARED) {
      name = `bw_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
      names.set(text, name);
    }
    return name === undefined ? query(text, values, cb) : query({ name, text, values }, cb);
  };
}

/** A pool whose parameterized queries are prepared statements, with generic plans. */
export function createPreparedPool(url: string, opts: DbOptions = {}): pg.Pool {
  const pool = createPool(url, { ...opts, settings: { plan_cache_mode: 'force_generic_plan', ...opts.settings } });
  const names = new Map<string, string>();
  pool.on('connect', (client) => preparePooledClient(client, names));
  return pool;
}

/** A Kysely instance over a new `createPreparedPool`. */
export function createPreparedDb(url: string, opts: DbOptions = {}): Kysely<Database> {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: createPreparedPool(url, opts) }) });
}
