/**
 * Crashes (RELIABILITY.md cases 12 and 13), with the relay and the workers in child processes
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
import { startStreams, type StreamsHandle } from '../../../streams/main.js';
import {
  createStreamsFixture,
  insertEvents,
  newAddress,
  seededRandom,
  spawnRole,
  startReceiver,
  txEvents,
  waitFor,
  streamsConfig,
  type Receiver,
  type StreamsFixture,
} from './harness.js';

const CHILD_CONFIG = { relayPollMs: 10, relayBatchSize: 7, workerLockMs: 1500, deliveryRescueMs: 1500, webhookTimeoutMs: 3000 };

async function expectEveryEventDelivered(f: StreamsFixture, receiver: Receiver, sub: string, secret: string, seqs: bigint[]): Promise<void> {
  const want = new Set(seqs.map((s) => `${sub}-${s}`));
  await waitFor(() => [...want].every((id) => receiver.received.some((r) => r.id === id)), 60_000, 'every event at the receiver');
  await waitFor(async () => {
    const rows = await f.t.db.selectFrom('deliveries').select(['id', 'status']).where('subscription_id', '=', sub).execute();
    return rows.length === want.size && rows.every((r) => r.status === 'delivered');
  }, 30_000, 'delivery log all delivered');
  const wh = new Webhook(secret);
  const bodies = new Map<string, string>();
  for (const r of receiver.received) {
    // No webhook without an outbox row (of this subscription).
    expect(want.has(r.id), r.id).toBe(true);
    const payload = wh.verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature }) as { id: number };
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
    const seed = Number(process.env.STREAMS_CRASH_SEED ?? Date.now() % 1_000_000);
    console.info(`crash schedule seed ${seed} (STREAMS_CRASH_SEED=${seed} replays it)`);
    const rnd = seededRandom(seed);
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
    const relay: StreamsHandle = await startStreams({ config: streamsConfig(), log: silentLogger(), db: f.t.db, redisUrl: f.redisUrl, redisPrefix: f.prefix });
    const w1 = await spawnRole('worker', f, CHILD_CONFIG);
    try {
      const seqs = await insertEvents(f.t.db, txEvents(addr, 20));
      // Every delivery is in flight at w1 (the receiver holds the answers), then w1 dies.
      await waitFor(() => new Set(r2.received.map((r) => r.id)).size === 20, 20_000, 'w1 has every delivery in flight');
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
});
