/**
 * bench/wallets: wallets on a corpus index (docs/wallets.md "Performance"). Imports a synthetic
 * corpus (bench/corpus, cached; by default the full 20,000-block one of bench/sync) with
 * `blockwire import`, starts the production API in its own process (bench/api-server.ts), then
 * (1) creates wallets of 2 × 1,000 addresses (`wpkh(tpub/<0;1>/*)` with gap_limit 1000, and a
 *     2-of-3 `wsh(sortedmulti)` the same size): wall time of POST /v1/wallets, 3 of each, median;
 * (2) the balance of a 2 × 100-address wallet (gap_limit 100) whose addresses hold confirmed
 *     balances and mempool entries, under autocannon (N connections, D s, after a warm-up, once
 *     PostgreSQL's autovacuum of the fresh import is done): req/s, p50, p99, CPU per request of
 *     the API process and of its PostgreSQL backends; the balance of one of its addresses
 *     (GET /v1/addresses/{address}/balance) the same way, as the same run's reference.
 * Run: `node --import tsx bench/wallets.ts [--quick] [--balance-only] [--blocks N] [--txs-per-block N]
 * [--duration S] [--connections N] [--cache-dir DIR]` (`--balance-only` skips (1)).
 * BENCH_SERVER_PROF=DIR writes the API process's V8 CPU profile there (bench/profile.ts reads it).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { HDKey } from '@scure/bip32';
import { sql } from 'kysely';
import { createDb } from '../src/db/connect.js';
import { startRedis } from '../src/embedded/redis.js';
import { createApiKey } from '../src/auth/keys.js';
import { bip32Versions } from '../src/bitcoin/extended-key.js';
import { RECOMPUTE_WALLET_BALANCES } from '../src/db/wallet-balances.js';
import { ensureCorpus } from './corpus/generate.js';
import { apiBackendsCpuMs, backendsCpuDelta, cacheDir, importCorpus, machine, processCpuMs, round, runSize, say, startBenchPostgres } from './harness.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'balance-only': { type: 'boolean', default: false },
    blocks: { type: 'string' },
    'txs-per-block': { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    'cache-dir': { type: 'string' },
  },
});
const size = runSize({ quick: values.quick, blocks: values.blocks, 'txs-per-block': values['txs-per-block'] });
const DURATION = Number(values.duration ?? (values.quick ? 1 : 10));
const CONNECTIONS = Number(values.connections ?? (values.quick ? 4 : 16));
/** Autocannon's run before each measured one: JIT, pools, prepared statements, key cache. */
const WARMUP = values.quick ? 1 : 3;
const GAP = values.quick ? 100 : 1000;

