/**
 * One local rate allowance per key and process while Redis is down: the all-in-one composition
 * (startBlockwire, roles api + streams, the stream attached to the API's server) on a
 * redis-server of its own, really stopped. A key limited to 10 per window gets 10 answers in
 * all, REST requests and `/v1/stream` upgrades together, then 429 for both, not 10 of each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { startBlockwire, type Blockwire } from '../../../cli/compose.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { testConfig } from '../../../src/config.js';
import { startRedis, type RedisServer } from '../../../cli/embedded/redis.js';
import { silentLogger } from '../../../src/log.js';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';

const LIMIT = 10;

/** The status of a `/v1/stream` upgrade: 101 when it opened (then closed), else the refusal's. */
function upgrade(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    ws.once('error', (err) => {
      if (!/Unexpected server response/.test(err.message)) reject(err);
    });
  });
}

describe('the local rate allowance while Redis is down', () => {
  let dir: string;
  let redis: RedisServer;
  let t: TestDatabase;
  let bw: Blockwire;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bw-fallback-'));
    redis = await startRedis({ dir });
    t = await createMigratedDatabase('fallback');
    const config = testConfig({ redisUrl: redis.url, host: '127.0.0.1', port: 0, apiRateWindowMs: 600_000, apiRateFallbackShare: 1 });
    bw = await startBlockwire({
      config,
      log: silentLogger(),
      roles: new Set(['api', 'streams']),
      db: t.db,
      databaseUrl: t.url,
      redisUrl: redis.url,
      redisPrefix: uniqueRedisPrefix('fallback'),
      network: 'regtest',
    });
  }, 60_000);
  afterAll(async () => {
    await bw?.stop();
    await t?.drop();
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it(`a key limited to ${LIMIT} gets ${LIMIT} answers in all, REST requests and stream upgrades together`, async () => {
    const key = (await createApiKey(t.db, { name: 'limited', rateLimit: LIMIT })).key;
    await redis.stop();
    try {
      await spend(key);
    } finally {
      // (the roles stop with Redis back: a stream's subscriber would wait for it)
      await redis.restart();
    }
  }, 60_000);

  async function spend(key: string): Promise<void> {
    const rest = async () => {
      const r = await fetch(`${bw.apiUrl}/v1/hooks`, { headers: { apiKey: key } });
      await r.arrayBuffer();
      return r.status;
    };
    const stream = () => upgrade(`${bw.streamUrl}?apiKey=${key}`);
    // Half of the allowance each way, one after the other, then one more of each.
    const statuses: { kind: string; status: number }[] = [];
    for (let i = 0; i < LIMIT / 2; i++) {
      statuses.push({ kind: 'rest', status: await rest() });
      statuses.push({ kind: 'stream', status: await stream() });
    }
    statuses.push({ kind: 'rest', status: await rest() });
    statuses.push({ kind: 'stream', status: await stream() });
    const allowed = statuses.filter((s) => s.status === 200 || s.status === 101);
    expect(allowed.length, JSON.stringify(statuses)).toBe(LIMIT);
    expect(statuses.slice(-2).map((s) => s.status)).toEqual([429, 429]);
  }
});
