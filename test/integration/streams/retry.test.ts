/**
 * Retry schedule and terminal states with a real worker, Redis and a
 * local receiver. Time is advanced by promoting delayed BullMQ jobs (each job keeps the delay
 * the schedule chose, so the whole 72 h schedule is checked in seconds): 500s until the dead
 * letter, then manual redelivery through the API; a receiver that is down, then 500, then 200;
 * a timeout; 429 with Retry-After; 410 (hook disabled); 3xx (not followed); 404 (permanent).
 * And the delivery side of the SSRF corpus (case 19): a name that rebinds to 127.0.0.1 after
 * registration and IP literals are refused at delivery.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { silentLogger } from '../../../src/log.js';
import { buildApi } from '../../../api/app.js';
import { startStreams, startWorker, type StreamsHandle, type WorkerHandle } from '../../../streams/main.js';
import { MAX_ATTEMPTS, MIN_RETRY_WINDOW_MS, RETRY_JITTER, nominalDelay } from '../../../streams/retry.js';
import type { Resolver } from '../../../src/net/hook-url.js';
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

type Setup = { f: StreamsFixture; streams: StreamsHandle; worker: WorkerHandle };

async function setup(over: Parameters<typeof streamsConfig>[0] = {}, resolve?: Resolver): Promise<Setup> {
  const f = await createStreamsFixture();
  const deps = { config: streamsConfig(over), log: silentLogger(), db: f.t.db, redisUrl: f.redisUrl, redisPrefix: f.prefix };
  const streams = await startStreams(deps);
  const worker = await startWorker({ ...deps, ...(resolve ? { resolve } : {}) });
  return { f, streams, worker };
}

async function teardown(s: Setup | undefined): Promise<void> {
  await s?.worker.stop();
  await s?.streams.stop();
  await s?.f.drop();
}

async function row(f: StreamsFixture, id: string) {
  return f.t.db.selectFrom('deliveries').selectAll().where('id', '=', id).executeTakeFirst();
}

describe('retries and terminal states', () => {
  let s: Setup;
  let receiver: Receiver;
  beforeAll(async () => {
    // Overdue-job rescue far away: this test promotes jobs itself.
    s = await setup({ webhookTimeoutMs: 500, deliveryRescueMs: 3_600_000 });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await teardown(s);
    await receiver?.close();
  });

  /** A key with a hook on `path` of the receiver and a subscription; returns ids. */
  async function hooked(path: string) {
    const k = await s.f.newKey();
    const addr = newAddress();
    const hook = await s.f.httpHook(k.id, `${receiver.url}/${path}`);
    const sub = await s.f.subscribe(k.id, { ...addr, hookId: hook.id });
    return { k, addr, hook, sub };
  }

  it(`retries on the schedule for ${MAX_ATTEMPTS} attempts (over 72 h), dead-letters, and redelivers through the API`, async () => {
    const { k, addr, hook, sub } = await hooked('always-500');
    receiver.respond = (_w, res) => {
      res.writeHead(500);
      res.end('nope');
    };
    const [seq] = await insertEvents(s.f.t.db, txEvents(addr, 1));
    const id = `${sub}-${seq}`;
    const delays: number[] = [];
    for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
      const r = await waitFor(
        `attempt ${attempt}`,
        async () => {
          const x = await row(s.f, id);
          return x?.attempts === attempt ? x : undefined;
        },
        10_000,
      );
      expect(r).toMatchObject({ status: 'pending', last_status: 500, last_error: 'receiver answered 500' });
      const [d] = await promoteDelayed(s.f.redisUrl, s.f.prefix, 'webhooks', 1);
      // The log shows when the next attempt comes: the delay BullMQ holds the job for.
      expect(Math.abs(r.next_attempt_at!.getTime() - r.updated_at.getTime() - d!)).toBeLessThan(1000);
      delays.push(d!);
    }
    await waitFor('dead letter', async () => (await row(s.f, id))?.status === 'dead', 10_000);
    const dead = (await row(s.f, id))!;
    expect(dead.attempts).toBe(MAX_ATTEMPTS);
    expect(dead.dead_at).toBeInstanceOf(Date);
    const attempts = receiver.received.filter((r) => r.id === id);
    expect(attempts).toHaveLength(MAX_ATTEMPTS);
    // Each delay within the jitter bounds of its nominal value; together at least 72 h.
    delays.forEach((d, i) => {
      expect(d).toBeGreaterThanOrEqual(Math.floor(nominalDelay(i + 1) * (1 - RETRY_JITTER)));
      expect(d).toBeLessThanOrEqual(Math.ceil(nominalDelay(i + 1) * (1 + RETRY_JITTER)));
    });
    expect(delays.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(MIN_RETRY_WINDOW_MS);
    // Same webhook-id and body on every attempt; every signature valid.
    const wh = new Webhook(hook.secret);
    expect(new Set(attempts.map((a) => a.body)).size).toBe(1);
    for (const a of attempts) wh.verify(a.body, { 'webhook-id': a.id, 'webhook-timestamp': a.timestamp, 'webhook-signature': a.signature });

    // The dead letter shows in the API's log and is redelivered on request.
    receiver.respond = (_w, res) => {
      res.writeHead(204);
      res.end();
    };
    const app = await buildApi({ db: s.f.t.db, log: silentLogger(), network: 'regtest' });
    try {
      const list = await app.inject({ method: 'GET', url: `/v1/hooks/${hook.id}/deliveries?status=dead`, headers: { apiKey: k.key } });
      expect(list.json().map((d: { id: string }) => d.id)).toEqual([id]);
      const re = await app.inject({ method: 'POST', url: `/v1/hooks/${hook.id}/deliveries/${id}/redeliver`, headers: { apiKey: k.key } });
      expect(re.statusCode).toBe(202);
    } finally {
      await app.close();
    }
    await waitFor('redelivered', async () => (await row(s.f, id))?.status === 'delivered', 10_000);
    expect(await row(s.f, id)).toMatchObject({ status: 'delivered', attempts: 1, redeliveries: 1, last_status: 204 });
    expect(receiver.received.filter((r) => r.id === id)).toHaveLength(MAX_ATTEMPTS + 1);
  });

  it('gets every event to a receiver that is down, then answers 500, then 200', async () => {
    const down = await startReceiver();
    const url = down.url;
    await down.close();
    const k = await s.f.newKey();
    const addr = newAddress();
    const hook = await s.f.httpHook(k.id, url);
    const sub = await s.f.subscribe(k.id, { ...addr, hookId: hook.id });
    const seqs = await insertEvents(s.f.t.db, txEvents(addr, 3));
    const ids = seqs.map((q) => `${sub}-${q}`);
    await waitFor(
      'refused attempts',
      async () =>
        (await Promise.all(ids.map((i) => row(s.f, i)))).every((r) => r?.attempts === 1 && /ECONNREFUSED/.test(r.last_error ?? '')),
      10_000,
    );

    // Back up on the same port, answering 500 first.
    const port = Number(new URL(url).port);
    const { createServer } = await import('node:http');
    const got: { id: string; body: string; ts: string; sig: string }[] = [];
    let answer = 500;
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        got.push({
          id: String(req.headers['webhook-id']),
          body,
          ts: String(req.headers['webhook-timestamp']),
          sig: String(req.headers['webhook-signature']),
        });
        res.writeHead(answer);
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
    try {
      await promoteDelayed(s.f.redisUrl, s.f.prefix, 'webhooks', 3);
      await waitFor(
        '500 attempts',
        async () => (await Promise.all(ids.map((i) => row(s.f, i)))).every((r) => r?.attempts === 2 && r.last_status === 500),
        10_000,
      );
      answer = 200;
      await promoteDelayed(s.f.redisUrl, s.f.prefix, 'webhooks', 3);
      await waitFor(
        'delivered',
        async () => (await Promise.all(ids.map((i) => row(s.f, i)))).every((r) => r?.status === 'delivered'),
        10_000,
      );
      const wh = new Webhook(hook.secret);
      for (const id of ids) {
        const mine = got.filter((g) => g.id === id);
        expect(mine).toHaveLength(2);
        for (const g of mine) wh.verify(g.body, { 'webhook-id': g.id, 'webhook-timestamp': g.ts, 'webhook-signature': g.sig });
      }
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('treats a receiver that does not answer in time as a retry', async () => {
    const k = await s.f.newKey();
    const addr = newAddress();
    const slow = await startReceiver();
    slow.respond = () => new Promise(() => undefined);
    const hook = await s.f.httpHook(k.id, slow.url);
    const sub = await s.f.subscribe(k.id, { ...addr, hookId: hook.id });
    const [seq] = await insertEvents(s.f.t.db, txEvents(addr, 1));
    await waitFor('first attempt', async () => (await row(s.f, `${sub}-${seq}`))?.attempts === 1, 10_000);
    expect(await row(s.f, `${sub}-${seq}`)).toMatchObject({ status: 'pending', last_status: null, last_error: 'no answer within 500 ms' });
    await slow.close();
  });

  it('honours Retry-After on 429, disables on 410, does not follow 3xx, fails 404 for good', async () => {
    const make = async (respond: Receiver['respond']) => {
      const r = await startReceiver();
      r.respond = respond;
      const k = await s.f.newKey();
      const addr = newAddress();
      const hook = await s.f.httpHook(k.id, r.url);
      const sub = await s.f.subscribe(k.id, { ...addr, hookId: hook.id });
      return { r, addr, hook, sub };
    };
    const metadata = await startReceiver();
    const limited = await make((_w, res) => {
      res.writeHead(429, { 'retry-after': '120' });
      res.end();
    });
    const gone = await make((_w, res) => {
      res.writeHead(410);
      res.end();
    });
    const moved = await make((_w, res) => {
      res.writeHead(302, { location: `${metadata.url}/latest/meta-data/` });
      res.end();
    });
    const missing = await make((_w, res) => {
      res.writeHead(404);
      res.end();
    });
    try {
      const seqs = new Map<string, bigint>();
      for (const x of [limited, gone, moved, missing]) seqs.set(x.sub, (await insertEvents(s.f.t.db, txEvents(x.addr, 1)))[0]!);
      const id = (x: { sub: string }) => `${x.sub}-${seqs.get(x.sub)}`;
      await waitFor(
        'first attempts',
        async () => (await Promise.all([limited, gone, moved, missing].map((x) => row(s.f, id(x))))).every((r) => r && r.attempts === 1),
        10_000,
      );

      const l = (await row(s.f, id(limited)))!;
      expect(l).toMatchObject({ status: 'pending', last_status: 429 });
      expect(l.next_attempt_at!.getTime() - l.updated_at.getTime()).toBeGreaterThanOrEqual(119_000);
      expect(await row(s.f, id(gone))).toMatchObject({
        status: 'failed',
        last_status: 410,
        last_error: 'receiver answered 410 Gone: hook disabled',
      });
      const hookRow = await s.f.t.db.selectFrom('hooks').selectAll().where('id', '=', gone.hook.id).executeTakeFirstOrThrow();
      expect(hookRow.disabled_reason).toBe('receiver answered 410 Gone');
      expect(await row(s.f, id(moved))).toMatchObject({ status: 'pending', last_status: 302 });
      expect((await row(s.f, id(moved)))!.last_error).toContain('not followed');
      expect(metadata.received).toHaveLength(0);
      expect(await row(s.f, id(missing))).toMatchObject({ status: 'failed', last_status: 404, attempts: 1 });

      // The delayed 429 job waits at least Retry-After.
      const delays = await promoteDelayed(s.f.redisUrl, s.f.prefix, 'webhooks', 2);
      expect(Math.max(...delays)).toBeGreaterThanOrEqual(120_000);
      // Events for the disabled hook are logged as failed without an attempt.
      const [later] = await insertEvents(s.f.t.db, txEvents(gone.addr, 1));
      await waitFor('the later event failed', async () => (await row(s.f, `${gone.sub}-${later}`))?.status === 'failed', 10_000);
      expect(await row(s.f, `${gone.sub}-${later}`)).toMatchObject({ attempts: 0, last_error: 'hook disabled' });
      expect(gone.r.received).toHaveLength(1);
    } finally {
      for (const x of [limited, gone, moved, missing]) await x.r.close();
      await metadata.close();
    }
  });
});

describe('SSRF at delivery', () => {
  let s: Setup;
  let receiver: Receiver;
  const dns: Record<string, string> = {};
  const resolve: Resolver = async (h) => {
    if (!dns[h]) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return [{ address: dns[h]!, family: 4 }];
  };
  beforeAll(async () => {
    s = await setup({ allowPrivateHooks: false, deliveryRescueMs: 3_600_000 }, resolve);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await teardown(s);
    await receiver?.close();
  });

  it('refuses a name that resolves to loopback at delivery, and stored IP-literal URLs', async () => {
    // Registered while the name looked public (as the registration test shows), it now rebinds to loopback.
    dns['rebind.example.com'] = '127.0.0.1';
    const k = await s.f.newKey();
    const cases = [
      'https://rebind.example.com/hook',
      'https://127.0.0.1/hook',
      'https://[::ffff:169.254.169.254]/hook',
      `http://127.0.0.1:${new URL(receiver.url).port}/hook`,
    ];
    const ids: string[] = [];
    for (const url of cases) {
      const addr = newAddress();
      const hook = await s.f.httpHook(k.id, url);
      const sub = await s.f.subscribe(k.id, { ...addr, hookId: hook.id });
      const [seq] = await insertEvents(s.f.t.db, txEvents(addr, 1));
      ids.push(`${sub}-${seq}`);
    }
    await waitFor('refusals', async () => (await Promise.all(ids.map((i) => row(s.f, i)))).every((r) => r?.status === 'failed'), 10_000);
    const rows = await Promise.all(ids.map((i) => row(s.f, i)));
    expect(rows[0]!.last_error).toBe(
      'refused at delivery: url host rebind.example.com resolves to 127.0.0.1, a private, loopback or reserved address',
    );
    expect(rows[1]!.last_error).toBe('refused at delivery: url host 127.0.0.1 is a private, loopback or reserved address');
    expect(rows[2]!.last_error).toMatch(/^refused at delivery: url host \[::ffff:a9fe:a9fe\] is a private/);
    expect(rows[3]!.last_error).toBe('refused at delivery: url must use https');
    expect(receiver.received).toHaveLength(0);
  });
});