const { dir } = ensureCorpus(cacheDir(values['cache-dir']), size.corpus, say);
const root = await mkdtemp(join(tmpdir(), 'bw-bench-wallets-'));
const pgs = await startBenchPostgres(root);
const redis = await startRedis({ dir: join(root, 'redis') });
let server: ReturnType<typeof spawn> | undefined;
try {
  const url = await pgs.createDatabase('bw_wallets');
  const imp = await importCorpus(dir, url, 0, [], pgs);
  say(`index: ${imp.blocks} blocks, ${imp.txs} transactions imported in ${round(imp.wallMs / 1000, 1)} s`);
  const db = createDb(url, { max: 4, applicationName: 'bench-wallets' });
  const key = (await createApiKey(db, { name: 'bench', rateLimit: 100_000_000 })).key;

  server = spawn(process.execPath, [...(process.env.BENCH_SERVER_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_SERVER_PROF}`] : []), '--import', 'tsx', 'bench/api-server.ts', url, redis.url], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    server!.stdout!.on('data', (d: Buffer) => {
      const m = /port (\d+)/.exec(String(d));
      if (m) resolve(Number(m[1]));
    });
    server!.once('exit', (code) => reject(new Error(`api-server exited with ${code}`)));
  });
  const base = `http://127.0.0.1:${port}/v1`;
  const post = async (path: string, body: unknown) => {
    const r = await fetch(`${base}${path}`, { method: 'POST', headers: { apiKey: key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (r.status >= 300) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    return (await r.json()) as { id: string; chains: { addresses: number }[] };
  };
  const account = (seed: number) => HDKey.fromMasterSeed(new Uint8Array(32).fill(seed), bip32Versions('regtest')).derive("m/48'/1'/0'/2'").publicExtendedKey;

  // (1) creation
  say(`\nwallet creation on the corpus index (${imp.txs} transactions), POST /v1/wallets, gap_limit ${GAP}, 3 runs each:`);
  say('| wallet | addresses | median ms | min ms | max ms |\n|---|---|---|---|---|');
  const creation: Record<string, number> = {};
  let seed = 1;
  const shapes = [
    ['wpkh(tpub/<0;1>/*)', () => `wpkh(${account(seed++)}/<0;1>/*)`],
    ['wsh(sortedmulti(2, 3 tpubs /<0;1>/*))', () => `wsh(sortedmulti(2,${account(seed++)}/<0;1>/*,${account(seed++)}/<0;1>/*,${account(seed++)}/<0;1>/*))`],
  ] as const;
  for (const [label, make] of values['balance-only'] ? [] : shapes) {
    const times: number[] = [];
    let addresses = 0;
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const w = await post('/wallets', { descriptors: [make()], gap_limit: GAP });
      times.push(performance.now() - t0);
      addresses = w.chains.reduce((s, c) => s + c.addresses, 0);
    }
    times.sort((a, b) => a - b);
    creation[label] = round(times[1]!);
    say(`| ${label} | ${addresses} | ${round(times[1]!)} | ${round(times[0]!)} | ${round(times[2]!)} |`);
  }

  // (2) balance of a 2 × 100 wallet whose addresses hold coins (confirmed) and mempool entries
  const w = await post('/wallets', { descriptors: [`wpkh(${account(seed++)}/<0;1>/*)`], gap_limit: 100 });
  const keys = (await sql<{ addr_key: string }>`SELECT addr_key FROM wallet_addresses WHERE wallet_id = ${w.id}`.execute(db)).rows.map((r) => r.addr_key);
  await sql`INSERT INTO balances (addr_key, balance, utxo_count) SELECT k, 10000, 1 FROM unnest(${keys}::uuid[]) AS k ON CONFLICT DO NOTHING`.execute(db);
  await sql`
    INSERT INTO mempool_addresses (addr_key, txid, received, sent)
    SELECT k, sha256(k::text::bytea), 500, 0 FROM unnest(${keys.slice(0, 20)}::uuid[]) AS k`.execute(db);
  // Seeded behind the indexer's back, as a bulk sync writes: the wallets' summaries follow as after one.
  await sql.raw(RECOMPUTE_WALLET_BALANCES).execute(db);
  const check = (await (await fetch(`${base}/wallets/${w.id}/balance`, { headers: { apiKey: key } })).json()) as { confirmed: number; unconfirmed: number };
  if (check.confirmed !== keys.length * 10000 || check.unconfirmed !== 20 * 500) throw new Error(`balance ${JSON.stringify(check)} is not the seeded one`);
  // The fresh import leaves PostgreSQL vacuuming and analyzing its tables for a while (minutes
  // on the full corpus): the balance is timed once that is done, not against it.
  const vacuum0 = performance.now();
  await waitQuiet(db, values.quick ? 60_000 : 1_800_000);
  const vacuumS = round((performance.now() - vacuum0) / 1000, 1);
  if (vacuumS >= 1) say(`\n(waited ${vacuumS} s for autovacuum of the import to finish)`);
  const address = (await sql<{ address: string }>`SELECT address FROM wallet_addresses WHERE wallet_id = ${w.id} ORDER BY chain, idx LIMIT 1`.execute(db)).rows[0]!.address;
  const routes = [
    ['GET /v1/wallets/{id}/balance (2 × 100 addresses)', `${base}/wallets/${w.id}/balance`, '≥ 1,000 req/s'],
    ['GET /v1/addresses/{address}/balance (one of them; reference)', `${base}/addresses/${address}/balance`, '—'],
  ] as const;
  say(`\nbalance of a 2 × 100-address wallet (200 balances, 20 mempool entries), autocannon ${CONNECTIONS} connections, ${DURATION} s after ${WARMUP} s of warm-up (server and load generator share the 2 cores):`);
  say("| route | req/s | p50 ms | p99 ms | non-2xx | API CPU µs/req | PostgreSQL CPU µs/req (the API's backends) | goal |\n|---|---|---|---|---|---|---|---|");
  const measured: { reqPerSec: number; p50: number; p99: number; non2xx: number; cpuUsPerRequest: { api: number; pg: number | null } }[] = [];
  for (const [label, target, goal] of routes) {
    await autocannon({ url: target, headers: { apiKey: key }, connections: CONNECTIONS, duration: WARMUP });
    // Where the CPU goes while it runs: the API process, and the PostgreSQL backends serving it.
    const cpu0 = { api: processCpuMs(server.pid!), pg: await apiBackendsCpuMs(db) };
    const r = await autocannon({ url: target, headers: { apiKey: key }, connections: CONNECTIONS, duration: DURATION });
    const served = Math.max(1, r.requests.total);
    const pgMs = backendsCpuDelta(cpu0.pg, await apiBackendsCpuMs(db));
    const cpu = { api: round(((processCpuMs(server.pid!) - cpu0.api) * 1000) / served), pg: pgMs === null ? null : round((pgMs * 1000) / served) };
    measured.push({ reqPerSec: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, cpuUsPerRequest: cpu });
    say(`| ${label} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} | ${cpu.api} | ${cpu.pg ?? '-'} | ${goal} |`);
  }
  const [wallet, reference] = measured;
  say(`load average ${machine().loadavg.join(' ')}`);
  const result = { corpus: { blocks: imp.blocks, txs: imp.txs }, gapLimit: GAP, connections: CONNECTIONS, durationS: DURATION, creationMs: creation, balance: wallet, addressBalance: reference, autovacuumWaitS: vacuumS, machine: machine() };
  say(`RESULT ${JSON.stringify(result)}`);
  await db.destroy();
} finally {
  server?.kill('SIGTERM');
  await redis.stop();
  await pgs.stop();
  await rm(root, { recursive: true, force: true });
}

/** Resolves when no autovacuum worker has run for a few seconds (or after `maxMs`). */
async function waitQuiet(db: ReturnType<typeof createDb>, maxMs: number): Promise<void> {
  const until = performance.now() + maxMs;
  let quietSince = performance.now();
  while (performance.now() < until) {
    const r = await sql<{ n: number }>`SELECT count(*)::int4 AS n FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'`.execute(db);
    if (r.rows[0]!.n > 0) quietSince = performance.now();
    else if (performance.now() - quietSince >= 5000) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
