/**
 * Batch jobs: a hook's new deliveries from one relay batch ride in one BullMQ job, on real
 * PostgreSQL, Redis and HTTP. Each delivery keeps its webhook-id, its log row, its attempts and
 * its retry schedule: a retryable failure leaves the batch for a delayed job of its own (id =
 * delivery id), permanent failures, 410, a revoked key and a deleted hook are per delivery as
 * with jobs of their own. A replayed relay batch sends nothing twice, the rescue re-creates the
 * deliveries of a batch job Redis lost (and leaves a live one alone), a worker killed mid-batch
 * leaves the rest to another worker, which skips what the log says was delivered, and a worker
 * killed while a batch's outcomes wait for their window leaves the whole batch to another
 * worker, which sends it again. SNS batches the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { silentLogger } from '../../../src/log.js';
import type { Config } from '../../../src/config.js';
import { revokeApiKey } from '../../../src/auth/keys.js';
import { recordOutcomes, upsertDeliveries, type NewDelivery } from '../../../src/db/queries/tenancy-deliveries.js';
import { startStreams, startWorker, type StreamsHandle, type WorkerHandle } from '../../../streams/main.js';
import { batchJobId, createDeliveryQueues, type DeliveryQueues } from '../../../streams/queues.js';
import { readStreamState } from '../../../streams/outbox.js';
import { startSnsEndpoint } from '../../support/sns-endpoint.js';
import {
  createStreamsFixture,
  insertEvents,
  newAddress,
  promoteDelayed,
  spawnRole,
  startReceiver,
  streamsConfig,
  txEvents,
  type StreamsFixture,
} from './harness.js';
import { waitFor } from '../../support/wait.js';

describe('delivery batches', () => {
  let f: StreamsFixture;
  let producer: DeliveryQueues;
  beforeAll(async () => {
    f = await createStreamsFixture();
    producer = createDeliveryQueues({ redisUrl: f.redisUrl, prefix: f.prefix });
  });
  afterAll(async () => {
    await producer?.close();
    await f?.drop();
  });

  /** Relay (unless `relay: false`) and worker in this process, with batches of up to 50 sent 2 at a time. */
  async function start(
    over: Partial<Config> = {},
    opts: { relay?: boolean; worker?: boolean; sns?: Awaited<ReturnType<typeof startSnsEndpoint>> } = {},
  ) {
    const config = streamsConfig({
      deliveryBatchSize: 50,
      deliveryBatchConcurrency: 2,
      deliveryRescueMs: 3_600_000,
      ...(opts.sns ? { snsEndpoint: opts.sns.url } : {}),
      ...over,
    });
    const deps = { config, log: silentLogger(), db: f.t.db, redisUrl: f.redisUrl, redisPrefix: f.prefix };
    let streams: StreamsHandle | undefined;
    let worker: WorkerHandle | undefined;
    try {
      if (opts.relay !== false) streams = await startStreams(deps);
      if (opts.worker !== false)
        worker = await startWorker({ ...deps, ...(opts.sns ? { sns: { credentials: opts.sns.credentials } } : {}) });
    } catch (err) {
      await streams?.stop();
      throw err;
    }
    return {
      async stop() {
        await worker?.stop();
        await streams?.stop();
      },
    };
  }

  const rows = (sub: string) =>
    f.t.db.selectFrom('deliveries').selectAll().where('subscription_id', '=', sub).orderBy('event_id').execute();

  async function hooked(url: string) {
    const k = await f.newKey();
    const addr = newAddress();
    const hook = await f.httpHook(k.id, url);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id });
    return { k, addr, hook, sub };
  }

  /** Log rows as the relay writes them, for deliveries that no outbox row will bring (the relay leaves them alone). */
  function madeUp(k: bigint, hook: string, sub: string, seqs: number[], jobId?: string): NewDelivery[] {
    return seqs.map((s) => ({
      id: `${sub}-${s}`,
      hookId: hook,
      keyId: k,
      subscriptionId: sub,
      eventId: BigInt(s),
      eventType: 'tx.unconfirmed',
      payload: JSON.stringify({ id: s, type: 'tx.unconfirmed' }),
      status: 'pending' as const,
      ...(jobId ? { jobId } : {}),
    }));
  }

  function asBatch(hook: string, jobId: string, ds: NewDelivery[]) {
    return {
      transport: 'http' as const,
      jobId,
      hook,
      deliveries: ds.map((d) => ({ delivery: d.id, payload: d.payload, type: d.eventType })),
    };
  }

  it("sends a hook's deliveries of one relay batch as one job: own webhook-ids, signatures and log rows, kept-alive connections, 2 at a time", async () => {
    const receiver = await startReceiver();
    let inFlight = 0;
    let most = 0;
    receiver.respond = async (_w, res) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, 10));
      inFlight -= 1;
      res.writeHead(200);
      res.end();
    };
    const { addr, hook, sub } = await hooked(receiver.url);
    const run = await start();
    try {
      // 120 events in one transaction: one relay batch, so batches of 50, 50 and 20.
      const seqs = await insertEvents(f.t.db, txEvents(addr, 120));
      await waitFor(
        'every delivery logged delivered',
        async () => (await rows(sub)).filter((r) => r.status === 'delivered').length === 120,
        60_000,
      );
      const log = await rows(sub);
      expect(log.map((r) => r.id)).toEqual(seqs.map((s) => `${sub}-${s}`));
      expect(log.every((r) => r.attempts === 1 && r.last_status === 200 && r.redeliveries === 0)).toBe(true);
      const jobs = [...new Set(log.map((r) => r.job_id))];
      expect(jobs).toHaveLength(3);
      for (const j of jobs) expect(j).toMatch(new RegExp(`^batch-${hook.id}-${seqs.at(-1)}-[0-2]-[0-9a-f]{8}$`));
      expect(log.filter((r) => r.job_id === jobs[0])).toHaveLength(50);
      // Each delivery once, under its own webhook-id, signed.
      expect(receiver.received.map((r) => r.id).sort()).toEqual(log.map((r) => r.id).sort());
      const wh = new Webhook(hook.secret);
      for (const r of receiver.received) {
        const payload = wh.verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature }) as {
          id: number;
        };
        expect(r.id).toBe(`${sub}-${payload.id}`);
      }
      // Bounded: two in flight per batch job, at most three batch jobs at once.
      expect(most).toBeLessThanOrEqual(6);
      // Kept alive: far fewer connections than deliveries.
      expect(new Set(receiver.received.map((r) => r.port)).size).toBeLessThanOrEqual(12);
    } finally {
      await run.stop();
      await receiver.close();
    }
  });

  it("a batch job carries its deliveries' ids, not their bodies: each body is read from its log row (a job of the earlier shape, bodies inside, still sends)", async () => {
    const receiver = await startReceiver();
    const { k, addr, hook, sub } = await hooked(receiver.url);
    const relayOnly = await start({}, { worker: false });
    const connection = new Redis(f.redisUrl, { maxRetriesPerRequest: 1 });
    const q = new Queue('webhooks', { connection, prefix: f.prefix });
    try {
      const seqs = await insertEvents(f.t.db, txEvents(addr, 3));
      const jobId = await waitFor(
        'the batch logged',
        async () => (await rows(sub)).find((r) => r.job_id !== null)?.job_id ?? undefined,
        30_000,
      );
      const job = await waitFor('its job in Redis', () => q.getJob(jobId), 10_000);
      expect(job.data.deliveries.map((d: object) => Object.keys(d).sort())).toEqual(seqs.map(() => ['delivery', 'type']));
      // A batch job as earlier versions enqueued it, the bodies inside (it may still wait in Redis across an upgrade).
      const earlierJob = batchJobId(hook.id, 920_001n, 0);
      const earlier = madeUp(k.id, hook.id, sub, [920_000, 920_001], earlierJob);
      await upsertDeliveries(f.t.db, earlier);
      await q.add('batch', asBatch(hook.id, earlierJob, earlier), { jobId: earlierJob, attempts: 1 });
    } finally {
      await q.close();
      connection.disconnect();
      await relayOnly.stop();
    }
    const workerOnly = await start({}, { relay: false });
    try {
      await waitFor('all delivered', async () => (await rows(sub)).every((r) => r.status === 'delivered'), 30_000);
      const log = await rows(sub);
      expect(log).toHaveLength(5);
      // Each body as logged, signed as such.
      const wh = new Webhook(hook.secret);
      for (const r of log) {
        const got = receiver.received.filter((w) => w.id === r.id);
        expect(got).toHaveLength(1);
        expect(got[0]!.body).toBe(r.payload);
        wh.verify(got[0]!.body, {
          'webhook-id': got[0]!.id,
          'webhook-timestamp': got[0]!.timestamp,
          'webhook-signature': got[0]!.signature,
        });
      }
    } finally {
      await workerOnly.stop();
      await receiver.close();
    }
  });

  it('a retryable failure leaves the batch for a job of its own, delayed by its retry delay; the others are delivered', async () => {
    const receiver = await startReceiver();
    const { addr, sub } = await hooked(receiver.url);
    const run = await start();
    try {
      const seqs = await insertEvents(f.t.db, txEvents(addr, 10));
      const failing = `${sub}-${seqs[2]}`;
      receiver.respond = (w, res) => {
        res.writeHead(w.id === failing ? 500 : 200);
        res.end();
      };
      await waitFor(
        'nine delivered, one waiting for its retry',
        async () => {
          const log = await rows(sub);
          return log.filter((r) => r.status === 'delivered').length === 9 && log.find((r) => r.id === failing)?.attempts === 1
            ? log
            : undefined;
        },
        30_000,
      );
      const failed = (await rows(sub)).find((r) => r.id === failing)!;
      expect(failed).toMatchObject({ status: 'pending', attempts: 1, last_status: 500, last_error: 'receiver answered 500', job_id: null });
      // Its own job: id = delivery id, delayed by the delay the log shows; the rescue's check sees it live.
      const delays = await waitFor(
        'its delayed job',
        async () => {
          const connection = new Redis(f.redisUrl, { maxRetriesPerRequest: 1 });
          const q = new Queue('webhooks', { connection, prefix: f.prefix });
          try {
            const job = await q.getJob(failing);
            return job && (await job.getState()) === 'delayed' ? [Number(job.delay)] : undefined;
          } finally {
            await q.close();
            connection.disconnect();
          }
        },
        10_000,
      );
      expect(Math.abs(failed.next_attempt_at!.getTime() - failed.updated_at.getTime() - delays[0]!)).toBeLessThan(1000);
      expect(delays[0]).toBeGreaterThanOrEqual(8000);
      expect(await producer.isLive({ transport: 'http', delivery: failing, redeliveries: 0 })).toBe(true);

      receiver.respond = (_w, res) => {
        res.writeHead(200);
        res.end();
      };
      await promoteDelayed(f.redisUrl, f.prefix, 'webhooks', 1);
      await waitFor('the retry delivered', async () => (await rows(sub)).find((r) => r.id === failing)?.status === 'delivered', 30_000);
      expect((await rows(sub)).find((r) => r.id === failing)).toMatchObject({ attempts: 2, last_status: 200 });
      for (const s of seqs) expect(receiver.received.filter((r) => r.id === `${sub}-${s}`)).toHaveLength(`${sub}-${s}` === failing ? 2 : 1);
    } finally {
      await run.stop();
      await receiver.close();
    }
  });

  it('keeps permanent failures per delivery: a 404 fails its delivery only; a 410 disables the hook and the rest fail as disabled', async () => {
    const receiver = await startReceiver();
    const { addr, hook, sub } = await hooked(receiver.url);
    const run = await start();
    try {
      const seqs = await insertEvents(f.t.db, txEvents(addr, 12));
      const notFound = `${sub}-${seqs[1]}`;
      const gone = `${sub}-${seqs[5]}`;
      receiver.respond = (w, res) => {
        res.writeHead(w.id === notFound ? 404 : w.id === gone ? 410 : 200);
        res.end();
      };
      await waitFor(
        'every delivery finished',
        async () => {
          const log = await rows(sub);
          return log.length === 12 && log.every((r) => r.status !== 'pending');
        },
        30_000,
      );
      const log = await rows(sub);
      expect(log.find((r) => r.id === notFound)).toMatchObject({ status: 'failed', last_status: 404, last_error: 'receiver answered 404' });
      expect(log.find((r) => r.id === gone)).toMatchObject({ status: 'failed', last_status: 410 });
      expect(
        (await f.t.db.selectFrom('hooks').select('disabled_reason').where('id', '=', hook.id).executeTakeFirst())?.disabled_reason,
      ).toBe('receiver answered 410 Gone');
      // Before the 410: delivered but the 404. After it: what was already in flight (one, two at a time) was sent, nothing else.
      for (const r of log.slice(0, 5)) if (r.id !== notFound) expect(r).toMatchObject({ status: 'delivered', attempts: 1 });
      const after = log.slice(6);
      const sentAfter = after.filter((r) => receiver.received.some((x) => x.id === r.id));
      expect(sentAfter.length).toBeLessThanOrEqual(1);
      for (const r of after) {
        if (sentAfter.includes(r)) continue;
        expect(r).toMatchObject({ status: 'failed', last_error: 'hook disabled: receiver answered 410 Gone' });
      }
      expect(receiver.received.length).toBeLessThanOrEqual(7);
    } finally {
      await run.stop();
      await receiver.close();
    }
  });

  it('sends nothing of a batch whose key was revoked or whose hook was deleted: each delivery fails as it does alone', async () => {
    const receiver = await startReceiver();
    const revoked = await hooked(receiver.url);
    const deleted = await hooked(receiver.url);
    const jr = batchJobId(revoked.hook.id, 900_001n, 0);
    const jd = batchJobId(deleted.hook.id, 900_001n, 0);
    const rr = madeUp(revoked.k.id, revoked.hook.id, revoked.sub, [900_000, 900_001], jr);
    const rd = madeUp(deleted.k.id, deleted.hook.id, deleted.sub, [900_000, 900_001], jd);
    await upsertDeliveries(f.t.db, [...rr, ...rd]);
    expect(await revokeApiKey(f.t.db, revoked.k.id)).toBe(1);
    await f.t.db.updateTable('hooks').set({ deleted_at: new Date() }).where('id', '=', deleted.hook.id).execute();
    await waitFor(
      'batches enqueued',
      () => producer.enqueueBatches([asBatch(revoked.hook.id, jr, rr), asBatch(deleted.hook.id, jd, rd)]).then(() => true),
      30_000,
    );
    const run = await start({}, { relay: false });
    try {
      await waitFor(
        'all failed',
        async () => [...(await rows(revoked.sub)), ...(await rows(deleted.sub))].every((r) => r.status === 'failed'),
        30_000,
      );
      for (const r of await rows(revoked.sub)) expect(r).toMatchObject({ last_error: 'API key revoked', attempts: 1 });
      for (const r of await rows(deleted.sub)) expect(r).toMatchObject({ last_error: 'hook deleted', attempts: 1 });
      expect(receiver.received).toHaveLength(0);
    } finally {
      await run.stop();
      await receiver.close();
    }
  });

  it('a replayed relay batch re-adds the batch job recorded for its rows and sends nothing the log says was delivered', async () => {
    const receiver = await startReceiver();
    const { k, addr, hook, sub } = await hooked(receiver.url);
    const seqs = await insertEvents(f.t.db, txEvents(addr, 6));
    // What a relay killed after the enqueue leaves: rows logged with their batch job, the job in
    // Redis, the cursor not moved; meanwhile one delivery was sent and logged delivered.
    const jobId = batchJobId(hook.id, seqs.at(-1)!, 0);
    const logged = madeUp(k.id, hook.id, sub, seqs.map(Number), jobId);
    await upsertDeliveries(f.t.db, logged);
    await recordOutcomes(f.t.db, [
      { id: logged[0]!.id, redeliveries: 0, status: 'delivered', attempts: 1, lastStatus: 200, lastError: null, nextAttemptAt: null },
    ]);
    await waitFor('batch enqueued', () => producer.enqueueBatches([asBatch(hook.id, jobId, logged)]).then(() => true), 30_000);
    const run = await start();
    try {
      await waitFor('all delivered', async () => (await rows(sub)).every((r) => r.status === 'delivered'), 30_000);
      await waitFor('the relay passed them', async () => (await readStreamState(f.t.db)).relay >= seqs.at(-1)!, 30_000);
      // The sentinel: one more event for the address, relayed after the replayed batch; a send of
      // the delivered one or a second send of the others would be queued before its job.
      const [after] = await insertEvents(f.t.db, txEvents(addr, 1));
      await waitFor('the sentinel delivered', () => receiver.received.some((r) => r.id === `${sub}-${after}`), 30_000);
      expect(receiver.received.filter((r) => r.id === logged[0]!.id)).toHaveLength(0);
      for (const d of logged.slice(1)) expect(receiver.received.filter((r) => r.id === d.id)).toHaveLength(1);
      expect((await rows(sub)).filter((r) => logged.some((d) => d.id === r.id)).map((r) => r.job_id)).toEqual(logged.map(() => jobId));
    } finally {
      await run.stop();
      await receiver.close();
    }
  });

  it('the rescue re-creates the deliveries of a batch job Redis lost, as jobs of their own, and leaves a live batch job alone', async () => {
    const receiver = await startReceiver();
    const { k, hook, sub } = await hooked(receiver.url);
    const lostJob = batchJobId(hook.id, 910_002n, 0);
    const liveJob = batchJobId(hook.id, 910_005n, 0);
    const lost = madeUp(k.id, hook.id, sub, [910_000, 910_001, 910_002], lostJob);
    const live = madeUp(k.id, hook.id, sub, [910_003, 910_004, 910_005], liveJob);
    await upsertDeliveries(f.t.db, [...lost, ...live]);
    await sql`UPDATE deliveries SET next_attempt_at = now() - interval '1 hour' WHERE subscription_id = ${sub}`.execute(f.t.db);
    // Only the live batch is in Redis; no worker yet.
    await waitFor('live batch enqueued', () => producer.enqueueBatches([asBatch(hook.id, liveJob, live)]).then(() => true), 30_000);
    const relayOnly = await start({ deliveryRescueMs: 300 }, { worker: false });
    try {
      await waitFor(
        'the rescue checked them all',
        async () => (await rows(sub)).every((r) => r.next_attempt_at!.getTime() > Date.now() - 600_000),
        30_000,
      );
      for (const d of lost) expect(await producer.isLive({ transport: 'http', delivery: d.id, redeliveries: 0 })).toBe(true);
      for (const d of live) expect(await producer.isLive({ transport: 'http', delivery: d.id, redeliveries: 0 })).toBe(false);
      const log = await rows(sub);
      for (const r of log) expect(r.job_id).toBe(lost.some((d) => d.id === r.id) ? null : liveJob);
    } finally {
      await relayOnly.stop();
    }
    const workerOnly = await start({}, { relay: false });
    try {
      await waitFor('all delivered', async () => (await rows(sub)).every((r) => r.status === 'delivered'), 30_000);
      // The sentinel: one more delivery in a job of its own, queued after the others; a second
      // job for any of them was queued before it, and is taken first.
      const [extra] = madeUp(k.id, hook.id, sub, [910_006]);
      await upsertDeliveries(f.t.db, [extra!]);
      await producer.enqueue([
        { transport: 'http', delivery: extra!.id, hook: hook.id, payload: extra!.payload, type: extra!.eventType, redeliveries: 0 },
      ]);
      await waitFor('the sentinel delivered', () => receiver.received.some((r) => r.id === extra!.id), 30_000);
      for (const d of [...lost, ...live]) expect(receiver.received.filter((r) => r.id === d.id)).toHaveLength(1);
    } finally {
      await workerOnly.stop();
      await receiver.close();
    }
  });

  it('a worker killed mid-batch: another worker re-runs the stalled batch and skips what the log says was delivered', async () => {
    const receiver = await startReceiver();
    let answered = 0;
    let holding = true;
    receiver.respond = async (_w, res) => {
      if (answered < 6) {
        answered += 1;
      } else {
        while (holding) await new Promise((r) => setTimeout(r, 20));
      }
      res.writeHead(200);
      res.end();
    };
    const { addr, hook, sub } = await hooked(receiver.url);
    const child = { webhookTimeoutMs: 3000, workerLockMs: 1500, deliveryBatchConcurrency: 2 };
    const relay = await start({}, { worker: false });
    const w1 = await spawnRole('worker', f, child);
    let w2: Awaited<ReturnType<typeof spawnRole>> | undefined;
    try {
      const seqs = await insertEvents(f.t.db, txEvents(addr, 20));
      const ids = seqs.map((s) => `${sub}-${s}`);
      await waitFor(
        'six delivered, two held in flight',
        async () => (await rows(sub)).filter((r) => r.status === 'delivered').length >= 6 && receiver.received.length >= 8,
        30_000,
      );
      await w1.kill();
      const deliveredBefore = (await rows(sub)).filter((r) => r.status === 'delivered').map((r) => r.id);
      expect(deliveredBefore.length).toBeGreaterThanOrEqual(6);
      holding = false;
      w2 = await spawnRole('worker', f, child);
      await waitFor('all delivered', async () => (await rows(sub)).filter((r) => r.status === 'delivered').length === 20, 60_000);
      expect(new Set((await rows(sub)).map((r) => r.job_id)).size).toBe(1);
      const wh = new Webhook(hook.secret);
      for (const r of receiver.received)
        wh.verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature });
      for (const id of ids) {
        const n = receiver.received.filter((r) => r.id === id).length;
        if (deliveredBefore.includes(id)) expect(n, id).toBe(1);
        else expect(n, id).toBeGreaterThanOrEqual(1);
      }
      // What was held at w1 when it died went out again from w2, under the same webhook-id.
      expect(ids.filter((id) => receiver.received.filter((r) => r.id === id).length === 2).length).toBeGreaterThanOrEqual(1);
    } finally {
      await w2?.kill();
      await relay.stop();
      await receiver.close();
    }
  });

  it("a worker killed after sending a batch, before its outcomes' window ended: the batch runs again and every delivery ends delivered", async () => {
    const receiver = await startReceiver();
    const { addr, hook, sub } = await hooked(receiver.url);
    // w1 keeps a batch's outcomes for up to 10 s (BLOCKWIRE_DELIVERY_BATCH_OUTCOME_WINDOW_MS):
    // killed once the receiver has every delivery, it has written none of them. The rescue is
    // an hour away: only the stalled batch job, which does not end before its outcomes are in
    // the log, brings them back (to w2).
    const child = { webhookTimeoutMs: 3000, workerLockMs: 1500, deliveryBatchConcurrency: 2, deliveryRescueMs: 3_600_000 };
    const relay = await start({}, { worker: false });
    const w1 = await spawnRole('worker', f, { ...child, deliveryBatchOutcomeWindowMs: 10_000 });
    let w2: Awaited<ReturnType<typeof spawnRole>> | undefined;
    try {
      const seqs = await insertEvents(f.t.db, txEvents(addr, 12));
      const ids = seqs.map((s) => `${sub}-${s}`);
      await waitFor('every delivery at the receiver', () => ids.every((id) => receiver.received.some((r) => r.id === id)), 30_000);
      await w1.kill();
      // (sent, not yet written: the log still says pending, under the batch job)
      const before = await rows(sub);
      expect(before.map((r) => r.status)).toEqual(ids.map(() => 'pending'));
      expect(new Set(before.map((r) => r.job_id)).size).toBe(1);
      w2 = await spawnRole('worker', f, { ...child, deliveryBatchOutcomeWindowMs: 10 });
      await waitFor('all delivered', async () => (await rows(sub)).filter((r) => r.status === 'delivered').length === ids.length, 60_000);
      const after = await rows(sub);
      expect(after.map((r) => r.attempts)).toEqual(ids.map(() => 1));
      // Each sent again by w2, under its own webhook-id, with its signature.
      const wh = new Webhook(hook.secret);
      for (const r of receiver.received)
        wh.verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature });
      for (const id of ids) expect(receiver.received.filter((r) => r.id === id).length, id).toBe(2);
    } finally {
      await w2?.kill();
      await relay.stop();
      await receiver.close();
    }
  });

  it('batches SNS deliveries the same way: one Publish each, its own webhook-id attribute', async () => {
    const sns = await startSnsEndpoint();
    const k = await f.newKey();
    const addr = newAddress();
    const arn = 'arn:aws:sns:us-east-1:123456789012:blockwire-batches';
    sns.createTopic(arn);
    const hook = await f.snsHook(k.id, arn);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id });
    const run = await start({}, { sns });
    try {
      const seqs = await insertEvents(f.t.db, txEvents(addr, 8));
      await waitFor(
        'all delivered',
        async () => (await rows(sub)).every((r) => r.status === 'delivered') && (await rows(sub)).length === 8,
        30_000,
      );
      const log = await rows(sub);
      expect(new Set(log.map((r) => r.job_id)).size).toBe(1);
      expect(log[0]!.job_id).toMatch(/^batch-/);
      const got = sns.messages.filter((m) => m.topicArn === arn);
      expect(got.map((m) => m.attributes['webhook-id']).sort()).toEqual(seqs.map((s) => `${sub}-${s}`).sort());
      for (const m of got) expect(`${sub}-${(JSON.parse(m.message) as { id: number }).id}`).toBe(m.attributes['webhook-id']);
    } finally {
      await run.stop();
      await sns.close();
    }
  });
});
