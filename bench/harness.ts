/**
 * What bench/sync and bench/live share: the corpus parameters of a run, a PostgreSQL tuned as
 * the settings bulk loading wants (shared_buffers 2GB, wal_level minimal, max_wal_size 16GB,
 * fsync and synchronous commit on), databases, child processes whose stdout lines are watched,
 * and CPU accounting from /proc (this process's reaped children, the PostgreSQL processes).
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, chownSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { startPostgres, WAL_WRITER_DELAY, type PostgresServer } from '../cli/embedded/postgres.js';
import { corpusBlocksDir } from '../devnode/corpus-manifest.js';
import { DEFAULT_PARAMS, type CorpusParams } from './corpus/generate.js';

/** Sizes of a benchmark run. */
export interface RunSize {
  corpus: CorpusParams;
  /** Blocks held back from the initial sync and applied block by block with every index live. */
  catchupBlocks: number;
  /** 4,000-transaction blocks at the very end, for bench/live. */
  liveBlocks: number;
}

/** The full run (≈ 20,000 blocks of 2,000–4,000 transactions). */
export const FULL_SIZE: RunSize = { corpus: { ...DEFAULT_PARAMS, tailBlocks: 40, tailTxs: 4000 }, catchupBlocks: 200, liveBlocks: 40 };
/** CI's size: every step runs, in seconds. */
export const QUICK_SIZE: RunSize = {
  corpus: { ...DEFAULT_PARAMS, blocks: 60, txsPerBlock: 150, tailBlocks: 3, tailTxs: 4000, seed: 'quick' },
  catchupBlocks: 5,
  liveBlocks: 3,
};

/** Run size from flags over the full or quick defaults. */
export function runSize(v: {
  quick?: boolean | undefined;
  blocks?: string | undefined;
  'txs-per-block'?: string | undefined;
  seed?: string | undefined;
  'catchup-blocks'?: string | undefined;
  'live-blocks'?: string | undefined;
}): RunSize {
  const base = v.quick ? QUICK_SIZE : FULL_SIZE;
  const live = v['live-blocks'] !== undefined ? Number(v['live-blocks']) : base.liveBlocks;
  return {
    corpus: {
      ...base.corpus,
      ...(v.blocks !== undefined ? { blocks: Number(v.blocks) } : {}),
      ...(v['txs-per-block'] !== undefined ? { txsPerBlock: Number(v['txs-per-block']) } : {}),
      ...(v.seed !== undefined ? { seed: v.seed } : {}),
      tailBlocks: live,
    },
    catchupBlocks: v['catchup-blocks'] !== undefined ? Number(v['catchup-blocks']) : base.catchupBlocks,
    liveBlocks: live,
  };
}

/** Where corpora are cached (BLOCKWIRE_BENCH_CACHE, else the temp directory). */
export function cacheDir(flag?: string): string {
  return flag ?? process.env.BLOCKWIRE_BENCH_CACHE ?? join(tmpdir(), 'blockwire-bench');
}

export const say = (s: string): void => void process.stdout.write(`${s}\n`);

/** The machine's state when a figure was taken. */
export function machine(): { loadavg: number[]; cpus: number; node: string } {
  return {
    loadavg: loadavg().map((x) => Math.round(x * 100) / 100),
    cpus: readFileSync('/proc/cpuinfo', 'utf8').split('\nprocessor').length,
    node: process.version,
  };
}

/** PostgreSQL settings of the benchmarks. */
export const PG_SETTINGS = {
  shared_buffers: '2GB',
  wal_level: 'minimal',
  max_wal_senders: 0,
  max_wal_size: '16GB',
  checkpoint_timeout: '30min',
  maintenance_work_mem: '1GB',
  work_mem: '64MB',
  // (the embedded server's own setting, named here so that the results record it)
  wal_writer_delay: WAL_WRITER_DELAY,
};

export interface BenchPostgres {
  server: PostgresServer;
  /** A directory the server can write to and read from (server-side COPY files). */
  copyDir: string;
  url(db: string): string;
  createDatabase(name: string): Promise<string>;
  query<T extends pg.QueryResultRow = pg.QueryResultRow>(db: string, text: string, params?: unknown[]): Promise<pg.QueryResult<T>>;
  /** CPU ms used by every PostgreSQL process so far (exited backends included). */
  cpuMs(): number;
  stop(): Promise<void>;
}

