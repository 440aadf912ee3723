/**
 * Every kind of transaction the SDK builds — every address type, 2-of-3 multisig of each kind,
 * at once and through a PSBT passed between signers, data and dusty outputs, Open Assets issue
 * and transfers — is allowed by `testmempoolaccept` and mined, on a real Bitcoin Core 30 and on
 * the devnode, and the node holds exactly the bytes the SDK produced (decoded identically by
 * scure). The index here is the small one of test/support/node-index.ts; e2e.test.ts repeats the
 * flows through the real Blockwire API.
 */
import { hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAssets } from '../../../client/assets.js';
import { TransactionBuilder, type BuiltTransaction } from '../../../client/builder.js';
import { ADDRESS_TYPES, Key, addressToScript } from '../../../client/keys.js';
import { MULTISIG_TYPES, createMultisig } from '../../../client/multisig.js';
import { parseMarkerScript } from '../../../client/open-assets.js';
import { finalizePsbt, signPsbt } from '../../../client/psbt.js';
import { multisigSource } from '../../../client/sources.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { nodeIndex, type NodeIndex } from '../../support/node-index.js';
import { describeNodes, type TestNode } from '../../support/nodes.js';

describeNodes('SDK transactions', (entry) => {
  let node: TestNode;
  let rpc: BitcoindClient;
  let index: NodeIndex;

  beforeAll(async () => {
    // -txindex: getrawtransaction of the mined transactions.
    node = await entry.start({ funded: true, bitcoind: { txindex: true } });
    rpc = new BitcoindClient({ url: node.rpcUrl });
    index = nodeIndex(node);
  });
  afterAll(async () => {
    await node?.stop();
  });

  function watchKey(k: Key): void {
    for (const t of ADDRESS_TYPES) index.watch(k.address(t), addressToScript(k.address(t), 'regtest'));
  }

  /** Mines the transaction and checks the node holds exactly our bytes, decoded alike by scure. */
  async function mineAndCompare(built: { txid: string; hex: string }): Promise<void> {
    const [block] = await node.mine(1);
    const info = await rpc.getBlock(block!, 1);
    expect(info.tx).toContain(built.txid);
    const onNode = hex.encode(await rpc.getRawTransaction(built.txid));
    expect(onNode).toBe(built.hex);
    const a = btc.Transaction.fromRaw(hex.decode(onNode), { allowUnknownOutputs: true });
    const b = btc.Transaction.fromRaw(hex.decode(built.hex), { allowUnknownOutputs: true });
    expect(a.id).toBe(b.id);
    expect(a.toBytes(true, true)).toEqual(b.toBytes(true, true));
  }

  describe('single-key spends', () => {
    it('spends P2PKH, P2SH-P2WPKH, P2WPKH and P2TR inputs in one transaction', async () => {
      const key = Key.random('regtest');
      watchKey(key);
      await index.fund(ADDRESS_TYPES.map((t) => ({ address: key.address(t), sats: 30_000n })));
      const payee = Key.random('regtest').address('p2tr');
      const built = await new TransactionBuilder(index, { feeRate: 2 }).to(payee, 100_000n).from(key.toWif()).send();
      expect(new Set(built.inputs.map((i) => i.address))).toEqual(new Set(ADDRESS_TYPES.map((t) => key.address(t))));
      await mineAndCompare(built);
    });

    it.each(ADDRESS_TYPES)('spends a %s output alone, with change back to it', async (type) => {
      const key = Key.random('regtest');
      watchKey(key);
      await index.fund([{ address: key.address(type), sats: 40_000n }]);
      const built = await new TransactionBuilder(index, { feeRate: 3 })
        .to(Key.random('regtest').address('p2pkh'), 10_000n)
        .from(key, type)
        .send();
      expect(built.outputs[built.changeIndex!]!.address).toBe(key.address(type));
      await mineAndCompare(built);
    });

    it('sends a data transaction (OP_RETURN, no shuffling) and a dusty output when allowed', async () => {
      const key = Key.random('regtest');
      watchKey(key);
      await index.fund([{ address: key.address('p2wpkh'), sats: 20_000n }]);
      const built = await new TransactionBuilder(index, { shuffleOutputs: false, allowDustyOutputs: true })
        .data('blockwire stamp')
        .to(Key.random('regtest').address('p2wpkh'), 400n)
        .from(key, 'p2wpkh')
        .send();
      expect(built.outputs[0]!.data).toBe(hex.encode(new TextEncoder().encode('blockwire stamp')));
      expect(built.outputs[1]!.amount).toBe(400n);
      await mineAndCompare(built);
    });
  });

  describe.each(MULTISIG_TYPES)('2-of-3 %s', (type) => {
    it('spends with all keys at once and, separately, through a PSBT passed between signers', async () => {
      const [a, b, c] = [Key.random('regtest'), Key.random('regtest'), Key.random('regtest')];
      const acct = createMultisig({ m: 2, publicKeys: [a.publicKey, b.publicKey, c.publicKey], type, network: 'regtest' });
      index.watch(acct.address, acct.script);
      await index.fund([
        { address: acct.address, sats: 50_000n },
        { address: acct.address, sats: 50_000n },
      ]);
      const payee = Key.random('regtest').address('p2wpkh');
      const atOnce = await new TransactionBuilder(index).to(payee, 20_000n).fromMultisig(acct, [a, b]).send();
      await mineAndCompare(atOnce);

      const partial = await new TransactionBuilder(index).to(payee, 20_000n).fromMultisig(acct, [c]).buildPsbt();
      const final = finalizePsbt(signPsbt(partial.psbt, a.toWif(), 'regtest'));
      const txid = await index.sendTransaction(final);
      partial.commit();
      expect(txid).toBe(final.txid);
      await mineAndCompare(final);
    });
  });

  describe('Open Assets', () => {
    it('issues, transfers, and transfers from a multisig holder; every transaction accepted and mined', async () => {
      const issuer = Key.random('regtest');
      const alice = Key.random('regtest');
      const [m1, m2, m3] = [Key.random('regtest'), Key.random('regtest'), Key.random('regtest')];
      const vault = createMultisig({
        m: 2,
        publicKeys: [m1.publicKey, m2.publicKey, m3.publicKey],
        type: 'p2sh-p2wsh',
        network: 'regtest',
      });
      const bob = Key.random('regtest').address('p2pkh');
      for (const k of [issuer, alice]) watchKey(k);
      index.watch(vault.address, vault.script);
      index.watch(bob, addressToScript(bob, 'regtest'));
      await index.fund([
        { address: issuer.address('p2wpkh'), sats: 50_000n },
        { address: alice.address('p2tr'), sats: 20_000n },
        { address: vault.address, sats: 20_000n },
      ]);
      const assets = new OpenAssets(index);
      const sendAndMine = async (t: BuiltTransaction) => {
        await t.send();
        await mineAndCompare(t);
      };

      const { assetId, tx: issue } = await assets.issue({ issuer, quantity: 500n, to: alice.address('p2tr') });
      await sendAndMine(issue);
      await sendAndMine(await assets.transfer({ from: alice, type: 'p2tr', assetId, quantity: 300n, to: vault.address }));
      const partial = await assets.transferPsbt({ from: multisigSource(vault, [m3]), assetId, quantity: 120n, to: bob });
      const final = finalizePsbt(signPsbt(partial.psbt, m1, 'regtest'));
      expect(
        parseMarkerScript(hex.encode(btc.Transaction.fromRaw(hex.decode(final.hex), { allowUnknownOutputs: true }).getOutput(0).script!))!
          .quantities,
      ).toEqual([120n, 180n]);
      await index.sendTransaction(final);
      partial.commit();
      await mineAndCompare(final);

      const balances = async (a: string) => (await assets.getBalances(a)).map((x) => [x.assetId, x.quantity]);
      expect(await balances(alice.address('p2tr'))).toEqual([[assetId, 200n]]);
      expect(await balances(vault.address)).toEqual([[assetId, 180n]]);
      expect(await balances(bob)).toEqual([[assetId, 120n]]);
    });
  });
});
