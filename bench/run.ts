/**
 * `npm run bench [-- --quick] [--only a,b] [--blocks N] [--txs-per-block N] [--wallets-blocks N]
 * [--wallets-pg-settings JSON] [--results FILE] [--readme FILE] [--render-only]`: runs every
 * benchmark (sync with live, decode, api, events, stamp, wallets, electrum, core: the RPC/REST
 * sync and live on a real regtest bitcoind beside the devnode, and small: small blocks caught up
 * block by block on both), each as its own process, one after the
 * other; writes the machine-readable results (each bench's tables parsed from its output, its
 * RESULT line when it prints one, exit code, time, the load average before and after) and
 * regenerates the summary and tables in bench/README.md between its bench:results markers.
 * `--quick` runs tiny configurations (CI: test/bench/run.test.ts) and by default writes
 * bench/results/quick.json and leaves the README alone.
 * @module
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { benchArgs } from './args.js';
import { machine, parsePgSettings } from './harness.js';
import type { FloorResult, WriteCost } from './live-floor.js';
import type { SteadyResult } from './sync.js';

interface BenchDef {
  name: string;
  script: string;
  full: string[];
  quick: string[];
}

/** Every benchmark, with the arguments of its full and quick runs. */
export const BENCHES: BenchDef[] = [
  { name: 'sync', script: 'bench/sync.ts', full: [], quick: ['--quick'] },
  { name: 'decode', script: 'bench/decode.ts', full: [], quick: ['--rounds', '3', '--scure-rounds', '1'] },
  {
    name: 'api',
    script: 'bench/api.ts',
    full: [],
    quick: [
      '--duration',
      '1',
      '--warm-up',
      '1',
      '--connections',
      '4',
      '--skip-paging',
      '--hot-txs',
      '20000',
      '--addresses',
      '20000',
      '--payments',
      '2000',
    ],
  },
  // Two delivery worker processes: one process running the relay, the stream and a worker used
  // 0.81 of a core at 3,107 deliveries/s while the machine had ~0.6 core free.
  {
    name: 'events',
    script: 'bench/events.ts',
    full: ['--clients', '10000', '--worker-processes', '2'],
    quick: ['--clients', '20', '--blocks', '3', '--events', '300', '--stream-clients', '2', '--webhooks', '100'],
  },
  { name: 'stamp', script: 'bench/stamp.ts', full: [], quick: ['--duration', '2', '--connections', '20', '--block-interval', '1'] },
  { name: 'wallets', script: 'bench/wallets.ts', full: [], quick: ['--quick'] },
  {
    name: 'electrum',
    script: 'bench/electrum.ts',
    full: [],
    quick: ['--subs', '200', '--connections', '20', '--paid', '20', '--blocks', '2'],
  },
  { name: 'core', script: 'bench/core.ts', full: [], quick: ['--quick'] },
  { name: 'small', script: 'bench/small.ts', full: [], quick: ['--quick'] },
  { name: 'tx-lookup', script: 'bench/tx-lookup.ts', full: [], quick: ['--blocks', '30', '--lookups', '50', '--rounds', '1'] },
];

export interface Table {
  header: string[];
  rows: string[][];
}

export interface BenchRun {
  name: string;
  command: string;
  exitCode: number;
  ms: number;
  loadBefore: number[];
  loadAfter: number[];
  tables: Table[];
  result: unknown;
  /** Last lines of output (for a failed run). */
  tail: string[];
}

/** Markdown tables in a text (header row, separator, rows). */
export function parseTables(text: string): Table[] {
  const tables: Table[] = [];
  const lines = text.split('\n');
  const cells = (l: string) =>
    l
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((c) => c.trim());
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!lines[i]!.trim().startsWith('|') || !/^\s*\|[\s\-:|]+\|\s*$/.test(lines[i + 1]!)) continue;
    const header = cells(lines[i]!);
    const rows: string[][] = [];
    let j = i + 2;
    const sep = (l: string | undefined) => l !== undefined && /^\s*\|[\s\-:|]+\|\s*$/.test(l);
    // Rows run to the first line that is not a row, or to the header of a table right below.
    for (; j < lines.length && lines[j]!.trim().startsWith('|') && !sep(lines[j + 1]); j++) rows.push(cells(lines[j]!));
    tables.push({ header, rows });
    i = j - 1;
  }
  return tables;
}

/** A bench's own command line and environment beyond its full or quick arguments. */
export interface ChildRun {
  args: string[];
  env: Record<string, string>;
}

/** What `npm run bench`'s own flags add to a bench's run: the corpus size, the wallets' settings. */
export interface SizeFlags {
  blocks?: string | undefined;
  'txs-per-block'?: string | undefined;
  'wallets-blocks'?: string | undefined;
  'wallets-pg-settings'?: string | undefined;
}

/**
 * bench/sync and bench/wallets take the corpus size (`--blocks`, `--txs-per-block`); bench/wallets
 * can take a size of its own (`--wallets-blocks`: the size target is measured on 20,000 blocks,
 * where bench/sync's extra imports would not fit a 100-GB disk) and PostgreSQL settings of its
 * own (`--wallets-pg-settings`, its BENCH_PG_SETTINGS: a small WAL leaves room for the import's
 * peak without touching the other benches' settings).
 */
