/**
 * A real 2-block reorg on Bitcoin Core 30, as the Electrum server's subscribers see it: one
 * `blockchain.headers.subscribe` notification, of the new tip once the reorg is applied (never
 * the intermediate lower tip), and one status notification per subscribed script hash whose
 * status changed. The indexer is stopped while Core invalidates the top two blocks and mines
 * three (their transactions back in), then started again: it undoes two blocks and applies three,
 * each in its own transaction, with the server following the outbox every 50 ms meanwhile. A
 * payment to a sentinel script hash afterwards tells when every notification has arrived.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeBitcoind } from '../../support/bitcoind.js';
import { electrumScriptHash, type ElectrumTestClient } from '../../support/electrum-client.js';
import { waitFor } from '../../support/wait.js';
import { startElectrumStack, type ElectrumStack } from './harness.js';

describeBitcoind('Electrum notifications across a reorg', () => {
  let s: ElectrumStack;

  beforeAll(async () => {
    s = await startElectrumStack();
  }, 240_000);
  afterAll(async () => s?.stop());

  it('a 2-block reorg: one header notification (the new tip), one status notification per changed script hash', async () => {
    const W = s.node.wallet!;
    const shOf = async (address: string) => electrumScriptHash((await s.node.call<{ scriptPubKey: string }>('getaddressinfo', [address], W)).scriptPubKey);
    const addresses = [await s.node.call<string>('getnewaddress', [], W), await s.node.call<string>('getnewaddress', [], W)];
    const sentinel = await s.node.call<string>('getnewaddress', [], W);
    // one payment in each of the two blocks the reorg takes away
    await s.node.call('sendtoaddress', [addresses[0], 0.2], W);
    await s.mine(1);
    await s.node.call('sendtoaddress', [addresses[1], 0.3], W);
    await s.mine(1);
    const before = await s.node.tip();

    const c: ElectrumTestClient = await s.connect();
    await c.request('server.version', ['reorg', ['1.4', '1.6']]);
    await c.request('blockchain.headers.subscribe');
    const hashes = await Promise.all(addresses.map(shOf));
    const sentinelSh = await shOf(sentinel);
    for (const h of [...hashes, sentinelSh]) await c.request('blockchain.scripthash.subscribe', [h]);

    await s.indexer.stop();
    await s.node.call('invalidateblock', [await s.node.call<string>('getblockhash', [before.height - 1])]);
    await s.node.mine(3);
    const after = await s.node.tip();
    expect(after.height).toBe(before.height + 1);
    await s.restartIndexer();
    await s.synced();

    // the sentinel: its notification comes after everything the reorg caused
    await s.node.call('sendtoaddress', [sentinel, 0.1], W);
    await waitFor('the sentinel\'s notification', () => c.notifications.some((n) => n.method === 'blockchain.scripthash.subscribe' && n.params[0] === sentinelSh));

    const headers = c.notifications.filter((n) => n.method === 'blockchain.headers.subscribe');
    expect(headers, JSON.stringify(c.notifications)).toEqual([{ method: 'blockchain.headers.subscribe', params: [{ height: after.height, hex: await s.node.call('getblockheader', [after.hash, false]) }] }]);
    for (const h of hashes) {
      const told = c.notifications.filter((n) => n.method === 'blockchain.scripthash.subscribe' && n.params[0] === h);
      const status = await c.request<string | null>('blockchain.scripthash.subscribe', [h]);
      expect(told, JSON.stringify(c.notifications)).toEqual([{ method: 'blockchain.scripthash.subscribe', params: [h, status] }]);
    }
  });
});
