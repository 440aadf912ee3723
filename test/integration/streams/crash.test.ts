/**
 * Crashes, with the relay and the workers in child processes
 * killed by SIGKILL:
 * - the relay+worker process is killed at seeded random moments while events keep coming, so
 *   kills land between the delivery-log commit and the BullMQ enqueue, between enqueue and the
 *   cursor move, and between enqueue and delivery; a last process then drains. Every outbox
 *   event reaches the receiver at least once with its stable webhook-id, duplicates are byte
 *   for byte the same, and no webhook exists without an outbox row.
 * - a worker is killed with deliveries in flight; another worker re-runs the stalled jobs and
 *   the receiver sees duplicates only under the same webhook-id.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { silentLogger } from '../../../src/log.js';
import { startStreams, startWorker, type StreamsHandle } from '../../../streams/main.js';
import { createDeliveryQueues } from '../../../streams/queues.js';
import { upsertDeliveries } from '../../../src/db/queries/tenancy-deliveries.js';
import { readStreamState } from '../../../streams/outbox.js';
import { crashSeed, seededRandom } from '../../support/chain-crash.js';
import {
  createStreamsFixture,
  insertEvents,
  newAddress,
  spawnRole,
  startReceiver,
  txEvents,
  streamsConfig,
  type Receiver,
  type StreamsFixture,
} from './harness.js';
import { waitFor } from '../../support/wait.js';

const CHILD_CONFIG = { relayPollMs: 10, relayBatchSize: 7, workerLockMs: 1500, deliveryRescueMs: 1500, webhookTimeoutMs: 3000 };

async function expectEveryEventDelivered(
  f: StreamsFixture,
  receiver: Receiver,
  sub: string,
  secret: string,
  seqs: bigint[],
): Promise<void> {
  const want = new Set(seqs.map((s) => `${sub}-${s}`));
  await waitFor('every event at the receiver', () => [...want].every((id) => receiver.received.some((r) => r.id === id)), 60_000);
  await waitFor(
    'delivery log all delivered',
    async () => {
      const rows = await f.t.db.selectFrom('deliveries').select(['id', 'status']).where('subscription_id', '=', sub).execute();
      return rows.length === want.size && rows.every((r) => r.status === 'delivered');
    },
    30_000,
  );
  const wh = new Webhook(secret);
  const bodies = new Map<string, string>();
  for (const r of receiver.received) {
    // No webhook without an outbox row (of this subscription).
    expect(want.has(r.id), r.id).toBe(true);
    const payload = wh.verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature }) as {
      id: number;
    };
    expect(`${sub}-${payload.id}`).toBe(r.id);
    const seen = bodies.get(r.id);
    if (seen !== undefined) expect(r.body).toBe(seen);
    bodies.set(r.id, r.body);
  }
}

describe('crashes', () => {
  let f: StreamsFixture;
  let receiver: Receiver;
  beforeAll(async () => {
    f = await createStreamsFixture();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await f?.drop();
  });

  it('loses no event when the relay+worker process is killed -9 at random points', async () => {
    const rnd = seededRandom(crashSeed('streams relay crash schedule'));
    const k = await f.newKey();
    const addr = newAddress();
    const hook = await f.httpHook(k.id, receiver.url);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id });

    const seqs: bigint[] = [];
    let producing = true;
    const producer = (async () => {
      while (producing && seqs.length < 400) {
        seqs.push(...(await insertEvents(f.t.db, txEvents(addr, 1 + Math.floor(rnd() * 6)))));
        await new Promise((r) => setTimeout(r, 10 + rnd() * 30));
      }
    })();
    const kills = 8;
    for (let i = 0; i < kills; i++) {
      const child = await spawnRole('both', f, CHILD_CONFIG);
      await new Promise((r) => setTimeout(r, 50 + rnd() * 400));
      await child.kill();
    }
    producing = false;
    await producer;
    const last = await spawnRole('both', f, CHILD_CONFIG);
    try {
      await expectEveryEventDelivered(f, receiver, sub, hook.secret, seqs);
    } finally {
      await last.kill();
    }
    const dupes = receiver.received.length - new Set(receiver.received.map((r) => r.id)).size;
    console.info(`${seqs.length} events, ${kills} kills, ${receiver.received.length} requests, ${dupes} duplicates`);
  });

  it('re-runs deliveries of a worker killed mid-delivery on another worker, under the same webhook-id', async () => {
    const r2 = await startReceiver();
    let holding = true;
    r2.respond = async (_w, res) => {
      while (holding) await new Promise((r) => setTimeout(r, 20));
      res.writeHead(200);
      res.end();
    };
    const k = await f.newKey();
    const addr = newAddress();
    const hook = await f.httpHook(k.id, r2.url);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id });
    // A job per delivery (every delivery in flight at once); batch jobs killed mid-batch: batches.test.ts.
    const relay: StreamsHandle = await startStreams({
      config: streamsConfig({ deliveryBatchSize: 1 }),
      log: silentLogger(),
      db: f.t.db,
      redisUrl: f.redisUrl,
      redisPrefix: f.prefix,
    });
    // (the whole worker for this one hook and key: all 20 in flight at once)
    const w1 = await spawnRole('worker', f, { ...CHILD_CONFIG, webhookKeyShare: 1, webhookHookShare: 1 });
    try {
      const seqs = await insertEvents(f.t.db, txEvents(addr, 20));
      // Every delivery is in flight at w1 (the receiver holds the answers), then w1 dies.
      await waitFor('w1 has every delivery in flight', () => new Set(r2.received.map((r) => r.id)).size === 20, 20_000);
      await w1.kill();
      holding = false;
      const w2 = await spawnRole('worker', f, CHILD_CONFIG);
      try {
        await expectEveryEventDelivered(f, r2, sub, hook.secret, seqs);
        // Each delivery was tried by w1 and again by w2: two requests, one webhook-id.
        for (const s of seqs) expect(r2.received.filter((r) => r.id === `${sub}-${s}`).length).toBeGreaterThanOrEqual(2);
      } finally {
        await w2.kill();
      }
    } finally {
      await relay.stop();
      await r2.close();
    }
  });

  it('replays a relay batch cut right after the log commit, or right after the enqueue, into one delivery each', async () => {
    const r3 = await startReceiver();
    const k = await f.newKey();
    const hook = await f.httpHook(k.id, r3.url);
    const a = newAddress();
    const b = newAddress();
    const subA = await f.subscribe(k.id, { ...a, hookId: hook.id });
    const subB = await f.subscribe(k.id, { ...b, hookId: hook.id });
    const [seqA] = await insertEvents(f.t.db, txEvents(a, 1));
    const [seqB] = await insertEvents(f.t.db, txEvents(b, 1));
    const cursor = (await readStreamState(f.t.db)).relay;
    expect(cursor).toBeLessThan(seqA!);
    const row = (sub: string, seq: bigint) => ({
      id: `${sub}-${seq}`,
      hookId: hook.id,
      keyId: k.id,
      subscriptionId: sub,
      eventId: seq,
      eventType: 'tx.unconfirmed',
      payload: '{"stale":true}',
      status: 'pending' as const,
    });
    // What a relay killed mid-batch leaves behind: A's delivery logged but never enqueued;
    // B's logged and enqueued; the cursor not moved for either.
    await upsertDeliveries(f.t.db, [row(subA, seqA!), row(subB, seqB!)]);
    const producer = createDeliveryQueues({ redisUrl: f.redisUrl, prefix: f.prefix });
    const jobB = {
      transport: 'http' as const,
      delivery: `${subB}-${seqB}`,
      hook: hook.id,
      payload: '{"stale":true}',
      type: 'tx.unconfirmed',
      redeliveries: 0,
    };
    // (Until its connection is up the producer refuses, as it does while Redis is away.)
    await waitFor('enqueue', () => producer.enqueue([jobB]).then(() => true), 30_000);
    await producer.close();

    const deps = { config: streamsConfig(), log: silentLogger(), db: f.t.db, redisUrl: f.redisUrl, redisPrefix: f.prefix };
    const streams = await startStreams(deps);
    const worker = await startWorker(deps);
    try {
      await waitFor(
        'both delivered',
        () => [`${subA}-${seqA}`, `${subB}-${seqB}`].every((id) => r3.received.some((x) => x.id === id)),
        15_000,
      );
      // The sentinel: an event for a third subscription of the same hook, relayed after the
      // replayed batch; a second job for A or B would be queued before its job, and taken first.
      const c = newAddress();
      const subC = await f.subscribe(k.id, { ...c, hookId: hook.id });
      const [seqC] = await insertEvents(f.t.db, txEvents(c, 1));
      await waitFor('the sentinel delivered', () => r3.received.some((x) => x.id === `${subC}-${seqC}`), 15_000);
      // One delivery each: the replayed batch found A pending and enqueued it, and B's job id was taken.
      expect(r3.received.filter((x) => x.id === `${subA}-${seqA}`)).toHaveLength(1);
      expect(r3.received.filter((x) => x.id === `${subB}-${seqB}`)).toHaveLength(1);
      expect((await readStreamState(f.t.db)).relay).toBeGreaterThanOrEqual(seqB!);
    } finally {
      await worker.stop();
      await streams.stop();
      await r3.close();
    }
  });
});
