/**
 * The events' end-to-end cases through the whole stack (devnode → indexer → outbox → relay →
 * WebSocket and webhook), subscribing through the REST API as a client would: payments to a
 * subscribed address give tx.unconfirmed, tx.confirmed and tx.confirmations up to the target;
 * a reorg gives tx.reorged and a new tx.confirmed; RBF gives tx.replaced; block events reach a
 * chain subscription. The webhook receives the same events, signed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { segwitAddress } from '../../../src/bitcoin/address.js';
import { startStack, type Stack } from '../../support/stack.js';
import { connectStream, startReceiver, type Receiver, type StreamClient } from './harness.js';
import { waitFor } from '../../support/wait.js';

describe('events end to end on the devnode', () => {
  let stack: Stack;
  let receiver: Receiver;
  let client: StreamClient;
  let secret: string;
  let addr: string;
  let hookId: string;

  const post = async (path: string, body: unknown) => {
    const r = await fetch(`${stack.url}${path}`, {
      method: 'POST',
      headers: { apiKey: stack.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as Record<string, string> };
  };
  const eventsFor = (txid: string) => client.events().filter((e) => e.transaction_hash === txid);

  beforeAll(async () => {
    stack = await startStack({ stamping: false });
    receiver = await startReceiver();
    const hook = await post('/v1/hooks', { type: 'http', url: receiver.url });
    expect(hook.status).toBe(201);
    hookId = hook.body.id!;
    secret = hook.body.secret!;
    addr = segwitAddress(0, randomBytes(20), 'regtest');
    expect((await post('/v1/subscriptions', { address: addr, action: hookId, confirmations: 3 })).status).toBe(200);
    expect((await post('/v1/subscriptions', { type: 'chain' })).status).toBe(200);
    client = await connectStream(stack.streamUrl, stack.apiKey);
    await waitFor('stream live', () => client.messages.some((m) => m.type === 'stream.live'), 10_000);
  });
  afterAll(async () => {
    client?.close();
    await stack?.stop();
    await receiver?.close();
  });

  it('payment: unconfirmed, confirmed, confirmations up to the target', async () => {
    const txid = await stack.devnode.wallet.send(addr, 100_000n);
    await waitFor('tx.unconfirmed', () => eventsFor(txid).length === 1, 20_000);
    const [h1] = await stack.mine(1);
    await stack.mine(3);
    await waitFor('tx.confirmations', () => eventsFor(txid).length >= 4, 20_000);
    // The sentinel: one more block, whose block.connected on the chain subscription comes after
    // every event of the blocks before it (the fourth confirmation, past the target, included).
    const [next] = await stack.mine(1);
    const sentinel = await waitFor(
      'the next block on the stream',
      () => client.events().find((e) => e.type === 'block.connected' && (e.block as { hash: string }).hash === next),
      20_000,
    );
    const evs = eventsFor(txid).filter((e) => e.id < sentinel.id);
    expect(evs.map((e) => [e.type, e.confirmations])).toEqual([
      ['tx.unconfirmed', 0],
      ['tx.confirmed', 1],
      ['tx.confirmations', 2],
      ['tx.confirmations', 3],
    ]);
    expect(evs[1]).toMatchObject({ address: addr, received: 100_000, sent: 0, action: hookId, block: { hash: h1 } });
    // Ids increase in the order received.
    const ids = client.events().map((e) => e.id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    // Chain subscription: one block.connected per mined block.
    expect(client.events().filter((e) => e.type === 'block.connected' && (e.block as { hash: string }).hash === h1)).toHaveLength(1);
    // The webhook got the same four, signed.
    const wh = new Webhook(secret);
    await waitFor('webhooks', () => evs.every((e) => receiver.received.some((r) => JSON.parse(r.body).id === e.id)), 10_000);
    for (const e of evs) {
      const r = receiver.received.find((x) => JSON.parse(x.body).id === e.id)!;
      expect(wh.verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature })).toEqual(e);
    }
  });

  it('reorg: tx.reorged, then tx.confirmed in the new branch', async () => {
    const txid = await stack.devnode.wallet.send(addr, 70_000n);
    await waitFor('tx.unconfirmed', () => eventsFor(txid).length === 1, 20_000);
    await stack.mine(1);
    await waitFor('tx.confirmed', () => eventsFor(txid).length === 2, 20_000);
    const r = await stack.devnode.reorg(1, { newBlocks: 2, keepTxs: true });
    await stack.synced();
    await waitFor(
      'reorged and reconfirmed',
      () => eventsFor(txid).some((e) => e.type === 'tx.reorged') && eventsFor(txid).filter((e) => e.type === 'tx.confirmed').length === 2,
      20_000,
    );
    const types = eventsFor(txid).map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(['tx.unconfirmed', 'tx.confirmed', 'tx.reorged', 'tx.confirmed']);
    const evs = eventsFor(txid);
    expect((evs[2]!.block as { hash: string }).hash).toBe(r.disconnected[0]);
    expect((evs[3]!.block as { hash: string }).hash).toBe(r.connected[0]);
    await waitFor(
      'block.disconnected',
      () => client.events().some((e) => e.type === 'block.disconnected' && (e.block as { hash: string }).hash === r.disconnected[0]),
      10_000,
    );
  });

  it('RBF: tx.replaced naming the replacement', async () => {
    const txid = await stack.devnode.wallet.send(addr, 50_000n, { rbf: true });
    await waitFor('tx.unconfirmed', () => eventsFor(txid).length === 1, 20_000);
    const replacement = await stack.devnode.wallet.bumpFee(txid);
    await waitFor('tx.replaced', () => eventsFor(txid).length === 2, 20_000);
    expect(eventsFor(txid)[1]).toMatchObject({ type: 'tx.replaced', replaced_by: replacement, received: 50_000 });
    await waitFor('the replacement seen', () => eventsFor(replacement).some((e) => e.type === 'tx.unconfirmed'), 20_000);
  });
});
