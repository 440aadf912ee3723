/**
 * SIGTERM at the edges of a real `blockwire start` process: while it is still starting (the API
 * listens, the streams and delivery roles are not up yet) it lets the roles starting finish, goes
 * no further, stops everything in order and exits 0 with nothing failing on the way (the database pool was once
 * closed under the roles still starting); and a graceful stop that outlasts SHUTDOWN_TIMEOUT_MS
 * (a drain longer than the limit) exits 1 at the limit, naming the step it was waiting for; a
 * second signal exits at once.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { processEnv, spawnBlockwire, type BlockwireProcess } from './processes.js';

let devnode: Devnode;
let db: TestDatabase;
let proc: BlockwireProcess | undefined;

const env = (prefix: string, extra: Record<string, string>) => ({
  ...processEnv({
    databaseUrl: db.url,
    redisUrl: inject('redisUrl'),
    redisPrefix: uniqueRedisPrefix(prefix),
    rpcUrl: devnode.rpcUrl,
    zmqUrl: devnode.zmqUrl,
  }),
  ...extra,
});

/**
 * What went wrong, as "level msg: error": lines at error or above, and warnings other than a
 * slow step's "still stopping" (which a loaded machine may print).
 */
const complaints = (p: BlockwireProcess) =>
  p.lines
    .filter((l) => ['error', 'fatal'].includes(l.level) || (l.level === 'warn' && l.msg !== 'still stopping'))
    .map((l) => `${l.level} ${l.msg}: ${String((l.err as { message?: string } | undefined)?.message ?? '')}`);

describe('SIGTERM while starting, and a stop that outlasts SHUTDOWN_TIMEOUT_MS', () => {
  beforeAll(async () => {
    devnode = await startDevnode({ initialBlocks: 101 });
    db = await createMigratedDatabase('stoplimit');
  }, 120_000);

  afterAll(async () => {
    await proc?.stop();
    await devnode?.stop();
    await db?.drop();
  }, 120_000);

  it('SIGTERM as the API starts listening: the roles starting finish, then everything stops in order, exit 0', async () => {
    // The stop's limit is far off: at load the start-up's rest and the stop may take a while.
    proc = spawnBlockwire('stop-while-starting', ['start'], env('starting', { SHUTDOWN_TIMEOUT_MS: '120000' }));
    await proc.waitForLog('api listening');
    const code = await proc.stop(150_000);
    expect(code, proc.output().slice(-4000)).toBe(0);
    expect(proc.lines.some((l) => l.msg === 'stopped')).toBe(true);
    expect(complaints(proc)).toEqual([]);
  });

  it('a drain longer than SHUTDOWN_TIMEOUT_MS: exit 1 at the limit, naming the drain', async () => {
    proc = spawnBlockwire('stop-limit', ['start'], env('stoplimit', { SHUTDOWN_DRAIN_MS: '60000', SHUTDOWN_TIMEOUT_MS: '1500' }));
    await proc.waitForLog('started');
    const begun = Date.now();
    const code = await proc.stop(50_000);
    const took = Date.now() - begun;
    expect(code, proc.output().slice(-3000)).toBe(1);
    // At the limit, long before the drain would have ended (the stop's own SIGKILL is at 50 s).
    expect(took).toBeLessThan(45_000);
    const last = proc.lines.find((l) => /graceful stop took too long/.test(l.msg));
    expect(last, proc.output().slice(-3000)).toMatchObject({ level: 'error', waitingFor: 'drain', timeoutMs: 1500 });
    expect(proc.lines.some((l) => l.msg === 'stopped')).toBe(false);
  });

  it('a second signal exits at once with 130, in the middle of a long drain', async () => {
    proc = spawnBlockwire('second-signal', ['start'], env('second', { SHUTDOWN_DRAIN_MS: '60000' }));
    await proc.waitForLog('started');
    proc.child.kill('SIGTERM');
    await proc.waitForLog(/^draining/);
    const begun = Date.now();
    const code = await proc.stop(50_000);
    expect(code, proc.output().slice(-3000)).toBe(130);
    expect(Date.now() - begun).toBeLessThan(45_000);
    expect(proc.lines.some((l) => l.msg === 'stopped')).toBe(false);
  });
});
