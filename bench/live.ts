/**
 * bench/live: a 4,000-transaction block from ZMQ arrival to committed, against an index that
 * already holds a large chain (targets p50 ≤ 300 ms, p99 ≤ 600 ms). The corpus
 * node (devnode/corpus.ts) announces the corpus's tail blocks one at a time; this process
 * subscribes to `hashblock` like the indexer does (arrival) and reads the indexer child's
 * `block applied` log line, written right after its commit (committed). Then the floor on the
 * newest block (bench/live-floor.ts): PostgreSQL's own write cost for its rows.
 * Standalone: `node --import tsx bench/live.ts [--quick] [--blocks N] [--txs-per-block N]
 * [--live-blocks N] [--cpu-prof DIR] [--history-busy N]` imports the corpus below its tail first (blockwire
 * import), then measures. `--history-busy N` imports with HISTORY_BUSY=N (0: history buckets
 * off, every address in chunk rows; without the option, the default): with N > 0 the import's
 * finish folds its history into buckets (indexer/writer/history-build.ts); the bench says what
 * the fold took and the sizes, measures the live blocks (written as chunk rows, as without
 * buckets), then folds them as an idle indexer would and says what that took (no floor).
 * bench/sync calls `measureLive` on the index it has just built.
 * @module
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { sql, type Kysely } from 'kysely';
import { createDb } from '../src/db/connect.js';
import type { Database } from '../src/db/schema.js';
import { foldHistory } from '../indexer/writer/history-build.js';
import { lockTip } from '../indexer/writer/chain-rows.js';
import { readHistoryLayout } from '../indexer/writer/history-rows.js';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import { Subscriber } from 'zeromq';
import { hashToHex } from '../src/bitcoin/hash.js';
import type { CorpusNode } from '../devnode/corpus.js';
import { ensureCorpus } from './corpus/generate.js';
import { FLOOR_SAMPLES, floorLine, measureFloor, type FloorProbe, type FloorResult } from './live-floor.js';
import {
  cacheDir,
  importCorpus,
  logLines,
  machine,
  PG_SETTINGS,
  pgOverrides,
  pct,
  round,
  runSize,
  say,
  spawnNode,
  startBenchPostgres,
  type BenchPostgres,
  type Child,
} from './harness.js';

export interface LiveResult {
  blocks: number;
  txsPerBlock: number;
  /** ZMQ arrival → committed, per block (ms). */
  latencies: number[];
  p50: number;
  p99: number;
  max: number;
  /** The indexer's own fetch → commit time per block (its log's `ms`). */
  applyP50: number;
  /** Of that, the time it waited for the node (its log's `waitMs`: the block's hash and bytes), median. */
  fetchP50: number;
  indexHeightBefore: number;
  /** Per block, when the bench's PostgreSQL is given: WAL written (MB, from pg_current_wal_lsn) and CPU of every PostgreSQL process (ms), medians. */
  walMbP50?: number;
  postgresCpuMsP50?: number;
  /** CPU of the indexer child per block (ms), median. */
  indexerCpuMsP50: number;
  /** The floor, PostgreSQL's own write cost for the newest block's rows (bench/live-floor.ts), when measured. */
  floor?: FloorResult;
  /** Per phase of the writer's apply (its `apply phases` debug lines: the follower run with LOG_LEVEL=debug), the median ms. */
  phasesP50?: Record<string, number>;
}

/** The bench's PostgreSQL and the database the follower writes: per-block WAL and CPU. */
export interface LiveProbe {
  pgs: Pick<BenchPostgres, 'cpuMs' | 'query'>;
  db: string;
}

/** User + system CPU of process `pid` so far (ms). */
function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** A node whose tip the bench moves: the corpus devnode (`advance`) or bitcoind (`generateblock`). */
export interface LiveNode {
  readonly rpcUrl: string;
  readonly zmqUrl: string;
  /** Connects the next block (its ZMQ messages sent); resolves with the new tip. */
  advance(): Promise<{ height: number; hash: string }>;
}

/** A corpus node as a LiveNode (one block per advance). */
export function corpusLiveNode(node: CorpusNode): LiveNode {
  return { rpcUrl: node.rpcUrl, zmqUrl: node.zmqUrl, advance: () => node.advance(1) };
}

