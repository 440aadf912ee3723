/**
 * The quick start supervises its children: `blockwire start` with no DATABASE_URL and no
 * REDIS_URL runs an embedded PostgreSQL and a redis-server child; each is killed with SIGKILL
 * here, and the process, without a hand, starts it again on the same port and data — /readyz
 * reports the dependency down meanwhile (never a 500) and ready again after, and the stream
 * carries a newly mined block once both came back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { processAlive } from '../../../cli/embedded/process-alive.js';
import { spawnBlockwire, type BlockwireProcess } from './processes.js';
import { waitFor } from '../../support/wait.js';

let devnode: Devnode;
let dataDir: string;
let proc: BlockwireProcess | undefined;

async function pidIn(file: string): Promise<number> {
  return Number((await readFile(file, 'utf8')).trim().split(/\s+/)[0]);
}

beforeAll(async () => {
  devnode = await startDevnode({ initialBlocks: 5 });
  dataDir = await mkdtemp(join(tmpdir(), 'bw-supervision-'));
});
afterAll(async () => {
  await proc?.stop();
  await devnode?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 120_000);

describe('quick start supervision', () => {
  it('restarts a killed redis-server and a killed PostgreSQL; readiness follows; the stream carries blocks after', async () => {
    proc = spawnBlockwire('supervision', ['start'], {
      BLOCKWIRE_DATA_DIR: dataDir,
      PORT: '0',
      BITCOIND_RPC_URL: devnode.rpcUrl,
      BITCOIND_ZMQ_URL: devnode.zmqUrl,
      POLL_INTERVAL_MS: '200',
      BLOCKWIRE_RELAY_POLL_MS: '20',
    });
    const line = await proc.waitForLog('api listening', 240_000);
    const api = String(line.url);
    await waitFor('the banner with the API key', () => /API key {4}\S+/.test(proc!.output()), 60_000);
    const key = /API key {4}(\S+)/.exec(proc.output())![1]!;
    // Every readiness answer seen, asserted after the waits (a throw inside waitFor is only "not yet").
    const answers: string[] = [];
    const readyz = async () => {
      const r = await fetch(`${api}/readyz`);
      const text = await r.text();
      answers.push(`${r.status} ${text.slice(0, 200)}`);
      return { status: r.status, body: JSON.parse(text) as { status: string; dependencies: Record<string, string> } };
    };
    await waitFor('ready', async () => (await readyz()).status === 200, 60_000);

    // redis-server: SIGKILL; readiness says Redis is down until the supervisor brought it back.
    const redisPidFile = join(dataDir, 'redis', 'child.pid');
    const redisPid = await pidIn(redisPidFile);
    process.kill(redisPid, 'SIGKILL');
    await waitFor(
      'redis restarted and the API ready again',
      async () => {
        const r = await readyz();
        return r.status === 200 && (await pidIn(redisPidFile)) !== redisPid;
      },
      60_000,
    );
    expect(processAlive(await pidIn(redisPidFile))).toBe(true);
    await proc.waitForLog('redis-server restarted', 10_000);

    // PostgreSQL: SIGKILL of the postmaster; the same.
    const pgPidFile = join(dataDir, 'postgres', 'postmaster.pid');
    const pgPid = await pidIn(pgPidFile);
    process.kill(pgPid, 'SIGKILL');
    await waitFor(
      'PostgreSQL restarted and the API ready again',
      async () => {
        const r = await readyz();
        return r.status === 200 && (await pidIn(pgPidFile).catch(() => pgPid)) !== pgPid;
      },
      120_000,
    );
    await proc.waitForLog('embedded PostgreSQL restarted', 10_000);
    expect(answers.filter((a) => !/^(200|503) \{"status":/.test(a))).toEqual([]);

    // Everything works again: a chain subscription's stream receives the next block.
    const sub = await fetch(`${api}/v1/subscriptions`, {
      method: 'POST',
      headers: { apiKey: key, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'chain' }),
    });
    expect(sub.status).toBe(200);
    const ws = new WebSocket(`${api.replace(/^http/, 'ws')}/v1/stream`, { headers: { apiKey: key } });
    const heights: number[] = [];
    ws.on('message', (d: Buffer) => {
      const e = JSON.parse(String(d)) as { type: string; block?: { height: number } };
      if (e.type === 'block.connected') heights.push(e.block!.height);
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    await waitFor('the stream live', () => ws.readyState === WebSocket.OPEN, 10_000);
    await devnode.mine(1);
    await waitFor('block.connected of the new block', () => heights.includes(devnode.tip().height), 60_000);
    ws.close();
    expect(proc.child.exitCode).toBeNull();
    expect(await proc.stop()).toBe(0);
    proc = undefined;
  }, 600_000);
});
