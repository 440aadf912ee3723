/**
 * Integration-test services: one PostgreSQL and one Redis on free loopback ports, started for
 * the run and torn down after it. Test files get isolated databases (test/support/db.ts) and
 * isolated Redis key prefixes; tests that stop or kill a service start their own.
 */
import type { TestProject } from 'vitest/node';
import { mkdtemp, rm, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from '../../src/embedded/postgres.js';
import { startRedis } from '../../src/embedded/redis.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgUrl: string;
    redisUrl: string;
  }
}

export default async function setup(project: TestProject) {
  await mkdir(join(tmpdir(), 'blockwire-test'), { recursive: true });
  const root = await mkdtemp(join(tmpdir(), 'blockwire-test', 'run-'));
  const [pg, redis] = await Promise.all([
    startPostgres({ dataDir: join(root, 'pg'), ephemeral: true, settings: { max_connections: 400, shared_buffers: '256MB' } }),
    startRedis({ dir: join(root, 'redis') }),
  ]);
  project.provide('pgUrl', pg.url);
  project.provide('redisUrl', redis.url);
  return async () => {
    await Promise.allSettled([pg.stop(), redis.stop()]);
    await rm(root, { recursive: true, force: true });
  };
}