/** Starts the indexer child in follow mode against `node` and `databaseUrl`. */
export function startFollower(
  databaseUrl: string,
  node: Pick<LiveNode, 'rpcUrl' | 'zmqUrl'>,
  env: Record<string, string> = {},
  nodeFlags: string[] = [],
): Child {
  return spawnNode(
    [
      'bench/sync-indexer.ts',
      JSON.stringify({
        databaseUrl,
        rpcUrl: node.rpcUrl,
        zmqUrl: node.zmqUrl,
        target: -1,
        follow: true,
        env: { INDEXER_BULK_THRESHOLD: '100000000', ...env },
      }),
    ],
    {},
    nodeFlags,
  );
}

/** Stops `follower` and waits for its exit (again after it stopped: nothing). */
export async function stopFollower(follower: Child): Promise<void> {
  follower.proc.kill('SIGTERM');
  await follower.exited;
}

/**
 * The floor of the live blocks `follower` has just applied to `dbName` (bench/live-floor.ts),
 * measured once the follower has stopped (the floor undoes and applies the tip block again);
 * `between` runs after the stop, before the floor (e.g. a copy of the index as the blocks left it).
 */
export async function floorAfter(
  follower: Child,
  pgs: FloorProbe,
  dbName: string,
  rpcUrl: string,
  between?: () => Promise<void>,
): Promise<FloorResult> {
  await stopFollower(follower);
  await between?.();
  return measureFloor(pgs, dbName, rpcUrl, FLOOR_SAMPLES);
}

/**
 * Waits until `match` finds one of the child's log lines (its fields); resolves with the line's
 * time and fields, rejects when `timeoutMs` passes or the child exits first (`what` names it).
 */
function waitLine(
  child: Child,
  what: string,
  match: (line: string) => Record<string, unknown> | undefined,
  timeoutMs: number,
): Promise<{ at: number; fields: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    let done = false;
    const t = setTimeout(() => {
      done = true;
      reject(new Error(`${what} not logged within ${timeoutMs} ms`));
    }, timeoutMs);
    const check = (line: string, at: number) => {
      if (done) return;
      const fields = match(line);
      if (fields === undefined) return;
      done = true;
      clearTimeout(t);
      resolve({ at, fields });
    };
    for (const l of child.lines) check(l, performance.now());
    child.onLine(check);
    void child.exited.then((code) => {
      if (done) return;
      done = true;
      clearTimeout(t);
      reject(new Error(`indexer exited (${code}) before ${what} was logged`));
    });
  });
}

/** Waits until the child has logged `block applied` for `hash`; resolves with the line's time and fields. */
export function waitApplied(child: Child, hash: string, timeoutMs = 600_000): Promise<{ at: number; fields: Record<string, unknown> }> {
  return waitLine(
    child,
    `block ${hash} applied`,
    (line) => {
      if (!line.includes(hash)) return undefined;
      const f = logLines([line], 'block applied')[0];
      return f && f.hash === hash ? f : undefined;
    },
    timeoutMs,
  );
}

/** Waits until the child has logged `msg`. */
async function waitLogged(child: Child, msg: string, timeoutMs = 120_000): Promise<void> {
  await waitLine(child, `"${msg}"`, (line) => logLines([line], msg)[0], timeoutMs);
}

/**
 * Announces the node's next `blocks` main-chain blocks one by one to a following indexer child
 * and measures each from ZMQ arrival (seen by this process) to the indexer's commit.
 */
