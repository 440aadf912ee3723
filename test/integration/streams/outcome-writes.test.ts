/**
 * Group commit of delivery outcomes (streams/outcome-writer.ts), on real PostgreSQL, Redis and
 * HTTP: a batch's deliveries that end one after another within
 * BLOCKWIRE_DELIVERY_BATCH_OUTCOME_WINDOW_MS go to the delivery log in a few statements, not one
 * each. The worker's statements are counted
 * through a Kysely plugin on its database handle (each statement writing outcomes, and how many
 * it carries).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValueNode, type KyselyPlugin } from 'kysely';
import { silentLogger } from '../../../src/log.js';
import { startStreams, startWorker } from '../../../streams/main.js';
import { createStreamsFixture, insertEvents, newAddress, startReceiver, streamsConfig, txEvents, type StreamsFixture } from './harness.js';
import { waitFor } from '../../support/wait.js';

/**
 * Counts the statements that write attempt outcomes (src/db/queries/tenancy-deliveries.ts
 * recordOutcomes: one JSON parameter, an array of outcomes) and the outcomes each carried.
 */
function outcomeStatements(): KyselyPlugin & { rows: number[] } {
  const rows: number[] = [];
  return {
    rows,
    transformQuery({ node }) {
      if (node.kind === 'RawNode' && node.sqlFragments.some((f) => /UPDATE deliveries d SET\s+status = u\.status/.test(f))) {
        const json = node.parameters.find((p) => ValueNode.is(p) && typeof p.value === 'string');
        rows.push((JSON.parse((json as ValueNode).value as string) as unknown[]).length);
      }
      return node;
    },
    async transformResult({ result }) {
      return result;
    },
  };
}

describe('delivery outcomes, group-committed', () => {
  let f: StreamsFixture;
  beforeAll(async () => {
    f = await createStreamsFixture();
  });
  afterAll(async () => {
    await f?.drop();
  });

  it("a batch's deliveries ending one after another within its window are written in a few statements, not one each", async () => {
    const receiver = await startReceiver();
    // One at a time, each answered a little later than the last: without a window, each
    // outcome would be written alone before the next delivery ends. The window of own jobs is
    // 0: a batch's deliveries wait for their own (BLOCKWIRE_DELIVERY_BATCH_OUTCOME_WINDOW_MS).
    receiver.respond = async (_w, res) => {
      await new Promise((r) => setTimeout(r, 5));
      res.writeHead(200);
      res.end();
    };
    const k = await f.newKey();
    const addr = newAddress();
    const hook = await f.httpHook(k.id, receiver.url);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id });
    const counter = outcomeStatements();
    const config = streamsConfig({
      deliveryBatchSize: 50,
      deliveryBatchConcurrency: 1,
      deliveryOutcomeWindowMs: 0,
      deliveryBatchOutcomeWindowMs: 5000,
    });
    const deps = { config, log: silentLogger(), db: f.t.db, redisUrl: f.redisUrl, redisPrefix: f.prefix };
    const streams = await startStreams(deps);
    const worker = await startWorker({ ...deps, db: f.t.db.withPlugin(counter) });
    const n = 30;
    try {
      await insertEvents(f.t.db, txEvents(addr, n));
      await waitFor(
        'every delivery logged delivered',
        async () =>
          (await f.t.db.selectFrom('deliveries').select('status').where('subscription_id', '=', sub).execute()).filter(
            (r) => r.status === 'delivered',
          ).length === n,
        60_000,
      );
      expect(receiver.received).toHaveLength(n);
      // Every outcome written, in far fewer statements than deliveries.
      expect(counter.rows.reduce((a, b) => a + b, 0)).toBe(n);
      expect(counter.rows.length).toBeGreaterThan(0);
      expect(counter.rows.length).toBeLessThanOrEqual(3);
    } finally {
      await worker.stop();
      await streams.stop();
      await receiver.close();
    }
  });
  it('a worker stopping writes the outcomes waiting for their window before it ends', async () => {
    const receiver = await startReceiver();
    const k = await f.newKey();
    const addr = newAddress();
    const hook = await f.httpHook(k.id, receiver.url);
    const sub = await f.subscribe(k.id, { ...addr, hookId: hook.id });
    // (a window longer than the worker's close allows itself, webhook timeout + 5 s: without
    // `hurry` the close gives up and the rows are still pending when it returns)
    const config = streamsConfig({ deliveryBatchSize: 50, deliveryOutcomeWindowMs: 0, deliveryBatchOutcomeWindowMs: 10_000 });
    const deps = { config, log: silentLogger(), db: f.t.db, redisUrl: f.redisUrl, redisPrefix: f.prefix };
    const streams = await startStreams(deps);
    const worker = await startWorker(deps);
    let stopped = false;
    const statuses = async () =>
      (await f.t.db.selectFrom('deliveries').select('status').where('subscription_id', '=', sub).execute()).map((r) => r.status);
    try {
      const seqs = await insertEvents(f.t.db, txEvents(addr, 5));
      await waitFor('every delivery at the receiver', () => receiver.received.length >= seqs.length, 30_000);
      expect(await statuses()).toEqual(seqs.map(() => 'pending'));
      stopped = true;
      await worker.stop();
      expect(await statuses()).toEqual(seqs.map(() => 'delivered'));
    } finally {
      if (!stopped) await worker.stop();
      await streams.stop();
      await receiver.close();
    }
  });
});
