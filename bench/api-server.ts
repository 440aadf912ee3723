/**
 * The API process of bench/api.ts: `startApi` (the production entrypoint: cached key
 * verification with revocation notifications, Redis rate limits) over the given database and
 * Redis, with the process metrics `blockwire start` gives it (GET /metrics), on a free loopback
 * port printed as `port <n>` on stdout (BENCH_API_TX_CACHE_MB sets API_TX_CACHE_MB). Kept in its own process so the
 * load generator does not share its event loop.
 */
import { Redis } from 'ioredis';
import { createDb } from '../src/db/connect.js';
import { startApi } from '../api/main.js';
import { testConfig } from '../src/config.js';
import { silentLogger } from '../src/log.js';
import { createMetrics } from '../cli/ops/metrics.js';

const [dbUrl, redisUrl] = process.argv.slice(2);
if (!dbUrl || !redisUrl) throw new Error('usage: api-server.ts DATABASE_URL REDIS_URL');
const db = createDb(dbUrl, { max: 8, applicationName: 'bench-api' });
const redis = new Redis(redisUrl);
// (metrics as `blockwire start` has them: GET /metrics, which bench/api.ts reads for held history pages)
const metrics = createMetrics({ db, log: silentLogger(), roles: ['api'], processMetrics: false });
const api = await startApi({
  config: testConfig({
    host: '127.0.0.1',
    port: 0,
    network: 'regtest',
    ...(process.env.BENCH_API_TX_CACHE_MB ? { apiTxCacheMb: Number(process.env.BENCH_API_TX_CACHE_MB) } : {}),
  }),
  log: silentLogger(),
  db,
  redis,
  databaseUrl: dbUrl,
  metrics,
});
process.stdout.write(`port ${api.port}\n`);
process.on('SIGTERM', () => {
  void api.close().then(async () => {
    await db.destroy();
    redis.disconnect();
    process.exit(0);
  });
});
