/**
 * bench/api: the REST API under load on a large synthetic index. Builds, straight in PostgreSQL: one hot address with 1,000,000 transactions (history
 * chunks, 1M unspent outputs), 200,000 ordinary addresses with a balance and a history entry,
 * 10,000 two-in/two-out payments; then (1) pages the hot address's history and unspent outputs
 * at depths 0, 50 % and the very end (sequential requests, p50/p99), (2) runs autocannon as fast
 * as N connections go against balance, history pages and a transaction lookup, in /v1 and at
 * Coinstack's bare path (req/s, p50, p99,
 * CPU per request of the API, of PostgreSQL and of the load generator), and (3) offers each
 * route with a target its target rate (balance 8,000 req/s, history 5,000) and reports
 * the rate served and its p50/p99. (2) includes POST /v1/addresses/batch with the balances of
 * 1,000 random addresses per request.
 * Run: `node --import tsx bench/api.ts [--duration S] [--connections N] [--rate R] [--only TEXT]
 * [--skip-paging] [--skip-rate] [--hot-txs N] [--addresses N] [--payments N] [--rounds N] [--warm-up S]` (`--only
 * floor,transaction`: the runs whose label contains any of the texts; `--warm-up S`, default 2: each of
 * (2)'s runs after S s of the same load not measured, and the hot address's chunks paged until held,
 * as a long-running API process has them, 0 measures a cold process; `--rounds 3`: (2)'s runs
 * three times in turn, on a shared machine the ratios of one round against its own floor; DATABASE_URL and
 * REDIS_URL optional: an ephemeral PostgreSQL and redis-server are started otherwise; an index
 * of the same size already built in DATABASE_URL is reused; `--rate` caps (2) at R req/s; the
 * sizes default to the ones above, smaller ones make a quick run that still takes every step).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import { createHash } from 'node:crypto';
import autocannon from 'autocannon';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import pg from 'pg';
import { startPostgres } from '../cli/embedded/postgres.js';
import { startRedis } from '../cli/embedded/redis.js';
import { createDb } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { addressKey } from '../src/db/address-key.js';
import { encodeIns, encodeOuts } from '../src/db/packed.js';
import { sqlFirstTxNum, txNum } from '../src/db/tx-num.js';
import { CHUNK_ENTRIES, SQL_HISTORY } from '../src/db/history-entries.js';
import { segwitAddress } from '../src/bitcoin/address.js';
import { witnessScript } from '../src/bitcoin/script.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { createApiKey } from '../src/auth/keys.js';
import { encodeCursor, type Cursor } from '../api/cursor.js';
import { apiBackendsCpuMs, backendsCpuDelta } from './harness.js';
import { openLoop } from './open-loop.js';

const { values: opts } = benchArgs(import.meta.url, {
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '16' },
    rate: { type: 'string' },
    'skip-rate': { type: 'boolean', default: false },
    only: { type: 'string' },
    'skip-paging': { type: 'boolean', default: false },
    'hot-txs': { type: 'string', default: '1000000' },
    addresses: { type: 'string', default: '200000' },
    payments: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '1' },
    'warm-up': { type: 'string', default: '2' },
  },
});
const DURATION = Number(opts.duration);
/** `--warm-up S`: seconds of the same load, not measured, before each measured run (0: a cold process). */
const WARM_UP = Number(opts['warm-up']);
/** `--only a,b`: the runs whose label contains any of the comma-separated texts (all without it). */
const only = (label: string) => !opts.only || opts.only.split(',').some((t) => label.includes(t.trim()));
const CONNECTIONS = Number(opts.connections);
/** Connections of the target-rate runs: at 8,000 req/s, 128 connections carry a mean latency up to 16 ms. */
const RATE_CONNECTIONS = 128;
const PER_BLOCK = 1000;
/** Transactions of the hot address: whole blocks of PER_BLOCK, at least 3 (the payments spend from them). */
const HOT_TXS = Math.max(3, Math.ceil(Number(opts['hot-txs']) / PER_BLOCK)) * PER_BLOCK;
const HOT_BLOCKS = HOT_TXS / PER_BLOCK;
const ADDRESSES = Number(opts.addresses);
const PAYMENTS = Number(opts.payments);
/** 200000 → '200k', 10000 → '10k', 1000000 → '1M' (the labels of the tables). */
const short = (n: number) => (n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n));

