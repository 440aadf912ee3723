/**
 * The Electrum server answers from the index only once it is at the node's tip (within
 * ELECTRUM_MAX_LAG_BLOCKS): on a real Bitcoin Core 30, the indexer is stopped, the node mines
 * blocks paying a watched address, and an Electrum server started over that index refuses the
 * methods that read it (error 1 "still catching up with the node") while answering the rest;
 * once an indexer catches up, the same requests answer what Core's UTXO set says.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeBitcoind } from '../../support/bitcoind.js';
import { connectElectrum, electrumScriptHash } from '../../support/electrum-client.js';
import { waitFor } from '../../support/wait.js';
import { startElectrumStack, type ElectrumStack } from './harness.js';

describeBitcoind('Electrum while the index is syncing', () => {
  let s: ElectrumStack;

  beforeAll(async () => {
    s = await startElectrumStack();
  }, 240_000);
  afterAll(async () => s?.stop());

  it("refuses what reads the index until the index reaches the node's tip, then answers as Core", async () => {
    const W = s.node.wallet!;
    const address = await s.node.call<string>('getnewaddress', [], W);
    const sh = electrumScriptHash((await s.node.call<{ scriptPubKey: string }>('getaddressinfo', [address], W)).scriptPubKey);
    const indexed = (await s.node.tip()).height;
    await s.indexer.stop();
    await s.node.call('sendtoaddress', [address, 0.3], W);
    await s.node.mine(5);
    const nodeAt = (await s.node.tip()).height;

    const e = await s.electrumOn({});
    const c = await connectElectrum(e.tcpPort!);
    try {
      // what does not read the index is answered
      expect(await c.request('server.version', ['sync', ['1.4', '1.6']])).toEqual(['blockwire/0.1', '1.6']);
      expect(await c.request('server.ping')).toBeNull();
      expect((await c.request<{ genesis_hash: string }>('server.features')).genesis_hash).toBe(await s.node.call('getblockhash', [0]));
      // what does is refused, saying why
      const why = `still catching up with the node: the index is at height ${indexed}, the node at ${nodeAt}; try again shortly`;
      for (const [method, params] of [
        ['blockchain.scripthash.get_balance', [sh]],
        ['blockchain.scripthash.subscribe', [sh]],
        ['blockchain.scripthash.get_history', [sh]],
        ['blockchain.scripthash.listunspent', [sh]],
        ['blockchain.headers.subscribe', []],
        ['blockchain.block.header', [indexed]],
      ] as const) {
        await expect(c.request(method, [...params]), method).rejects.toMatchObject({ code: 1, rpcMessage: why });
      }

      await s.restartIndexer();
      await waitFor('the index to catch up and the gate to open', () =>
        c.request('blockchain.scripthash.get_balance', [sh]).then(
          () => true,
          () => false,
        ),
      );
      // (the gate opens within ELECTRUM_MAX_LAG_BLOCKS of the tip: the answers compared are at the tip)
      await s.synced();
      const balance = await c.request<{ confirmed: number; unconfirmed: number }>('blockchain.scripthash.get_balance', [sh]);
      const scan = await s.node.call<{ total_amount: number }>('scantxoutset', ['start', [`addr(${address})`]]);
      expect(balance).toEqual({ confirmed: Math.round(scan.total_amount * 1e8), unconfirmed: 0 });
      await waitFor(
        'the server to follow the index to the tip',
        async () => (await c.request<{ height: number }>('blockchain.headers.subscribe')).height === nodeAt,
      );
    } finally {
      c.close();
    }
  });
});
