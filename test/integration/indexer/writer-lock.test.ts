/**
 * The writer lock after its session died: transactions guarded at the same moment (the bulk
 * finish runs two) share one reconnect and both go on, and the lock stays exclusive. A holder
 * whose process is stopped (SIGSTOP: its socket open, its kernel answering keepalives) loses the
 * lock to a standby once its session has been idle past the limit.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriterLock, type WriterLock } from '../../../indexer/writer-lock.js';
import { silentLogger } from '../../../src/log.js';
import { INDEXER_LEADER } from '../../../src/db/leader-lock.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';

describe('writer lock', () => {
  let t: TestDatabase;
  let lock: WriterLock;
  const clients: pg.Client[] = [];
  const client = async () => {
    const c = new pg.Client({ connectionString: t.url });
    await c.connect();
    clients.push(c);
    return c;
  };
  beforeAll(async () => {
    t = await createMigratedDatabase('wl');
    lock = createWriterLock({ databaseUrl: t.url, log: silentLogger() });
    await lock.acquire();
  });
  afterAll(async () => {
    await lock?.release();
    for (const c of clients) await c.end().catch(() => {});
    await t?.drop();
  });

  it('two guards at once after the lock session died take the lock again once', async () => {
    const [a, b, admin] = [await client(), await client(), await client()];
    const killed = await admin.query<{ n: number }>(
      "SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = 'blockwire-indexer-lock' AND datname = current_database()",
    );
    expect(killed.rows[0]!.n).toBe(1);
    // pg_terminate_backend only signals: wait until the session is gone (its lock with it).
    await waitFor('the lock session to end', async () => {
      const r = await admin.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'blockwire-indexer-lock' AND datname = current_database()",
      );
      return r.rows[0]!.n === 0;
    });
    await a.query('BEGIN');
    await b.query('BEGIN');
    await expect(Promise.all([lock.guardClient(a), lock.guardClient(b)])).resolves.toBeDefined();
    await a.query('ROLLBACK');
    await b.query('ROLLBACK');
    const sessions = await admin.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'blockwire-indexer-lock' AND datname = current_database()",
    );
    expect(sessions.rows[0]!.n).toBe(1);
    const other = createWriterLock({ databaseUrl: t.url, log: silentLogger() });
    await expect(other.acquire()).rejects.toMatchObject({ code: 'ERR_INDEXER_LOCKED' });
  });

  it('a standby takes the lock from a stopped holder', async () => {
    await lock.release();
    const child = spawn(process.execPath, ['--import', 'tsx', resolve('test/integration/indexer/writer-lock-child.ts')], {
      env: { ...process.env, DATABASE_URL: t.url },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      await waitFor('the child to hold the lock', () => out.includes('locked'), 60_000);
      const standby = createWriterLock({ databaseUrl: t.url, log: silentLogger() });
      await expect(standby.acquire()).rejects.toMatchObject({ code: 'ERR_INDEXER_LOCKED' });
      child.kill('SIGSTOP');
      const waiting = AbortSignal.timeout(90_000);
      await standby.acquire({ pollMs: 250, signal: waiting });
      const admin = await client();
      // (this database's holders of the indexer's key: other test files share the server)
      const holders = await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks
         WHERE locktype = 'advisory' AND granted AND objsubid = 1
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND ((classid::int8 << 32) | objid::int8) = $1::int8`,
        [INDEXER_LEADER.toString()],
      );
      expect(holders.rows[0]!.n).toBe(1);
      await standby.release();
    } finally {
      child.kill('SIGKILL');
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    }
  });
});
