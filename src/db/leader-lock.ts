/**
 * Leader locks: of the processes of one kind on a database, one leads (the indexer that writes,
 * the relay that relays); the others stand by. The leader holds a session-level advisory lock on
 * a session that stays its own for as long as it leads, and the lock goes when that session ends.
 * Others try the lock (`tryLeaderLock`) until they get it.
 *
 * A dead holder must not keep its session, and the lock, for good. Every lock session is set up
 * so that the server ends it when its holder is gone, whichever way:
 * - a killed process: its socket closes at once, and the lock goes at once;
 * - a host that vanished without closing its socket: server-side TCP keepalives (LOCK_KEEPALIVE)
 *   end the session after about idle + interval × count = 25 s;
 * - a stopped process (SIGSTOP, a frozen VM or container), whose socket stays open and whose
 *   kernel still answers keepalives: `idle_session_timeout` (and the same limit for a
 *   transaction left open) ends the session once it has been idle `idleMs`. So the holder must
 *   use its session more often than that: the relay works on it every poll, the indexer sends a
 *   beat (`leaderIdleMs` gives a limit three beats long).
 * A holder that comes back after its session was ended learns it on its next statement, or,
 * when it writes on other sessions, from `holdsLeaderLock` inside the write's transaction.
 * @module
 */
import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type pg from 'pg';

/** "BWINDEXR" as ASCII: the indexer that writes the index. */
export const INDEXER_LEADER = 0x4257494e44455852n;
/** "BWRELAY1" as ASCII: the relay that relays the outbox. */
export const RELAY_LEADER = 0x4257_5245_4c41_5931n;

/** Server-side TCP keepalives of a lock session (seconds). */
const LOCK_KEEPALIVE = { idle: 10, interval: 5, count: 3 } as const;

/** One statement on a session: a pg client's `query`, or `sqlOn` of a Kysely connection. */
export type LockSql = <R>(text: string, params?: unknown[]) => Promise<{ rows: R[] }>;

/** A Kysely connection or transaction as a LockSql. */
export function sqlOn<DB>(conn: Kysely<DB> | Transaction<DB>): LockSql {
  return async <R>(text: string, params: unknown[] = []) => {
    const r = await conn.executeQuery<R>(CompiledQuery.raw(text, params));
    return { rows: [...r.rows] };
  };
}

/** A pg client as a LockSql. */
export function sqlOnClient(client: pg.ClientBase): LockSql {
  return async <R>(text: string, params?: unknown[]) => ({ rows: (await client.query(text, params)).rows as R[] });
}

/** The idle limit of a lock session whose holder uses it every `beatMs`: three beats, never less than 15 s. */
export function leaderIdleMs(beatMs: number): number {
  return Math.max(15_000, 3 * beatMs);
}

/**
 * Tries the lock `key` on the session `run` talks to. Taken: the session is set up to end when its
 * holder is gone (see above), and its backend pid is returned; held by another session: null.
 * `onUnset` hears of a setting the server refused (PostgreSQL before 14 has no
 * idle_session_timeout): the lock is held all the same, with that detection missing.
 */
export async function tryLeaderLock(run: LockSql, key: bigint, idleMs: number, onUnset: (err: unknown) => void): Promise<number | null> {
  const r = await run<{ ok: boolean; pid: number }>('SELECT pg_try_advisory_lock($1::int8) AS ok, pg_backend_pid() AS pid', [
    key.toString(),
  ]);
  const row = r.rows[0];
  if (!row?.ok) return null;
  await run(
    `SET tcp_keepalives_idle = ${LOCK_KEEPALIVE.idle}; SET tcp_keepalives_interval = ${LOCK_KEEPALIVE.interval}; SET tcp_keepalives_count = ${LOCK_KEEPALIVE.count}`,
  ).catch(onUnset);
  const idle = String(Math.round(idleMs));
  await run("SELECT set_config('idle_session_timeout', $1, false), set_config('idle_in_transaction_session_timeout', $1, false)", [
    idle,
  ]).catch(onUnset);
  return row.pid;
}

/** Whether the session `pid` holds the lock `key` now (asked on any session: a write's transaction). */
export async function holdsLeaderLock(run: LockSql, key: bigint, pid: number): Promise<boolean> {
  const r = await run<{ held: boolean }>(
    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = $1 AND classid = $2 AND objid = $3 AND objsubid = 1 AND granted) AS held",
    [pid, Number(key >> 32n), Number(key & 0xffffffffn)],
  );
  return r.rows[0]?.held === true;
}

/** Gives the lock back and the session's settings with it (a pooled session returns to its pool as it came). Never throws. */
export async function releaseLeaderLock(run: LockSql, key: bigint): Promise<void> {
  await run('SELECT pg_advisory_unlock($1::int8)', [key.toString()]).catch(() => undefined);
  for (const setting of [
    'idle_session_timeout',
    'idle_in_transaction_session_timeout',
    'tcp_keepalives_idle',
    'tcp_keepalives_interval',
    'tcp_keepalives_count',
  ]) {
    await run(`RESET ${setting}`).catch(() => undefined);
  }
}
