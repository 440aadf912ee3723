/**
 * Liveness and readiness while a dependency is down (docs/operations.md "Health"): /healthz
 * answers 200 while the process runs, whatever is down; /readyz answers 503 — with the health
 * body, never a 500 — while PostgreSQL or Redis is down, naming which in `dependencies`, and 200
 * again once it is back, without a restart of the API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startPostgres, type PostgresServer } from '../../../cli/embedded/postgres.js';
import { startRedis, type RedisServer } from '../../../cli/embedded/redis.js';
import { createDb } from '../../../src/db/connect.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import { startApi, type ApiHandle } from '../../../api/main.js';
import { testConfig } from '../../../src/config.js';
import { silentLogger } from '../../../src/log.js';
import { waitFor } from '../../support/wait.js';

type Health = { status: string; index: unknown; dependencies: Record<string, string> };

describe('readiness with a dependency down', () => {
  let dir: string;
  let pgServer: PostgresServer;
  let redisServer: RedisServer;
  let redis: Redis;
  let api: ApiHandle;
  const db = () => createDb(pgServer.url, { max: 2 });
  const probe = async (path: string) => {
    const r = await fetch(`${api.url}${path}`);
    const text = await r.text();
    return { status: r.status, text, body: JSON.parse(text) as Health };
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bw-readiness-'));
    [pgServer, redisServer] = await Promise.all([
      startPostgres({ dataDir: join(dir, 'pg'), ephemeral: true }),
      startRedis({ dir: join(dir, 'redis') }),
    ]);
    const setup = db();
    await migrateToLatest(setup);
    redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
    redis.on('error', () => undefined);
    api = await startApi({
      config: testConfig({ host: '127.0.0.1', port: 0, network: 'regtest' }),
      log: silentLogger(),
      db: setup,
      redis,
      databaseUrl: pgServer.url,
      tipPollMs: 100,
    });
  });
  afterAll(async () => {
    await api?.close();
    redis?.disconnect();
    await Promise.allSettled([pgServer?.stop(), redisServer?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('is ready with every dependency up', async () => {
    const ready = await probe('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.dependencies).toEqual({ database: 'up', redis: 'up', node: 'not_used' });
  });

  it('Redis down: /readyz 503 redis_unreachable, /healthz 200; ready again once it is back', async () => {
    await redisServer.kill();
    try {
      const ready = await probe('/readyz');
      expect(ready.status, ready.text).toBe(503);
      expect(ready.body).toMatchObject({ status: 'redis_unreachable', dependencies: { database: 'up', redis: 'down' } });
      const live = await probe('/healthz');
      expect(live.status, live.text).toBe(200);
      expect(live.body.dependencies.redis).toBe('down');
    } finally {
      await redisServer.restart();
    }
    await waitFor('ready after Redis came back', async () => (await probe('/readyz')).status === 200, 30_000);
  });

  it('PostgreSQL down: /readyz 503 database_unreachable (not 500), /healthz 200; ready again once it is back', async () => {
    await pgServer.stop();
    try {
      const ready = await probe('/readyz');
      expect(ready.status, ready.text).toBe(503);
      expect(ready.text).not.toContain('FST_ERR');
      expect(ready.body).toMatchObject({ status: 'database_unreachable', index: null, dependencies: { database: 'down' } });
      const live = await probe('/healthz');
      expect(live.status, live.text).toBe(200);
      expect(live.body).toMatchObject({ status: 'database_unreachable', dependencies: { database: 'down' } });
    } finally {
      await pgServer.restart();
    }
    await waitFor('ready after PostgreSQL came back', async () => (await probe('/readyz')).status === 200, 30_000);
  });
});
