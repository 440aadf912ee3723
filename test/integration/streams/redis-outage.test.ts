/**
 * Redis outage on a redis-server this test owns: stopped while events
 * are relayed and while deliveries are in flight, then started again empty (no persistence, the
 * worst case). Producers fail fast, the relay cursor stays put while Redis is away, and once it
 * is back the relay, the workers and the stream hub resume by themselves with nothing lost:
 * jobs Redis forgot are re-created from the delivery log. A Redis that may evict is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startRedis, type RedisServer } from '../../../cli/embedded/redis.js';
import { createLogger, silentLogger } from '../../../src/log.js';
import { startStreams, startWorker, type StreamsHandle, type WorkerHandle } from '../../../streams/main.js';
import { createDeliveryQueues } from '../../../streams/queues.js';
import { readStreamState } from '../../../streams/outbox.js';
import {
  connectStream,
  createStreamsFixture,
  insertEvents,
  newAddress,
  startReceiver,
  streamsConfig,
  txEvents,
  type Receiver,
  type StreamsFixture,
} from './harness.js';
import { waitFor } from '../../support/wait.js';

describe('Redis outage', () => {
  let dir: string;
  let redis: RedisServer;
  let f: StreamsFixture;
  let receiver: Receiver;
  let streams: StreamsHandle;
  let worker: WorkerHandle;
  const logLines: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bw-redis-outage-'));
    redis = await startRedis({ dir });
    f = await createStreamsFixture(redis.url);
    receiver = await startReceiver();
    const log = createLogger({ level: 'warn', destination: { write: (line: string) => void logLines.push(line) } });
    const deps = { config: streamsConfig({ deliveryRescueMs: 1500 }), log, db: f.t.db, redisUrl: f.redisUrl, redisPrefix: f.prefix };
    streams = await startStreams(deps);
    worker = await startWorker(deps);
  });
  afterAll(async () => {
    await worker?.stop();
    await streams?.stop();
    await receiver?.close();
    await f?.drop();
    await redis?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('holds events while Redis is away and delivers all of them when it is back', async () => {
    const k = await f.newKey();
    const addr = newAddress();
    const hook = await f.httpHook(k.id, receiver.url);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id });
    const client = await connectStream(`ws://127.0.0.1:${streams.port}/v1/stream`, k.key);
    await waitFor('stream live', () => client.messages.some((m) => m.type === 'stream.live'), 30_000);

    const before = await insertEvents(f.t.db, txEvents(addr, 20));
    await waitFor('first 20', () => new Set(receiver.received.map((r) => r.id)).size === 20 && client.events().length === 20, 10_000);
    const cursorBefore = (await readStreamState(f.t.db)).relay;

    // Slow answers, so deliveries are in flight when Redis goes.
    receiver.respond = async (_w, res) => {
      await new Promise((r) => setTimeout(r, 300));
      res.writeHead(200);
      res.end();
    };
    const during = await insertEvents(f.t.db, txEvents(addr, 20));
    await waitFor('deliveries in flight', () => receiver.received.length > 20, 10_000);
    await redis.stop();

    // Producers fail fast instead of queueing in memory.
    const producer = createDeliveryQueues({ redisUrl: f.redisUrl, prefix: f.prefix });
    await expect(
      producer.enqueue([
        { transport: 'http', delivery: `${sub}-999999`, hook: hook.id, payload: '{}', type: 'tx.unconfirmed', redeliveries: 0 },
      ]),
    ).rejects.toThrow();
    await producer.close();

    const whileDown = await insertEvents(f.t.db, txEvents(addr, 30));
    // The sentinel: two of the relay's failed tries begun after those rows were committed (it
    // reads every row after its cursor, so they were in them).
    const failed = () => logLines.filter((l) => l.includes('relay batch failed')).length;
    const failedBefore = failed();
    await waitFor('two failed relay batches with the new rows', () => failed() >= failedBefore + 2, 30_000);
    // The relay cannot publish: the new events stay behind its cursor.
    expect((await readStreamState(f.t.db)).relay).toBeLessThan(whileDown[0]!);
    expect((await readStreamState(f.t.db)).relay).toBeGreaterThanOrEqual(cursorBefore);

    await redis.restart();
    const all = [...before, ...during, ...whileDown];
    await waitFor('every webhook after the outage', () => all.every((s) => receiver.received.some((r) => r.id === `${sub}-${s}`)), 30_000);
    await waitFor(
      'delivery log',
      async () => {
        const rows = await f.t.db.selectFrom('deliveries').select('status').where('subscription_id', '=', sub).execute();
        return rows.length === all.length && rows.every((r) => r.status === 'delivered');
      },
      30_000,
    );
    // The stream client, connected throughout, got every event once, in order.
    await waitFor('stream events after the outage', () => client.events().length >= all.length, 15_000);
    expect(client.events().map((e) => e.id)).toEqual(all.map(Number));
    client.close();
  });

  it('the producer tells when Redis is back: a relay backing off after "Redis is not reachable" tries again at once', async () => {
    await redis.stop();
    const producer = createDeliveryQueues({ redisUrl: f.redisUrl, prefix: f.prefix });
    try {
      // Down: the wait lasts its bound.
      const t0 = Date.now();
      await producer.ready(300);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
      await expect(producer.serverRunId()).rejects.toThrow(/not reachable/);
      // Back: a long wait ends when the connection is ready, not at its bound.
      const waiting = producer.ready(60_000).then(() => Date.now());
      await redis.restart();
      const back = Date.now();
      const ended = await waiting;
      expect(ended - back, 'ms from Redis back to the end of the wait').toBeLessThan(30_000);
      expect(await producer.serverRunId()).toMatch(/^\w+$/);
      // Ready: no wait; a stop (abort) ends a wait too.
      const t1 = Date.now();
      await producer.ready(60_000);
      expect(Date.now() - t1).toBeLessThan(1000);
      await redis.stop();
      const stop = new AbortController();
      const aborted = producer.ready(60_000, stop.signal);
      stop.abort();
      await aborted;
    } finally {
      await producer.close();
      await redis.restart();
    }
  }, 60_000);

  it('a worker stopped while Redis is down still stops (bounded close, BullMQ #4656)', async () => {
    const deps = {
      config: streamsConfig({ webhookTimeoutMs: 500 }),
      log: silentLogger(),
      db: f.t.db,
      redisUrl: f.redisUrl,
      redisPrefix: f.prefix,
    };
    const second = await startWorker(deps);
    await redis.stop();
    try {
      const stopped = await Promise.race([
        second.stop().then(() => 'stopped'),
        new Promise((r) => setTimeout(() => r('still closing after 20 s'), 20_000)),
      ]);
      expect(stopped).toBe('stopped');
    } finally {
      await redis.restart();
    }
  }, 40_000);

  it('refuses a Redis whose maxmemory-policy may evict jobs', async () => {
    const admin = new Redis(redis.url);
    try {
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const deps = { config: streamsConfig(), log: silentLogger(), db: f.t.db, redisUrl: f.redisUrl, redisPrefix: f.prefix };
      await expect(startWorker(deps)).rejects.toThrow(
        "Redis maxmemory-policy is 'allkeys-lru': set it to 'noeviction', or queued deliveries can be evicted",
      );
      await expect(startStreams(deps)).rejects.toMatchObject({ code: 'ERR_REDIS_EVICTION' });
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      admin.disconnect();
    }
  });
});
