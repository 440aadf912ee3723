/**
 * The API process of bench/api.ts: buildApi over the given database and Redis, listening on a
 * free loopback port (printed as `port <n>` on stdout). Kept in its own process so the load
 * generator does not share its event loop.
 */
import { Redis } from 'ioredis';
import { createDb } from '../src/db/connect.js';
import { buildApi } from '../src/api/app.js';
import { silentLogger } from '../src/log.js';

const [dbUrl, redisUrl] = process.argv.slice(2);
if (!dbUrl || !redisUrl) throw new Error('usage: api-server.ts DATABASE_URL REDIS_URL');
const db = createDb(dbUrl, { max: 8, applicationName: 'bench-api' });
const redis = new Redis(redisUrl);
const app = await buildApi({ db, log: silentLogger(), network: 'regtest', redis, settings: { redisPrefix: 'bench' } });
await app.listen({ host: '127.0.0.1', port: 0 });
const addr = app.server.address();
process.stdout.write(`port ${typeof addr === 'object' && addr ? addr.port : 0}\n`);
process.on('SIGTERM', () => {
  void app.close().then(async () => {
    await db.destroy();
    redis.disconnect();
    process.exit(0);
  });
});
