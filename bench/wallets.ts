/**
 * bench/wallets: wallets on a corpus index (docs/wallets.md "Performance"). Imports a synthetic
 * corpus (bench/corpus, cached; by default the full 20,000-block one of bench/sync) with
 * `blockwire import`, measures the index's size against the raw blocks it holds (bench/sync's
 * measureSize: on the default corpus, the 20,000-block size step of the performance targets),
 * starts the production API in its own process (bench/api-server.ts), then
 * (1) creates wallets of 2 × 1,000 addresses (`wpkh(tpub/<0;1>/*)` with gap_limit 1000, and a
 *     2-of-3 `wsh(sortedmulti)` the same size): wall time of POST /v1/wallets, 3 of each, median;
 * (2) the balance of a 2 × 100-address wallet (gap_limit 100) whose addresses hold confirmed
 *     balances and mempool entries, under autocannon (N connections, D s, after a warm-up, once
 *     PostgreSQL's autovacuum of the fresh import is done): req/s, p50, p99, CPU per request of
 *     the API process and of its PostgreSQL backends; the balance of one of its addresses
 *     (GET /v1/addresses/{address}/balance) the same way, as the same run's reference.
 * (3) a wallet with a million transactions (docs/wallets.md "Performance"): 1,000,000 transactions
 *     paying 1,000 of its derived addresses (900 receive, 100 change; 1,000 each) are written
 *     into the corpus index straight in PostgreSQL (txs, utxos, history chunks, balances, at the
 *     corpus's heights, positions past any of its blocks' transactions), then the wallet is
 *     created with the default gap limit (so the gap is extended across all 1,000 used
 *     addresses): wall time of the creation and of the first (and a second) balance, history
 *     page, next history page and unspent-outputs page, each checked against what was written.
 * Run: `node --import tsx bench/wallets.ts [--quick] [--balance-only] [--skip-million] [--blocks N]
 * [--txs-per-block N] [--duration S] [--connections N] [--wallet-txs N] [--cache-dir DIR]`
 * (`--balance-only` skips (1), `--skip-million` (3); `--wallet-txs` sizes (3)).
 * BENCH_SERVER_PROF=DIR writes the API process's V8 CPU profile there (bench/profile.ts reads it).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import autocannon from 'autocannon';
import { HDKey } from '@scure/bip32';
import { sql } from 'kysely';
import { createDb } from '../src/db/connect.js';
import { startRedis } from '../cli/embedded/redis.js';
import { createApiKey } from '../src/auth/keys.js';
import { bip32Versions } from '../src/bitcoin/extended-key.js';
import { RECOMPUTE_WALLET_BALANCES } from '../indexer/wallet-balances.js';
import { parseDescriptor, ScriptDeriver } from '../src/bitcoin/descriptor.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { addressKey } from '../src/db/address-key.js';
import { encodeOuts } from '../src/db/packed.js';
import { CHUNK_ENTRIES, SQL_HISTORY } from '../src/db/history-entries.js';
import { TX_NUM_SPAN } from '../src/db/tx-num.js';
import { ensureCorpus } from './corpus/generate.js';
import { corpusMainChain, loadCorpusManifest } from '../devnode/corpus-manifest.js';
import { measureSize } from './sync.js';
import {
  apiBackendsCpuMs,
  backendsCpuDelta,
  cacheDir,
  importCorpus,
  machine,
  processCpuMs,
  round,
  runSize,
  say,
  startBenchPostgres,
} from './harness.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    quick: { type: 'boolean', default: false },
    'balance-only': { type: 'boolean', default: false },
    'skip-million': { type: 'boolean', default: false },
    'wallet-txs': { type: 'string' },
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
/** (3): the transactions paying the big wallet, over 9/10 receive and 1/10 change addresses. */
const WALLET_TXS = Number(values['wallet-txs'] ?? (values.quick ? 20_000 : 1_000_000));
const WALLET_ADDRESSES = values.quick && values['wallet-txs'] === undefined ? 100 : 1000;

