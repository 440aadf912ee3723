/**
 * The circuit breaker of a hook on real PostgreSQL, Redis and HTTP: a receiver that accepts and
 * never answers times out `BLOCKWIRE_WEBHOOK_BREAKER_FAILURES` times in a row, the breaker opens
 * (shown on the hook, GET /v1/hooks/{id}), nothing is sent to it during the pause, and its
 * deliveries are kept; once the receiver answers, the probe after the pause closes the breaker
 * and every delivery arrives — duplicates only as the documented at-least-once (same
 * webhook-id and body: an attempt that timed out may have reached the receiver).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.js';
import { buildApi } from '../../../api/app.js';
import { startStreams, startWorker, type StreamsHandle, type WorkerHandle } from '../../../streams/main.js';
import {
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

describe('hook circuit breaker', () => {
  let f: StreamsFixture;
  let streams: StreamsHandle;
  let worker: WorkerHandle;
  let receiver: Receiver;
  let api: Awaited<ReturnType<typeof buildApi>>;
  const OPEN_MS = 3000;
  beforeAll(async () => {
    f = await createStreamsFixture();
    // One delivery of the hook at a time (8 × 0.125), two timeouts open the breaker for 3 s.
    const config = streamsConfig({
      webhookTimeoutMs: 500,
      webhookConcurrency: 8,
      webhookBreakerFailures: 2,
      webhookBreakerOpenMs: OPEN_MS,
      deliveryRescueMs: 3_600_000,
    });
    const deps = { config, log: silentLogger(), db: f.t.db, redisUrl: f.redisUrl, redisPrefix: f.prefix };
    streams = await startStreams(deps);
    worker = await startWorker(deps);
    receiver = await startReceiver();
    api = await buildApi({ db: f.t.db, log: silentLogger(), network: 'regtest' });
  });
  afterAll(async () => {
    await api?.close();
    await worker?.stop();
    await streams?.stop();
    await receiver?.close();
    await f?.drop();
  });

  it('opens on a hanging receiver, sends nothing while open, keeps every delivery, and closes once it answers', async () => {
    const k = await f.newKey();
    const addr = newAddress();
    const hook = await f.httpHook(k.id, receiver.url);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id });
    // Accepts, reads the request, never answers.
    receiver.respond = () => undefined;
    const seqs = await insertEvents(f.t.db, txEvents(addr, 6));
    const ids = seqs.map((s) => `${sub}-${s}`);

    const opened = await waitFor(
      'the breaker open',
      async () => {
        const h = await f.t.db
          .selectFrom('hooks')
          .select(['breaker_state', 'breaker_until'])
          .where('id', '=', hook.id)
          .executeTakeFirstOrThrow();
        return h.breaker_state === 'open' ? h : undefined;
      },
      60_000,
    );
    const until = opened.breaker_until!.getTime();
    expect(worker.workers[0]!.fairness().breakers.get(hook.id)).toMatchObject({ state: 'open', until });
    // Shown on the hook (the pause is 3 s: still open).
    const res = await api.inject({ method: 'GET', url: `/v1/hooks/${hook.id}`, headers: { apiKey: k.key } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      id: hook.id,
      breaker: { state: 'open', until: `${opened.breaker_until!.toISOString().slice(0, 19)}Z` },
    });

    // The receiver answers from now on; what it got before were attempts that timed out.
    const hung = receiver.received.length;
    receiver.respond = (_req, res) => {
      res.writeHead(200);
      res.end('ok');
    };

    // The probe after the pause closes it, and every delivery arrives.
    await waitFor(
      'the breaker closed',
      async () => {
        const h = await f.t.db.selectFrom('hooks').select('breaker_state').where('id', '=', hook.id).executeTakeFirstOrThrow();
        return h.breaker_state === 'closed';
      },
      60_000,
    );
    const rows = await waitFor(
      'every delivery delivered',
      async () => {
        const r = await f.t.db.selectFrom('deliveries').selectAll().where('subscription_id', '=', sub).execute();
        return r.length === ids.length && r.every((d) => d.status === 'delivered') ? r : undefined;
      },
      120_000,
    );
    expect(worker.workers[0]!.fairness().breakers.has(hook.id)).toBe(false);

    // Nothing was sent during the pause: two attempts (one at a time: the hook's share is 1)
    // timed out, the breaker opened, and the next request came at the pause's end.
    expect(receiver.received.filter((w) => w.at < until - 50)).toHaveLength(2);
    // Every delivery once delivered; a repeat only of an attempt that timed out, same id and body.
    expect(new Set(receiver.received.map((w) => w.id))).toEqual(new Set(ids));
    const bodies = new Map<string, string>();
    for (const w of receiver.received) {
      expect(bodies.get(w.id) ?? w.body).toBe(w.body);
      bodies.set(w.id, w.body);
    }
    const timedOut = receiver.received.slice(0, hung).map((w) => w.id);
    expect(
      receiver.received
        .slice(hung)
        .map((w) => w.id)
        .sort(),
    ).toEqual([...ids].sort());
    // The pause cost no attempt: each delivery's attempts are its timed-out ones and the one that got through.
    // (at most: a job whose lock lapsed on a loaded machine runs again under the same attempt number)
    for (const d of rows) expect(d.attempts).toBeLessThanOrEqual(1 + timedOut.filter((id) => id === d.id).length);
  });
});