/** Starts a PostgreSQL for a benchmark under `root`. */
export async function startBenchPostgres(root: string): Promise<BenchPostgres> {
  const dataDir = join(root, 'pg');
  // BENCH_PG_LOG_MS=N logs statements slower than N ms to stderr (where the time goes in PostgreSQL).
  const logMs = process.env.BENCH_PG_LOG_MS;
  const server = await startPostgres({
    dataDir,
    // BENCH_PG_SETTINGS='{"name":"value"}' overrides settings (experiments; results record them).
    settings: { ...PG_SETTINGS, ...(logMs ? { log_min_duration_statement: logMs } : {}), ...pgOverrides() },
    ...(logMs
      ? { onLog: pgLogEcho() }
      : process.env.BENCH_PG_LOG_FILE
        ? { onLog: (l: string) => appendFileSync(process.env.BENCH_PG_LOG_FILE!, `${l}\n`) }
        : {}),
  });
  const copyDir = join(root, 'copy');
  mkdirSync(copyDir, { recursive: true });
  const st = statSync(dataDir);
  chownSync(copyDir, st.uid, st.gid);
  const query = async <T extends pg.QueryResultRow>(db: string, text: string, params?: unknown[]) => {
    const c = new pg.Client({ connectionString: server.urlFor(db) });
    await c.connect();
    try {
      return await c.query<T>(text, params);
    } finally {
      await c.end();
    }
  };
  return {
    server,
    copyDir,
    url: (db) => server.urlFor(db),
    async createDatabase(name) {
      await query('postgres', `DROP DATABASE IF EXISTS ${name}`);
      await query('postgres', `CREATE DATABASE ${name}`);
      return server.urlFor(name);
    },
    query,
    cpuMs: () => postgresCpuMs(dataDir),
    stop: () => server.stop(),
  };
}

/** PostgreSQL settings given as JSON text (`what` names where it came from in the error). */
export function parsePgSettings(text: string, what: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || Object.values(parsed).some((v) => typeof v !== 'string'))
    throw new Error(`${what}: a JSON object of strings, got ${text}`);
  return parsed as Record<string, string>;
}

/** Settings from BENCH_PG_SETTINGS (a JSON object of strings), if any. */
export function pgOverrides(): Record<string, string> {
  return process.env.BENCH_PG_SETTINGS ? parsePgSettings(process.env.BENCH_PG_SETTINGS, 'BENCH_PG_SETTINGS') : {};
}

/** A PostgreSQL log line handler printing each slow statement's duration and first lines. */
function pgLogEcho(): (line: string) => void {
  let follow = 0;
  return (line) => {
    if (/duration:/.test(line)) follow = 3;
    if (follow > 0) {
      follow--;
      process.stderr.write(`pg: ${line.replace(/\s+/g, ' ').slice(0, 200)}\n`);
    }
  };
}

function statFields(pid: number | string): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  } catch {
    return null;
  }
}

const TICK_MS = 10; // USER_HZ = 100

/** CPU ms of this process's reaped children (utime + stime of waited-for children). */
export function childrenCpuMs(): number {
  const f = statFields('self')!;
  return (Number(f[13]) + Number(f[14])) * TICK_MS;
}

/** The system (kernel) part of childrenCpuMs: page faults of fresh buffers, socket writes, reads. */
export function childrenSysCpuMs(): number {
  return Number(statFields('self')![14]) * TICK_MS;
}

/** CPU ms of a live process. */
export function processCpuMs(pid: number): number {
  const f = statFields(pid);
  return f ? (Number(f[11]) + Number(f[12])) * TICK_MS : 0;
}

function postgresCpuMs(dataDir: string): number {
  const pm = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const f = statFields(pm);
  if (!f) return 0;
  let ms = (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * TICK_MS;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const c = statFields(name);
    if (c && Number(c[1]) === pm) ms += (Number(c[11]) + Number(c[12])) * TICK_MS;
  }
  return ms;
}

/**
 * CPU time (ms) of each PostgreSQL backend serving the API process (its pools and its key
 * LISTEN connection, by application_name), read from /proc; empty when the server is not on this
 * machine. Backends only: the server's own processes (autovacuum, checkpointer) are left out.
 */
export async function apiBackendsCpuMs(db: Kysely<Database>): Promise<Map<number, number>> {
  const pids = await sql<{
    pid: number;
  }>`SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'blockwire-api%' OR application_name = 'bench-api'`.execute(db);
  const out = new Map<number, number>();
  for (const { pid } of pids.rows) {
    const f = statFields(pid);
    if (f) out.set(pid, (Number(f[11]) + Number(f[12])) * TICK_MS);
  }
  return out;
}

