/**
 * Per-key rate limits on a real redis-server of this test's own: a fixed window per key shared
 * by every limiter on the same Redis (several API processes), a fresh window after reset, and
 * fail-open within the time limit when Redis is gone (reported, not thrown).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startRedis, type RedisServer } from '../../../src/embedded/redis.js';
import { createRateLimiter } from '../../../src/auth/rate-limit.js';

describe('redis rate limiter', () => {
  let dir: string;
  let server: RedisServer;
  let a: Redis;
  let b: Redis;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bw-rl-'));
    server = await startRedis({ dir });
    a = new Redis(server.url, { maxRetriesPerRequest: 1 });
    b = new Redis(server.url, { maxRetriesPerRequest: 1, enableAutoPipelining: true });
    a.on('error', () => {});
    b.on('error', () => {});
  });
  afterAll(async () => {
    a?.disconnect();
    b?.disconnect();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('two processes share one window per key; other keys and the next window are separate', async () => {
    let now = 1_000_000;
    const opts = { prefix: 'rl-test', windowMs: 10_000, now: () => now };
    const one = createRateLimiter({ redis: a, ...opts });
    const two = createRateLimiter({ redis: b, ...opts });
    const seen = [];
    for (let i = 0; i < 6; i++) seen.push((await (i % 2 ? two : one).take(7n, 4)).allowed);
    expect(seen).toEqual([true, true, true, true, false, false]);
    const d = await one.take(7n, 4);
    expect(d).toMatchObject({ allowed: false, limit: 4, remaining: 0 });
    expect(d.resetMs).toBeGreaterThan(0);
    expect(d.resetMs).toBeLessThanOrEqual(10_000);
    expect((await two.take(8n, 4)).allowed).toBe(true);
    now += 10_000;
    expect((await one.take(7n, 4))).toMatchObject({ allowed: true, remaining: 3 });
    expect(await a.pttl(`rl-test:rl:7:${Math.floor(now / 10_000)}`)).toBeGreaterThan(0);
  });

  it('lets requests through within its time limit when Redis is gone, and says so', async () => {
    const problems: unknown[] = [];
    const limiter = createRateLimiter({ redis: a, prefix: 'rl-down', windowMs: 60_000, timeoutMs: 200, onUnavailable: (e) => problems.push(e) });
    expect((await limiter.take(1n, 1)).allowed).toBe(true);
    await server.kill();
    try {
      const d = await limiter.take(1n, 1);
      expect(d.allowed).toBe(true);
      expect(problems.length).toBeGreaterThan(0);
    } finally {
      await server.restart();
    }
  });
});
