/**
 * bench/tx-lookup: the transaction lookup (`GET /v1/transactions/{txid}`, and the same at
 * Coinstack's bare path `/transactions/{txid}`) now that a confirmed
 * transaction's outputs and the outputs its inputs spend come from the node
 * (api/node-transactions.ts), on a real regtest Bitcoin Core: the chain of bench/small (1,000
 * blocks of 1–10 wallet payments, built once and cached) indexed block by block, then one API
 * process per variant, each asked for the same `--lookups` random confirmed transactions one at
 * a time over HTTP (after 100 others, not measured), in turns (A/B on one machine):
 * - cold: API with the node, nothing held (API_TX_CACHE_MB 0): every lookup asks the node;
 * - warm: API with the node, every transaction looked up once before (held, API_TX_CACHE_MB 16);
 * each in both dialects, as variants of their own.
 * Reported: p50/p99 ms and CPU per lookup of the API (this process: API and HTTP client) and of
 * bitcoind; the RESULT line takes each variant's round with the lowest p50. Run: `node --import tsx bench/tx-lookup.ts [--blocks N] [--lookups N] [--rounds N]`
 * (a bitcoind: BITCOIND_BIN or the Core build beside the project).
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { txRowsFrom } from '../src/db/tx-reads.js';
import { benchArgs } from './args.js';
import { startBitcoind } from '../test/support/bitcoind.js';
import { cacheDir, pct, processCpuMs, round, say, startBenchPostgres } from './harness.js';
import { startFollower, waitApplied } from './live.js';
import { smallCoreChain } from './small-chain.js';
import { createDb } from '../src/db/connect.js';
import { createPreparedDb } from '../src/db/prepared-pool.js';
import { BitcoindClient } from '../src/rpc/bitcoind.js';
import { buildApi } from '../api/app.js';
import { createApiKey } from '../src/auth/keys.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { silentLogger } from '../src/log.js';

const { values: opts } = benchArgs(import.meta.url, {
  options: {
    blocks: { type: 'string', default: '1000' },
    lookups: { type: 'string', default: '500' },
    rounds: { type: 'string', default: '2' },
  },
});
const BLOCKS = Number(opts.blocks);
const LOOKUPS = Number(opts.lookups);
const WARM_UP = 100;

const COLD = 'cold (node, nothing held)';
const WARM = 'warm (node, held)';
/** The same lookups at Coinstack's bare path (its dialect's answer). */
const COINSTACK_COLD = `${COLD}, Coinstack's path`;
const COINSTACK_WARM = `${WARM}, Coinstack's path`;

const cache = cacheDir();
const core = await startBitcoind({ copyDatadir: await smallCoreChain(cache, BLOCKS, say) });
const root = mkdtempSync(join(cache, 'txlookup-'));
const pgs = await startBenchPostgres(root);
try {
  const url = await pgs.createDatabase('txlookup');
  const tip = await core.tip();
  const follower = startFollower(url, core);
  await waitApplied(follower, tip.hash, 1_800_000);
  follower.proc.kill('SIGTERM');
  await follower.exited;
  const db = createDb(url);
  const picked = await sql<{ txid: Buffer }>`
    SELECT txid FROM ${txRowsFrom(0n, null)} t WHERE tx_num & 1048575 <> 0 ORDER BY random() LIMIT ${LOOKUPS + WARM_UP}`.execute(db);
  const all = picked.rows.map((r) => hashToHex(r.txid));
  // (each variant first looks up WARM_UP other transactions, not measured: its code compiled, its connections open)
  const warmUps = all.slice(0, WARM_UP);
  const txids = all.slice(WARM_UP);
  const key = (await createApiKey(db, { name: 'bench', rateLimit: null })).key;
  say(
    `bench/tx-lookup: ${BLOCKS} blocks indexed on Core 30 (tip ${tip.height}); ${txids.length} random confirmed transactions, one at a time`,
  );
  say('| variant | p50 ms | p99 ms | API CPU µs/lookup (API and client) | bitcoind CPU µs/lookup |\n|---|---|---|---|---|');
  const node = new BitcoindClient({ url: core.rpcUrl });
  // the API process's own pool (api/main.ts): prepared statements, generic plans
  const apiDb = createPreparedDb(url, { max: 10 });
  /** One API process variant: every transaction looked up once (`warm`: twice, the first not measured). */
  const measure = async (label: string, txCacheBytes: number, warm: boolean, prefix: '/v1' | '') => {
    const app = await buildApi({
      db: apiDb,
      log: silentLogger(),
      network: 'regtest',
      node,
      settings: { redisPrefix: 'bench', txCacheBytes, rateLimit: 1e9 },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const get = async (txid: string) => {
      const r = await fetch(`${base}${prefix}/transactions/${txid}`, { headers: { apiKey: key } });
      if (r.status !== 200) throw new Error(`${txid} → ${r.status} ${await r.text()}`);
      await r.arrayBuffer();
    };
    try {
      for (const t of warmUps) await get(t);
      if (warm) for (const t of txids) await get(t);
      const times: number[] = [];
      const cpu0 = process.cpuUsage();
      const core0 = processCpuMs(core.pid!);
      for (const t of txids) {
        const t0 = performance.now();
        await get(t);
        times.push(performance.now() - t0);
      }
      const cpu = process.cpuUsage(cpu0);
      const coreMs = processCpuMs(core.pid!) - core0;
      const row = { p50: round(pct(times, 50), 2), p99: round(pct(times, 99), 2) };
      (results[label] ??= []).push(row);
      say(
        `| ${label} | ${round(pct(times, 50), 2)} | ${round(pct(times, 99), 2)} | ${Math.round((cpu.user + cpu.system) / txids.length)} | ${Math.round((coreMs * 1000) / txids.length)} |`,
      );
    } finally {
      await app.close();
    }
  };
  const results: Record<string, { p50: number; p99: number }[]> = {};
  for (let r = 0; r < Number(opts.rounds); r++) {
    await measure(COLD, 0, false, '/v1');
    await measure(WARM, 16 * 1024 * 1024, true, '/v1');
    await measure(COINSTACK_COLD, 0, false, '');
    await measure(COINSTACK_WARM, 16 * 1024 * 1024, true, '');
  }
  await apiDb.destroy();
  await db.destroy();
  // (per variant, the round with the lowest p50: the least disturbed by other work on a shared machine)
  const best = (label: string) => results[label]!.reduce((a, b) => (b.p50 < a.p50 ? b : a));
  say(
    `RESULT ${JSON.stringify({ lookups: txids.length, blocks: BLOCKS, cold: best(COLD), warm: best(WARM), coinstack: { cold: best(COINSTACK_COLD), warm: best(COINSTACK_WARM) } })}`,
  );
} finally {
  await pgs.stop();
  await core.stop();
  rmSync(root, { recursive: true, force: true });
}
