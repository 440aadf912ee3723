/**
 * An importer that dies in the middle of a bulk statement (killed, out of memory) leaves no
 * statement running (indexer/writer/bulk.ts `connectBulk`): its backend checks that the client is
 * still there every CLIENT_CHECK_INTERVAL and cancels the statement once it is gone, rolling its
 * transaction back and releasing the indexer lock its session held. A plain session's backend,
 * beside it, runs on: the setting is what ends it.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';
import { CLIENT_CHECK_INTERVAL } from '../../../indexer/writer/bulk.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createMigratedDatabase('orphan');
});
afterAll(async () => {
  await t?.drop();
});

/** Starts the child with `session`; resolves with its backend's pid and check interval once its long statement runs. */
async function sessionChild(session: 'bulk' | 'plain') {
  const child = spawn(process.execPath, ['--import', 'tsx', resolve('test/integration/indexer/bulk-session-child.ts')], {
    env: { ...process.env, DATABASE_URL: t.url, BULK_SESSION: session },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const line = await waitFor('the child to report its session', () => out.split('\n').find((l) => l.startsWith('{')), 60_000);
  const session_ = JSON.parse(line) as { pid: number; check: string };
  await waitFor('its statement to run', () => running(session_.pid));
  return { child, ...session_ };
}

/** The state of backend `pid` (pg_stat_activity), null once it is gone. */
const backendState = async (pid: number) =>
  (await sql<{ state: string | null }>`SELECT state FROM pg_stat_activity WHERE pid = ${pid}`.execute(t.db)).rows[0]?.state ?? null;
const running = async (pid: number) => (await backendState(pid)) === 'active';

it('a bulk session whose importer is killed mid-statement ends within the check interval; a plain one runs on', async () => {
  const bulk = await sessionChild('bulk');
  const plain = await sessionChild('plain');
  try {
    expect(bulk.check).toBe(CLIENT_CHECK_INTERVAL);
    expect(plain.check).toBe('0');
    bulk.child.kill('SIGKILL');
    plain.child.kill('SIGKILL');
    await waitFor('the killed importer’s statement to end', async () => !(await running(bulk.pid)), 30_000);
    expect(await backendState(bulk.pid)).toBeNull();
    // the plain session's statement, killed at the same moment, still runs
    expect(await running(plain.pid)).toBe(true);
  } finally {
    bulk.child.kill('SIGKILL');
    plain.child.kill('SIGKILL');
    await sql`SELECT pg_terminate_backend(${plain.pid})`.execute(t.db);
  }
});
