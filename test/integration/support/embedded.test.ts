import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { startPostgres } from '../../../cli/embedded/postgres.js';
import { freePort } from '../../../cli/embedded/free-port.js';
import { createServer, type AddressInfo } from 'node:net';
import { startRedis } from '../../../cli/embedded/redis.js';
import { processAlive } from '../../../cli/embedded/process-alive.js';
import { projectRoot } from '../../support/fixtures.js';
import { openDatabase } from '../../../cli/open-database.js';
import { testConfig } from '../../../src/config.js';
import { createApiKey, verifyApiKey } from '../../../src/auth/keys.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import { waitFor } from '../../support/wait.js';

async function query(url: string, text: string): Promise<unknown[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text)).rows;
  } finally {
    await c.end();
  }
}

/** Runs startPostgres in a separate Node process; resolves once it is ready. */
async function postgresInChild(dataDir: string) {
  const script = `
    const { startPostgres } = await import(${JSON.stringify(join(projectRoot, 'cli/embedded/postgres.ts'))});
    const s = await startPostgres({ dataDir: ${JSON.stringify(dataDir)} });
    process.stdout.write('ready\\n');
    process.on('SIGTERM', async () => { await s.stop(); process.exit(0); });
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((res, rej) => {
    child.stdout.on('data', (d) => String(d).includes('ready') && res());
    child.on('exit', (code) => rej(new Error(`child exited ${code}`)));
  });
  return child;
}

describe('embedded PostgreSQL and Redis', () => {
  const dirs: string[] = [];
  const tmp = async () => {
    const d = await mkdtemp(join(tmpdir(), 'bw-embedded-'));
    dirs.push(d);
    return d;
  };
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('keeps data across stop and start, and recovers after the postmaster is killed', async () => {
    const dir = await tmp();
    const server = await startPostgres({ dataDir: join(dir, 'pg') });
    // Durable, with the WAL writer flushing a live block's WAL as it is written (docs/operations.md).
    expect(
      await query(
        server.url,
        "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'wal_writer_delay') ORDER BY name",
      ),
    ).toEqual([
      { name: 'fsync', setting: 'on' },
      { name: 'full_page_writes', setting: 'on' },
      { name: 'synchronous_commit', setting: 'on' },
      { name: 'wal_writer_delay', setting: '10' },
    ]);
    await query(server.url, 'CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)');
    await server.kill();
    await expect(query(server.url, 'SELECT 1')).rejects.toThrow();
    await server.restart();
    expect(await query(server.url, 'SELECT x FROM kept')).toEqual([{ x: 42 }]);
    await server.stop();
    const again = await startPostgres({ dataDir: join(dir, 'pg') });
    expect(await query(again.url, 'SELECT x FROM kept')).toEqual([{ x: 42 }]);
    await again.stop();
  });

  it('picks another port when the one it picked is taken before the server binds it', async () => {
    const taken = createServer();
    await new Promise<void>((res) => taken.listen(0, '127.0.0.1', res));
    const busy = (taken.address() as AddressInfo).port;
    const picks = [busy];
    let asked = 0;
    const s = await startPostgres({
      dataDir: join(await tmp(), 'pg'),
      ephemeral: true,
      pickPort: async () => (asked++, picks.shift() ?? freePort()),
    });
    try {
      // (the busy port first: postgres could not bind it; then another)
      expect(asked).toBe(2);
      expect(s.port).not.toBe(busy);
      expect(await query(s.url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await s.stop();
      taken.close();
    }
  });

  it('stops a server orphaned by a Blockwire killed with SIGKILL, then starts', async () => {
    const dir = await tmp();
    const dataDir = join(dir, 'pg');
    // A separate process starts PostgreSQL and is killed before it can stop it.
    const child = await postgresInChild(dataDir);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const orphan = Number((await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    expect(processAlive(orphan)).toBe(true);

    const server = await startPostgres({ dataDir });
    expect(processAlive(orphan)).toBe(false);
    expect(await query(server.url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await server.stop();
  });

  it('refuses a data directory another live process owns', async () => {
    const dir = await tmp();
    const dataDir = join(dir, 'pg');
    const child = await postgresInChild(dataDir);
    try {
      await expect(startPostgres({ dataDir })).rejects.toThrow(`is already in use by process ${child.pid}`);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });

  it('lets a second command use the embedded server a running Blockwire owns, and leaves it running', async () => {
    const dir = await tmp();
    const child = await postgresInChild(join(dir, 'postgres'));
    try {
      const config = testConfig({ dataDir: dir });
      const first = await openDatabase(config);
      expect(first.embedded).toBeUndefined();
      await migrateToLatest(first.db);
      const { key } = await createApiKey(first.db, { name: 'beside-start' });
      await first.close();
      // The owner's server still serves: another command sees the key.
      const second = await openDatabase(config);
      expect(await verifyApiKey(second.db, key)).not.toBeNull();
      await second.close();
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });

  it('runs redis-server with noeviction and restarts it on the same port', async () => {
    const dir = await tmp();
    const redis = await startRedis({ dir });
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
    client.on('error', () => {});
    try {
      expect(((await client.config('GET', 'maxmemory-policy')) as string[])[1]).toBe('noeviction');
      await redis.kill();
      await expect(client.set('a', '1')).rejects.toThrow();
      await redis.restart();
      expect(await waitFor('a write after the restart', () => client.set('a', '1'), 10_000)).toBe('OK');
    } finally {
      client.disconnect();
      await redis.stop();
    }
  });
});
