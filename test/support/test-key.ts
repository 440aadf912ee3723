/**
 * A P2WPKH key the test holds, so that the same transactions — any fee (none, too much), lock
 * time, sequence, dust, conflicts, chains — can be built for a real bitcoind and for the devnode
 * alike: `fund` has the node's wallet pay it coins and mines them; `spend` signs a transaction of
 * those coins (segwit v0, version 2) without sending it.
 */
import { randomBytes } from 'node:crypto';
import * as btc from '@scure/btc-signer';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { NETWORKS } from '../../src/bitcoin/network.js';
import type { TestNode } from './nodes.js';

export type Coin = { txid: string; vout: number; sats: bigint };

export type TxOut = { address: string; sats: bigint } | { script: Uint8Array; sats: bigint };

export type TestKey = {
  readonly address: string;
  readonly script: Uint8Array;
  /**
   * Signs a transaction spending `inputs` (this key's coins) to `outputs`; `sequence` per input
   * (default 0xfffffffd), `lockTime` (default 0). The fee is what the outputs leave.
   */
  spend(inputs: Coin[], outputs: TxOut[], opts?: { sequence?: number; lockTime?: number }): { hex: string; txid: string; outputs: Coin[] };
  /** Has `node`'s funded wallet pay this key one coin per amount, mines a block; the coins, in order. */
  fund(node: TestNode, amounts: bigint[]): Promise<Coin[]>;
};

export function testKey(): TestKey {
  const priv = randomBytes(32);
  const pay = btc.p2wpkh(secp256k1.getPublicKey(priv, true), NETWORKS.regtest);
  const key: TestKey = {
    address: pay.address!,
    script: pay.script,
    spend(inputs, outputs, opts = {}) {
      const tx = new btc.Transaction({ version: 2, lockTime: opts.lockTime ?? 0, allowUnknownOutputs: true });
      for (const c of inputs)
        tx.addInput({
          txid: c.txid,
          index: c.vout,
          sequence: opts.sequence ?? 0xfffffffd,
          witnessUtxo: { script: pay.script, amount: c.sats },
        });
      for (const o of outputs) {
        if ('address' in o) tx.addOutputAddress(o.address, o.sats, NETWORKS.regtest);
        else tx.addOutput({ script: o.script, amount: o.sats });
      }
      tx.sign(priv);
      tx.finalize();
      return { hex: tx.hex, txid: tx.id, outputs: outputs.map((o, vout) => ({ txid: tx.id, vout, sats: o.sats })) };
    },
    async fund(node, amounts) {
      const txids: string[] = [];
      for (const a of amounts) txids.push(await node.pay(key.address, a));
      const [hash] = await node.mine(1);
      const block = await node.call<{ tx: { txid: string; vout: { value: number; n: number; scriptPubKey: { hex: string } }[] }[] }>(
        'getblock',
        [hash, 2],
      );
      const mine = Buffer.from(pay.script).toString('hex');
      return txids.map((txid, i) => {
        const tx = block.tx.find((t) => t.txid === txid);
        const out = tx?.vout.find((o) => o.scriptPubKey.hex === mine && BigInt(Math.round(o.value * 1e8)) === amounts[i]);
        if (!out) throw new Error(`payment ${txid} to the test key is not in block ${hash}`);
        return { txid, vout: out.n, sats: amounts[i]! };
      });
    },
  };
  return key;
}
