/**
 * Exactly one writer: the indexer holds a session-level Postgres advisory
 * lock on a connection of its own for as long as it runs; a second indexer is refused at start.
 * Every write transaction calls `guard`, which proves the lock is still held by our lock
 * session; if that session died (Postgres restarted) it takes the lock again, and if another
 * indexer took it meanwhile it stops this one (FatalError), so two writers never interleave.
 * A standby (`acquire` with `wait`) keeps one connection and tries the lock on it every
 * `pollMs` until the holder's session ends: a killed process's socket closes at once, so
 * Postgres frees the lock at once; a host that vanished is found by the TCP keepalives the lock
 * session sets (KEEPALIVE below), after about half a minute.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { FatalError, RetryableError } from '../src/errors.js';
import type { Logger } from '../src/log.js';

/** "BWINDEXR" as ASCII, as a signed int8. */
const INDEXER_LOCK = 0x4257494e44455852n;
const CLASS_ID = Number(INDEXER_LOCK >> 32n);
const OBJ_ID = Number(INDEXER_LOCK & 0xffffffffn);

/** How a standby waits for the lock. */
export type LockWait = {
  /** Interval of the tries. */
  pollMs: number;
  /** Aborting stops the wait (acquire then rejects with the signal's reason). */
  signal: AbortSignal;
  /** Called once, when the first try finds the lock held. */
  onWaiting?: () => void;
};

/**
 * Server-side TCP keepalives of the lock session (seconds): a holder whose host vanished without
 * closing its socket loses the lock after about idle + interval × count.
 */
const KEEPALIVE = { idle: 10, interval: 5, count: 3 } as const;

export interface WriterLock {
  /**
   * Takes the lock; with `wait`, waits for it instead of refusing.
   * @throws FatalError ERR_INDEXER_LOCKED when another indexer holds it (and no `wait`).
   */
  acquire(wait?: LockWait): Promise<void>;
  /** Proves, inside a write transaction, that this process holds the lock. */
  guard(trx: Transaction<Database>): Promise<void>;
  /** The same for a transaction on a raw pg client (bulk COPY). */
  guardClient(client: pg.ClientBase): Promise<void>;
  release(): Promise<void>;
}

export function createWriterLock(opts: { databaseUrl: string; log: Logger }): WriterLock {
  let client: pg.Client | null = null;
  let pid: number | null = null;
  let lost = false;

  async function open(): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: opts.databaseUrl, application_name: 'blockwire-indexer-lock', keepAlive: true });
    c.on('error', (err) => {
      if (client === c) lost = true;
      opts.log.warn({ err }, 'indexer lock connection lost');
    });
    c.on('end', () => {
      if (client === c) lost = true;
    });
    try {
      await c.connect();
      await c.query(`SET tcp_keepalives_idle = ${KEEPALIVE.idle}; SET tcp_keepalives_interval = ${KEEPALIVE.interval}; SET tcp_keepalives_count = ${KEEPALIVE.count}`);
    } catch (err) {
      await c.end().catch(() => {});
      throw new RetryableError('ERR_DB_UNAVAILABLE', `cannot connect to Postgres for the indexer lock: ${(err as Error).message}`, { cause: err });
    }
    return c;
  }

  /** Tries the lock on `c`; on success `c` becomes the lock session. */
  async function tryLock(c: pg.Client): Promise<boolean> {
    const r = await c.query<{ ok: boolean; pid: number }>('SELECT pg_try_advisory_lock($1::int8) AS ok, pg_backend_pid() AS pid', [INDEXER_LOCK.toString()]);
    if (!r.rows[0]!.ok) return false;
    client = c;
    pid = r.rows[0]!.pid;
    lost = false;
    return true;
  }

  async function connect(): Promise<void> {
    const c = await open();
    if (!(await tryLock(c).catch(async (err: unknown) => {
      await c.end().catch(() => {});
      throw new RetryableError('ERR_DB_UNAVAILABLE', `cannot take the indexer lock: ${(err as Error).message}`, { cause: err });
    }))) {
      await c.end().catch(() => {});
      throw new FatalError('ERR_INDEXER_LOCKED', 'another indexer holds the indexer lock on this database; only one may run (INDEXER_STANDBY=true makes a second one wait and take over)');
    }
  }

  /** Tries every `pollMs` on one connection (a new one after Postgres was unreachable). */
  async function waitForLock(wait: LockWait): Promise<void> {
    let c: pg.Client | null = null;
    let told = false;
    try {
      for (;;) {
        wait.signal.throwIfAborted();
        try {
          c ??= await open();
          if (await tryLock(c)) {
            c = null;
            return;
          }
          if (!told) {
            told = true;
            wait.onWaiting?.();
          }
        } catch (err) {
          opts.log.warn({ err }, 'standby indexer: cannot reach Postgres for the indexer lock; trying again');
          await c?.end().catch(() => {});
          c = null;
        }
        await sleep(wait.pollMs, undefined, { signal: wait.signal }).catch(() => undefined);
      }
    } finally {
      // Aborted while waiting: the connection that never got the lock goes.
      await (c as pg.Client | null)?.end().catch(() => {});
    }
  }

  // One reconnect at a time: transactions guarded at once (the bulk finish's parts) share it,
  // instead of the second finding the lock taken by the first's new session.
  let reconnecting: Promise<void> | null = null;

  async function check(held: (pid: number) => Promise<boolean>): Promise<void> {
    if (lost || client === null) {
      reconnecting ??= (async () => {
        const old = client;
        client = null;
        await old?.end().catch(() => {});
        await connect();
        opts.log.warn({ pid }, 'indexer lock taken again after its connection was lost');
      })().finally(() => {
        reconnecting = null;
      });
      await reconnecting;
    }
    if (!(await held(pid!))) {
      lost = true;
      throw new RetryableError('ERR_INDEXER_LOCK_LOST', 'the indexer lock session is gone; taking the lock again before writing');
    }
  }

  return {
    async acquire(wait) {
      if (wait) await waitForLock(wait);
      else await connect();
      opts.log.info({ pid }, 'indexer lock taken');
    },
    guard(trx) {
      return check(async (p) => {
        const r = await sql<{ held: boolean }>`
          SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = ${p} AND classid = ${CLASS_ID} AND objid = ${OBJ_ID} AND objsubid = 1 AND granted) AS held`.execute(trx);
        return r.rows[0]!.held;
      });
    },
    guardClient(c) {
      return check(async (p) => {
        const r = await c.query<{ held: boolean }>(
          "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = $1 AND classid = $2 AND objid = $3 AND objsubid = 1 AND granted) AS held",
          [p, CLASS_ID, OBJ_ID],
        );
        return r.rows[0]!.held;
      });
    },
    async release() {
      const c = client;
      client = null;
      if (c) {
        await c.query('SELECT pg_advisory_unlock($1::int8)', [INDEXER_LOCK.toString()]).catch(() => {});
        await c.end().catch(() => {});
      }
    },
  };
}
