/**
 * Wallet subscriptions end to end on the devnode: `{"wallet": id, "action": hook}` gets every
 * event kind for any of the wallet's addresses — one delivery per transaction and event, with
 * the lead address's derivation path and the wallet's net amount — over the WebSocket stream
 * and the webhook alike. The gap extension happens before the events are built: a fresh wallet
 * (gap 20) paid at its 20th and 21st receive addresses in one transaction (mempool path), and
 * at the last address of the extended gap and the one after it in a block the mempool never
 * saw (block path), reports every address. A reorg gives the wallet tx.reorged, then
 * tx.confirmed in the new branch, and its balance comes back the same. A block conflicting with
 * a mempool payment gives it tx.replaced and its child (paying the wallet too) tx.dropped. A
 * second subscription of the wallet pushes to SNS (a local endpoint of the Publish API): every
 * event kind reaches the webhook and SNS as the stream has it.
 */
import { HDKey } from '@scure/bip32';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { startStack, type Stack } from '../../support/stack.js';
import { waitFor } from '../../support/wait.js';
import { rpcResult } from '../devnode/clients.js';
import { startSnsEndpoint, type SnsEndpoint } from '../../support/sns-endpoint.js';
import { connectStream, startReceiver, type Receiver, type StreamClient } from '../streams/harness.js';

const master = HDKey.fromMasterSeed(new Uint8Array(32).fill(11), bip32Versions('regtest'));
const DESC = `wpkh(${master.derive("m/84'/1'/0'").publicExtendedKey}/<0;1>/*)`;

type Ev = { id: number; type: string; [k: string]: unknown };

const TOPIC = 'arn:aws:sns:us-east-1:123456789012:wallet-events';
const TX_KINDS = ['tx.unconfirmed', 'tx.confirmed', 'tx.confirmations', 'tx.reorged', 'tx.replaced', 'tx.dropped'];

