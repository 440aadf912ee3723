/**
 * Per-key rate limits on a real redis-server of this test's own: a fixed window per key shared
 * by every limiter on the same Redis (several API processes), a fresh window after reset, tokens
 * leased in growing batches (a round trip per lease, the limit exact across processes and
 * concurrent requests); when Redis is slow (behind a proxy holding its replies) or gone, the
 * local allowance: a key never gets more than its limit over a window, late answers pay for what
 * was let through (nothing counted or granted twice), and the outage is reported, not thrown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection, createServer, type Server } from 'node:net';
import { Redis } from 'ioredis';
import { startRedis, type RedisServer } from '../../../cli/embedded/redis.js';
import { createRateLimiter, leaseCap } from '../../../src/auth/rate-limit.js';
import { waitFor } from '../../support/wait.js';

/**
 * A TCP proxy in front of a redis-server that holds every reply for `delayMs` (Infinity: never
 * sends it); `held` counts the replies it holds.
 */
async function delayingProxy(redisUrl: string, delayMs: number) {
  const state = { delayMs, held: 0 };
  const proxy: Server = createServer((down) => {
    const up = createConnection(Number(new URL(redisUrl).port), '127.0.0.1');
    down.on('data', (d) => up.write(d));
    up.on('data', (d) => {
      if (state.delayMs === Infinity) return;
      state.held++;
      setTimeout(() => {
        state.held--;
        if (down.writable) down.write(d);
      }, state.delayMs);
    });
    const close = () => {
      down.destroy();
      up.destroy();
    };
    down.on('error', close).on('close', close);
    up.on('error', close).on('close', close);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const client = new Redis(`redis://127.0.0.1:${(proxy.address() as { port: number }).port}`, { maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  return {
    state,
    client,
    close: async () => {
      client.disconnect();
      await new Promise((r) => proxy.close(r));
    },
  };
}

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
    expect(await one.take(7n, 4)).toMatchObject({ allowed: true, remaining: 3 });
    expect(await a.pttl(`rl-test:rl:7:${Math.floor(now / 10_000)}`)).toBeGreaterThan(0);
  });

  /** EVALSHA/EVAL calls the server has answered so far. */
  const scriptCalls = async () => {
    const info = await a.info('commandstats');
    return [...info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((s, m) => s + Number(m[1]), 0);
  };

  it('leases tokens: a busy key costs a round trip per lease, and never more than its limit', async () => {
    const now = 5_000_000;
    const limiter = createRateLimiter({ redis: a, prefix: 'rl-lease', windowMs: 60_000, now: () => now });
    const before = await scriptCalls();
    let allowed = 0;
    for (let i = 0; i < 1000; i++) if ((await limiter.take(1n, 10_000)).allowed) allowed++;
    expect(allowed).toBe(1000);
    const calls = (await scriptCalls()) - before;
    // Leases 1, 2, 4, … 64, then 100 (1 % of the limit): 7 + 9 for 1,000 requests.
    expect(calls).toBeLessThanOrEqual(20);
    const counter = Number(await a.get(`rl-lease:rl:1:${Math.floor(now / 60_000)}`));
    expect(counter).toBeGreaterThanOrEqual(1000);
    expect(counter - 1000).toBeLessThan(leaseCap(10_000));
  });

  it('grants exactly the limit to two processes and to concurrent requests, then refuses without asking Redis', async () => {
    const now = 7_000_000;
    const opts = { prefix: 'rl-exact', windowMs: 60_000, now: () => now };
    const one = createRateLimiter({ redis: a, ...opts });
    const two = createRateLimiter({ redis: b, ...opts });
    let allowed = 0;
    for (let i = 0; i < 2400; i++) if ((await (i % 3 ? two : one).take(2n, 1000)).allowed) allowed++;
    expect(allowed).toBe(1000);
    // 500 requests at once on one limiter, limit 300.
    const three = createRateLimiter({ redis: a, ...opts });
    const decisions = await Promise.all(Array.from({ length: 500 }, () => three.take(3n, 300)));
    expect(decisions.filter((d) => d.allowed).length).toBe(300);
    expect(decisions.filter((d) => !d.allowed).every((d) => d.remaining === 0)).toBe(true);
    const before = await scriptCalls();
    for (let i = 0; i < 50; i++) expect((await three.take(3n, 300)).allowed).toBe(false);
    expect((await scriptCalls()) - before).toBe(0);
  });

  it('on a slow Redis: concurrent takes of a small limit ask at once, and an answer after the time limit is credited', async () => {
    // No assertion here depends on how fast the machine is (the elapsed-time check of the fifty
    // concurrent takes is gone: their speed belongs in bench/): the windows are of a fixed clock,
    // and the late answer is awaited, not slept for.
    const proxy = await delayingProxy(server.url, 60);
    const slow = proxy.client;
    const p = proxy.state;
    try {
      await slow.ping();
      await waitFor('the ping answered', () => p.held === 0);
      p.delayMs = 1_000;
      const problems: unknown[] = [];
      const now = Date.now();
      const window = Math.floor(now / 60_000);
      // A time limit no loaded machine reaches for the first part (the answers are not late).
      const patient = createRateLimiter({
        redis: slow,
        prefix: 'rl-slow',
        windowMs: 60_000,
        timeoutMs: 60_000,
        now: () => now,
        onUnavailable: (e) => problems.push(e),
      });
      const all = await Promise.all(Array.from({ length: 50 }, () => patient.take(1n, 150)));
      expect(all.every((d) => d.allowed)).toBe(true);
      expect(problems).toEqual([]);
      expect(Number(await a.get(`rl-slow:rl:1:${window}`))).toBe(50);

      // Replies held 5 s against a 250 ms time limit: late whatever the load.
      p.delayMs = 5_000;
      const limiter = createRateLimiter({
        redis: slow,
        prefix: 'rl-slow',
        windowMs: 60_000,
        timeoutMs: 250,
        now: () => now,
        onUnavailable: (e) => problems.push(e),
      });
      const late = await limiter.take(2n, 100_000);
      expect(late.allowed).toBe(true);
      expect(problems.length).toBe(1);
      // Counted by Redis and its reply let through (held is also 0 between SCRIPT LOAD's reply and the EVALSHA).
      await waitFor(
        'the late answer counted and delivered',
        async () => Number(await a.get(`rl-slow:rl:2:${window}`)) === 1 && p.held === 0,
        60_000,
      );
      p.delayMs = 0;
      const before = await scriptCalls();
      // The late answer's token paid for the request let through without Redis: the next one asks.
      expect((await limiter.take(2n, 100_000)).allowed).toBe(true);
      expect((await scriptCalls()) - before).toBe(1);
      // The late token, then a lease of two (leases double while the key uses them).
      expect(Number(await a.get(`rl-slow:rl:2:${window}`))).toBe(3);
    } finally {
      await proxy.close();
    }
  });

  it('behind a Redis slower than the time limit a key gets its limit over the window, never more', async () => {
    // Replies held 1 s against a 250 ms time limit: every take is decided by the local allowance
    // first, and the late answers are credited as they come.
    const proxy = await delayingProxy(server.url, 1_000);
    try {
      const now = Date.now();
      const problems: unknown[] = [];
      const limiter = createRateLimiter({
        redis: proxy.client,
        prefix: 'rl-bounded',
        windowMs: 60_000,
        timeoutMs: 250,
        now: () => now,
        onUnavailable: (e) => problems.push(e),
      });
      let allowed = 0;
      for (let wave = 0; wave < 10; wave++) {
        const ds = await Promise.all(Array.from({ length: 10 }, () => limiter.take(7n, 30)));
        allowed += ds.filter((d) => d.allowed).length;
        expect(allowed).toBeLessThanOrEqual(30);
      }
      expect(problems.length).toBeGreaterThan(0);
      // Once every late answer is in, Redis fast again: the rest of the window's tokens, then 429.
      await waitFor('the late answers delivered', () => proxy.state.held === 0, 60_000);
      proxy.state.delayMs = 0;
      for (let i = 0; i < 40; i++) if ((await limiter.take(7n, 30)).allowed) allowed++;
      expect(allowed).toBe(30);
    } finally {
      await proxy.close();
    }
  });

  it('with Redis not answering at all, N processes at a share of 1/N let a key through no more than its limit', async () => {
    const proxy = await delayingProxy(server.url, 0);
    try {
      await proxy.client.ping();
      proxy.state.delayMs = Infinity;
      // One window throughout, however long the takes last on a loaded machine.
      const now = Date.now();
      const opts = { redis: proxy.client, prefix: 'rl-share', windowMs: 60_000, timeoutMs: 100, fallbackShare: 0.5, now: () => now };
      const one = createRateLimiter(opts);
      const two = createRateLimiter(opts);
      let allowed = 0;
      for (let i = 0; i < 25; i++) {
        const ds = await Promise.all([one.take(9n, 30), two.take(9n, 30)]);
        allowed += ds.filter((d) => d.allowed).length;
      }
      expect(allowed).toBe(30);
      const refused = await one.take(9n, 30);
      expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    } finally {
      await proxy.close();
    }
  });

  it('when Redis is gone, lets a key through up to what its window had left, then 429, and says so', async () => {
    const problems: unknown[] = [];
    const now = Date.now();
    const limiter = createRateLimiter({
      redis: a,
      prefix: 'rl-down',
      windowMs: 3_600_000,
      timeoutMs: 200,
      now: () => now,
      onUnavailable: (e) => problems.push(e),
    });
    expect((await limiter.take(1n, 3)).allowed).toBe(true);
    await server.kill();
    try {
      expect((await limiter.take(1n, 3)).allowed).toBe(true);
      expect((await limiter.take(1n, 3)).allowed).toBe(true);
      expect(problems.length).toBeGreaterThan(0);
      expect(await limiter.take(1n, 3)).toMatchObject({ allowed: false, remaining: 0 });
    } finally {
      await server.restart();
    }
  });
});