const sha = (s: string) => createHash('sha256').update(s).digest();
const program = (i: number) => sha(`addr-${i}`).subarray(0, 20);
const hotScript = witnessScript(0, sha('hot').subarray(0, 20));
const hotAddress = segwitAddress(0, hotScript.subarray(2), 'regtest');
const hotKey = addressKey(hotScript);

/** CPU time (user + system) a process has used, in ms, from /proc (Linux). */
function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main() {
  const scratch = await mkdtemp(join(tmpdir(), 'bench-api-'));
  const started: { stop(): Promise<void> }[] = [];
  let dbUrl = process.env.DATABASE_URL;
  let redisUrl = process.env.REDIS_URL;
  if (!dbUrl) {
    const server = await startPostgres({
      dataDir: join(scratch, 'pg'),
      ephemeral: true,
      settings: { shared_buffers: '1GB', max_wal_size: '8GB' },
    });
    started.push(server);
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    await c.query('CREATE DATABASE bench_api');
    await c.end();
    dbUrl = server.urlFor('bench_api');
  }
  if (!redisUrl) {
    const r = await startRedis({ dir: join(scratch, 'redis') });
    started.push(r);
    redisUrl = r.url;
  }
  const db = createDb(dbUrl, { max: 4 });
  try {
    await migrateToLatest(db);
    const t0 = Date.now();
    const hotBalance = (await sql<{ b: string }>`SELECT balance::text AS b FROM balances WHERE addr_key = ${hotKey}::uuid`.execute(db))
      .rows[0]?.b;
    const built = hotBalance !== undefined;
    if (built && hotBalance !== String(HOT_TXS * 1000))
      throw new Error(
        `DATABASE_URL holds an index of another size (hot address balance ${hotBalance}, not ${HOT_TXS * 1000}): use an empty database`,
      );
    if (!built) await buildIndex(db);
    // Write the build's dirty pages now: a checkpoint due mid-measurement (checkpoint_timeout)
    // stalled the runs it fell in (p99 195 ms at an offered 5,000 req/s against 29–66 without).
    await sql`CHECKPOINT`.execute(db);
    const addresses = Array.from({ length: ADDRESSES }, (_, i) => segwitAddress(0, program(i), 'regtest'));
    const payTxids = Array.from({ length: PAYMENTS }, (_, i) => hashToHex(sha(`pay-${i}`)));
    const payH = HOT_BLOCKS + 1;
    const key = (await createApiKey(db, { name: 'bench', rateLimit: 2_000_000_000 })).key;
    process.stdout.write(
      `load average ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')} (2 cores)\n`,
    );
    process.stdout.write(
      `index ${built ? 'reused' : 'built'} in ${((Date.now() - t0) / 1000).toFixed(1)} s: hot address ${hotAddress} with ${HOT_TXS} txs, ${ADDRESSES} addresses, ${PAYMENTS} payments\n`,
    );
    await measure(db, dbUrl, redisUrl, key, addresses, payTxids, payH);
  } finally {
    await db.destroy();
    for (const s of started.reverse()) await s.stop();
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Writes the synthetic index (see the module comment). */
async function buildIndex(db: Kysely<Database>): Promise<void> {
  {
    const heights = HOT_BLOCKS + 2;
    await sql`INSERT INTO blocks (height, hash, prev_hash, header, time, tx_count, size, weight)
      SELECT h, sha256(('block' || h)::bytea), sha256(('block' || (h - 1))::bytea), '\\x00'::bytea, 1700000000 + h * 600, ${PER_BLOCK}, 1000000, 4000000
      FROM generate_series(0, ${heights}) h`.execute(db);
    const hotOuts = encodeOuts([{ value: 1000n, script: hotScript }]);
    await sql`INSERT INTO txs (tx_num, txid, outs, ins, first_seen)
      SELECT n, sha256(int8send(n)), ${hotOuts}, '\\x'::bytea, NULL
      FROM (SELECT ${sqlFirstTxNum(sql`h`)} | p AS n FROM generate_series(1, ${HOT_BLOCKS}) h, generate_series(1, ${PER_BLOCK}) p) s`.execute(
      db,
    );
    await sql`INSERT INTO utxos (txid, vout, tx_num, addr_key, value, script)
      SELECT txid, 0, tx_num, ${hotKey}::uuid, 1000, ${Buffer.from(hotScript)} FROM txs`.execute(db);
    await sql`INSERT INTO history (addr_key, first_tx_num, rest)
      SELECT ${hotKey}::uuid, min(n), ${sql.raw(SQL_HISTORY.slice(`string_agg(${SQL_HISTORY.entry('n')}, ''::bytea ORDER BY n)`, '1', 'count(*) - 1'))}
      FROM (SELECT n, (row_number() OVER (ORDER BY n) - 1) / ${CHUNK_ENTRIES} AS chunk FROM (SELECT tx_num AS n FROM txs) a) s GROUP BY chunk`.execute(
      db,
    );
    await sql`INSERT INTO balances (addr_key, balance, utxo_count) VALUES (${hotKey}::uuid, ${HOT_TXS * 1000}, ${HOT_TXS})`.execute(db);
    // Ordinary addresses: a balance row and one history entry each.
    for (let start = 0; start < ADDRESSES; start += 20_000) {
      const keys: string[] = [];
      const nums: string[] = [];
      for (let i = start; i < Math.min(ADDRESSES, start + 20_000); i++) {
        const script = witnessScript(0, program(i));
        keys.push(addressKey(script));
        nums.push(String(txNum(1 + (i % HOT_BLOCKS), 1 + (i % PER_BLOCK))));
      }
      await sql`INSERT INTO balances (addr_key, balance, utxo_count) SELECT k, 5000, 1 FROM unnest(${keys}::uuid[]) k`.execute(db);
      await sql`INSERT INTO history (addr_key, first_tx_num, rest)
        SELECT k, n, ''::bytea FROM unnest(${keys}::uuid[], ${nums}::int8[]) AS q(k, n)`.execute(db);
    }
    // Payments: 2 inputs (hot outputs), 2 outputs, at the last height.
    const payH = heights - 1;
    for (let start = 0; start < PAYMENTS; start += 5000) {
      const rows: { n: string; txid: Buffer; outs: Buffer; ins: Buffer }[] = [];
      for (let i = start; i < Math.min(PAYMENTS, start + 5000); i++) {
        const txid = sha(`pay-${i}`);
        rows.push({
          n: String(txNum(payH, i + 1)),
          txid,
          outs: encodeOuts([
            { value: 1500n, script: witnessScript(0, program(i)) },
            { value: 400n, script: hotScript },
          ]),
          ins: encodeIns([
            { txNum: txNum(1 + (i % HOT_BLOCKS), 1 + (i % 997)), vout: 0 },
            { txNum: txNum(2 + (i % (HOT_BLOCKS - 2)), 2 + (i % 991)), vout: 0 },
          ]),
        });
      }
      await sql`INSERT INTO txs (tx_num, txid, outs, ins) SELECT * FROM unnest(${rows.map((r) => r.n)}::int8[], ${rows.map((r) => r.txid)}::bytea[], ${rows.map((r) => r.outs)}::bytea[], ${rows.map((r) => r.ins)}::bytea[])`.execute(
        db,
      );
    }
    await sql`UPDATE chain_tip SET height = ${payH}, hash = sha256(('block' || ${payH})::bytea)`.execute(db);
    await sql`VACUUM ANALYZE`.execute(db);
  }
}

/** Starts the API process and runs both measurements. */
async function measure(
  db: Kysely<Database>,
  dbUrl: string,
  redisUrl: string,
  key: string,
  addresses: string[],
  payTxids: string[],
  payH: number,
): Promise<void> {
  {
    const child = spawn(
      process.execPath,
      [
        ...(process.env.BENCH_SERVER_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_SERVER_PROF}`] : []),
        '--import',
        'tsx',
        'bench/api-server.ts',
        dbUrl,
        redisUrl,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const port = await new Promise<number>((res, rej) => {
      child.stdout.on('data', (d: Buffer) => {
        const m = /port (\d+)/.exec(d.toString());
        if (m) res(Number(m[1]));
      });
      child.on('exit', (c) => rej(new Error(`api server exited ${c}`)));
    });
    const base = `http://127.0.0.1:${port}`;
    try {
      // (1) Paging depth: sequential requests, each a full HTTP round trip.
      // (a typed array: a million heap BigInts made the load generator's own GC pauses show in p99)
      const hotNums = BigInt64Array.from(
        (await sql<{ tx_num: bigint }>`SELECT tx_num FROM txs WHERE tx_num < ${txNum(payH, 0)} ORDER BY tx_num DESC`.execute(db)).rows,
        (r) => r.tx_num,
      );
      // The cursor a client gets in the Link header after entry `d` (newest first): the build
      // above chunks the ascending tx_nums 1024 at a time.
      const historyCursor = (d: number): Cursor => {
        const asc = hotNums.length - 1 - d;
        return {
          kind: 'h',
          phase: 'c',
          txNum: hotNums[d]!,
          vout: 0,
          chunk: { first: hotNums[hotNums.length - 1 - Math.floor(asc / 1024) * 1024]!, index: asc % 1024 },
        };
      };
      const depths: [string, number][] = opts['skip-paging']
        ? []
        : [
            ['first page', 0],
            [`depth ${(HOT_TXS / 2).toLocaleString('en-US')}`, HOT_TXS / 2],
            ['last page', HOT_TXS - 25],
          ];
      process.stdout.write(`\npaging the ${short(HOT_TXS)}-transaction address (limit 25 and 1000, 200 sequential requests each):\n`);
      process.stdout.write('| list | position | limit | p50 ms | p99 ms |\n|---|---|---|---|---|\n');
      for (const kind of ['history', 'unspentoutputs'] as const) {
        for (const [label, d] of depths) {
          for (const limit of [25, 1000]) {
            const cursor =
              d === 0
                ? ''
                : `&cursor=${encodeCursor(kind === 'history' ? historyCursor(d - 1) : { kind: 'u', phase: 'c', txNum: hotNums[d - 1]!, vout: 0 })}`;
            const url = `${base}/v1/addresses/${hotAddress}/${kind}?limit=${limit}${cursor}`;
            const times: number[] = [];
            for (let i = 0; i < 200; i++) {
              const t = performance.now();
              const r = await fetch(url, { headers: { apiKey: key } });
              const body = (await r.json()) as unknown[];
              if (r.status !== 200 || body.length === 0) throw new Error(`${url} → ${r.status}`);
              times.push(performance.now() - t);
            }
            times.sort((a, b) => a - b);
            process.stdout.write(`| ${kind} | ${label} | ${limit} | ${pct(times, 50).toFixed(2)} | ${pct(times, 99).toFixed(2)} |\n`);
          }
        }
      }

      // (2) Throughput with autocannon.
      const rand = <T>(xs: T[]) => xs[Math.floor(Math.random() * xs.length)]!;
      const hotPage = (limit: number) => () =>
        `/v1/addresses/${hotAddress}/history?limit=${limit}&cursor=${encodeCursor(historyCursor(Math.floor(Math.random() * hotNums.length)))}`;
      // A batch body: 1,000 random addresses of them all, balances only (50 bodies made ahead, so
      // the load generator does not spend its CPU building them).
      const batchBodies = Array.from({ length: 50 }, () =>
        JSON.stringify({ addresses: Array.from({ length: 1000 }, () => rand(addresses)), include: ['balance'] }),
      );
      let nextBody = 0;
      const batchBody = () => batchBodies[nextBody++ % batchBodies.length]!;
      /** Paths requested once, 16 at a time, before a run: what it measures is lookups of things looked up before. */
      const warmUp = async (paths: string[]) => {
        let next = 0;
        await autocannon({
          url: base,
          connections: CONNECTIONS,
          amount: paths.length,
          headers: { apiKey: key },
          requests: [{ setupRequest: (req) => ({ ...req, path: paths[next++ % paths.length]! }) }],
        });
      };
      const scenarios: [string, () => string, (() => string)?][] = [
        ['floor: unknown route (fastify + sockets only: 404, no key, no database)', () => '/v1/floor'],
        [`balance (random of ${short(ADDRESSES)} addresses)`, () => `/v1/addresses/${rand(addresses)}/balance`],
        ['history page (limit 25, hot address, random depth)', hotPage(25)],
        [`history page (limit 25, random of ${short(ADDRESSES)} addresses)`, () => `/v1/addresses/${rand(addresses)}/history?limit=25`],
        [`transaction (random of ${short(PAYMENTS)} payments, 2 in / 2 out)`, () => `/v1/transactions/${rand(payTxids)}`],
        // (Coinstack's dialect: the same lookup at the bare path, its own answer's shape)
        [
          `transaction, Coinstack's path /transactions/{hash} (random of ${short(PAYMENTS)} payments, 2 in / 2 out)`,
          () => `/transactions/${rand(payTxids)}`,
        ],
        ['history page (limit 1, hot address, random depth)', hotPage(1)],
        ['history page (limit 100, hot address, random depth)', hotPage(100)],
        [
          `batch: POST /v1/addresses/batch, balances of 1,000 random addresses of ${short(ADDRESSES)}`,
          () => '/v1/addresses/batch',
          batchBody,
        ],
      ];
      /** Runs a load and the CPU it cost per request (of `requests(result)`) in the API, its backends and the load generator. */
      /** History pages the API has answered so far, by source (blockwire_api_history_pages_total). */
      const historyPages = async () => {
        const text = await (await fetch(`${base}/metrics`)).text();
        const count = (source: string) =>
          Number(new RegExp(`^blockwire_api_history_pages_total\\{source="${source}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
        return { held: count('held'), cut: count('cut') };
      };
      const withCpu = async <T>(load: () => Promise<T>, requests: (result: T) => number) => {
        const pages0 = await historyPages();
        const cpu0 = processCpuMs(child.pid!);
        const pgCpu0 = await apiBackendsCpuMs(db);
        const genCpu0 = process.cpuUsage();
        const result = await load();
        const total = Math.max(1, requests(result));
        const genCpu = process.cpuUsage(genCpu0);
        const pgMs = backendsCpuDelta(pgCpu0, await apiBackendsCpuMs(db));
        const pages1 = await historyPages();
        const held = pages1.held - pages0.held;
        const cut = pages1.cut - pages0.cut;
        return {
          result,
          held: held + cut > 0 ? `${((100 * held) / (held + cut)).toFixed(0)} %` : '-',
          api: (((processCpuMs(child.pid!) - cpu0) * 1000) / total).toFixed(0),
          pg: pgMs === null ? '-' : ((pgMs * 1000) / total).toFixed(0),
          gen: ((genCpu.user + genCpu.system) / total).toFixed(0),
        };
      };
      /** autocannon against `path()` (POSTing `body()` when given) for `duration` s. */
      const load = (path: () => string, connections: number, duration: number, overallRate?: number, body?: () => string) =>
        autocannon({
          url: base,
          connections,
          duration,
          ...(overallRate ? { overallRate } : {}),
          headers: { apiKey: key },
          requests: [
            {
              setupRequest: (req) =>
                body
                  ? {
                      ...req,
                      path: path(),
                      method: 'POST',
                      body: body(),
                      headers: { ...req.headers, apiKey: key, 'content-type': 'application/json' },
                    }
                  : { ...req, path: path() },
            },
          ],
        });
      /** One autocannon run against `path()`, with the CPU each process spent per request. */
      const run = (path: () => string, connections: number, overallRate?: number, body?: () => string) =>
        withCpu(
          () => load(path, connections, DURATION, overallRate, body),
          (r) => r.requests.total,
        );
      process.stdout.write(
        `\nautocannon, ${CONNECTIONS} connections, ${DURATION} s each${WARM_UP > 0 ? ` after ${WARM_UP} s of the same load not measured (and the million-entry address's chunks paged once)` : ', cold'}, as fast as they go (server and load generator share the 2 cores):\n`,
      );
      process.stdout.write(
        "| route | req/s | of floor | p50 ms | p99 ms | API CPU µs/req | PostgreSQL CPU µs/req (the API's backends) | load generator CPU µs/req | non-2xx | history pages from held chunks |\n|---|---|---|---|---|---|---|---|---|---|\n",
      );
      let floor = 0;
      let warmed = false;
      let hotWarmed = false;
      /** The held share of each warm-up pass, printed after the table (a line inside it would cut it). */
      const hotPasses: string[] = [];
      /**
       * Pages the million-entry address at every 256th entry (so every chunk at least once), pass
       * after pass, until a pass finds ≥ 95 % of its pages held (at most 20 passes): each page of a
       * chunk not held asks for it in the background, a few loads at a time.
       */
      const warmHotChunks = async () => {
        const paths = Array.from(
          { length: Math.ceil(hotNums.length / 256) },
          (_, i) =>
            `/v1/addresses/${hotAddress}/history?limit=25&cursor=${encodeCursor(historyCursor(Math.min(hotNums.length - 1, i * 256 + 128)))}`,
        );
        for (let pass = 1; pass <= 20; pass++) {
          const before = await historyPages();
          await warmUp(paths);
          const after = await historyPages();
          const held = after.held - before.held;
          const share = held / Math.max(1, held + after.cut - before.cut);
          hotPasses.push(`${(100 * share).toFixed(0)} %`);
          if (share >= 0.95) return;
        }
      };

      // (`--rounds N`: the chosen runs N times in turn, each ratio against the floor of its own round)
      const chosen = scenarios.filter(([l]) => only(l));
      for (const [label, path, body] of Array.from({ length: Number(opts.rounds) }, () => chosen).flat()) {
        // (each payment once first: the API holds transactions it built, API_TX_CACHE_MB, and an SDK
        // mostly asks again for transactions it asked for before; BENCH_API_TX_CACHE_MB=0 measures first lookups)
        if (label.startsWith('transaction') && !warmed) {
          await warmUp(payTxids.map((t) => `/v1/transactions/${t}`));
          await warmUp(payTxids.map((t) => `/transactions/${t}`));
          warmed = true;
        }
        // (the million-entry address's chunks held first, as its transactions are: a client pages
        // an address it paged before, and a long-running API process holds what it was asked for)
        if (label.includes('hot address') && !hotWarmed && WARM_UP > 0) {
          await warmHotChunks();
          hotWarmed = true;
        }
        // (a long-running API process: its code compiled and its connections open before the clock starts)
        if (WARM_UP > 0) await load(path, CONNECTIONS, WARM_UP, undefined, body);
        const { result, api, pg, gen, held } = await run(path, CONNECTIONS, opts.rate ? Number(opts.rate) : undefined, body);
        if (label.startsWith('floor')) floor = result.requests.average;
        const ratio = floor > 0 ? `${((100 * result.requests.average) / floor).toFixed(0)} %` : '-';
        process.stdout.write(
          `| ${label} | ${Math.round(result.requests.average)} | ${ratio} | ${result.latency.p50} | ${result.latency.p99} | ${api} | ${pg} | ${gen} | ${result.non2xx} | ${held} |\n`,
        );
      }
      if (hotPasses.length > 0)
        process.stdout.write(
          `(the million-entry address paged at every 256th entry before its first run: ${hotPasses.length} passes, pages held ${hotPasses.join(', ')})\n`,
        );

      // (3) The targets as stated: each route offered its target rate on a fixed
      // schedule (bench/open-loop.ts: latency from each request's scheduled time, so queueing
      // shows), over enough connections that a p99 within the goal can carry the rate.
      if (!opts['skip-rate']) {
        const targets: [string, () => string, number, number][] = [
          [scenarios[1]![0], scenarios[1]![1], 8000, 10],
          ['history page (limit 25, hot address, random depth)', scenarios[2]![1], 5000, 25],
          [scenarios[3]![0], scenarios[3]![1], 5000, 25],
        ];
        process.stdout.write(
          `\nat the target rate: each route offered its target on a fixed schedule (open loop) over ${RATE_CONNECTIONS} connections, ${DURATION} s each:\n`,
        );
        process.stdout.write(
          "| at the target rate: route | offered req/s | served req/s | p50 ms | p99 ms | max ms | load generator's longest stall ms | goal | API CPU µs/req | PostgreSQL CPU µs/req (the API's backends) | load generator CPU µs/req | non-2xx | history pages from held chunks |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for (const [label, path, rate, p99] of targets.filter(([l]) => only(l))) {
          const {
            result: r,
            api,
            pg,
            gen,
            held,
          } = await withCpu(
            () =>
              openLoop({
                host: '127.0.0.1',
                port,
                rate,
                durationMs: DURATION * 1000,
                connections: RATE_CONNECTIONS,
                headers: { apiKey: key },
                path,
              }),
            (x) => x.answered,
          );
          const ok = r.served >= rate * 0.99 && r.p99 <= p99 && r.non2xx === 0;
          const cells = [
            `at ${rate}/s: ${label}`,
            rate,
            Math.round(r.served),
            r.p50.toFixed(1),
            r.p99.toFixed(1),
            r.max.toFixed(0),
            r.generatorLag.toFixed(0),
            `≥ ${rate} req/s, p99 ≤ ${p99} ms: ${ok ? 'met' : 'missed'}`,
            api,
            pg,
            gen,
            r.non2xx,
            held,
          ];
          process.stdout.write(`| ${cells.join(' | ')} |\n`);
        }
      }
    } finally {
      child.kill('SIGTERM');
    }
  }
}

await main();