describe('wallet events', () => {
  let s: Stack;
  let receiver: Receiver;
  let sns: SnsEndpoint;
  let client: StreamClient;
  let walletId: string;
  let hookId: string;
  let snsHookId: string;
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const res = await fetch(`${s.url}/v1${path}`, {
      method,
      headers: { apiKey: s.apiKey, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: await res.json() };
  };
  const receiveAddress = async (index: number) => {
    const list = (await call('GET', `/wallets/${walletId}/addresses?change=false&limit=10000`)).body as {
      index: number;
      address: string;
    }[];
    const a = list.find((x) => x.index === index);
    if (!a) throw new Error(`receive address ${index} not derived`);
    return a.address;
  };
  /** The stream's wallet events through the webhook's subscription (or the SNS one's). */
  const deliveries = (action = hookId): Ev[] => client.events().filter((e) => e.wallet === walletId && e.action === action) as Ev[];
  const walletEvents = (txid: string): Ev[] => deliveries().filter((e) => e.transaction_hash === txid);

  beforeAll(async () => {
    sns = await startSnsEndpoint();
    sns.createTopic(TOPIC);
    s = await startStack({ stamping: false, config: { snsEndpoint: sns.url }, sns: { credentials: sns.credentials } });
    receiver = await startReceiver();
    hookId = (await call('POST', '/hooks', { type: 'http', url: receiver.url })).body.id;
    snsHookId = (await call('POST', '/hooks', { type: 'sns', topic_arn: TOPIC })).body.id;
    walletId = (await call('POST', '/wallets', { descriptors: [DESC] })).body.id;
    const sub = await call('POST', '/subscriptions', { wallet: walletId, action: hookId, confirmations: 2 });
    expect(sub.status).toBe(200);
    const snsSub = await call('POST', '/subscriptions', { wallet: walletId, action: snsHookId, confirmations: 2 });
    expect(snsSub.status).toBe(200);
    expect((await call('GET', '/subscriptions')).body).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: sub.body.id, type: 'wallet', wallet: walletId, address: null, action: hookId }),
        expect.objectContaining({ id: snsSub.body.id, type: 'wallet', wallet: walletId, address: null, action: snsHookId }),
      ]),
    );
    client = await connectStream(s.streamUrl, s.apiKey);
    await waitFor('stream live', () => client.messages.some((m) => m.type === 'stream.live'), 10_000);
  });
  afterAll(async () => {
    client?.close();
    await s?.stop();
    await receiver?.close();
    await sns?.close();
  });

  it('mempool: a payment to the 20th and 21st address of a fresh wallet is one event naming both; then confirmed and confirmations', async () => {
    const a19 = await receiveAddress(19);
    // Index 20 is not derived yet: gap 20 on a fresh wallet is indexes 0–19. Compute it from the key.
    expect((await call('GET', `/wallets/${walletId}`)).body.chains[0].addresses).toBe(20);
    const a20 = await addressOf(20);
    const txid = await s.devnode.wallet.send(a19, 50_000n, { outputs: [{ to: a20, sats: 60_000n }] });
    await waitFor('tx.unconfirmed for the wallet', () => walletEvents(txid).length === 1, 20_000);
    const [ev] = walletEvents(txid);
    expect(ev).toMatchObject({
      type: 'tx.unconfirmed',
      wallet: walletId,
      action: hookId,
      address: a19,
      path: '0/19',
      received: 110_000,
      sent: 0,
      net: 110_000,
      confirmations: 0,
      block: null,
    });
    expect(ev!.addresses).toEqual([
      { address: a19, path: '0/19', received: 50_000, sent: 0 },
      { address: a20, path: '0/20', received: 60_000, sent: 0 },
    ]);
    await s.mine(2);
    await waitFor('confirmed and 2 confirmations', () => walletEvents(txid).length === 3, 20_000);
    expect(walletEvents(txid).map((e) => [e.type, e.confirmations, e.net])).toEqual([
      ['tx.unconfirmed', 0, 110_000],
      ['tx.confirmed', 1, 110_000],
      ['tx.confirmations', 2, 110_000],
    ]);
    // The webhook got the same deliveries (one per event: one wallet subscription).
    await waitFor(
      'webhooks',
      () => walletEvents(txid).every((e) => receiver.received.filter((r) => JSON.parse(r.body).id === e.id).length >= 1),
      20_000,
    );
    for (const e of walletEvents(txid)) expect(JSON.parse(receiver.received.find((r) => JSON.parse(r.body).id === e.id)!.body)).toEqual(e);
  });

  it('block path: a block the mempool never saw pays the last address of the gap and the one past it', async () => {
    // used_max is 20 now, so indexes up to 40 exist; pay 40 and 41 in a block built directly.
    expect((await call('GET', `/wallets/${walletId}`)).body.chains[0]).toMatchObject({ last_used_index: 20, addresses: 41 });
    const a40 = await receiveAddress(40);
    const a41 = await addressOf(41);
    const raw = await s.devnode.wallet.createTx(a40, 70_000n, { outputs: [{ to: a41, sats: 80_000n }] });
    const { hash } = await rpcResult<{ hash: string }>(s.devnode, 'generateblock', [s.devnode.wallet.address('p2wpkh'), [raw]]);
    await s.synced();
    const block = await rpcResult<{ tx: string[] }>(s.devnode, 'getblock', [hash, 1]);
    const txid = block.tx[1]!;
    await waitFor('tx.confirmed for the wallet', () => walletEvents(txid).length === 1, 20_000);
    expect(walletEvents(txid)[0]).toMatchObject({ type: 'tx.confirmed', address: a40, path: '0/40', net: 150_000, block: { hash } });
    expect((walletEvents(txid)[0]!.addresses as unknown[]).length).toBe(2);
    expect((await call('GET', `/wallets/${walletId}`)).body.chains[0]).toMatchObject({ last_used_index: 41, addresses: 62 });
    expect((await call('GET', `/wallets/${walletId}/balance`)).body).toEqual({ confirmed: 260_000, unconfirmed: 0 });
  });

  it("RBF: tx.replaced with replaced_by, and the replacement's tx.unconfirmed, each once for the wallet", async () => {
    const a = await receiveAddress(42);
    const txid = await s.devnode.wallet.send(a, 30_000n);
    await waitFor('tx.unconfirmed', () => walletEvents(txid).length === 1, 20_000);
    const bumped = await s.devnode.wallet.bumpFee(txid, { feeRate: 10 });
    await waitFor('tx.replaced', () => walletEvents(txid).length === 2 && walletEvents(bumped).length === 1, 20_000);
    expect(walletEvents(txid)[1]).toMatchObject({ type: 'tx.replaced', replaced_by: bumped, path: '0/42', net: 30_000 });
    expect(walletEvents(bumped)[0]).toMatchObject({ type: 'tx.unconfirmed', path: '0/42', net: 30_000 });
  });

  it('reorg: tx.reorged for the wallet with its path and net, then tx.confirmed in the new branch; the balance follows the undo and the new branch', async () => {
    const a = await receiveAddress(43);
    const txid = await s.devnode.wallet.send(a, 40_000n);
    await waitFor('tx.unconfirmed', () => walletEvents(txid).length === 1, 20_000);
    await s.mine(1);
    await waitFor('tx.confirmed', () => walletEvents(txid).some((e) => e.type === 'tx.confirmed'), 20_000);
    const before = (await call('GET', `/wallets/${walletId}/balance`)).body as { confirmed: number; unconfirmed: number };
    expect(before.unconfirmed).toBe(0);
    const r = await s.devnode.reorg(1, { newBlocks: 2, keepTxs: true });
    await s.synced();
    await waitFor(
      'reorged, then confirmed again',
      () =>
        walletEvents(txid).some((e) => e.type === 'tx.reorged') && walletEvents(txid).filter((e) => e.type === 'tx.confirmed').length === 2,
      30_000,
    );
    const reorged = walletEvents(txid).filter((e) => e.type === 'tx.reorged');
    expect(reorged).toHaveLength(1);
    expect(reorged[0]).toMatchObject({ path: '0/43', net: 40_000, block: expect.objectContaining({ hash: r.disconnected[0] }) });
    expect(walletEvents(txid).filter((e) => e.type === 'tx.confirmed')[1]).toMatchObject({
      path: '0/43',
      net: 40_000,
      block: expect.objectContaining({ hash: r.connected[0] }),
    });
    // The summary went through the undo (−) and the new branch (+): the same balance again.
    expect((await call('GET', `/wallets/${walletId}/balance`)).body).toEqual(before);
  });

  it('a block conflicting with a mempool payment: tx.replaced for the payment, tx.dropped for its child, each with path and net', async () => {
    const [a44, a45] = [await receiveAddress(44), await receiveAddress(45)];
    const pay = await s.devnode.wallet.send(a44, 200_000n);
    // The child spends the payment's change (the devnode wallet's) and pays the wallet again.
    const payTx = await rpcResult<{ vin: { txid: string; vout: number }[]; vout: { n: number; scriptPubKey: { hex: string } }[] }>(
      s.devnode,
      'getrawtransaction',
      [pay, true],
    );
    const change = payTx.vout.find((o) => s.devnode.wallet.owns(o.scriptPubKey.hex))!.n;
    const child = await s.devnode.wallet.send(a45, 150_000n, { from: [`${pay}:${change}`] });
    await waitFor('tx.unconfirmed of both', () => walletEvents(pay).length === 1 && walletEvents(child).length === 1, 20_000);
    // A block the mempool never saw spends the payment's coins elsewhere: the node takes the
    // payment out as a conflict and its child with it, as Core does on connecting such a block.
    const conflict = s.devnode.wallet.createTx(s.devnode.wallet.newAddress('p2pkh').address!, 10_000n, {
      from: payTx.vin.map((i) => `${i.txid}:${i.vout}`),
    });
    const [hash] = await s.devnode.mine(1, { txs: [conflict], includeMempool: false });
    await s.synced();
    const mined = await rpcResult<{ tx: string[] }>(s.devnode, 'getblock', [hash, 1]);
    expect(mined.tx).not.toContain(pay);
    expect(s.devnode.mempool()).not.toContain(child);
    await waitFor('tx.replaced and tx.dropped', () => walletEvents(pay).length === 2 && walletEvents(child).length === 2, 20_000);
    expect(walletEvents(pay)[1]).toMatchObject({
      type: 'tx.replaced',
      replaced_by: mined.tx[1],
      wallet: walletId,
      address: a44,
      path: '0/44',
      received: 200_000,
      sent: 0,
      net: 200_000,
    });
    expect(walletEvents(child)[1]).toMatchObject({
      type: 'tx.dropped',
      wallet: walletId,
      address: a45,
      path: '0/45',
      received: 150_000,
      sent: 0,
      net: 150_000,
      confirmations: 0,
    });
    expect(walletEvents(child)[1]).not.toHaveProperty('replaced_by');
    expect((await call('GET', `/wallets/${walletId}/balance`)).body).toMatchObject({ unconfirmed: 0 });
  });

  it('every event kind reaches the webhook and SNS as the stream has it', async () => {
    const byHook = deliveries(hookId);
    const bySns = deliveries(snsHookId);
    expect([...new Set(byHook.map((e) => e.type))].sort()).toEqual([...TX_KINDS].sort());
    expect(bySns.map((e) => [e.id, e.type])).toEqual(byHook.map((e) => [e.id, e.type]));
    const posted = (e: Ev) =>
      receiver.received.map((r) => JSON.parse(r.body) as Ev).find((b) => b.id === e.id && b.subscription_id === e.subscription_id);
    const published = (e: Ev) =>
      sns.messages
        .filter((m) => m.topicArn === TOPIC)
        .map((m) => JSON.parse(m.message) as Ev)
        .find((b) => b.id === e.id && b.subscription_id === e.subscription_id);
    await waitFor(
      'every delivery posted and published',
      () => byHook.every((e) => posted(e) !== undefined) && bySns.every((e) => published(e) !== undefined),
      30_000,
    );
    for (const e of byHook) expect(posted(e), `${e.type} ${String(e.transaction_hash)}`).toEqual(e);
    for (const e of bySns) expect(published(e), `${e.type} ${String(e.transaction_hash)}`).toEqual(e);
    expect(sns.badSignatures).toBe(0);
  });

  /** Receive address `index`, derived from the descriptor by a throwaway wallet of another key (the subscribed wallet has not derived it yet). */
  async function addressOf(index: number): Promise<string> {
    const other = await s.newApiKey(`probe-${index}`);
    const res = await fetch(`${s.url}/v1/wallets`, {
      method: 'POST',
      headers: { apiKey: other, 'content-type': 'application/json' },
      body: JSON.stringify({ descriptors: [DESC], gap_limit: index + 1 }),
    });
    const w = (await res.json()) as { id: string };
    const list = (await (
      await fetch(`${s.url}/v1/wallets/${w.id}/addresses?change=false&limit=10000`, { headers: { apiKey: other } })
    ).json()) as { index: number; address: string }[];
    await fetch(`${s.url}/v1/wallets/${w.id}`, { method: 'DELETE', headers: { apiKey: other } });
    return list.find((x) => x.index === index)!.address;
  }
});