export function childRun(name: string, flags: SizeFlags): ChildRun {
  if (name !== 'sync' && name !== 'wallets') return { args: [], env: {} };
  const blocks = name === 'wallets' ? (flags['wallets-blocks'] ?? flags.blocks) : flags.blocks;
  const args = [...(blocks ? ['--blocks', blocks] : []), ...(flags['txs-per-block'] ? ['--txs-per-block', flags['txs-per-block']] : [])];
  const settings = name === 'wallets' ? flags['wallets-pg-settings'] : undefined;
  // (checked by the rule the bench's own harness reads BENCH_PG_SETTINGS with)
  if (settings !== undefined) parsePgSettings(settings, '--wallets-pg-settings');
  return { args, env: settings !== undefined ? { BENCH_PG_SETTINGS: settings } : {} };
}

function runOne(def: BenchDef, quick: boolean, child: ChildRun = { args: [], env: {} }): Promise<BenchRun> {
  const args = [...(quick ? def.quick : def.full), ...child.args];
  const envText = Object.entries(child.env)
    .map(([k, v]) => `${k}='${v}' `)
    .join('');
  const command = `${envText}node --import tsx ${def.script} ${args.join(' ')}`.trim();
  const loadBefore = machine().loadavg;
  const t0 = performance.now();
  process.stdout.write(`\n## ${def.name}: ${command}\n`);
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', def.script, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...child.env },
    });
    let out = '';
    const keep = (d: Buffer, to: NodeJS.WriteStream) => {
      const s = d.toString('utf8');
      out += s;
      // The benches' own pino lines stay out of the console.
      for (const l of s.split('\n')) if (l && !l.startsWith('{"level"')) to.write(`${l}\n`);
    };
    proc.stdout.on('data', (d: Buffer) => keep(d, process.stdout));
    proc.stderr.on('data', (d: Buffer) => keep(d, process.stderr));
    proc.on('exit', (code, signal) => {
      const lines = out.split('\n').filter((l) => l && !l.startsWith('{"level"'));
      const resultLine = lines.find((l) => l.startsWith('RESULT '));
      let result: unknown = null;
      if (resultLine) {
        try {
          result = JSON.parse(resultLine.slice(7));
        } catch {
          result = null;
        }
      }
      resolve({
        name: def.name,
        command,
        exitCode: code ?? (signal ? 128 : 1),
        ms: Math.round(performance.now() - t0),
        loadBefore,
        loadAfter: machine().loadavg,
        tables: parseTables(lines.filter((l) => !l.startsWith('RESULT ')).join('\n')),
        result,
        tail: lines.slice(-15),
      });
    });
  });
}

type Num = number | null | undefined;
const fmt = (x: Num, d = 0) =>
  x === null || x === undefined || Number.isNaN(x)
    ? '—'
    : x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
/** Bytes as MB (10^6), '—' when not a number. */
const mb = (x: unknown, d = 0) => (typeof x === 'number' ? fmt(x / 1e6, d) : '—');
const met = (ok: boolean | null) => (ok === null ? '—' : ok ? '**met**' : '**missed**');
/** bench/core's cold blocks (the first full-size ones a fresh follower applies, outside the live figures), for a floor cell. */
const coldRow = (core: readonly number[] | undefined, devnode: readonly number[] | undefined) =>
  core && core.length > 0
    ? `; the first ${core.length} full-size blocks after the follower started (cold, not counted): ${core.map((x) => fmt(x)).join(', ')} ms (devnode ${(devnode ?? []).map((x) => fmt(x)).join(', ')})`
    : '';

/** Cell of the first row of any table whose first cell matches `row` in the column whose header matches `col`. */
function cell(run: BenchRun | undefined, row: RegExp, col: RegExp): number | null {
  for (const t of run?.tables ?? []) {
    const c = t.header.findIndex((h) => col.test(h));
    if (c < 0) continue;
    const r = t.rows.find((x) => row.test(x[0] ?? ''));
    if (r && r[c] !== undefined) {
      const v = Number(r[c]!.replace(/[*,\s]/g, ''));
      if (!Number.isNaN(v)) return v;
    }
  }
  return null;
}

/** The first number in the cell (as `cell`), for cells that carry a unit or words after it. */
function leadingNumber(run: BenchRun | undefined, row: RegExp, col: RegExp): number | null {
  for (const t of run?.tables ?? []) {
    const c = t.header.findIndex((h) => col.test(h));
    if (c < 0) continue;
    const r = t.rows.find((x) => row.test(x[0] ?? ''));
    const m = r?.[c] === undefined ? null : /(\d[\d,]*(?:\.\d+)?)/.exec(r[c]!.replace(/\*/g, ''));
    if (m) return Number(m[1]!.replace(/,/g, ''));
  }
  return null;
}

/**
 * The summary table: every target with its figure, the floor or peer it is set against (measured
 * in the same run), its goal and met/missed. Its first rows are the VM's speed class, so that
 * figures of runs on different VMs can be compared: the txid-hashing floor (bench/decode: double
 * SHA-256 of every transaction, one core) and the bare fastify floor (bench/api: an unknown
 * route, no key, no database). A target no bench measures shows '—' with the reason.
 */