/** CPU ms the API's backends spent between two readings (a backend that appeared counts whole). */
export function backendsCpuDelta(before: Map<number, number>, after: Map<number, number>): number | null {
  if (after.size === 0) return null;
  let ms = 0;
  for (const [pid, t] of after) ms += t - (before.get(pid) ?? 0);
  return ms;
}

/** A child Node process running a TypeScript file or the CLI, its stdout lines watched. */
export interface Child {
  proc: ChildProcess;
  /** Resolves with the exit code. */
  exited: Promise<number>;
  /** Every stdout line so far. */
  lines: string[];
  /** Calls `fn` on each new stdout line. */
  onLine(fn: (line: string, at: number) => void): void;
}

/** Spawns `node --import tsx <args>` with `env` added (in `cwd`, else this directory); stderr passes through. */
export function spawnNode(args: string[], env: Record<string, string>, nodeFlags: string[] = [], cwd?: string): Child {
  const proc = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
    ...(cwd ? { cwd } : {}),
  });
  const lines: string[] = [];
  const fns: ((line: string, at: number) => void)[] = [];
  let carry = '';
  proc.stdout!.on('data', (d: Buffer) => {
    const at = performance.now();
    const parts = (carry + d.toString('utf8')).split('\n');
    carry = parts.pop()!;
    for (const l of parts) {
      lines.push(l);
      for (const fn of fns) fn(l, at);
    }
  });
  const exited = new Promise<number>((resolve) => proc.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
  return { proc, exited, lines, onLine: (fn) => void fns.push(fn) };
}

/** Parsed pino JSON lines of a child with the given message. */
export function logLines(lines: readonly string[], msg: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const l of lines) {
    if (!l.startsWith('{') || !l.includes(msg)) continue;
    try {
      const o = JSON.parse(l) as Record<string, unknown>;
      if (o.msg === msg) out.push(o);
    } catch {
      /* not JSON */
    }
  }
  return out;
}

/** Echoes a child's `bulk sync progress` log lines, shortened, to this process's stdout. */
export function echoProgress(child: Child, label: string): void {
  child.onLine((line) => {
    const f = logLines([line], 'bulk sync progress')[0];
    if (f)
      say(`  ${label}: height ${String(f.height)}/${String(f.target)}, ${String(f.txPerSec)} tx/s, ${String(f.blocksPerSec)} blocks/s`);
  });
}

/** Percentile (nearest rank) of `xs`. */
export function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
}

export const round = (x: number, d = 0): number => Math.round(x * 10 ** d) / 10 ** d;

/** The import's environment for the benches that measure the chunk rows' layout (history buckets off). */
export const CHUNK_ROWS: Readonly<Record<string, string>> = { HISTORY_BUSY: '0' };

export interface ImportResult {
  tip: number;
  blocks: number;
  txs: number;
  /** Whole command, process start to exit. */
  wallMs: number;
  /** Bulk load (COPY of every batch) and finish (utxos rebuild, balances, every index). */
  loadMs: number;
  finishMs: number;
  /** The finish's steps (ms each): utxos rebuild, history merge, balances, each index build. */
  finishSteps: Record<string, number>;
  /** CPU of the import process (JS) and of PostgreSQL during the command. */
  importerCpuMs: number;
  /** The kernel's part of importerCpuMs. */
  importerSysMs: number;
  postgresCpuMs: number;
  /**
   * Peak resident memory of the import process: its own figure (getrusage's maxRSS, logged as
   * it ends), else VmHWM read from /proc every second until it exits (an import that logs no
   * figure, e.g. a baseline's older code); null when neither is there.
   */
  peakRssBytes: number | null;
  /** Its memory budget (IMPORT_MEMORY_MB), when it logs one. */
  memoryMb: number | null;
  /** The outpoint cache's bound and, once reached, its trims and the outputs read back from PostgreSQL (null for code without a bound). */
  cache: { maxEntries: number; evictions: number; dropped: number; readBack: number } | null;
}