export async function measureLive(node: LiveNode, follower: Child, blocks: number, probe?: LiveProbe): Promise<LiveResult> {
  const lsn = async () => (await probe!.pgs.query<{ l: string }>(probe!.db, 'SELECT pg_current_wal_lsn()::text AS l')).rows[0]!.l;
  const walSince = async (from: string) =>
    Number((await probe!.pgs.query<{ d: string }>(probe!.db, 'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS d', [from])).rows[0]!.d);
  const sub = new Subscriber();
  sub.connect(node.zmqUrl);
  sub.subscribe('hashblock');
  const arrivals = new Map<string, number>();
  const reading = (async () => {
    for await (const [, body] of sub) arrivals.set(hashToHex(Uint8Array.from(body!).reverse()), performance.now());
  })().catch(() => undefined);
  // Let the subscription reach the publisher (ZMQ's slow joiner).
  await new Promise((r) => setTimeout(r, 500));
  let before = -1;
  const latencies: number[] = [];
  const applyMs: number[] = [];
  const waitMs: number[] = [];
  const walMb: number[] = [];
  const pgCpu: number[] = [];
  const indexerCpu: number[] = [];
  let txs = 0;
  const phases = new Map<string, number[]>();
  const seen = follower.lines.length;
  for (let i = 0; i < blocks; i++) {
    const lsn0 = probe ? await lsn() : '';
    const cpu0 = probe?.pgs.cpuMs() ?? 0;
    const own0 = processCpuMs(follower.proc.pid);
    const tip = await node.advance();
    if (before < 0) before = tip.height - 1;
    const applied = await waitApplied(follower, tip.hash, 120_000);
    const arrival = arrivals.get(tip.hash);
    if (arrival === undefined) throw new Error(`no ZMQ hashblock seen for ${tip.hash}`);
    latencies.push(applied.at - arrival);
    applyMs.push(Number(applied.fields.ms));
    waitMs.push(Number(applied.fields.waitMs));
    indexerCpu.push(processCpuMs(follower.proc.pid) - own0);
    if (probe) {
      pgCpu.push(probe.pgs.cpuMs() - cpu0);
      walMb.push((await walSince(lsn0)) / 1e6);
    }
    txs += Number(applied.fields.txs);
    await new Promise((r) => setTimeout(r, 300));
  }
  sub.close();
  await reading;
  for (const l of logLines(follower.lines.slice(seen), 'apply phases'))
    for (const [k, v] of Object.entries(l.ms as Record<string, number>)) {
      const seenFor = phases.get(k);
      if (seenFor) seenFor.push(v);
      else phases.set(k, [v]);
    }
  return {
    blocks,
    txsPerBlock: Math.round(txs / Math.max(blocks, 1)),
    latencies: latencies.map((x) => round(x, 1)),
    p50: round(pct(latencies, 50), 1),
    p99: round(pct(latencies, 99), 1),
    max: round(Math.max(...latencies), 1),
    applyP50: pct(applyMs, 50),
    fetchP50: pct(waitMs, 50),
    indexHeightBefore: before,
    indexerCpuMsP50: pct(indexerCpu, 50),
    ...(probe ? { walMbP50: round(pct(walMb, 50), 1), postgresCpuMsP50: pct(pgCpu, 50) } : {}),
    ...(phases.size > 0 ? { phasesP50: Object.fromEntries([...phases].map(([k, v]) => [k, pct(v, 50)])) } : {}),
  };
}

/** The writer's phases (`LiveResult.phasesP50`) as one line. */
export function phaseLine(p: Record<string, number>): string {
  return `apply phases, p50 ms: ${Object.entries(p)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')}`;
}

