/**
 * Chain reads from PostgreSQL streaming replicas (DATABASE_READ_URL). `createReadReplicas`
 * gives one Kysely instance whose connections come from the replicas in turn: its pool's
 * `connect()` takes the next replica that answered the last poll and is at most `maxLagBlocks`
 * behind the primary's index (both tips are polled every `pollMs`). A replica that cannot be
 * connected to is marked down at once and the next one is tried, so a stopped replica costs the
 * request that meets it one failed connect (bounded by `connectTimeoutMs`), not an error; the
 * poll brings it back when it answers again. When every reachable replica lags, reads answer
 * 503 ERR_INDEX_SYNCING; when none can be reached, the primary serves them (logged), since
 * answering from the primary is right, only dearer.
 * Replication is physical, so a replica holds the same rows (and tx numbers) as the primary:
 * a paging cursor from one serves on any other.
 * @module
 */
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import type { Database } from '../../src/db/schema.js';
import type { Logger } from '../../src/log.js';
import { getIndexTip } from '../queries/chain.js';
import { ServiceError } from '../../src/errors.js';
import { createPreparedPool } from '../../src/db/prepared-pool.js';

/** What one replica looked like at the last poll or connect. */
export type ReplicaState = {
  /** host:port/database of its URL (no credentials). */
  name: string;
  up: boolean;
  /** Its indexed tip height (-1: nothing indexed), null until it answered. */
  height: number | null;
  /** Blocks behind the primary's index, null when either is unknown. */
  lag: number | null;
  error: string | null;
};

export type ReadReplicas = {
  /** Chain reads: a connection from a fit replica per query or transaction. */
  readonly db: Kysely<Database>;
  states(): ReplicaState[];
  close(): Promise<void>;
};

export type ReadReplicaOptions = {
  urls: readonly string[];
  /** The primary, whose index tip is the reference of the lag. */
  primary: Kysely<Database>;
  /** Serves reads when no replica can be reached (the primary's pool). */
  fallback?: PostgresPool;
  maxLagBlocks: number;
  pollMs: number;
  log: Logger;
  /** Connections per replica. */
  poolMax: number;
  /** Time limit of one connect to a replica. */
  connectTimeoutMs: number;
};

type Replica = { name: string; pool: pg.Pool; up: boolean; height: number | null; error: string | null };

const nameOf = (url: string): string => {
  const u = new URL(url);
  return `${u.host}${u.pathname}`;
};

/** Starts polling the replicas' tips; see the module comment. */
export async function createReadReplicas(opts: ReadReplicaOptions): Promise<ReadReplicas> {
  const log = opts.log.child({ component: 'api.replicas' });
  const replicas: Replica[] = opts.urls.map((url) => ({
    name: nameOf(url),
    pool: createPreparedPool(url, { max: opts.poolMax, applicationName: 'blockwire-api-read', connectTimeoutMs: opts.connectTimeoutMs }),
    up: false,
    height: null,
    error: null,
  }));
  let primaryHeight: number | null = null;
  let turn = 0;
  let fellBack = false;

  const lagOf = (r: Replica): number | null => (r.height === null || primaryHeight === null ? null : primaryHeight - r.height);
  const markDown = (r: Replica, err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    if (r.up) log.warn({ replica: r.name, err: message }, 'read replica unreachable; routed around');
    r.up = false;
    r.error = message;
  };
  const markUp = (r: Replica, height: number) => {
    if (!r.up) log.info({ replica: r.name, height }, 'read replica serving');
    r.up = true;
    r.height = height;
    r.error = null;
  };

  async function poll(): Promise<void> {
    await Promise.all([
      getIndexTip(opts.primary).then(
        (t) => void (primaryHeight = t.height),
        (err: unknown) => log.warn({ err }, 'cannot read the primary index tip'),
      ),
      ...replicas.map((r) =>
        r.pool.query<{ height: number }>('SELECT height FROM chain_tip WHERE id = 1').then(
          (res) => markUp(r, res.rows[0]?.height ?? -1),
          (err: unknown) => markDown(r, err),
        ),
      ),
    ]);
  }

  const pool: PostgresPool = {
    async connect(): Promise<PostgresPoolClient> {
      const fit = replicas.filter((r) => r.up && (lagOf(r) ?? 0) <= opts.maxLagBlocks);
      const first = turn++;
      for (let i = 0; i < fit.length; i++) {
        const r = fit[(first + i) % fit.length]!;
        try {
          const client = await r.pool.connect();
          fellBack = false;
          return client;
        } catch (err) {
          markDown(r, err);
        }
      }
      if (replicas.some((r) => r.up)) {
        throw new ServiceError('ERR_INDEX_SYNCING', {
          message: `every read replica is more than ${opts.maxLagBlocks} blocks behind the primary's index`,
        });
      }
      if (opts.fallback) {
        if (!fellBack) log.warn('no read replica can be reached; the primary serves chain reads');
        fellBack = true;
        return opts.fallback.connect();
      }
      throw new ServiceError('ERR_DATABASE_UNAVAILABLE', { message: 'no read replica can be reached' });
    },
    async end() {
      await Promise.all(replicas.map((r) => r.pool.end()));
    },
  };

  await poll();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const loop = () => {
    timer = setTimeout(() => {
      void poll().finally(() => {
        if (!stopped) loop();
      });
    }, opts.pollMs);
    timer.unref();
  };
  loop();

  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    states: () => replicas.map((r) => ({ name: r.name, up: r.up, height: r.height, lag: lagOf(r), error: r.error })),
    async close() {
      stopped = true;
      clearTimeout(timer);
      await db.destroy();
    },
  };
}
