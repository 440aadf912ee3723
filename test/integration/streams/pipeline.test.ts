/**
 * The whole streams path in one process, on real Postgres, Redis, HTTP and WebSocket sockets:
 * outbox rows → relay → (delivery log + BullMQ) → webhook worker → a local receiver, and → the
 * WebSocket hub; SNS through a local endpoint speaking the Publish API. Signatures are checked
 * with the official standardwebhooks library; the delivery log ends `delivered`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { silentLogger } from '../../../src/log.js';
import { startStreams, startWorker, type StreamsHandle, type WorkerHandle } from '../../../streams/main.js';
import { startSnsEndpoint, type SnsEndpoint } from '../../support/sns-endpoint.js';
import {
  connectStream,
  createStreamsFixture,
  insertEvents,
  newAddress,
  promoteDelayed,
  startReceiver,
  streamsConfig,
  type Receiver,
  type StreamsFixture,
} from './harness.js';
import { waitFor } from '../../support/wait.js';

describe('streams pipeline', () => {
  let f: StreamsFixture;
  let receiver: Receiver;
  let sns: SnsEndpoint;
  let streams: StreamsHandle;
  let worker: WorkerHandle;
  let wsUrl: string;

  beforeAll(async () => {
    f = await createStreamsFixture();
    receiver = await startReceiver();
    sns = await startSnsEndpoint();
    const config = streamsConfig({ snsEndpoint: sns.url });
    const deps = { config, log: silentLogger(), db: f.t.db, redisUrl: f.redisUrl, redisPrefix: f.prefix };
    streams = await startStreams(deps);
    worker = await startWorker({ ...deps, sns: { credentials: sns.credentials } });
    wsUrl = `ws://127.0.0.1:${streams.port}/v1/stream`;
  });
  afterAll(async () => {
    await worker?.stop();
    await streams?.stop();
    await receiver?.close();
    await sns?.close();
    await f?.drop();
  });

  it("delivers an address's events to its webhook, signed, and to the key's stream, in order", async () => {
    const k = await f.newKey();
    const addr = newAddress();
    const hook = await f.httpHook(k.id, receiver.url);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id, confirmations: 3 });
    const client = await connectStream(wsUrl, k.key);
    await waitFor('stream live', () => client.messages.some((m) => m.type === 'stream.live'), 30_000);

    const seqs = await insertEvents(f.t.db, [
      { type: 'tx.unconfirmed', ...addr, received: 5000n },
      { type: 'tx.confirmed', ...addr, confirmations: 1, height: 101, received: 5000n },
      { type: 'tx.confirmations', ...addr, confirmations: 2, height: 101 },
      { type: 'tx.confirmations', ...addr, confirmations: 3, height: 101 },
      { type: 'tx.confirmations', ...addr, confirmations: 4, height: 101 },
    ]);
    const expected = seqs.slice(0, 4).map(Number);

    await waitFor('stream events', () => client.events().length >= 4, 10_000);
    expect(client.events().map((e) => e.id)).toEqual(expected);
    expect(client.events().map((e) => e.type)).toEqual(['tx.unconfirmed', 'tx.confirmed', 'tx.confirmations', 'tx.confirmations']);
    expect(client.events()[1]).toMatchObject({
      subscription_id: sub,
      action: hook.id,
      address: addr.address,
      received: 5000,
      confirmations: 1,
      block: { height: 101 },
    });

    await waitFor('webhooks', () => new Set(receiver.received.map((r) => r.id)).size >= 4, 10_000);
    const wh = new Webhook(hook.secret);
    const got = receiver.received.filter((r) => r.id.startsWith(sub));
    expect([...new Set(got.map((r) => r.id))].sort()).toEqual(expected.map((s) => `${sub}-${s}`).sort());
    for (const r of got) {
      const payload = wh.verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature }) as {
        id: number;
      };
      expect(r.id).toBe(`${sub}-${payload.id}`);
      expect(r.headers['content-type']).toBe('application/json');
      // The webhook body is byte for byte the stream frame.
      expect(JSON.parse(r.body)).toEqual(client.events().find((e) => e.id === payload.id));
    }
    await waitFor(
      'delivery log',
      async () => {
        const rows = await f.t.db
          .selectFrom('deliveries')
          .select(['status', 'attempts', 'last_status'])
          .where('subscription_id', '=', sub)
          .execute();
        return rows.length === 4 && rows.every((r) => r.status === 'delivered' && r.attempts === 1 && r.last_status === 200);
      },
      30_000,
    );
    // tx.confirmations beyond the target (4 > 3) went nowhere.
    expect(client.events().some((e) => e.id === Number(seqs[4]))).toBe(false);
    client.close();
  });

  it('keeps keys apart and sends chain events and key events to their keys only', async () => {
    const a = await f.newKey();
    const b = await f.newKey();
    const addrA = newAddress();
    await f.subscribe(a.id, addrA);
    await f.subscribe(b.id, { chain: true });
    const ca = await connectStream(wsUrl, a.key);
    const cb = await connectStream(wsUrl, b.key, { query: true });
    await waitFor(
      'both streams live',
      () => ca.messages.some((m) => m.type === 'stream.live') && cb.messages.some((m) => m.type === 'stream.live'),
      30_000,
    );
    const [tx, block, stamp] = await insertEvents(f.t.db, [
      { type: 'tx.unconfirmed', ...addrA },
      { type: 'block.connected', height: 200 },
      { type: 'stamp.confirmed', keyId: b.id, height: 200, confirmations: 1 },
    ]);
    await waitFor('events to both keys', () => ca.events().length === 1 && cb.events().length === 2, 10_000);
    expect(ca.events().map((e) => e.id)).toEqual([Number(tx)]);
    expect(cb.events().map((e) => [e.id, e.type])).toEqual([
      [Number(block), 'block.connected'],
      [Number(stamp), 'stamp.confirmed'],
    ]);
    expect(cb.events()[1]).toMatchObject({ subscription_id: null, action: null });
    ca.close();
    cb.close();
  });

  it("takes a browser's key as a subprotocol, answers blockwire.v1 and never echoes the key", async () => {
    const k = await f.newKey();
    const addr = newAddress();
    await f.subscribe(k.id, addr);
    const c = await connectStream(wsUrl, k.key, { protocol: true });
    expect(c.ws.protocol).toBe('blockwire.v1');
    await waitFor('live', () => c.messages.some((m) => m.type === 'stream.live'), 30_000);
    const [seq] = await insertEvents(f.t.db, [{ type: 'tx.unconfirmed', ...addr }]);
    await waitFor('the event', () => c.events().some((e) => e.id === Number(seq)), 10_000);
    c.close();
    const wrong = `${k.key.slice(0, -2)}${k.key.endsWith('AA') ? 'BB' : 'AA'}`;
    await expect(connectStream(wsUrl, wrong, { protocol: true })).rejects.toMatchObject({
      status: 401,
      body: expect.stringContaining('ERR_API_KEY_INVALID'),
    });
  });

  it('publishes the same JSON to SNS with the delivery id as an attribute', async () => {
    const k = await f.newKey();
    const addr = newAddress();
    const arn = 'arn:aws:sns:us-east-1:123456789012:blockwire-events';
    sns.createTopic(arn);
    const hook = await f.snsHook(k.id, arn);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id });
    sns.failNext(1, { status: 500, code: 'InternalError', message: 'try again' });
    const [seq] = await insertEvents(f.t.db, [{ type: 'tx.unconfirmed', ...addr, received: 777n }]);
    // The first Publish fails (500): the delivery waits ~10 s; promote it instead of waiting.
    await waitFor(
      'first attempt',
      async () =>
        (await f.t.db.selectFrom('deliveries').select('attempts').where('subscription_id', '=', sub).executeTakeFirst())?.attempts === 1,
      10_000,
    );
    await promoteDelayed(f.redisUrl, f.prefix, 'sns', 1);
    await waitFor('SNS message', () => sns.messages.some((m) => m.topicArn === arn), 10_000);
    const m = sns.messages.find((x) => x.topicArn === arn)!;
    expect(m.attributes).toEqual({ 'webhook-id': `${sub}-${seq}`, 'event-type': 'tx.unconfirmed' });
    expect(JSON.parse(m.message)).toMatchObject({
      id: Number(seq),
      type: 'tx.unconfirmed',
      subscription_id: sub,
      action: hook.id,
      received: 777,
    });
    expect(sns.badSignatures).toBe(0);
    await waitFor(
      'delivered',
      async () =>
        (await f.t.db.selectFrom('deliveries').select('status').where('subscription_id', '=', sub).executeTakeFirst())?.status ===
        'delivered',
      30_000,
    );

    // A topic that no longer exists disables the hook (like a 410).
    sns.deleteTopic(arn);
    await insertEvents(f.t.db, [{ type: 'tx.unconfirmed', ...addr }]);
    await waitFor(
      'hook disabled',
      async () => (await f.t.db.selectFrom('hooks').select('disabled_at').where('id', '=', hook.id).executeTakeFirst())?.disabled_at,
      10_000,
    );
  });
});
