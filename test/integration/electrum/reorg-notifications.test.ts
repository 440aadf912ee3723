/**
 * A real 2-block reorg on Bitcoin Core 30, as the Electrum server's subscribers see it: one
 * `blockchain.headers.subscribe` notification, of the new tip once the reorg is applied (never
 * the intermediate lower tip), and one status notification per subscribed script hash whose
 * status changed (none for one whose status did not). The indexer is stopped while Core
 * invalidates the top two blocks and mines three — two empty, then one with the two payments
 * back in — and started again: it undoes two blocks and applies three, each in its own
 * transaction, with the server following the outbox every 50 ms meanwhile. A payment to a
 * sentinel script hash afterwards tells when every notification has arrived.
 *
 * Everything that could change a status other than the reorg is kept out: the subscribed
 * addresses belong to a wallet that pays nobody (`dest`), so the sentinel payment cannot spend
 * their coins; the two payments the reorg moves must be valid again at the lower height, so
 * they are paid from a wallet funded below the reorg (`payer`: no coinbase output, which an undone
 * block can make immature again) with lock time 0 (Core's wallet sets a payment's lock time to
 * the tip it was made at, mostly: the payment of the top block would then not be final at the
 * lower height and would leave the mempool, in about nine runs of ten). The client subscribes
 * once the server has told the pre-reorg tip (the server follows the index every 50 ms;
 * subscribing earlier adds a notification of that tip).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeBitcoind } from '../../support/bitcoind.js';
import { electrumScriptHash, type ElectrumTestClient } from '../../support/electrum-client.js';
import { waitFor } from '../../support/wait.js';
import { startElectrumStack, type ElectrumStack } from './harness.js';

type Header = { height: number; hex: string };

describeBitcoind('Electrum notifications across a reorg', () => {
  let s: ElectrumStack;

  beforeAll(async () => {
    s = await startElectrumStack();
  }, 240_000);
  afterAll(async () => s?.stop());

  it('a 2-block reorg: one header notification (the new tip), one status notification per changed script hash', async () => {
    const W = s.node.wallet!;
    for (const w of ['dest', 'payer']) await s.node.call('createwallet', [w]);
    const pay = (address: string, amount: number) =>
      s.node.call('send', [[{ [address]: amount }], null, 'unset', null, { locktime: 0 }], 'payer');
    const newAddress = (wallet: string) => s.node.call<string>('getnewaddress', [], wallet);
    const shOf = async (address: string) =>
      electrumScriptHash((await s.node.call<{ scriptPubKey: string }>('getaddressinfo', [address], 'dest')).scriptPubKey);
    const [moved0, moved1, kept, sentinel] = [
      await newAddress('dest'),
      await newAddress('dest'),
      await newAddress('dest'),
      await newAddress('dest'),
    ];
    // the payer's coins and a payment the reorg does not touch, confirmed below it
    await s.node.call('send', [[{ [await newAddress('payer')]: 1 }, { [await newAddress('payer')]: 1 }, { [kept]: 0.1 }]], W);
    await s.mine(1);
    // one payment in each of the two blocks the reorg takes away
    await pay(moved0, 0.2);
    await s.mine(1);
    await pay(moved1, 0.3);
    await s.mine(1);
    const before = await s.node.tip();

    const probe = await s.connect();
    await waitFor(
      'the server to tell the pre-reorg tip',
      async () => (await probe.request<Header>('blockchain.headers.subscribe')).height === before.height,
    );
    const c: ElectrumTestClient = await s.connect();
    await c.request('server.version', ['reorg', ['1.4', '1.6']]);
    expect((await c.request<Header>('blockchain.headers.subscribe')).height).toBe(before.height);
    const [moved0Sh, moved1Sh, keptSh, sentinelSh] = (await Promise.all([moved0, moved1, kept, sentinel].map(shOf))) as [
      string,
      string,
      string,
      string,
    ];
    const statusBefore = new Map<string, string | null>();
    for (const h of [moved0Sh, moved1Sh, keptSh, sentinelSh])
      statusBefore.set(h, await c.request<string | null>('blockchain.scripthash.subscribe', [h]));

    await s.indexer.stop();
    await s.node.call('invalidateblock', [await s.node.call<string>('getblockhash', [before.height - 1])]);
    const to = await newAddress(W);
    for (let i = 0; i < 2; i++) await s.node.call('generateblock', [to, []]);
    expect((await s.node.call<string[]>('getrawmempool')).length, 'both payments back in the mempool').toBe(2);
    await s.node.mine(1);
    const after = await s.node.tip();
    expect(after.height).toBe(before.height + 1);
    await s.restartIndexer();
    await s.synced();

    // the sentinel: its notification comes after everything the reorg caused
    await s.node.call('sendtoaddress', [sentinel, 0.1], W);
    await waitFor("the sentinel's notification", () =>
      c.notifications.some((n) => n.method === 'blockchain.scripthash.subscribe' && n.params[0] === sentinelSh),
    );

    const all = JSON.stringify(c.notifications);
    const headers = c.notifications.filter((n) => n.method === 'blockchain.headers.subscribe');
    expect(headers, all).toEqual([
      {
        method: 'blockchain.headers.subscribe',
        params: [{ height: after.height, hex: await s.node.call('getblockheader', [after.hash, false]) }],
      },
    ]);
    for (const h of [moved0Sh, moved1Sh, keptSh]) {
      const told = c.notifications.filter((n) => n.method === 'blockchain.scripthash.subscribe' && n.params[0] === h);
      const status = await c.request<string | null>('blockchain.scripthash.subscribe', [h]);
      const changed = status !== statusBefore.get(h);
      expect(changed, `${h === keptSh ? "the kept payment's" : "a moved payment's"} status changed`).toBe(h !== keptSh);
      expect(told, all).toEqual(changed ? [{ method: 'blockchain.scripthash.subscribe', params: [h, status] }] : []);
    }
  });
});