export function summary(runs: BenchRun[]): string {
  const by = new Map(runs.map((r) => [r.name, r]));
  const s = (by.get('sync')?.result ?? {}) as Record<string, Record<string, number> | undefined>;
  const rows: string[] = ['| target | figure | floor or peer (same run) | goal | | bench |', '|---|---|---|---|---|---|'];
  const add = (what: string, fig: string, floor: string, goal: string, ok: boolean | null, bench: string) =>
    rows.push(`| ${what} | ${fig} | ${floor} | ${goal} | ${met(ok)} | ${bench} |`);
  const val = (x: Num) => (typeof x === 'number' ? x : null);
  const all = (...xs: Num[]) => xs.every((x) => typeof x === 'number' && !Number.isNaN(x));

  // The VM's speed class.
  const dec = by.get('decode');
  const floorMs = cell(dec, /^all/, /^floor ms/);
  const floorTxs = cell(dec, /^all/, /^txs$/);
  const hashTps = floorMs !== null && floorTxs !== null && floorMs > 0 ? (floorTxs * 1000) / floorMs : null;
  const api = by.get('api');
  const floor = cell(api, /^floor/, /^req\/s/);
  add(
    'VM speed class: txid hashing (double SHA-256 of every transaction of 5 mainnet blocks, one core)',
    `${fmt(hashTps)} tx/s`,
    '(the floor)',
    '(reported)',
    null,
    'decode',
  );
  add(
    'VM speed class: bare fastify (unknown route, no key, no database; 16 connections)',
    `${fmt(floor)} req/s`,
    '(the floor)',
    '(reported)',
    null,
    'api',
  );

  // 1. Live block.
  const live = s.live;
  const blocks = val(s.import?.blocks);
  add(
    'live: 4,000-tx block, ZMQ arrival → committed with its events, p50',
    `${fmt(val(live?.p50))} ms`,
    `index of ${fmt(val(live?.indexHeightBefore))} blocks; ${floorCell(live?.floor)}`,
    '≤ 300 ms',
    all(live?.p50) ? live!.p50! <= 300 : null,
    'sync (live)',
  );
  add('live: same, p99', `${fmt(val(live?.p99))} ms`, '', '≤ 600 ms', all(live?.p99) ? live!.p99! <= 600 : null, 'sync (live)');
  const ev = by.get('events');
  const clients = cell(ev, /^block arrival/, /^clients$/);
  const firstWs = cell(ev, /^block arrival/, /^first client p99/);
  add(
    'block → first WebSocket message, p99',
    firstWs === null ? '—' : `${fmt(firstWs)} ms`,
    `${fmt(clients)} clients`,
    '≤ 1,000 ms',
    firstWs === null ? null : firstWs <= 1000,
    'events',
  );
  const firstHook = cell(ev, /^block arrival → webhook/, /^first client p99/);
  add(
    'block → first webhook delivered, p99',
    firstHook === null ? '—' : `${fmt(firstHook)} ms`,
    'a chain subscription, local receiver',
    '≤ 1,000 ms',
    firstHook === null ? null : firstHook <= 1000,
    'events',
  );
  // The same on a real regtest bitcoind, beside the devnode on the same blocks (bench/core).
  const nodes = (by.get('core')?.result ?? {}) as Record<
    string,
    | {
        sync?: { txPerSec?: number };
        live?: { p50?: number; p99?: number; txsPerBlock?: number; indexHeightBefore?: number; postgresCpuMsP50?: number };
        cold?: { latencies?: number[] } | null;
        floor?: FloorResult | null;
      }
    | undefined
  >;
  const cl = nodes.core?.live;
  const dl = nodes.devnode?.live;
  // Its chain is bench/core's own (mined by Core's wallet), far smaller than bench/sync's index:
  // the per-block PostgreSQL CPU grows with the index's random B-trees, so the row says which.
  add(
    `live on Bitcoin Core 30.0: ${fmt(val(cl?.txsPerBlock))}-tx block, ZMQ arrival → committed, p50`,
    `${fmt(val(cl?.p50))} ms`,
    `devnode, same blocks: ${fmt(val(dl?.p50))} ms; index of ${fmt(val(cl?.indexHeightBefore))} blocks, PostgreSQL CPU ${fmt(val(cl?.postgresCpuMsP50))} ms a block; ${floorCell(nodes.core?.floor)}`,
    '≤ 300 ms',
    all(cl?.p50) ? cl!.p50! <= 300 : null,
    'core',
  );
  add(
    'live on Bitcoin Core 30.0: same, p99',
    `${fmt(val(cl?.p99))} ms`,
    `devnode, same blocks: ${fmt(val(dl?.p99))} ms${coldRow(nodes.core?.cold?.latencies, nodes.devnode?.cold?.latencies)}`,
    '≤ 600 ms',
    all(cl?.p99) ? cl!.p99! <= 600 : null,
    'core',
  );

  // Small blocks caught up block by block (bench/small), on the devnode and on Core.
  const sm = (by.get('small')?.result ?? {}) as Record<
    string,
    { perBlockP50?: number; perBlockP90?: number; blocks?: number; blocksPerSec?: number } | undefined
  >;
  for (const [node, label] of [
    ['devnode', 'the devnode'],
    ['core', 'Bitcoin Core 30.0'],
  ] as const) {
    const r = sm[node];
    add(
      `small blocks (1–10 txs) indexed block by block on ${label}: ms per block, median`,
      `${fmt(val(r?.perBlockP50), 1)} ms (p90 ${fmt(val(r?.perBlockP90), 1)})`,
      `${fmt(val(r?.blocks))} blocks, ${fmt(val(r?.blocksPerSec), 1)} blocks/s`,
      '≤ 10 ms',
      all(r?.perBlockP50) ? r!.perBlockP50! <= 10 : null,
      'small',
    );
  }

  const w = (by.get('wallets')?.result ?? null) as {
    corpus?: { blocks?: number; txs?: number };
    size?: { ratio?: number; rawBlockBytes?: number; databaseBytes?: number };
    gapLimit?: number;
    connections?: number;
    creationMs?: Record<string, number>;
    balance?: { reqPerSec?: number; p99?: number };
    addressBalance?: { reqPerSec?: number };
    million?: {
      txs?: number;
      addresses?: number;
      createMs?: number;
      balanceMs?: number;
      historyMs?: number;
      historyNextMs?: number;
      unspentMs?: number;
    } | null;
  } | null;

  // 2. Size: the target is set on the 20,000-block corpus, which bench/wallets imports whole
  // (bench/sync's routine run imports 2,000); the smaller import's ratio is reported beside it.
  const size = val(s.size?.ratio);
  const fullSize = w?.size && (val(w.corpus?.blocks) ?? 0) >= 20_000 ? w.size : null;
  if (fullSize) {
    const r = val(fullSize.ratio);
    add(
      `database size / raw block bytes (after VACUUM, CHECKPOINT; ${fmt(val(w!.corpus?.blocks))}-block import)`,
      fmt(r, 3),
      `raw blocks ${mb(fullSize.rawBlockBytes)} MB, database ${mb(fullSize.databaseBytes)} MB`,
      '≤ 0.5',
      r === null ? null : r <= 0.5,
      'wallets (its index)',
    );
  }
  add(
    `database size / raw block bytes (after VACUUM, CHECKPOINT; ${fmt(blocks)}-block import${fullSize ? '' : ', the target is set on 20,000'})`,
    fmt(size, 3),
    `raw blocks ${mb(s.size?.rawBlockBytes)} MB`,
    fullSize ? '(reported)' : '≤ 0.5',
    fullSize || size === null ? null : size <= 0.5,
    'sync',
  );

  // 2b. The same import with history buckets off (HISTORY_BUSY=0: every address in chunk rows).
  const hc = (
    by.get('sync')?.result as
      | {
          chunkRows?: {
            wallMs?: number;
            foldMs?: number;
            mergeMs?: number;
            size?: { ratio?: number; databaseBytes?: number };
          };
        }
      | undefined
  )?.chunkRows;
  const sec = (x: unknown) => (typeof x === 'number' ? fmt(x / 1000, 1) : '—');
  if (hc)
    add(
      `database size / raw block bytes, history buckets off (HISTORY_BUSY=0 for the same ${fmt(blocks)}-block import)`,
      fmt(val(hc.size?.ratio), 3),
      `database ${mb(hc.size?.databaseBytes)} MB; import ${sec(hc.wallMs)} s, its history step (the merge) ${sec(hc.mergeMs)} s (with buckets: import ${sec(s.import?.wallMs)} s, the fold ${sec(hc.foldMs)} s)`,
      '(reported)',
      null,
      'sync',
    );

  // 2c. The same index after the catch-up and live blocks, folded as the idle indexer folds them.
  const st = (by.get('sync')?.result as { steady?: Partial<SteadyResult> } | undefined)?.steady;
  if (st)
    add(
      `database size / raw block bytes after ${fmt(st.blocks)} more blocks applied block by block, folded as the idle indexer folds them (144 at a time)`,
      fmt(val(st.size?.ratio), 3),
      `database ${mb(st.size?.databaseBytes)} MB (history_buckets ${mb(st.size?.tables?.history_buckets)}, history ${mb(st.size?.tables?.history)} MB); ${
        (st.folds ?? [])
          .map((f) => `a fold of ${fmt(f.blocks)} blocks ${sec(f.ms)} s (PostgreSQL CPU ${sec(f.postgresCpuMs)} s)`)
          .join(', ') || 'no fold due'
      }; ${fmt(st.unfolded)} blocks left in chunk rows`,
      '(reported)',
      null,
      'sync',
    );

  // 3. Initial sync.
  const imp = s.import;
  const cpuPerTx = all(imp?.importerCpuMs, imp?.txs) && imp!.txs! > 0 ? (imp!.importerCpuMs! * 1000) / imp!.txs! : null;
  add(
    'importer CPU per transaction (`blockwire import`, whole run: the finish mostly waits on PostgreSQL)',
    `${fmt(cpuPerTx, 1)} µs`,
    hashTps === null ? '' : `txid hashing ${fmt(1e6 / hashTps, 2)} µs/tx`,
    '≤ 10 µs',
    cpuPerTx === null ? null : cpuPerTx <= 10,
    'sync',
  );
  // The previous code's import of the same corpus into the same PostgreSQL (bench/sync --baseline).
  const base = s.baseline as (Record<string, number> & { ref?: string }) | undefined;
  const baseRatio = val(base?.ratio);
  add(
    'initial sync (`blockwire import`, load + index builds)',
    `${fmt(val(imp?.txPerSec))} tx/s, ${fmt(val(imp?.blocksPerSec), 1)} blocks/s${baseRatio === null ? '' : ` = **${fmt(baseRatio, 2)} ×** the baseline (load phase ${fmt(val(base?.loadRatio), 2)} ×)`}`,
    `${base ? `baseline ${String(base.ref)} ${fmt(val(base.txPerSec))} tx/s (load ${fmt(val(base.loadTxPerSec))}); ` : 'baseline not run; '}server-side COPY limit ${fmt(val(s.copyLimit?.txPerSec))} tx/s (load phase at ${fmt(val(s.copyLimit?.ratioLoad), 2)} of it)`,
    '≥ 1.6 × the previous code on the same VM',
    baseRatio === null ? null : baseRatio >= 1.6,
    'sync',
  );
  add('initial sync over RPC/REST (indexer role)', `${fmt(val(s.rpc?.txPerSec))} tx/s`, '', '(reported)', null, 'sync');
  add(
    'initial sync over RPC/REST from Bitcoin Core 30.0 (bench/core chain)',
    `${fmt(val(nodes.core?.sync?.txPerSec))} tx/s`,
    `devnode, same blocks: ${fmt(val(nodes.devnode?.sync?.txPerSec))} tx/s`,
    '(reported)',
    null,
    'core',
  );
  const proj = val(s.projection?.hours);
  add('projected full mainnet sync (1.43 billion txs)', `${fmt(proj, 1)} h`, '', '≤ 6 h', proj === null ? null : proj <= 6, 'sync');
  const peak = val(imp?.peakRssBytes);
  const budget = val(imp?.memoryMb);
  add(
    'peak memory of the import (resident, the importer process), bounded by IMPORT_MEMORY_MB',
    peak === null ? '— (not reported)' : `${fmt(peak / 2 ** 30, 2)} GiB`,
    budget === null ? 'no budget logged' : `budget ${fmt(budget)} MiB (the outpoint cache's bound: docs/sync.md "Memory")`,
    '≤ 4 GiB by default',
    peak === null ? null : peak <= Math.min(4, (budget ?? Infinity) / 1024) * 2 ** 30,
    'sync',
  );
  add('catch-up with every index live (per-block path)', `${fmt(val(s.catchup?.txPerSec))} tx/s`, '', '(reported)', null, 'sync');
  const decRatio = cell(dec, /^all/, /decode \/ floor/);
  const decTps = cell(dec, /^all/, /decode tx\/s/);
  add(
    'decode vs txid floor (5 mainnet blocks)',
    `${fmt(decRatio, 2)}, ${fmt(decTps)} tx/s`,
    `${fmt(hashTps)} tx/s`,
    '≥ 0.8 and ≥ 200,000 tx/s',
    decRatio === null || decTps === null ? null : decRatio >= 0.8 && decTps >= 200_000,
    'decode',
  );

  // 4. Fan-out and delivery.
  const fanP99 = cell(ev, /^block arrival/, /^p99/);
  add(
    `events: block arrival → WebSocket, p99 to the last of ${fmt(clients)} clients`,
    `${fmt(fanP99)} ms`,
    '',
    '≤ 1,000 ms at 10,000 clients',
    fanP99 === null || clients === null ? null : fanP99 <= 1000 && clients >= 10_000,
    'events',
  );
  const hooks = leadingNumber(ev, /^webhook deliveries/, /^rate$/);
  const hookProcs =
    ev?.tables
      .flatMap((t) => t.rows)
      .find((r) => /^webhook deliveries/.test(r[0] ?? ''))?.[0]
      ?.match(/\((\d+ worker process(?:es)?)\)/)?.[1] ?? '';
  add(
    'webhook deliveries to a local receiver (Standard Webhooks signatures)',
    `${fmt(hooks)} /s`,
    hookProcs,
    '≥ 5,000 /s',
    hooks === null ? null : hooks >= 5000,
    'events',
  );

  // 5. API against its own floor (16 connections, as fast as they go), p99 as before.
  const share = (x: number | null) => (x === null || floor === null || floor <= 0 ? null : x / floor);
  const apiRows = [
    ['API balance', /^balance/, 0.5, 10],
    ['API history page (a million-entry address, random depth)', /^history page \(limit 25, hot address/, 0.35, 25],
    ['API history page (random addresses)', /^history page \(limit 25, random of/, 0.35, 25],
    ['API transaction lookup', /^transaction \(/, 0.35, null],
    ["API transaction lookup, Coinstack's path", /^transaction, Coinstack's path/, 0.35, null],
  ] as const;
  for (const [label, row, goal, p99Goal] of apiRows) {
    const rps = cell(api, row, /^req\/s/);
    const p99 = cell(api, row, /^p99/);
    const r = share(rps);
    const ok = r === null || p99 === null ? null : r >= goal && (p99Goal === null || p99 <= p99Goal);
    add(
      `${label} (16 connections, as fast as they go)`,
      `${fmt(rps)} req/s, p99 ${fmt(p99)} ms = ${fmt(r, 2)} × floor`,
      `${fmt(floor)} req/s`,
      `≥ ${goal} × floor${p99Goal === null ? '' : `, p99 ≤ ${p99Goal} ms`}`,
      ok,
      'api',
    );
  }
  // The transaction lookup asking the node (bench/tx-lookup, Core 30): warm and cold.
  type Lookup = Partial<Record<'cold' | 'warm', { p50?: number; p99?: number }>>;
  const tl = (by.get('tx-lookup')?.result ?? null) as (Lookup & { coinstack?: Lookup }) | null;
  const lookups = (l: Lookup | undefined) =>
    `${fmt(val(l?.warm?.p50), 2)} ms (${fmt(val(l?.warm?.p99), 2)}) / ${fmt(val(l?.cold?.p50), 2)} ms (${fmt(val(l?.cold?.p99), 2)})`;
  add(
    'API transaction lookup from Bitcoin Core 30.0, one at a time: warm (held) / cold (the node asked), p50 (p99)',
    `${lookups(tl ?? undefined)}; Coinstack's path: ${lookups(tl?.coinstack)}`,
    'one API process per variant, turns alternated',
    '(reported)',
    null,
    'tx-lookup',
  );
  // The earlier absolute targets, offered at their rate on a fixed schedule (bench/open-loop.ts).
  for (const [label, route, rate, goal] of [
    ['balance', 'balance', 8000, 10],
    ['history page (a million-entry address, random depth)', 'history page \\(limit 25, hot address', 5000, 25],
    ['history page (random addresses)', 'history page \\(limit 25, random of', 5000, 25],
  ] as const) {
    const row = new RegExp(`^at ${rate}/s: ${route}`);
    const served = cell(api, row, /^served req\/s/);
    const p99 = cell(api, row, /^p99 ms/);
    const non2xx = cell(api, row, /^non-2xx/);
    add(
      `API ${label}, offered ${fmt(rate)} req/s (open loop)`,
      `${fmt(served)} req/s served, p99 ${fmt(p99, 1)} ms`,
      `${fmt(floor)} req/s`,
      `≥ ${fmt(rate)} req/s, p99 ≤ ${goal} ms`,
      served === null || p99 === null ? null : served >= rate * 0.99 && p99 <= goal && non2xx === 0,
      'api',
    );
  }

  // 6. Wallets (bench/wallets), the balance beside one address's balance in the same run.
  if (w) {
    const created = Object.entries(w.creationMs ?? {})
      .map(([shape, ms]) => `${shape}: ${fmt(ms / 1000, 1)} s`)
      .join('; ');
    add(
      `wallet creation, 2 × ${fmt(val(w.gapLimit))} addresses, median of 3`,
      created || '—',
      `index of ${fmt(val(w.corpus?.blocks))} blocks (${fmt(val(w.corpus?.txs))} txs)`,
      '(reported)',
      null,
      'wallets',
    );
    const rps = val(w.balance?.reqPerSec);
    add(
      `wallet balance, 2 × 100 addresses (${fmt(val(w.connections))} connections, as fast as they go)`,
      `${fmt(rps)} req/s, p99 ${fmt(val(w.balance?.p99))} ms`,
      `one address's balance ${fmt(val(w.addressBalance?.reqPerSec))} req/s`,
      '≥ 1,000 req/s',
      rps === null ? null : rps >= 1000,
      'wallets',
    );
    // A wallet whose addresses carry a million transactions: created and read in seconds (the
    // index has every address), taken here as at most 10 s each.
    const m = w.million;
    if (m) {
      const secs = (x: Num) => (typeof x === 'number' ? `${fmt(x / 1000, 2)} s` : '—');
      const where = `${fmt(val(m.addresses))} used addresses, index of ${fmt(val(w.corpus?.blocks))} blocks`;
      add(
        `wallet with ${fmt(val(m.txs))} transactions: creation (gap 20, extended past every used address)`,
        secs(m.createMs),
        where,
        'seconds, not a rescan (≤ 10 s)',
        all(m.createMs) ? m.createMs! <= 10_000 : null,
        'wallets',
      );
      const reads = [m.balanceMs, m.historyMs, m.historyNextMs, m.unspentMs];
      add(
        `wallet with ${fmt(val(m.txs))} transactions: first balance; first and second history page; first unspent-outputs page`,
        reads.map(secs).join('; '),
        where,
        'seconds (≤ 10 s each)',
        all(...reads) ? reads.every((x) => x! <= 10_000) : null,
        'wallets',
      );
    }
  }
  return rows.join('\n');
}

type SyncResult = Record<string, Record<string, unknown> | undefined>;

/** The live block's floor (bench/live-floor.ts) for the Results row: pages already logged, as the live blocks find them. */
function floorCell(f: unknown): string {
  const x = (f as FloorResult | undefined)?.floor.logged;
  if (!x) return 'floor not measured';
  return `floor (PostgreSQL's own write cost for these rows): ${fmt(x.ms)} ms, PostgreSQL CPU ${fmt(x.postgresCpuMs)} ms`;
}

/** The floor's figures for the sync details table. */
function floorDetails(f: FloorResult | undefined): string {
  if (!f) return '—';
  const c = (x: WriteCost) =>
    `${fmt(x.ms)} ms, PostgreSQL CPU ${fmt(x.postgresCpuMs)} ms, WAL ${fmt(x.walMb, 1)} MB${
      x.steps
        ? ` (ms: ${Object.entries(x.steps)
            .map(([k, v]) => `${k} ${fmt(v)}`)
            .join(', ')})`
        : ''
    }`;
  const rows = Object.entries(f.rows)
    .map(([k, v]) => `${k} ${fmt(v)}`)
    .join(', ');
  return (
    `block ${fmt(f.height)} (${fmt(f.txs)} txs; rows ${rows}), p50 of ${fmt(f.samples)}: pages already logged: binary COPY **${c(f.floor.logged)}**, writer ${c(f.writer.logged)}; ` +
    `after a CHECKPOINT: binary COPY **${c(f.floor.checkpoint)}**, writer ${c(f.writer.checkpoint)}`
  );
}

/** Step 5b's row of the sync details table (none when the run has no such step). */
function steadyDetails(st: Partial<SteadyResult> | undefined): string[] {
  if (!st) return [];
  const n = (x: unknown, d = 0) => (typeof x === 'number' ? fmt(x, d) : '—');
  const s = (x: unknown) => (typeof x === 'number' ? fmt(x / 1000, 1) : '—');
  const tables = Object.entries(st.size?.tables ?? {})
    .map(([k, b]) => `${k} ${mb(b, 1)}`)
    .join(', ');
  const folds = (st.folds ?? []).map((f) => `${n(f.blocks)} blocks in ${s(f.ms)} s (PostgreSQL CPU ${s(f.postgresCpuMs)} s)`).join(', ');
  return [
    `| size after ${n(st.blocks)} more blocks applied block by block, folded as the idle indexer folds | database ${mb(st.size?.databaseBytes, 1)} MB / raw blocks ${mb(st.size?.rawBlockBytes, 1)} MB = **${n(st.size?.ratio, 3)}**; ${tables} MB; folds: ${folds || 'none due'}; ${n(st.unfolded)} blocks left in chunk rows |`,
  ];
}

/** bench/sync's figures as one table (it prints lines, not tables). */
export function syncDetails(r: SyncResult): string {
  const n = (x: unknown, d = 0) => (typeof x === 'number' ? fmt(x, d) : '—');
  const s = (x: unknown) => (typeof x === 'number' ? fmt(x / 1000, 1) : '—');
  const c = r.corpus ?? {};
  const i = r.import ?? {};
  const b = r.baseline ?? {};
  const z = r.size ?? {};
  const l = r.copyLimit ?? {};
  const u = r.catchup ?? {};
  const v = r.live ?? {};
  const p = r.rpc ?? {};
  const j = r.projection ?? {};
  const tables = Object.entries((z.tables ?? {}) as Record<string, number>)
    .map(([k, b]) => `${k} ${mb(b, 1)}`)
    .join(', ');
  const perTable = Object.entries((l.perTable ?? {}) as Record<string, { rows: number; ms: number }>)
    .map(([k, x]) => `${k} ${fmt(x.rows)} rows ${s(x.ms)} s`)
    .join(', ');
  return [
    '| step | figures |',
    '|---|---|',
    `| corpus | ${n(c.txs)} txs, ${mb(c.rawBytes, 1)} MB, ${n(c.reorgs)} reorg(s), ${n(c.staleBlocks)} stale block(s); generated in ${s(c.generatedMs)} s |`,
    `| import (\`blockwire import --blocks-dir\`) | ${n(i.txs)} txs, ${n(i.blocks)} blocks: load ${s(i.loadMs)} s (**${n(i.loadTxPerSec)} tx/s**) + finish/index builds ${s(i.finishMs)} s = **${n(i.txPerSec)} tx/s**, ${n(i.blocksPerSec, 1)} blocks/s; command wall ${s(i.wallMs)} s; CPU importer ${s(i.importerCpuMs)} s, PostgreSQL ${s(i.postgresCpuMs)} s; importer peak RSS ${mb(i.peakRssBytes, 1)} MB |`,
    ...(r.baseline
      ? [
          `| baseline import (${String(b.ref ?? '—')}, same corpus, same PostgreSQL) | load ${s(b.loadMs)} s (**${n(b.loadTxPerSec)} tx/s**) + finish ${s(b.finishMs)} s = **${n(b.txPerSec)} tx/s**; CPU importer ${s(b.importerCpuMs)} s; peak RSS ${mb(b.peakRssBytes, 1)} MB; current / baseline **${n(b.ratio, 2)} ×** (load ${n(b.loadRatio, 2)} ×, importer CPU ${n(b.cpuRatio, 2)} ×) |`,
        ]
      : []),
    `| size after VACUUM, CHECKPOINT | database ${mb(z.databaseBytes, 1)} MB (empty schema ${mb(z.emptyDatabaseBytes, 1)} MB) / raw blocks ${mb(z.rawBlockBytes, 1)} MB = **${n(z.ratio, 3)}**; ${tables} MB |`,
    `| server-side COPY limit | ${n(l.rows)} rows, ${mb(l.fileBytes, 1)} MB in ${s(l.ms)} s = ${n(l.rowsPerSec)} rows/s = ${n(l.txPerSec)} tx/s (${perTable}); import load phase at **${n(l.ratioLoad, 3)}**, with index builds ${n(l.ratioTotal, 3)} |`,
    `| catch-up, every index live | ${n(u.blocks)} blocks, ${n(u.txs)} txs in ${s(u.ms)} s = **${n(u.txPerSec)} tx/s**, ${n(u.blocksPerSec, 2)} blocks/s; per-block fetch → commit p50 ${n(u.applyMsP50)} ms |`,
    `| live (4,000-tx blocks) | ${n(v.blocks)} blocks of ${n(v.txsPerBlock)} txs on an index of ${n(v.indexHeightBefore)} blocks: ZMQ arrival → committed p50 **${n(v.p50)} ms**, p99 **${n(v.p99)} ms**, max ${n(v.max)} ms; indexer fetch → commit p50 ${n(v.applyP50)} ms; per block (p50) WAL ${n(v.walMbP50, 1)} MB, PostgreSQL CPU ${n(v.postgresCpuMsP50)} ms, indexer CPU ${n(v.indexerCpuMsP50)} ms |`,
    `| live block's floor (same rows: binary COPY per table, spent outputs and changed balances deleted by key, one transaction) | ${floorDetails(v.floor as FloorResult | undefined)} |`,
    ...steadyDetails(r.steady as Partial<SteadyResult> | undefined),
    `| initial sync over RPC/REST | ${n(p.txs)} txs in ${s(p.ms)} s = **${n(p.txPerSec)} tx/s** (bulk load ${s(p.loadMs)} s, index builds ${s(p.finishMs)} s); CPU indexer ${s(p.indexerCpuMs)} s, PostgreSQL ${s(p.postgresCpuMs)} s |`,
    `| projection, 1.43 G mainnet txs | load ${n(j.loadHours, 1)} h + index builds ${n(j.indexHours, 1)} h (× ${n(j.sortFactor, 2)} for n log n) = **${n(j.hours, 1)} h** |`,
  ].join('\n');
}

const START = '<!-- bench:results:start -->';
const END = '<!-- bench:results:end -->';

/** The README section: when and where, the summary, then each bench's tables as it printed them. */
export function readmeSection(runs: BenchRun[], at: string, quick: boolean): string {
  const parts = [
    START,
    '',
    `Last \`npm run bench${quick ? ' -- --quick' : ''}\`: ${at}, ${machine().cpus} vCPU, node ${process.version}. Load average before/after each bench below (other engineers' tests share the 2 cores).`,
    '',
    summary(runs),
    '',
  ];
  for (const r of runs) {
    parts.push(
      `#### ${r.name} — \`${r.command}\` (${(r.ms / 1000).toFixed(0)} s, exit ${r.exitCode}, load ${r.loadBefore.join(' ')} → ${r.loadAfter.join(' ')})`,
      '',
    );
    if (r.name === 'sync' && r.result) parts.push(syncDetails(r.result as SyncResult), '');
    for (const t of r.tables) {
      parts.push(
        `| ${t.header.join(' | ')} |`,
        `|${t.header.map(() => '---').join('|')}|`,
        ...t.rows.map((x) => `| ${x.join(' | ')} |`),
        '',
      );
    }
  }
  parts.push(END);
  return parts.join('\n');
}

/** Replaces the section between the markers in `readme` (appends it when absent). */
export function spliceReadme(readme: string, section: string): string {
  const a = readme.indexOf(START);
  const b = readme.indexOf(END);
  if (a >= 0 && b > a) return readme.slice(0, a) + section + readme.slice(b + END.length);
  return `${readme.trimEnd()}\n\n## Results (npm run bench)\n\n${section}\n`;
}

async function main(): Promise<number> {
  const { values } = benchArgs(import.meta.url, {
    options: {
      quick: { type: 'boolean' },
      only: { type: 'string' },
      results: { type: 'string' },
      readme: { type: 'string' },
      blocks: { type: 'string' },
      'txs-per-block': { type: 'string' },
      'wallets-blocks': { type: 'string' },
      'wallets-pg-settings': { type: 'string' },
      'render-only': { type: 'boolean' },
    },
  });
  if (values['render-only']) {
    // Re-renders the README section from a results file (no benchmark runs).
    const file = values.results ?? join('bench', 'results', 'latest.json');
    const data = JSON.parse(readFileSync(file, 'utf8')) as { at: string; quick: boolean; runs: BenchRun[] };
    const target = values.readme ?? join('bench', 'README.md');
    writeFileSync(target, spliceReadme(readFileSync(target, 'utf8'), readmeSection(data.runs, data.at, data.quick)));
    return 0;
  }
  // Corpus size of bench/sync and bench/wallets (default: the full size, 20,000 blocks). Checked
  // before any bench runs, so that a bad flag fails at once, not after an hour of benches.
  const children = new Map(BENCHES.map((d) => [d.name, childRun(d.name, values)]));
  const quick = values.quick === true;
  const only = values.only ? new Set(values.only.split(',')) : null;
  const results = values.results ?? join('bench', 'results', quick ? 'quick.json' : 'latest.json');
  const readme = values.readme ?? (quick ? null : join('bench', 'README.md'));
  const runs: BenchRun[] = [];
  for (const def of BENCHES) {
    if (only && !only.has(def.name)) continue;
    // bench/wallets works on the same corpus as bench/sync unless given its own size (cached:
    // generated once).
    runs.push(await runOne(def, quick, children.get(def.name)));
  }
  // With --only, the other benches' latest runs stay in the results (each carries its own load).
  if (only && existsSync(results)) {
    const prev = JSON.parse(readFileSync(results, 'utf8')) as { runs: BenchRun[] };
    const merged = BENCHES.map((d) => runs.find((r) => r.name === d.name) ?? prev.runs.find((r) => r.name === d.name)).filter(
      (r): r is BenchRun => r !== undefined,
    );
    runs.splice(0, runs.length, ...merged);
  }
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  mkdirSync(dirname(results), { recursive: true });
  writeFileSync(results, `${JSON.stringify({ at, quick, machine: machine(), runs }, null, 2)}\n`);
  process.stdout.write(`\n${summary(runs)}\n\nresults: ${results}\n`);
  if (readme) {
    writeFileSync(readme, spliceReadme(readFileSync(readme, 'utf8'), readmeSection(runs, at, quick)));
    process.stdout.write(`tables: ${readme}\n`);
  }
  return runs.every((r) => r.exitCode === 0) ? 0 : 1;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await main();
