/**
 * Exactly one writer: the indexer holds the indexer's leader lock (src/db/leader-lock.ts) on a
 * connection of its own for as long as it runs; a second indexer is refused at start.
 * Every write transaction calls `guard`, which proves the lock is still held by our lock
 * session; if that session died (Postgres restarted, or the server ended it) it takes the lock
 * again, and if another indexer took it meanwhile it stops this one (FatalError), so two writers
 * never interleave. A standby (`acquire` with `wait`) keeps one connection and tries the lock on
 * it every `pollMs` until the holder's session ends: at once for a killed process, after about
 * half a minute for a vanished host (TCP keepalives), after the idle limit for a stopped one
 * (the lock session gets a beat every BEAT_MS while the process runs).
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Transaction } from 'kysely';
import {
  holdsLeaderLock,
  INDEXER_LEADER,
  leaderIdleMs,
  releaseLeaderLock,
  sqlOn,
  sqlOnClient,
  tryLeaderLock,
} from '../src/db/leader-lock.js';
import type { Database } from '../src/db/schema.js';
import { FatalError, RetryableError } from '../src/errors.js';
import type { Logger } from '../src/log.js';

/** How often the lock session is used while the process runs: a stopped process's session goes after leaderIdleMs(BEAT_MS). */
const BEAT_MS = 5000;

/** How a standby waits for the lock. */
export type LockWait = {
  /** Interval of the tries. */
  pollMs: number;
  /** Aborting stops the wait (acquire then rejects with the signal's reason). */
  signal: AbortSignal;
  /** Called once, when the first try finds the lock held. */
  onWaiting?: () => void;
};

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
  let beat: NodeJS.Timeout | null = null;
  /** The beat in flight: one statement at a time on the lock session. */
  let beating: Promise<unknown> | null = null;

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
    } catch (err) {
      await c.end().catch(() => {});
      throw new RetryableError('ERR_DB_UNAVAILABLE', `cannot connect to Postgres for the indexer lock: ${(err as Error).message}`, {
        cause: err,
      });
    }
    return c;
  }

  /** Tries the lock on `c`; on success `c` becomes the lock session. */
  async function tryLock(c: pg.Client): Promise<boolean> {
    const got = await tryLeaderLock(sqlOnClient(c), INDEXER_LEADER, leaderIdleMs(BEAT_MS), (err) =>
      opts.log.warn(
        { err },
        "indexer lock: a setting that ends a dead holder's session was refused (idle_session_timeout needs PostgreSQL 14)",
      ),
    );
    if (got === null) return false;
    client = c;
    pid = got;
    lost = false;
    beat ??= setInterval(() => {
      const c = client;
      if (c && !beating)
        beating = c
          .query('SELECT 1')
          .catch(() => undefined)
          .finally(() => (beating = null));
    }, BEAT_MS).unref();
    return true;
  }

  async function connect(): Promise<void> {
    const c = await open();
    if (
      !(await tryLock(c).catch(async (err: unknown) => {
        await c.end().catch(() => {});
        throw new RetryableError('ERR_DB_UNAVAILABLE', `cannot take the indexer lock: ${(err as Error).message}`, { cause: err });
      }))
    ) {
      await c.end().catch(() => {});
      throw new FatalError(
        'ERR_INDEXER_LOCKED',
        'another indexer holds the indexer lock on this database; only one may run (INDEXER_STANDBY=true makes a second one wait and take over)',
      );
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
      return check((p) => holdsLeaderLock(sqlOn(trx), INDEXER_LEADER, p));
    },
    guardClient(c) {
      return check((p) => holdsLeaderLock(sqlOnClient(c), INDEXER_LEADER, p));
    },
    async release() {
      if (beat) clearInterval(beat);
      beat = null;
      await beating;
      const c = client;
      client = null;
      if (c) {
        await releaseLeaderLock(sqlOnClient(c), INDEXER_LEADER);
        await c.end().catch(() => {});
      }
    },
  };
}
