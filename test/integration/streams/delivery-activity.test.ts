/**
 * What the delivery workers record of each attempt (migration 0041) and the routes that read it:
 * a receiver that answers 500 with a body, then 200 — the log keeps the last attempt's send
 * time (the webhook-timestamp the receiver got), latency and the answer's first bytes
 * (GET /v1/hooks/{id}/deliveries/{delivery}/exchange, `last_latency_ms` in the log), and
 * GET /v1/hooks/{id}/stats counts the failed and the delivered attempt in the current minute.
 * Another key's hook answers 404 on both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { silentLogger } from '../../../src/log.js';
import { buildApi } from '../../../api/app.js';
import { startStreams, startWorker, type StreamsHandle, type WorkerHandle } from '../../../streams/main.js';
import { RESPONSE_EXCERPT_BYTES } from '../../../streams/transport.js';
import {
  createStreamsFixture,
  insertEvents,
  newAddress,
  promoteDelayed,
  startReceiver,
  streamsConfig,
  txEvents,
  type Receiver,
  type StreamsFixture,
} from './harness.js';
import { waitFor } from '../../support/wait.js';

describe('delivery attempts as the console reads them', () => {
  let f: StreamsFixture;
  let streams: StreamsHandle;
  let worker: WorkerHandle;
  let receiver: Receiver;
  let app: FastifyInstance;

  beforeAll(async () => {
    f = await createStreamsFixture();
    const deps = {
      config: streamsConfig({ deliveryRescueMs: 3_600_000 }),
      log: silentLogger(),
      db: f.t.db,
      redisUrl: f.redisUrl,
      redisPrefix: f.prefix,
    };
    streams = await startStreams(deps);
    worker = await startWorker(deps);
    receiver = await startReceiver();
    app = await buildApi({ db: f.t.db, log: silentLogger(), network: 'regtest' });
  });
  afterAll(async () => {
    await app?.close();
    await worker?.stop();
    await streams?.stop();
    await receiver?.close();
    await f?.drop();
  });

  const get = (url: string, key: string) => app.inject({ method: 'GET', url, headers: { apiKey: key } });
  const delivered = (hookId: string, id: string, key: string) =>
    waitFor('delivered', async () => (await get(`/v1/hooks/${hookId}/deliveries/${id}`, key)).json().status === 'delivered', 15_000);

  it("records the last attempt's time, latency and answer, and counts attempts per minute", async () => {
    const k = await f.newKey();
    const other = await f.newKey();
    const addr = newAddress();
    const hook = await f.httpHook(k.id, `${receiver.url}/activity`);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id });
    const long = 'x'.repeat(RESPONSE_EXCERPT_BYTES + 500);
    receiver.respond = (_w, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`down for maintenance ${long}`);
    };
    const [seq] = await insertEvents(f.t.db, txEvents(addr, 1));
    const id = `${sub}-${seq}`;
    await waitFor(
      'the failed attempt',
      async () => (await get(`/v1/hooks/${hook.id}/deliveries/${id}`, k.key)).json().attempts === 1,
      10_000,
    );

    const failed = (await get(`/v1/hooks/${hook.id}/deliveries`, k.key)).json()[0];
    expect(failed).toMatchObject({
      id,
      status: 'pending',
      last_status: 500,
      last_latency_ms: expect.any(Number),
      last_attempt_at: expect.any(String),
    });
    const sentTs = receiver.received.find((r) => r.id === id)!.timestamp;
    const ex = await get(`/v1/hooks/${hook.id}/deliveries/${id}/exchange`, k.key);
    expect(ex.statusCode).toBe(200);
    const exchange = ex.json();
    expect(exchange.request).toEqual({
      method: 'POST',
      url: `${receiver.url}/activity`,
      headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': sentTs },
      body: receiver.received.find((r) => r.id === id)!.body,
    });
    expect(exchange.response).toMatchObject({
      status: 500,
      error: 'receiver answered 500',
      latency_ms: failed.last_latency_ms,
      sent_at: failed.last_attempt_at,
    });
    expect(exchange.response.body).toBe(`down for maintenance ${long}`.slice(0, RESPONSE_EXCERPT_BYTES));

    let stats = (await get(`/v1/hooks/${hook.id}/stats`, k.key)).json();
    expect(stats.minutes).toHaveLength(60);
    expect(stats).toMatchObject({ hook_id: hook.id, delivered: 0, failed: 1 });
    expect(stats.minutes.filter((m: { failed: number }) => m.failed > 0)).toHaveLength(1);
    expect(stats.since).toBe(stats.minutes[0].minute);

    receiver.respond = (_w, res) => {
      res.writeHead(200);
      res.end('thanks');
    };
    await promoteDelayed(f.redisUrl, f.prefix, 'webhooks', 1);
    await delivered(hook.id, id, k.key);
    const after = (await get(`/v1/hooks/${hook.id}/deliveries/${id}/exchange`, k.key)).json();
    expect(after.response).toMatchObject({ status: 200, body: 'thanks', error: null });
    expect(after.request.headers['webhook-timestamp']).toBe(receiver.received.filter((r) => r.id === id).at(-1)!.timestamp);
    stats = (await get(`/v1/hooks/${hook.id}/stats`, k.key)).json();
    expect([stats.delivered, stats.failed]).toEqual([1, 1]);

    // Another key's hook: as unknown.
    for (const url of [`/v1/hooks/${hook.id}/stats`, `/v1/hooks/${hook.id}/deliveries/${id}/exchange`]) {
      const r = await get(url, other.key);
      expect(r.statusCode).toBe(404);
      expect(r.json().error_code).toBe('ERR_HOOK_NOT_FOUND');
    }
    const none = await get(`/v1/hooks/${hook.id}/deliveries/${sub}-999999/exchange`, k.key);
    expect(none.json().error_code).toBe('ERR_DELIVERY_NOT_FOUND');
  });

  it('records an answer with NUL bytes (which PostgreSQL text cannot hold) as U+FFFD', async () => {
    const k = await f.newKey();
    const addr = newAddress();
    const hook = await f.httpHook(k.id, `${receiver.url}/nul`);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id });
    receiver.respond = (_w, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.from('ok\u0000\u0000done', 'utf8'));
    };
    const [seq] = await insertEvents(f.t.db, txEvents(addr, 1));
    const id = `${sub}-${seq}`;
    await delivered(hook.id, id, k.key);
    const ex = (await get(`/v1/hooks/${hook.id}/deliveries/${id}/exchange`, k.key)).json();
    expect(ex.response).toMatchObject({ status: 200, body: 'ok\ufffd\ufffddone', error: null });
  });
});
