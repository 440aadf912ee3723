/**
 * The image's layout, without Docker: compile what the Dockerfile compiles (tsconfig.build.json)
 * into a directory holding only package.json, bin/, dist/ and node_modules — no sources — then
 * run `node dist/cli/main.js` as the image's entrypoint does: --help, `bin/blockwire.js`
 * falling back to dist, and a real `start` that applies the migrations from dist on an empty
 * database, indexes the devnode's chain, answers /healthz and stops with 0 on SIGTERM.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';
import { projectRoot } from '../../support/fixtures.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { migrations } from '../../../migrations/index.js';
import { portOf, spawnBlockwire } from './processes.js';
import { waitFor } from '../../support/wait.js';

const run = promisify(execFile);
let app: string;
let devnode: Devnode;
let db: TestDatabase;

describe('the built dist (what the image runs)', () => {
  beforeAll(async () => {
    app = await mkdtemp(join(tmpdir(), 'bw-dist-'));
    // tsc exits non-zero on a type error anywhere but still writes the files; the type check
    // itself is the suite's `npm run typecheck`. What matters here is that the output runs.
    await run(join(projectRoot, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json', '--outDir', join(app, 'dist')], {
      cwd: projectRoot,
      timeout: 240_000,
    }).catch((err: { stdout?: string }) => {
      if (!existsSync(join(app, 'dist', 'cli', 'main.js'))) throw new Error(`tsc wrote no dist: ${err.stdout ?? ''}`);
    });
    await cp(join(projectRoot, 'package.json'), join(app, 'package.json'));
    await cp(join(projectRoot, 'bin'), join(app, 'bin'), { recursive: true });
    await symlink(join(projectRoot, 'node_modules'), join(app, 'node_modules'));
    devnode = await startDevnode({ initialBlocks: 101 });
    db = await createTestDatabase('dist');
  }, 300_000);

  afterAll(async () => {
    await devnode?.stop();
    await db?.drop();
    if (app) await rm(app, { recursive: true, force: true });
  });

  it('has no sources, and main.js and bin/blockwire.js both run the compiled CLI', async () => {
    for (const d of ['src', 'indexer', 'api', 'streams', 'stamp', 'devnode', 'cli', 'migrations'])
      expect(existsSync(join(app, d)), d).toBe(false);
    const direct = await run(process.execPath, [join(app, 'dist', 'cli', 'main.js'), '--help'], { cwd: app });
    for (const c of ['start', 'migrate', 'status', 'config']) expect(direct.stdout).toContain(`  ${c} `);
    const viaBin = await run(process.execPath, [join(app, 'bin', 'blockwire.js'), 'config', '--check'], {
      cwd: app,
      env: { PATH: process.env.PATH ?? '' },
    });
    expect(viaBin.stdout).toBe('configuration OK\n');
  });

  it('starts from dist: migrations from dist on an empty database, the chain indexed, SIGTERM exits 0', async () => {
    const proc = spawnBlockwire(
      'dist',
      ['start'],
      {
        DATABASE_URL: db.url,
        REDIS_URL: inject('redisUrl'),
        BLOCKWIRE_REDIS_PREFIX: uniqueRedisPrefix('dist'),
        BITCOIND_RPC_URL: devnode.rpcUrl,
        BITCOIND_ZMQ_URL: devnode.zmqUrl,
        HOST: '127.0.0.1',
        PORT: '0',
        NODE_ENV: 'production',
      },
      { entry: join(app, 'dist', 'cli', 'main.js'), cwd: app },
    );
    try {
      const migrated = await proc.waitForLog('migrations applied');
      expect(migrated.migrations).toEqual(
        Object.keys(migrations)
          .sort()
          .map((name) => `Up ${name}`),
      );
      const port = portOf(await proc.waitForLog('api listening'));
      const tip = devnode.tip();
      const health = await waitFor(
        'healthz at the node tip',
        async () => {
          const h = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as {
            status?: string;
            index?: { height: number; hash: string };
          };
          return h.index?.hash === tip.hash && h;
        },
        60_000,
        200,
      );
      expect(health).toMatchObject({ status: 'ok', index: { height: tip.height, hash: tip.hash } });
    } finally {
      const code = await proc.stop();
      expect(code, `exit ${code}; the output's tail:\n${proc.output().slice(-6000)}`).toBe(0);
    }
  });
});
