/**
 * Revoking an API key ends every channel of that key, in every process, at once: its open
 * WebSocket streams on two stream processes are closed (4401, with a stream.error first), the
 * relay logs and queues no delivery for its hooks from then on, and a delivery already queued
 * (a retry waiting in Redis) is not sent by the worker, running in a child process — it ends
 * `failed` with "API key revoked". Another tenant subscribed to the same address keeps getting
 * everything.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.js';
import { revokeApiKey } from '../../../src/auth/keys.js';
import { startStreams, type StreamsHandle } from '../../../streams/main.js';
import {
  connectStream,
  createStreamsFixture,
  insertEvents,
  newAddress,
  promoteDelayed,
  spawnRole,
  startReceiver,
  streamsConfig,
  type Child,
  type Receiver,
  type StreamsFixture,
} from './harness.js';
import { waitFor } from '../../support/wait.js';

describe('key revocation', () => {
  let f: StreamsFixture;
  let leaked: Receiver;
  let other: Receiver;
  let a: StreamsHandle;
  let b: StreamsHandle;
  let worker: Child;

  beforeAll(async () => {
    f = await createStreamsFixture();
    [leaked, other] = await Promise.all([startReceiver(), startReceiver()]);
    const config = streamsConfig();
    const deps = { config, log: silentLogger(), db: f.t.db, databaseUrl: f.t.url, redisUrl: f.redisUrl, redisPrefix: f.prefix };
    a = await startStreams(deps);
    b = await startStreams({ ...deps, relay: false });
    worker = await spawnRole('worker', f, { webhookTimeoutMs: 2000, workerLockMs: 2000 });
  });
  afterAll(async () => {
    await worker?.kill();
    await b?.stop();
    await a?.stop();
    await Promise.all([leaked?.close(), other?.close()]);
    await f?.drop();
  });

  it('closes its streams everywhere, queues nothing more for its hooks and sends nothing already queued', async () => {
    const addr = newAddress();
    const k = await f.newKey();
    const hook = await f.httpHook(k.id, leaked.url);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id });
    const k2 = await f.newKey();
    const hook2 = await f.httpHook(k2.id, other.url);
    const sub2 = await f.subscribe(k2.id, { ...addr, hookId: hook2.id });

    // The leaked key's receiver fails its first delivery: a retry waits in Redis.
    leaked.respond = (_req, res) => {
      res.writeHead(500);
      res.end('not now');
    };
    const clients = await Promise.all([a, b].map((s) => connectStream(`ws://127.0.0.1:${s.port}/v1/stream`, k.key)));
    for (const c of clients) await waitFor('stream live', () => c.messages.some((m) => m.type === 'stream.live'), 10_000);
    const [first] = await insertEvents(f.t.db, [{ type: 'tx.unconfirmed', ...addr }]);
    for (const c of clients) await waitFor('the first event on both streams', () => c.events().some((e) => e.id === Number(first)), 10_000);
    await waitFor("the first attempt at the leaked key's hook", () => leaked.received.length === 1, 10_000);
    await waitFor("the other key's delivery", () => other.received.length === 1, 10_000);
    await waitFor(
      'the retry scheduled',
      async () => {
        const d = await f.t.db
          .selectFrom('deliveries')
          .select(['status', 'attempts'])
          .where('id', '=', `${sub}-${first}`)
          .executeTakeFirst();
        return d?.status === 'pending' && d.attempts === 1;
      },
      10_000,
    );
    leaked.respond = (_req, res) => {
      res.writeHead(200);
      res.end('ok');
    };

    const revokedAt = Date.now();
    expect(await revokeApiKey(f.t.db, k.id)).toBe(1);
    const closes = await Promise.race([
      Promise.all(clients.map((c) => c.closed)),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the revoked key's streams are still open 10 s later")), 10_000)),
    ]);
    // A notification, not the periodic check (every 5 s), closed them.
    expect(Date.now() - revokedAt).toBeLessThan(4000);
    for (const [i, c] of closes.entries()) {
      expect(c, `stream ${i}`).toEqual({ code: 4401, reason: 'API key revoked' });
      expect(clients[i]!.messages.at(-1)).toMatchObject({ type: 'stream.error', error_code: 'ERR_API_KEY_INVALID' });
    }

    // New events: the other key gets them, the revoked key's hook has nothing logged or sent.
    const later = await insertEvents(f.t.db, [
      { type: 'tx.unconfirmed', ...addr },
      { type: 'tx.unconfirmed', ...addr },
    ]);
    await waitFor(
      "the other key's deliveries of the later events",
      () => later.every((s) => other.received.some((r) => r.id === `${sub2}-${s}`)),
      15_000,
    );
    const logged = await f.t.db.selectFrom('deliveries').select('id').where('subscription_id', '=', sub).execute();
    expect(logged.map((d) => d.id)).toEqual([`${sub}-${first}`]);

    // The retry already queued runs now: the worker refuses to send it.
    await promoteDelayed(f.redisUrl, f.prefix, 'webhooks', 1);
    await waitFor(
      'the queued retry failed as revoked',
      async () => {
        const d = await f.t.db
          .selectFrom('deliveries')
          .select(['status', 'last_error'])
          .where('id', '=', `${sub}-${first}`)
          .executeTakeFirst();
        return d?.status === 'failed' && d.last_error === 'API key revoked';
      },
      15_000,
    );
    expect(leaked.received).toHaveLength(1);
  });
});
