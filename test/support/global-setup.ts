/**
 * Integration-test services: one PostgreSQL and one Redis on free loopback ports, started for
 * the run and torn down after it. Test files get isolated databases (test/support/db.ts) and
 * isolated Redis key prefixes; tests that stop or kill a service start their own. A database
 * with every migration applied, made once here, is the template of each migrated test
 * database: a copy takes a tenth of the time of migrating anew, and some fifty files want one.
 */
import type { TestProject } from 'vitest/node';
import { mkdtemp, rm, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from '../../cli/embedded/postgres.js';
import { startRedis } from '../../cli/embedded/redis.js';
import { createDb } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import pgClient from 'pg';

declare module 'vitest' {
  export interface ProvidedContext {
    pgUrl: string;
    redisUrl: string;
    /** A database with every migration applied, never connected to (CREATE DATABASE … TEMPLATE). */
    pgTemplate: string;
  }
}

const TEMPLATE = 'bw_migrated_template';

/** Creates the template database and migrates it; every connection to it is closed after. */
async function migratedTemplate(adminUrl: string, url: string): Promise<string> {
  const admin = new pgClient.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${TEMPLATE}`);
  } finally {
    await admin.end();
  }
  const db = createDb(url, { max: 1 });
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
  return TEMPLATE;
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
  project.provide('pgTemplate', await migratedTemplate(pg.url, pg.urlFor(TEMPLATE)));
  return async () => {
    await Promise.allSettled([pg.stop(), redis.stop()]);
    await rm(root, { recursive: true, force: true });
  };
}
