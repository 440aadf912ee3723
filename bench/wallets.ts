/**
 * bench/wallets: wallets on a corpus index (docs/wallets.md "Performance"). Imports a synthetic
 * corpus (bench/corpus, cached) with `blockwire import`, starts the production API in its own
 * process (bench/api-server.ts), then
 * (1) creates wallets of 2 × 1,000 addresses (`wpkh(tpub/<0;1>/*)` with gap_limit 1000, and a
 *     2-of-3 `wsh(sortedmulti)` the same size): wall time of POST /v1/wallets, 3 of each, median;
 * (2) the balance of a 2 × 100-address wallet (gap_limit 100) whose addresses hold confirmed
 *     balances and mempool entries, under autocannon (N connections, D s): req/s, p50, p99.
 * Run: `node --import tsx bench/wallets.ts [--quick] [--balance-only] [--blocks N] [--txs-per-block N]
 * [--duration S] [--connections N] [--cache-dir DIR]` (default corpus 2,000 × 3,000;
 * `--balance-only` skips (1)).
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
import { cacheDir, importCorpus, machine, processCpuMs, round, runSize, say, startBenchPostgres } from './harness.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'balance-only': { type: 'boolean', default: false },
    blocks: { type: 'string' },
    'txs-per-block': { type: 'string' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '16' },
    'cache-dir': { type: 'string' },
  },
});
const size = runSize({ quick: values.quick, blocks: values.blocks ?? (values.quick ? undefined : '2000'), 'txs-per-block': values['txs-per-block'] });
const DURATION = values.quick ? 1 : Number(values.duration);
const CONNECTIONS = values.quick ? 4 : Number(values.connections);
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

  server = spawn(process.execPath, ['--import', 'tsx', 'bench/api-server.ts', url, redis.url], { stdio: ['ignore', 'pipe', 'inherit'] });
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
  // Where the CPU goes while it runs: the API process, and every PostgreSQL process.
  const cpu0 = { api: processCpuMs(server.pid!), pg: pgs.cpuMs() };
  const r = await autocannon({ url: `${base}/wallets/${w.id}/balance`, headers: { apiKey: key }, connections: CONNECTIONS, duration: DURATION });
  const served = r.requests.total;
  const cpuPerReq = { api: round(((processCpuMs(server.pid!) - cpu0.api) * 1000) / served), pg: round(((pgs.cpuMs() - cpu0.pg) * 1000) / served) };
  say(`\nbalance of a 2 × 100-address wallet (200 balances, 20 mempool entries), autocannon ${CONNECTIONS} connections, ${DURATION} s (server and load generator share the 2 cores):`);
  say('| route | req/s | p50 ms | p99 ms | non-2xx | goal |\n|---|---|---|---|---|---|');
  say(`| GET /v1/wallets/{id}/balance | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} | ≥ 1,000 req/s |`);
  say(`CPU per request: API process ${cpuPerReq.api} µs, PostgreSQL ${cpuPerReq.pg} µs (${served} requests)`);
  const result = { corpus: { blocks: imp.blocks, txs: imp.txs }, gapLimit: GAP, creationMs: creation, balance: { reqPerSec: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, cpuUsPerRequest: cpuPerReq }, machine: machine() };
  say(`RESULT ${JSON.stringify(result)}`);
  await db.destroy();
} finally {
  server?.kill('SIGTERM');
  await redis.stop();
  await pgs.stop();
  await rm(root, { recursive: true, force: true });
}
