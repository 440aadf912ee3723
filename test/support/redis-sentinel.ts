/**
 * A real Redis Sentinel group on loopback: a redis-server primary, one replica of it, and three
 * `redis-sentinel` processes (Debian's package; scripts/setup-test.sh installs it) monitoring the
 * primary with a quorum of 2 and a 1 s down-after time, each with a config file of its own (a
 * Sentinel rewrites it). `ready()` waits until every Sentinel knows the replica and the two
 * other Sentinels, so a failover can be elected.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../cli/embedded/free-port.js';
import { startRedis, type RedisServer } from '../../cli/embedded/redis.js';
import { waitFor } from './wait.js';

const SENTINEL_BIN = '/usr/bin/redis-sentinel';

export type SentinelGroup = {
  /** The primary name the Sentinels monitor. */
  name: string;
  primary: RedisServer;
  replica: RedisServer;
  /** `host:port` of each Sentinel (REDIS_SENTINELS). */
  sentinels: string[];
  /** The port of the server the Sentinels currently name as primary. */
  primaryPort(): Promise<number>;
  stop(): Promise<void>;
};

/** Whether Debian's redis-sentinel is installed. */
export const sentinelInstalled = (): boolean => existsSync(SENTINEL_BIN);

async function sentinelCommand<T>(port: number, ...args: (string | number)[]): Promise<T> {
  const c = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return (await c.call('SENTINEL', ...args.map(String))) as T;
  } finally {
    c.disconnect();
  }
}

/** Starts the group in `dir`; see the module comment. */
export async function startSentinelGroup(dir: string, name = 'bwtest'): Promise<SentinelGroup> {
  const primary = await startRedis({ dir: join(dir, 'primary') });
  const replica = await startRedis({ dir: join(dir, 'replica'), args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const sdir = join(dir, `sentinel-${i}`);
    await mkdir(sdir, { recursive: true });
    const conf = join(sdir, 'sentinel.conf');
    await writeFile(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        'daemonize no',
        `dir ${sdir}`,
        `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 10000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'),
    );
    const c = spawn(SENTINEL_BIN, [conf], { stdio: ['ignore', 'ignore', 'ignore'], detached: true });
    children.push(c);
    ports.push(port);
  }
  const onExit = () => {
    for (const c of children) c.kill('SIGKILL');
  };
  process.once('exit', onExit);
  const group: SentinelGroup = {
    name,
    primary,
    replica,
    sentinels: ports.map((p) => `127.0.0.1:${p}`),
    async primaryPort() {
      const [, port] = await sentinelCommand<[string, string]>(ports[0]!, 'get-master-addr-by-name', name);
      return Number(port);
    },
    async stop() {
      process.off('exit', onExit);
      await Promise.all(
        children.map(async (c) => {
          if (c.exitCode !== null || c.signalCode !== null) return;
          const exited = new Promise((r) => c.once('exit', r));
          c.kill('SIGTERM');
          await exited;
        }),
      );
      await Promise.allSettled([primary.stop(), replica.stop()]);
    },
  };
  try {
    await waitFor(
      'every Sentinel to know the replica and the two other Sentinels',
      async () => {
        for (const p of ports) {
          const replicas = await sentinelCommand<unknown[]>(p, 'replicas', name);
          const others = await sentinelCommand<unknown[]>(p, 'sentinels', name);
          if (replicas.length < 1 || others.length < 2) return false;
        }
        return true;
      },
      60_000,
      200,
    );
  } catch (err) {
    await group.stop();
    throw err;
  }
  return group;
}
