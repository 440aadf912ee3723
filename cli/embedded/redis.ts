/**
 * A `redis-server` child process on a free loopback port, for the quick start when REDIS_URL is
 * unset and for the test harness. `ensureRedisServerBinary` installs Debian's redis-server with
 * apt-get when it is missing and we are root (scripts/setup.sh does the same ahead of time).
 * @module
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { userInfo } from 'node:os';
import { createConnection } from 'node:net';
import { freePort } from './free-port.js';
import { processAlive } from './process-alive.js';

export type RedisServer = {
  readonly url: string;
  readonly port: number;
  /** Clean shutdown. */
  stop(): Promise<void>;
  /** SIGKILL, for outage tests. */
  kill(): Promise<void>;
  /** Starts it again on the same port after stop() or kill(). */
  restart(): Promise<void>;
  /** Calls `listener` when the server exits without stop() or restart() asking it to (kill() counts: it stands for a crash). */
  onCrash(listener: (how: string) => void): void;
};

const CANDIDATES = ['/usr/bin/redis-server', '/usr/local/bin/redis-server', '/usr/sbin/redis-server'];

function findBinary(): string | undefined {
  for (const c of CANDIDATES) if (existsSync(c)) return c;
  try {
    const p = execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim();
    return p || undefined;
  } catch {
    return undefined;
  }
}

/** Path of redis-server, installing Debian's package first when missing and running as root. */
function ensureRedisServerBinary(): string {
  const found = findBinary();
  if (found) return found;
  if (userInfo().uid === 0 && existsSync('/usr/bin/apt-get')) {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'redis-server'], { stdio: 'inherit', env });
    const installed = findBinary();
    if (installed) return installed;
  }
  throw new Error('redis-server not found: install it (Debian: apt-get install redis-server, or run scripts/setup.sh) or set REDIS_URL');
}

function ping(port: number): Promise<boolean> {
  return new Promise((res) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    let buf = '';
    sock.setTimeout(500);
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n')) {
        sock.destroy();
        res(buf.startsWith('+PONG'));
      }
    });
    sock.on('error', () => res(false));
    sock.on('timeout', () => {
      sock.destroy();
      res(false);
    });
  });
}

/** Stops a redis-server that a killed Blockwire left running in `dir` (pid file `child.pid`: "redis owner"). */
async function clearPrevious(dir: string): Promise<void> {
  const file = join(dir, 'child.pid');
  if (!existsSync(file)) return;
  const [pid, owner] = (await readFile(file, 'utf8')).trim().split(' ').map(Number);
  if (pid && processAlive(pid) && !(owner && owner !== process.pid && processAlive(owner))) process.kill(pid, 'SIGKILL');
  await rm(file, { force: true });
}

/**
 * Starts redis-server with `noeviction` (BullMQ requires it), in its own process group so that a
 * terminal's Ctrl-C reaches Blockwire first, which stops it last. No persistence unless
 * `persist` (the quick start): then an append-only file in `dir`, written every second, so that
 * a restart after a crash finds the queued deliveries again. `args`: more redis-server options
 * (a replica's `--replicaof host port`).
 */
export async function startRedis(
  opts: { dir: string; port?: number; persist?: boolean; onLog?: (line: string) => void; args?: readonly string[] } = { dir: '.' },
): Promise<RedisServer> {
  const bin = ensureRedisServerBinary();
  const dir = resolve(opts.dir);
  await mkdir(dir, { recursive: true });
  const port = opts.port || (await freePort());
  let child: ChildProcess | undefined;
  /** Children whose exit was asked for by stop() or restart(). */
  const expected = new WeakSet<ChildProcess>();
  const crashListeners: ((how: string) => void)[] = [];
  await clearPrevious(dir);

  const launch = async () => {
    const persistence = opts.persist ? ['--appendonly', 'yes', '--appendfsync', 'everysec'] : ['--appendonly', 'no'];
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      ...persistence,
      '--maxmemory-policy',
      'noeviction',
      '--dir',
      dir,
      '--protected-mode',
      'yes',
      ...(opts.args ?? []),
    ];
    const c = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child = c;
    c.once('exit', (code, signal) => {
      if (!expected.has(c)) for (const l of crashListeners) l(signal ? `signal ${signal}` : `exit code ${code}`);
    });
    await writeFile(join(dir, 'child.pid'), `${c.pid} ${process.pid}\n`);
    c.stdout?.on('data', (d) => opts.onLog?.(String(d)));
    c.stderr?.on('data', (d) => opts.onLog?.(String(d)));
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (c.exitCode !== null) throw new Error(`redis-server exited with code ${c.exitCode}`);
      if (await ping(port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    c.kill('SIGKILL');
    throw new Error('redis-server did not become ready within 10 s');
  };

  const terminate = async (signal: NodeJS.Signals, asked: boolean) => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    if (asked) expected.add(c);
    const exited = new Promise((r) => c.once('exit', r));
    c.kill(signal);
    await exited;
  };

  await launch();
  const onExit = () => child?.kill('SIGKILL');
  process.once('exit', onExit);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: () => terminate('SIGTERM', true),
    kill: () => terminate('SIGKILL', false),
    restart: async () => {
      await terminate('SIGTERM', true);
      await launch();
    },
    onCrash: (listener) => void crashListeners.push(listener),
  };
}