async function main(): Promise<void> {
  const { values } = benchArgs(import.meta.url, {
    options: {
      quick: { type: 'boolean' },
      blocks: { type: 'string' },
      'txs-per-block': { type: 'string' },
      'live-blocks': { type: 'string' },
      'cache-dir': { type: 'string' },
      'cpu-prof': { type: 'string' },
      json: { type: 'string' },
      'history-busy': { type: 'string' },
    },
  });
  const size = runSize({ ...values, 'catchup-blocks': '0' });
  const busy = values['history-busy'] === undefined ? undefined : Number(values['history-busy']);
  const { dir } = ensureCorpus(cacheDir(values['cache-dir']), size.corpus, say);
  const { startCorpusNode } = await import('../devnode/corpus.js');
  const root = mkdtempSync(join(cacheDir(values['cache-dir']), 'live-'));
  const pgs = await startBenchPostgres(root);
  try {
    const url = await pgs.createDatabase('bw_live');
    const imported = await importCorpus(
      dir,
      url,
      size.liveBlocks,
      [],
      pgs,
      undefined,
      busy === undefined ? {} : { HISTORY_BUSY: String(busy) },
    );
    say(`imported ${imported.blocks} blocks (${imported.txs} txs) in ${round(imported.wallMs / 1000, 1)} s`);
    const buckets =
      busy === undefined || busy === 0
        ? undefined
        : await bucketSizes(url, Object.fromEntries(Object.entries(imported.finishSteps).filter(([k]) => k.startsWith('history buckets'))));
    const node = await startCorpusNode({ dir, tip: imported.tip });
    const prof = values['cpu-prof'];
    const follower = startFollower(url, node, {}, prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []);
    try {
      // Measured as bench/sync measures it, on a follower that is up: its start (process, cache
      // of recent transactions read from the index) is not the first block's.
      // (Not logged with INDEXER_TXID_CACHE_TXS=0, or after a failed fill: measured anyway.)
      await waitLogged(follower, 'recent transactions read from the index', 60_000).catch((err: Error) =>
        say(`${err.message}; measuring anyway`),
      );
      const r = await measureLive(corpusLiveNode(node), follower, size.liveBlocks, { pgs, db: 'bw_live' });
      if (buckets) await stopFollower(follower);
      else r.floor = await floorAfter(follower, pgs, 'bw_live', node.rpcUrl);
      // With buckets, the live blocks were written as chunk rows: what folding them costs.
      const folded = buckets ? await foldLiveBlocks(url, pgs) : undefined;
      say(
        `| blocks | txs/block | index height | p50 ms | p99 ms | max ms | indexer fetch→commit p50 ms | WAL MB/block | PostgreSQL CPU ms/block | indexer CPU ms/block |\n|---|---|---|---|---|---|---|---|---|---|\n| ${r.blocks} | ${r.txsPerBlock} | ${r.indexHeightBefore} | ${r.p50} | ${r.p99} | ${r.max} | ${r.applyP50} (fetch ${r.fetchP50}) | ${r.walMbP50} | ${r.postgresCpuMsP50} | ${r.indexerCpuMsP50} |`,
      );
      if (r.phasesP50) say(phaseLine(r.phasesP50));
      if (r.floor) say(floorLine(r.floor));
      const result = {
        live: r,
        ...(buckets ? { buckets: { ...buckets, liveFold: folded } } : {}),
        machine: machine(),
        postgres: { ...PG_SETTINGS, ...pgOverrides() },
      };
      say(`RESULT ${JSON.stringify(result)}`);
    } finally {
      await stopFollower(follower);
      await node.stop();
    }
  } finally {
    await pgs.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

/** The history's tables (with their indexes) and the database, MB. */
async function historySizes(db: Kysely<Database>) {
  const r = await sql<{ history: string; buckets: string; database: string }>`
    SELECT pg_total_relation_size('history')::text AS history, pg_total_relation_size('history_buckets')::text AS buckets,
           pg_database_size(current_database())::text AS database`.execute(db);
  const mb = (x: string) => round(Number(x) / 1e6, 1);
  return { historyMb: mb(r.rows[0]!.history), bucketsMb: mb(r.rows[0]!.buckets), databaseMb: mb(r.rows[0]!.database) };
}

/**
 * `--history-busy`: the live blocks (chunk rows, as the writer writes them) folded into the
 * buckets as an idle indexer folds them (the folded rows deleted, not the table written anew):
 * the fold's time and PostgreSQL's CPU, and per block.
 */
async function foldLiveBlocks(url: string, pgs: Pick<BenchPostgres, 'cpuMs'>) {
  const db = createDb(url, { max: 1 });
  try {
    const cpu0 = pgs.cpuMs();
    const t0 = performance.now();
    const r = await db.transaction().execute(async (trx) => {
      const tip = (await lockTip(trx)).height;
      const before = (await readHistoryLayout(trx)).folded;
      return { blocks: tip + 1 - before, fold: await foldHistory(trx, tip + 1, { rewrite: false }) };
    });
    const ms = Math.round(performance.now() - t0);
    const cpu = pgs.cpuMs() - cpu0;
    const out = { blocks: r.blocks, ms, postgresCpuMs: cpu, msPerBlock: round(ms / Math.max(1, r.blocks), 1), steps: r.fold.ms };
    say(`live blocks folded: ${JSON.stringify(out)}`);
    return out;
  } finally {
    await db.destroy();
  }
}

/** `--history-busy`: what the import's fold took, the params row and the sizes after VACUUM. */
async function bucketSizes(url: string, foldMs: Record<string, number>) {
  const db = createDb(url, { max: 1 });
  try {
    await sql`VACUUM ANALYZE history`.execute(db);
    await sql`VACUUM ANALYZE history_buckets`.execute(db);
    await sql`CHECKPOINT`.execute(db);
    const p = (
      await sql<{
        base: number;
        busy: number;
        records: string;
      }>`SELECT base, busy, records::text AS records FROM history_bucket_params`.execute(db)
    ).rows[0]!;
    const out = { ...p, records: Number(p.records), foldMs, after: await historySizes(db) };
    say(`history buckets: ${JSON.stringify(out)}`);
    return out;
  } finally {
    await db.destroy();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
