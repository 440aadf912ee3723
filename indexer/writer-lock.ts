/**
 * Exactly one writer: the indexer holds a session-level Postgres advisory
 * lock on a connection of its own for as long as it runs; a second indexer is refused at start.
 * Every write transaction calls `guard`, which proves the lock is still held by our lock
 * session; if that session died (Postgres restarted) it takes the lock again, and if another
 * indexer took it meanwhile it stops this one (FatalError), so two writers never interleave.
 * @module
 */
import pg from 'pg';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { FatalError, RetryableError } from '../src/errors.js';
import type { Logger } from '../src/log.js';

/** "BWINDEXR" as ASCII, as a signed int8. */
const INDEXER_LOCK = 0x4257494e44455852n;
const CLASS_ID = Number(INDEXER_LOCK >> 32n);
const OBJ_ID = Number(INDEXER_LOCK & 0xffffffffn);

export interface WriterLock {
  /** Takes the lock. @throws FatalError ERR_INDEXER_LOCKED when another indexer holds it. */
  acquire(): Promise<void>;
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

  async function connect(): Promise<void> {
    const c = new pg.Client({ connectionString: opts.databaseUrl, application_name: 'blockwire-indexer-lock' });
    c.on('error', (err) => {
      lost = true;
      opts.log.warn({ err }, 'indexer lock connection lost');
    });
    c.on('end', () => {
      lost = true;
    });
    try {
      await c.connect();
    } catch (err) {
      throw new RetryableError('ERR_DB_UNAVAILABLE', `cannot connect to Postgres for the indexer lock: ${(err as Error).message}`, { cause: err });
    }
    const r = await c.query<{ ok: boolean; pid: number }>('SELECT pg_try_advisory_lock($1::int8) AS ok, pg_backend_pid() AS pid', [INDEXER_LOCK.toString()]);
    if (!r.rows[0]!.ok) {
      await c.end().catch(() => {});
      throw new FatalError('ERR_INDEXER_LOCKED', 'another indexer holds the indexer lock on this database; only one may run');
    }
    client = c;
    pid = r.rows[0]!.pid;
    lost = false;
  }

  // One reconnect at a time: transactions guarded at once (the bulk finish's two parts) share it,
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
    async acquire() {
      await connect();
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
