/**
 * A noisy neighbour on `/websocket` (a fault-matrix row: one tenant must not slow another): key A floods a listening API
 * (startApi, the run's PostgreSQL and Redis) with upgrades, 20 at a time, past its cap
 * (API_MAX_SOCKETS_PER_KEY, here 50: the rest refused ThroughputExceeded), keeping what it got
 * open, while key B makes REST requests. B's p99 over 200 requests with the flood stays within
 * 10 times its p99 of the same run without the neighbour, plus 250 ms (a bound relative to the
 * same machine at the same moment, not a speed), and A holds exactly its cap.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createApiHarness, type ApiHarness } from '../api/harness.js';
import { startApi, type ApiHandle } from '../../../api/main.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { testConfig } from '../../../src/config.js';
import { silentLogger } from '../../../src/log.js';

const CAP = 50;
const REQUESTS = 200;

/** One upgrade: the open socket, or the refusal's status. */
function upgrade(url: string): Promise<WebSocket | number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    ws.once('error', () => resolve(0));
  });
}

const p99 = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.ceil(ms.length * 0.99) - 1]!;

describe('a /websocket flood beside another key', () => {
  let h: ApiHarness;
  let api: ApiHandle;
  const held: WebSocket[] = [];

  beforeAll(async () => {
    h = await createApiHarness();
    api = await startApi({ config: testConfig({ host: '127.0.0.1', port: 0, network: 'regtest', apiMaxSocketsPerKey: CAP }), log: silentLogger(), db: h.t.db, redis: h.redis, databaseUrl: h.t.url });
  });
  afterAll(async () => {
    for (const ws of held) ws.terminate();
    await api?.close();
    await h?.close();
  });

  it(`key B's REST p99 stays within 10 x its quiet p99 + 250 ms while key A floods /websocket past its cap of ${CAP}`, async () => {
    const a = (await createApiKey(h.t.db, { name: 'noisy' })).key;
    const b = (await createApiKey(h.t.db, { name: 'quiet' })).key;
    /** B's request times, one after the other. */
    const timesOfB = async () => {
      const ms: number[] = [];
      for (let i = 0; i < REQUESTS; i++) {
        const t0 = performance.now();
        const r = await fetch(`${api.url}/v1/hooks`, { headers: { apiKey: b } });
        await r.arrayBuffer();
        expect(r.status).toBe(200);
        ms.push(performance.now() - t0);
      }
      return ms;
    };
    const quiet = await timesOfB();

    const refused: number[] = [];
    let flooding = true;
    const flood = Promise.all(
      Array.from({ length: 20 }, async () => {
        while (flooding) {
          const r = await upgrade(`${api.url.replace(/^http/, 'ws')}/websocket?apikey=${a}`);
          if (typeof r === 'number') refused.push(r);
          else held.push(r);
        }
      }),
    );
    const noisy = await timesOfB();
    flooding = false;
    await flood;

    process.stderr.write(`noisy /websocket: B p99 quiet ${p99(quiet).toFixed(1)} ms, with the flood ${p99(noisy).toFixed(1)} ms; A held ${held.length}, ${refused.length} upgrades refused\n`);
    expect(held.length).toBe(CAP);
    expect(refused.length).toBeGreaterThan(0);
    expect(new Set(refused)).toEqual(new Set([400]));
    expect(p99(noisy)).toBeLessThanOrEqual(10 * p99(quiet) + 250);
  }, 180_000);
});
