/**
 * Real `blockwire start --role …` child processes for the ops tests: spawned through
 * bin/blockwire.js (or a built dist), configured only by environment, their JSON log lines
 * collected; `waitForLog` finds a line by its message, `stop()` sends SIGTERM and resolves with
 * the exit code. Every child is killed when the test process exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { projectRoot } from '../../support/fixtures.js';

export type LogLine = { level: string; msg: string; [k: string]: unknown };

export type BlockwireProcess = {
  name: string;
  child: ChildProcess;
  lines: LogLine[];
  /** Everything the process wrote (logs and the banner), for failure messages. */
  output(): string;
  /**
   * Resolves with the first log line whose `msg` matches (already seen or to come). The default
   * limit is long: seven children starting at once on 2 cores at load 30 took over 90 s.
   */
  waitForLog(msg: string | RegExp, timeoutMs?: number): Promise<LogLine>;
  /** The exit code (or the signal's name) once it has exited. */
  readonly exited: Promise<number | string>;
  /** SIGTERM, then the exit code. */
  stop(timeoutMs?: number): Promise<number | string>;
};

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Spawns `node <entry> start …args` with `env` on top of a clean environment. */
export function spawnBlockwire(
  name: string,
  args: string[],
  env: Record<string, string>,
  opts: { entry?: string; cwd?: string } = {},
): BlockwireProcess {
  const entry = opts.entry ?? join(projectRoot, 'bin', 'blockwire.js');
  const base: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/root',
    LOG_LEVEL: 'info',
    NODE_ENV: 'test',
  };
  const child = spawn(process.execPath, [entry, ...args], {
    cwd: opts.cwd ?? projectRoot,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const lines: LogLine[] = [];
  const waiters: { match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  let raw = '';
  let partial = '';
  const onData = (d: Buffer) => {
    raw += String(d);
    if (raw.length > 2_000_000) raw = raw.slice(-1_000_000);
    partial += String(d);
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const p of parts) {
      if (!p.startsWith('{')) continue;
      let line: LogLine;
      try {
        line = JSON.parse(p) as LogLine;
      } catch {
        continue;
      }
      lines.push(line);
      for (const w of [...waiters]) {
        if (w.match(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', (d: Buffer) => (raw += String(d)));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve(code ?? signal ?? 'unknown');
    }),
  );
  const output = () => raw;
  return {
    name,
    child,
    lines,
    output,
    exited,
    waitForLog(msg, timeoutMs = 300_000) {
      const match = (l: LogLine) => (typeof msg === 'string' ? l.msg === msg : msg.test(l.msg));
      const seen = lines.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise<LogLine>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${name}: no log '${String(msg)}' within ${timeoutMs} ms; output:\n${raw.slice(-4000)}`)),
          timeoutMs,
        );
        const w = {
          match,
          resolve: (l: LogLine) => {
            clearTimeout(timer);
            resolve(l);
          },
        };
        waiters.push(w);
        void exited.then((code) => {
          if (waiters.includes(w)) {
            clearTimeout(timer);
            reject(new Error(`${name} exited (${code}) before logging '${String(msg)}'; output:\n${raw.slice(-4000)}`));
          }
        });
      });
    },
    async stop(timeoutMs = 60_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** The port a process listens on, from its log line (`url` or `port` field). */
export function portOf(line: LogLine): number {
  if (typeof line.port === 'number') return line.port;
  const m = /:(\d+)$/.exec(String(line.url ?? ''));
  if (!m) throw new Error(`no port in log line ${JSON.stringify(line)}`);
  return Number(m[1]);
}

/** The environment every ops test gives its processes: the run's Postgres database and Redis, the devnode, free ports, fast polling. */
export function processEnv(deps: {
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  rpcUrl: string;
  zmqUrl: string;
}): Record<string, string> {
  return {
    DATABASE_URL: deps.databaseUrl,
    REDIS_URL: deps.redisUrl,
    BLOCKWIRE_REDIS_PREFIX: deps.redisPrefix,
    BITCOIND_RPC_URL: deps.rpcUrl,
    BITCOIND_ZMQ_URL: deps.zmqUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    BLOCKWIRE_STREAM_PORT: '0',
    BLOCKWIRE_METRICS_PORT: '0',
    BLOCKWIRE_ALLOW_PRIVATE_HOOKS: '1',
    POLL_INTERVAL_MS: '200',
    BLOCKWIRE_RELAY_POLL_MS: '20',
  };
}

/** A webhook receiver on 127.0.0.1 answering 200 and recording each POST's webhook-id and event. */
export async function startHookReceiver(): Promise<{
  url: string;
  received: { webhookId: string; event: { id: number } }[];
  close(): Promise<void>;
}> {
  const received: { webhookId: string; event: { id: number } }[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += String(d)));
    req.on('end', () => {
      received.push({ webhookId: String(req.headers['webhook-id']), event: JSON.parse(body) as { id: number } });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
