/**
 * docs/scaling.md "One machine, several processes": one indexer, two api, two streams and two worker
 * processes — real `blockwire start --role …` children — sharing one PostgreSQL and one Redis,
 * on the devnode. A hook is created through one API process and the subscription through the
 * other; payments to the address are mined through their confirmations. Every WebSocket client
 * (two on each streams process) gets every event of the subscription exactly once and in order,
 * the webhook receiver gets each delivery exactly once, and exactly one relay is active.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { getIndexTip } from '../../../api/queries/chain.js';
import { Key } from '../../../client/keys.js';
import { portOf, processEnv, spawnBlockwire, startHookReceiver, type BlockwireProcess } from './processes.js';
import { waitFor } from '../../support/wait.js';

type StreamEvent = { id: number; type: string; subscription_id: string; transaction_hash?: string };

let devnode: Devnode;
let db: TestDatabase;
let receiver: Awaited<ReturnType<typeof startHookReceiver>>;
const procs: BlockwireProcess[] = [];

async function api(port: number, key: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { apiKey: key, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
  return json;
}

describe('several api, streams and worker processes on one Postgres and one Redis', () => {
  beforeAll(async () => {
    devnode = await startDevnode({ initialBlocks: 101 });
    db = await createMigratedDatabase('scale');
    receiver = await startHookReceiver();
  }, 120_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await receiver?.close();
    await devnode?.stop();
    await db?.drop();
  }, 120_000);

  it('delivers every event to every stream client exactly once and every webhook once', async () => {
    const env = {
      ...processEnv({
        databaseUrl: db.url,
        redisUrl: inject('redisUrl'),
        redisPrefix: uniqueRedisPrefix('scale'),
        rpcUrl: devnode.rpcUrl,
        zmqUrl: devnode.zmqUrl,
      }),
      BITCOIN_NETWORK: 'regtest',
    };
    const roles = ['indexer', 'api', 'api', 'streams', 'streams', 'worker', 'worker'];
    for (const [i, role] of roles.entries()) procs.push(spawnBlockwire(`${role}-${i}`, ['start', '--role', role], env));
    const byRole = (r: string) => procs.filter((p) => p.name.startsWith(`${r}-`));
    const apiPorts = await Promise.all(byRole('api').map(async (p) => portOf(await p.waitForLog('api listening'))));
    const streamPorts = await Promise.all(byRole('streams').map(async (p) => portOf(await p.waitForLog('streams started'))));
    await Promise.all(byRole('worker').map((p) => p.waitForLog('delivery workers started')));
    await byRole('indexer')[0]!.waitForLog('indexer started');
    const opsPorts = await Promise.all(procs.map(async (p) => portOf(await p.waitForLog('operations listener (/metrics, /healthz)'))));

    const key = (await createApiKey(db.db, { name: 'scale' })).key;
    const address = Key.random('regtest').address('p2wpkh');
    const hook = await api(apiPorts[0]!, key, 'POST', '/v1/hooks', { type: 'http', url: receiver.url });
    const sub = await api(apiPorts[1]!, key, 'POST', '/v1/subscriptions', { address, action: hook.id, confirmations: 3 });

    // Two clients on each streams process, replaying from the start.
    const clients = streamPorts.flatMap((port) =>
      [0, 1].map(() => {
        const events: StreamEvent[] = [];
        const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/stream?after=0`, { headers: { apiKey: key } });
        ws.on('message', (m: Buffer) => {
          const msg = JSON.parse(String(m)) as StreamEvent;
          if (typeof msg.id === 'number' && msg.subscription_id) events.push(msg);
        });
        return { ws, events, open: new Promise<void>((resolve, reject) => (ws.once('open', () => resolve()), ws.once('error', reject))) };
      }),
    );
    await Promise.all(clients.map((c) => c.open));

    // Three payments, each seen unconfirmed first, one block between the first two, then
    // blocks through the confirmations.
    const unconfirmed = () => clients[0]!.events.filter((e) => e.type === 'tx.unconfirmed').length;
    const pay = async (sats: bigint) => {
      const before = unconfirmed();
      await devnode.wallet.send(address, sats);
      await waitFor('the payment in the mempool index', () => unconfirmed() > before, 300_000);
    };
    await pay(50_000n);
    await devnode.mine(1);
    await pay(60_000n);
    await pay(70_000n);
    for (let i = 0; i < 4; i++) await devnode.mine(1);
    await waitFor('the index to reach the node', async () => (await getIndexTip(db.db)).height === devnode.tip().height, 300_000);

    // The truth: the deliveries the relay recorded for the subscription (one row per event).
    const expected = async () =>
      await db.db
        .selectFrom('deliveries')
        .select(['event_id', 'status'])
        .where('subscription_id', '=', String(sub.id))
        .orderBy('event_id')
        .execute();
    await waitFor(
      'every delivery to be delivered',
      async () => {
        const rows = await expected();
        return rows.length > 0 && rows.every((r) => r.status === 'delivered') && clients.every((c) => c.events.length >= rows.length);
      },
      300_000,
    );
    // Anything late (a duplicate) must show before a sentinel: one more payment, whose event is the
    // newest. Stream frames come in event order, so a late frame reaches a client before the
    // sentinel's; and the sentinel's webhook goes out after every earlier delivery was done, so
    // the workers have passed whatever was queued before it.
    const sentinelTx = await devnode.wallet.send(address, 80_000n);
    const sentinelOf = (c: (typeof clients)[number]) => c.events.find((e) => e.transaction_hash === sentinelTx);
    const sentinel = (await waitFor('the sentinel on every client', () => clients.every(sentinelOf) && sentinelOf(clients[0]!), 300_000))
      .id;
    await waitFor(
      'the sentinel delivered',
      async () => receiver.received.some((r) => r.event.id === sentinel) && (await expected()).every((r) => r.status === 'delivered'),
      300_000,
    );
    const ids = (await expected()).map((r) => Number(r.event_id));
    expect(ids[ids.length - 1]).toBe(sentinel);
    const types = new Set(clients[0]!.events.map((e) => e.type));
    for (const t of ['tx.unconfirmed', 'tx.confirmed', 'tx.confirmations']) expect(types).toContain(t);
    expect(ids.length).toBeGreaterThanOrEqual(3 * 4);

    for (const [i, c] of clients.entries())
      expect(
        c.events.map((e) => e.id),
        `stream client ${i}`,
      ).toEqual(ids);
    const received = receiver.received;
    const webhookIds = received.map((r) => r.webhookId);
    expect(new Set(webhookIds).size, 'no webhook delivered twice').toBe(webhookIds.length);
    expect(received.map((r) => r.event.id).sort((a, b) => a - b)).toEqual(ids);

    // Exactly one relay holds the lock; both workers and both API processes took part.
    const metrics = await Promise.all(opsPorts.map(async (port) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text()));
    const value = (text: string, re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
    expect(metrics.map((m) => value(m, /^blockwire_relay_active (\d+)/m)).reduce((a, b) => a + b, 0)).toBe(1);
    const completed = metrics.map((m) => value(m, /^blockwire_worker_deliveries_total\{transport="http",outcome="completed"\} (\d+)/m));
    expect(completed.reduce((a, b) => a + b, 0)).toBe(ids.length);
    for (const m of metrics) expect(value(m, /^blockwire_index_height (\d+)/m)).toBe(devnode.tip().height);

    for (const c of clients) c.ws.close();
    const codes = await Promise.all(procs.map((p) => p.stop()));
    expect(codes, procs.map((p) => p.name).join(',')).toEqual(procs.map(() => 0));
  }, 900_000);
});