/** Peak resident set (VmHWM) of a live process, bytes; null when /proc does not have it. */
function peakRss(pid: number | undefined): number | null {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * Runs `blockwire import --blocks-dir` on a corpus into `databaseUrl`, stopping `nearTip` below
 * its tip; `checkout` runs another checkout's command (a baseline, bench/baseline.ts).
 */
export async function importCorpus(
  dir: string,
  databaseUrl: string,
  nearTip: number,
  nodeFlags: string[],
  pgs?: BenchPostgres,
  checkout?: string,
  /** More environment for the import (CHUNK_ROWS: history buckets off). */
  env: Readonly<Record<string, string>> = {},
): Promise<ImportResult> {
  const cpu0 = childrenCpuMs();
  const sys0 = childrenSysCpuMs();
  const pg0 = pgs?.cpuMs() ?? 0;
  const t0 = performance.now();
  const child = spawnNode(
    ['bin/blockwire.js', 'import', '--blocks-dir', resolve(corpusBlocksDir(dir)), '--network', 'regtest', '--near-tip', String(nearTip)],
    { DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', ...env },
    nodeFlags,
    checkout,
  );
  echoProgress(child, 'import');
  // (VmHWM is the peak so far: the last reading before the exit is the peak within a second)
  let peak: number | null = null;
  const sampler = setInterval(() => (peak = peakRss(child.proc.pid) ?? peak), 1000);
  const code = await child.exited.finally(() => clearInterval(sampler));
  const wallMs = performance.now() - t0;
  if (code !== 0) throw new Error(`blockwire import exited with ${code}:\n${child.lines.slice(-20).join('\n')}`);
  const done = logLines(child.lines, 'bulk load done')[0];
  const finished = logLines(child.lines, 'bulk sync finished: indexes built')[0];
  const own = logLines(child.lines, 'import peak memory')[0];
  if (!done || !finished) throw new Error(`blockwire import did not log its phases:\n${child.lines.slice(-20).join('\n')}`);
  return {
    tip: Number(done.tip),
    blocks: Number(done.blocks),
    txs: Number(done.txs),
    wallMs: round(wallMs),
    loadMs: Number(done.ms),
    finishMs: Number(finished.ms),
    finishSteps: (finished.steps ?? {}) as Record<string, number>,
    importerCpuMs: childrenCpuMs() - cpu0,
    importerSysMs: childrenSysCpuMs() - sys0,
    postgresCpuMs: (pgs?.cpuMs() ?? 0) - pg0,
    peakRssBytes: own ? Math.max(Number(own.peakRssBytes), peak ?? 0) : peak,
    memoryMb: own ? Number(own.memoryMb) : null,
    cache:
      done.cacheMaxEntries === undefined
        ? null
        : {
            maxEntries: Number(done.cacheMaxEntries),
            evictions: Number(done.cacheEvictions),
            dropped: Number(done.cacheDropped),
            readBack: Number(done.cacheReadBack),
          },
  };
}

export interface RpcSyncResult {
  /** Indexer start to its tip at `target` in following mode. */
  ms: number;
  /** The bulk load and the index builds (null when the sync took the per-block path only). */
  loadMs: number | null;
  finishMs: number | null;
  indexerCpuMs: number;
  postgresCpuMs: number;
}

/**
 * Initial sync over RPC/REST: the indexer role (bench/sync-indexer.ts) from `databaseUrl` (empty)
 * to `target` on `node`, bulk path with blocks over REST, then per-block for the last 12.
 */
export async function syncOverRpc(
  pgs: BenchPostgres,
  databaseUrl: string,
  node: { rpcUrl: string; zmqUrl: string },
  target: number,
  label = 'rpc',
): Promise<RpcSyncResult> {
  const cpu0 = childrenCpuMs();
  const pg0 = pgs.cpuMs();
  const child = spawnNode(
    [
      'bench/sync-indexer.ts',
      JSON.stringify({
        databaseUrl,
        rpcUrl: node.rpcUrl,
        zmqUrl: node.zmqUrl,
        target,
        env: { INDEXER_BULK_THRESHOLD: '20', INDEXER_BULK_NEAR_TIP: '12' },
      }),
    ],
    {},
  );
  echoProgress(child, label);
  const code = await child.exited;
  const res = child.lines.find((l) => l.startsWith('RESULT '));
  if (code !== 0 || !res) throw new Error(`sync over RPC failed (${code}):\n${child.lines.slice(-20).join('\n')}`);
  const r = JSON.parse(res.slice(7)) as { ms: number };
  const done = logLines(child.lines, 'bulk load done')[0];
  const finished = logLines(child.lines, 'bulk sync finished: indexes built')[0];
  return {
    ms: round(r.ms),
    loadMs: done ? Number(done.ms) : null,
    finishMs: finished ? Number(finished.ms) : null,
    indexerCpuMs: childrenCpuMs() - cpu0,
    postgresCpuMs: pgs.cpuMs() - pg0,
  };
}