const { dir } = ensureCorpus(cacheDir(values['cache-dir']), size.corpus, say);
const root = await mkdtemp(join(tmpdir(), 'bw-bench-wallets-'));
const pgs = await startBenchPostgres(root);
const redis = await startRedis({ dir: join(root, 'redis') });
let server: ReturnType<typeof spawn> | undefined;
try {
  const url = await pgs.createDatabase('bw_wallets');
  const imp = await importCorpus(dir, url, 0, [], pgs);
  say(`index: ${imp.blocks} blocks, ${imp.txs} transactions imported in ${round(imp.wallMs / 1000, 1)} s`);
  // The index's size against the raw blocks it holds, before any wallet is added: on the default
  // corpus this is the 20,000-block size step (bench/sync measures its own, smaller import).
  const rawBytes = corpusMainChain(await loadCorpusManifest(dir))
    .slice(0, imp.tip + 1)
    .reduce((s, b) => s + b.length, 0);
  const indexSize = await measureSize(pgs, 'bw_wallets', rawBytes);
  say(
    `size: database ${(indexSize.databaseBytes / 1e6).toFixed(1)} MB vs raw blocks ${(rawBytes / 1e6).toFixed(1)} MB = ${indexSize.ratio}; ${Object.entries(
      indexSize.tables,
    )
      .map(([k, v]) => `${k} ${(v / 1e6).toFixed(1)}`)
      .join(', ')} MB`,
  );
  const db = createDb(url, { max: 4, applicationName: 'bench-wallets' });
  const key = (await createApiKey(db, { name: 'bench', rateLimit: 100_000_000 })).key;

  server = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_SERVER_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_SERVER_PROF}`] : []),
      '--import',
      'tsx',
      'bench/api-server.ts',
      url,
      redis.url,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    server!.stdout!.on('data', (d: Buffer) => {
      const m = /port (\d+)/.exec(String(d));
      if (m) resolve(Number(m[1]));
    });
    server!.once('exit', (code) => reject(new Error(`api-server exited with ${code}`)));
  });
  const base = `http://127.0.0.1:${port}/v1`;
  // A 503 with retry: true (the request time limit, on a machine other work keeps busy) is
  // asked again, as a client should, at most twice; the time reported includes it, and says so.
  const post = async (path: string, body: unknown, tries = 3): Promise<{ id: string; chains: { addresses: number }[] }> => {
    const r = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { apiKey: key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = r.status >= 300 ? await r.text() : '';
    if (r.status === 503 && tries > 1 && /"retry":\s*true/.test(text)) {
      say(`(${path} answered 503, asked again: ${text})`);
      return post(path, body, tries - 1);
    }
    if (r.status >= 300) throw new Error(`${path}: ${r.status} ${text}`);
    return (await r.json()) as { id: string; chains: { addresses: number }[] };
  };
  const account = (seed: number) =>
    HDKey.fromMasterSeed(new Uint8Array(32).fill(seed), bip32Versions('regtest')).derive("m/48'/1'/0'/2'").publicExtendedKey;

  // (1) creation
  say(`\nwallet creation on the corpus index (${imp.txs} transactions), POST /v1/wallets, gap_limit ${GAP}, 3 runs each:`);
  say('| wallet | addresses | median ms | min ms | max ms |\n|---|---|---|---|---|');
  const creation: Record<string, number> = {};
  let seed = 1;
  const shapes = [
    ['wpkh(tpub/<0;1>/*)', () => `wpkh(${account(seed++)}/<0;1>/*)`],
    [
      'wsh(sortedmulti(2, 3 tpubs /<0;1>/*))',
      () => `wsh(sortedmulti(2,${account(seed++)}/<0;1>/*,${account(seed++)}/<0;1>/*,${account(seed++)}/<0;1>/*))`,
    ],
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
  const keys = (await sql<{ addr_key: string }>`SELECT addr_key FROM wallet_addresses WHERE wallet_id = ${w.id}`.execute(db)).rows.map(
    (r) => r.addr_key,
  );
  await sql`INSERT INTO balances (addr_key, balance, utxo_count) SELECT k, 10000, 1 FROM unnest(${keys}::uuid[]) AS k ON CONFLICT DO NOTHING`.execute(
    db,
  );
  await sql`
    INSERT INTO mempool_addresses (addr_key, txid, received, sent)
    SELECT k, sha256(k::text::bytea), 500, 0 FROM unnest(${keys.slice(0, 20)}::uuid[]) AS k`.execute(db);
  // Seeded behind the indexer's back, as a bulk sync writes: the wallets' summaries follow as after one.
  await sql.raw(RECOMPUTE_WALLET_BALANCES).execute(db);
  const check = (await (await fetch(`${base}/wallets/${w.id}/balance`, { headers: { apiKey: key } })).json()) as {
    confirmed: number;
    unconfirmed: number;
  };
  if (check.confirmed !== keys.length * 10000 || check.unconfirmed !== 20 * 500)
    throw new Error(`balance ${JSON.stringify(check)} is not the seeded one`);
  // The fresh import leaves PostgreSQL vacuuming and analyzing its tables for a while (minutes
  // on the full corpus): the balance is timed once that is done, not against it.
  const vacuum0 = performance.now();
  await waitQuiet(db, values.quick ? 60_000 : 1_800_000);
  const vacuumS = round((performance.now() - vacuum0) / 1000, 1);
  if (vacuumS >= 1) say(`\n(waited ${vacuumS} s for autovacuum of the import to finish)`);
  const address = (
    await sql<{ address: string }>`SELECT address FROM wallet_addresses WHERE wallet_id = ${w.id} ORDER BY chain, idx LIMIT 1`.execute(db)
  ).rows[0]!.address;
  const routes = [
    ['GET /v1/wallets/{id}/balance (2 × 100 addresses)', `${base}/wallets/${w.id}/balance`, '≥ 1,000 req/s'],
    ['GET /v1/addresses/{address}/balance (one of them; reference)', `${base}/addresses/${address}/balance`, '—'],
  ] as const;
  say(
    `\nbalance of a 2 × 100-address wallet (200 balances, 20 mempool entries), autocannon ${CONNECTIONS} connections, ${DURATION} s after ${WARMUP} s of warm-up (server and load generator share the 2 cores):`,
  );
  say(
    "| route | req/s | p50 ms | p99 ms | non-2xx | API CPU µs/req | PostgreSQL CPU µs/req (the API's backends) | goal |\n|---|---|---|---|---|---|---|---|",
  );
  const measured: { reqPerSec: number; p50: number; p99: number; non2xx: number; cpuUsPerRequest: { api: number; pg: number | null } }[] =
    [];
  for (const [label, target, goal] of routes) {
    await autocannon({ url: target, headers: { apiKey: key }, connections: CONNECTIONS, duration: WARMUP });
    // Where the CPU goes while it runs: the API process, and the PostgreSQL backends serving it.
    const cpu0 = { api: processCpuMs(server.pid!), pg: await apiBackendsCpuMs(db) };
    const r = await autocannon({ url: target, headers: { apiKey: key }, connections: CONNECTIONS, duration: DURATION });
    const served = Math.max(1, r.requests.total);
    const pgMs = backendsCpuDelta(cpu0.pg, await apiBackendsCpuMs(db));
    const cpu = {
      api: round(((processCpuMs(server.pid!) - cpu0.api) * 1000) / served),
      pg: pgMs === null ? null : round((pgMs * 1000) / served),
    };
    measured.push({
      reqPerSec: Math.round(r.requests.average),
      p50: r.latency.p50,
      p99: r.latency.p99,
      non2xx: r.non2xx,
      cpuUsPerRequest: cpu,
    });
    say(
      `| ${label} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} | ${cpu.api} | ${cpu.pg ?? '-'} | ${goal} |`,
    );
  }
  const [wallet, reference] = measured;
  say(`load average ${machine().loadavg.join(' ')}`);

  // (3) a wallet with a million transactions
  const million = values['skip-million'] ? null : await bigWallet(db, base, key, post, account(seed++));
  const result = {
    corpus: { blocks: imp.blocks, txs: imp.txs },
    size: indexSize,
    import: { loadMs: imp.loadMs, finishMs: imp.finishMs, wallMs: imp.wallMs, peakRssBytes: imp.peakRssBytes },
    gapLimit: GAP,
    connections: CONNECTIONS,
    durationS: DURATION,
    creationMs: creation,
    balance: wallet,
    addressBalance: reference,
    autovacuumWaitS: vacuumS,
    million,
    machine: machine(),
  };
  say(`RESULT ${JSON.stringify(result)}`);
  await db.destroy();
} finally {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server!.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
  await redis.stop();
  await pgs.stop();
  await rm(root, { recursive: true, force: true });
}

/**
 * (3): writes WALLET_TXS transactions paying the first addresses of `wpkh(tpub/<0;1>/*)` into
 * the index (as the indexer stores them: txs, utxos, history chunks, balances), creates the
 * wallet with the default gap limit, and times its first reads, checking each answer.
 */
async function bigWallet(
  db: ReturnType<typeof createDb>,
  base: string,
  key: string,
  post: (path: string, body: unknown) => Promise<{ id: string; chains: { addresses: number }[] }>,
  tpub: string,
) {
  const descriptor = `wpkh(${tpub}/<0;1>/*)`;
  const parsed = parseDescriptor(descriptor, 'regtest');
  const receive = Math.round(WALLET_ADDRESSES * 0.9);
  const perAddress = Math.ceil(WALLET_TXS / WALLET_ADDRESSES);
  const scripts = [
    ...Array.from({ length: receive }, (_, i) => [0, i] as const),
    ...Array.from({ length: WALLET_ADDRESSES - receive }, (_, i) => [1, i] as const),
  ].map(([branch, i]) => Buffer.from(new ScriptDeriver(parsed, branch).derive(i).script));
  const tip = (await sql<{ height: number }>`SELECT height FROM chain_tip`.execute(db)).rows[0]!.height;
  // Transaction n of address j: at height 1 + (n × stride) mod span (spread over the chain),
  // position 200,000 + j + 1,000 × ⌊n × stride / span⌋ (past every block's own transactions);
  // one output of 1,000 sats, no inputs.
  const span = Math.max(1, tip);
  const stride = Math.max(1, Math.floor(span / perAddress));
  if (200_000 + 1000 * (Math.floor(((perAddress - 1) * stride) / span) + 1) >= TX_NUM_SPAN || WALLET_ADDRESSES > 1000)
    throw new Error('--wallet-txs too large for the corpus');
  say(
    `\na wallet with ${(perAddress * WALLET_ADDRESSES).toLocaleString('en-US')} transactions: ${receive} receive and ${WALLET_ADDRESSES - receive} change addresses of wpkh(tpub/<0;1>/*) paid ${perAddress} times each, written into the index of ${tip.toLocaleString('en-US')} blocks`,
  );
  const t0 = performance.now();
  await sql`DROP TABLE IF EXISTS bench_wallet_txs`.execute(db);
  await sql`
    CREATE UNLOGGED TABLE bench_wallet_txs AS
    SELECT k.addr_key, k.script, k.outs, ((1 + n * ${stride} % ${span})::int8 << 20) | (200000 + (k.j - 1) + 1000 * (n * ${stride} / ${span}))::int8 AS tx_num
      FROM unnest(${scripts.map((s) => addressKey(s))}::uuid[], ${scripts}::bytea[], ${scripts.map((script) => encodeOuts([{ value: 1000n, script }]))}::bytea[]) WITH ORDINALITY AS k(addr_key, script, outs, j)
      CROSS JOIN generate_series(0, ${perAddress - 1}) AS n`.execute(db);
  await sql`INSERT INTO txs (tx_num, txid, outs, ins) SELECT tx_num, sha256(int8send(tx_num) || '\\x77'::bytea), outs, '\\x'::bytea FROM bench_wallet_txs`.execute(
    db,
  );
  await sql`INSERT INTO utxos (txid, vout, tx_num, addr_key, value, script) SELECT sha256(int8send(tx_num) || '\\x77'::bytea), 0, tx_num, addr_key, 1000, script FROM bench_wallet_txs`.execute(
    db,
  );
  await sql`
    INSERT INTO history (addr_key, first_tx_num, rest)
    SELECT addr_key, min(tx_num), ${sql.raw(SQL_HISTORY.slice(`string_agg(${SQL_HISTORY.entry('tx_num')}, ''::bytea ORDER BY tx_num)`, '1', 'count(*) - 1'))}
      FROM (SELECT addr_key, tx_num, (row_number() OVER (PARTITION BY addr_key ORDER BY tx_num) - 1) / ${CHUNK_ENTRIES} AS chunk FROM bench_wallet_txs) s
     GROUP BY addr_key, chunk`.execute(db);
  await sql`INSERT INTO balances (addr_key, balance, utxo_count) SELECT addr_key, 1000 * count(*), count(*) FROM bench_wallet_txs GROUP BY addr_key`.execute(
    db,
  );
  const newest = (
    await sql<{
      txid: Buffer;
    }>`SELECT sha256(int8send(tx_num) || '\\x77'::bytea) AS txid FROM bench_wallet_txs ORDER BY tx_num DESC LIMIT 200`.execute(db)
  ).rows.map((r) => hashToHex(r.txid));
  await sql`DROP TABLE bench_wallet_txs`.execute(db);
  await sql`ANALYZE txs, utxos, history, balances`.execute(db);
  await sql`CHECKPOINT`.execute(db);
  const written = perAddress * WALLET_ADDRESSES;
  say(`(written in ${round((performance.now() - t0) / 1000, 1)} s)`);

  const get = async (path: string) => {
    const s0 = performance.now();
    const r = await fetch(`${base}${path}`, { headers: { apiKey: key } });
    const body = (await r.json()) as unknown;
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(body)}`);
    const link = /<\/v1([^>]+)>; rel="next"/.exec(r.headers.get('link') ?? '')?.[1];
    return { ms: performance.now() - s0, body, link };
  };
  const c0 = performance.now();
  const w = await post('/wallets', { descriptors: [descriptor] });
  const createMs = performance.now() - c0;
  const derived = w.chains.map((c) => c.addresses);
  if (derived[0] !== receive + 20 || derived[1] !== WALLET_ADDRESSES - receive + 20)
    throw new Error(`chains of ${derived.join(', ')} addresses, not the used ones + 20`);
  const rows: { step: string; first: number; second: number }[] = [];
  const row = (r: (typeof rows)[number]) => {
    rows.push(r);
    say(`| ${r.step} | ${round(r.first)} | ${Number.isNaN(r.second) ? '—' : round(r.second)} |`);
  };
  say(`| step | first ms | second ms |\n|---|---|---|`);
  row({ step: `POST /v1/wallets (gap 20, extended to ${derived.join(' + ')} addresses)`, first: createMs, second: NaN });
  const timed = async (step: string, path: string, check: (r: Awaited<ReturnType<typeof get>>) => void) => {
    const a = await get(path);
    check(a);
    const b = await get(path);
    row({ step, first: a.ms, second: b.ms });
    return a;
  };
  await timed('GET …/balance', `/wallets/${w.id}/balance`, ({ body }) => {
    const b = body as { confirmed: number; unconfirmed: number };
    if (b.confirmed !== written * 1000 || b.unconfirmed !== 0) throw new Error(`balance ${JSON.stringify(b)}, not ${written * 1000}`);
  });
  const expectPage = (body: unknown, from: number) => {
    const page = body as { transaction_hash: string; net: number }[];
    const want = newest.slice(from, from + 100);
    if (page.length !== 100 || page.some((e, i) => e.transaction_hash !== want[i] || e.net !== 1000))
      throw new Error(`history page at ${from} is not the wallet's newest entries`);
  };
  const first = await timed('GET …/history (first page, 100 entries)', `/wallets/${w.id}/history`, ({ body, link }) => {
    expectPage(body, 0);
    if (!link) throw new Error('no next page');
  });
  await timed('GET …/history (second page, its cursor)', first.link!, ({ body }) => expectPage(body, 100));
  await timed('GET …/unspentoutputs (first page, 100 outputs)', `/wallets/${w.id}/unspentoutputs?limit=100`, ({ body }) => {
    if ((body as unknown[]).length !== 100) throw new Error('not 100 unspent outputs');
  });
  say(`load average ${machine().loadavg.join(' ')}`);
  const at = (step: RegExp) => rows.find((r) => step.test(r.step))!;
  return {
    txs: written,
    addresses: WALLET_ADDRESSES,
    derived,
    writeS: round((c0 - t0) / 1000, 1),
    createMs: round(createMs),
    balanceMs: round(at(/balance/).first),
    historyMs: round(at(/first page, 100 entries/).first),
    historyNextMs: round(at(/second page/).first),
    unspentMs: round(at(/unspentoutputs/).first),
  };
}

/** Resolves when no autovacuum worker has run for a few seconds (or after `maxMs`). */
async function waitQuiet(db: ReturnType<typeof createDb>, maxMs: number): Promise<void> {
  const until = performance.now() + maxMs;
  let quietSince = performance.now();
  while (performance.now() < until) {
    const r = await sql<{ n: number }>`SELECT count(*)::int4 AS n FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'`.execute(
      db,
    );
    if (r.rows[0]!.n > 0) quietSince = performance.now();
    else if (performance.now() - quietSince >= 5000) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
