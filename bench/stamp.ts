/**
 * bench/stamp: stamps per second sustained and fee paid per stamp at a batch window of 1 s
 *. Starts the devnode (blocks every --block-interval seconds), the indexer, the
 * stamper with a funded wallet and the REST API on a loopback port, then autocannon posts
 * random hashes on --connections connections for --duration seconds (each connection waits for
 * its answer: the stamp id once the signed transaction is stored). Afterwards every answered
 * stamp is checked to sit in a stored transaction; the fee of the transactions that carry them
 * (the winning version of each) is divided by the stamps.
 * Run: `node --import tsx bench/stamp.ts [--duration S] [--connections N] [--window MS]
 * [--block-interval S] [--max-per-tx N]` (DATABASE_URL optional: an ephemeral PostgreSQL
 * is started otherwise).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { buildApi } from '../api/app.js';
import { createApiKey } from '../src/auth/keys.js';
import { encodeWif } from '../src/bitcoin/wif.js';
import { testConfig } from '../src/config.js';
import { createDb } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { startDevnode } from '../devnode/index.js';
import { startPostgres } from '../cli/embedded/postgres.js';
import { createLogger, silentLogger } from '../src/log.js';
import { BitcoindClient } from '../src/rpc/bitcoind.js';
import { startStamper } from '../stamp/stamper.js';
import { startIndexer } from '../indexer/main.js';

const { values: opts } = benchArgs(import.meta.url, {
  options: {
    duration: { type: 'string', default: '30' },
    connections: { type: 'string', default: '500' },
    window: { type: 'string', default: '1000' },
    'block-interval': { type: 'string', default: '10' },
    'max-per-tx': { type: 'string', default: '1000' },
  },
});
const duration = Number(opts.duration);
const connections = Number(opts.connections);
const windowMs = Number(opts.window);
const blockInterval = Number(opts['block-interval']);

const say = (s: string) => process.stdout.write(`${s}\n`);

async function main() {
  let pgStop: (() => Promise<void>) | undefined;
  let dir: string | undefined;
  let databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    dir = await mkdtemp(join(tmpdir(), 'bw-bench-stamp-'));
    const pg = await startPostgres({ dataDir: join(dir, 'pg'), ephemeral: true, settings: { max_connections: 200 } });
    databaseUrl = pg.url;
    pgStop = () => pg.stop();
  }
  const db = createDb(databaseUrl, { max: 20 });
  await migrateToLatest(db);
  const log = process.env.BENCH_LOG ? createLogger({ level: 'info', name: 'bench' }) : silentLogger();
  const node = await startDevnode({ initialBlocks: 110 });
  const wif = encodeWif(randomBytes(32), 'regtest');
  const config = testConfig({
    network: 'regtest',
    bitcoindRpcUrl: node.rpcUrl,
    bitcoindZmqUrl: node.zmqUrl,
    databaseUrl,
    pollIntervalMs: 200,
    stampWalletWif: wif,
    stampBatchWindowMs: windowMs,
    stampMaxPerTx: Number(opts['max-per-tx']),
    stampPollMs: 500,
    stampAnswerTimeoutMs: 30_000,
  });
  const indexer = await startIndexer({ config, log, db, databaseUrl, rpcUrl: node.rpcUrl, zmqUrl: node.zmqUrl });
  const rpc = new BitcoindClient({ url: node.rpcUrl });
  const stamper = await startStamper({ db, log, config, network: 'regtest', node: rpc });
  const addr = stamper.addresses[0]!;
  await node.wallet.send(addr, 20_000_000n, { outputs: Array.from({ length: 39 }, () => ({ to: addr, sats: 20_000_000n })) });
  await node.mine(1);
  for (;;) {
    const s = await stamper.status();
    if (s.balance.spendable >= 800_000_000) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const app = await buildApi({ db, log, network: 'regtest', stamps: stamper.service, settings: { rateLimit: 10_000_000 } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as { port: number }).port;
  const key = (await createApiKey(db, { name: 'bench' })).key;

  const miner = setInterval(() => void node.mine(1), blockInterval * 1000);
  const started = new Date();
  say(
    `stamping: window ${windowMs} ms, ${connections} connections, ${duration} s, a block every ${blockInterval} s (load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores)`,
  );
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/v1/stamps`,
    method: 'POST',
    connections,
    duration,
    timeout: 60,
    headers: { apikey: key, 'content-type': 'application/json' },
    setupClient: (client) => {
      client.setBody(JSON.stringify({ hash: randomBytes(32).toString('hex') }));
      client.on('response', () => client.setBody(JSON.stringify({ hash: randomBytes(32).toString('hex') })));
    },
  });
  const ended = new Date();
  clearInterval(miner);
  await node.mine(1);

  // Every answered stamp sits in a stored transaction; fee of the winning versions per stamp.
  const placed = await sql<{
    n: string;
  }>`SELECT count(*)::text AS n FROM stamps WHERE status = 'placed' AND created_at BETWEEN ${started} AND ${ended}`.execute(db);
  const txs = await sql<{ txs: string; fee: string; vsize: string; stamps: string }>`
    SELECT count(*)::text AS txs, sum(t.fee)::text AS fee, sum(t.vsize)::text AS vsize, sum(c.n)::text AS stamps
    FROM stamp_txs t JOIN LATERAL (SELECT count(*) AS n FROM stamps s WHERE s.txid = t.txid) c ON true
    WHERE t.status IN ('signed', 'broadcast', 'confirmed')`.execute(db);
  const bumps = await sql<{ n: string }>`SELECT count(*)::text AS n FROM stamp_txs WHERE replaces IS NOT NULL`.execute(db);
  const row = txs.rows[0]!;
  const stamps = Number(row.stamps);
  const ok = result['2xx'];
  say('');
  say('| figure | value |');
  say('|---|---|');
  say(`| answered stamps (2xx) | ${ok} (non-2xx ${result.non2xx}, errors ${result.errors}, timeouts ${result.timeouts}) |`);
  say(`| stamps per second sustained | ${(ok / duration).toFixed(1)} |`);
  say(`| answer latency p50 / p99 | ${result.latency.p50} ms / ${result.latency.p99} ms |`);
  say(`| stamps placed in the run (database; includes requests in flight at the end) | ${placed.rows[0]!.n} |`);
  say(`| transactions carrying them | ${row.txs} (${(stamps / Number(row.txs)).toFixed(1)} stamps each; ${bumps.rows[0]!.n} fee bumps) |`);
  say(
    `| fee per stamp | ${(Number(row.fee) / stamps).toFixed(1)} sat (${(Number(row.vsize) / stamps).toFixed(1)} vB per stamp, at ${(Number(row.fee) / Number(row.vsize)).toFixed(2)} sat/vB) |`,
  );

  await app.close();
  await stamper.stop();
  await indexer.stop();
  await node.stop();
  await db.destroy();
  if (pgStop) await pgStop();
  if (dir) await rm(dir, { recursive: true, force: true });
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
