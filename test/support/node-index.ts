/**
 * A small address index over a node (a real bitcoind or the devnode), for the client SDK's
 * signing tests that must not wait for the full Blockwire stack: it implements the SDK's
 * `BuilderClient`/`AssetClient` interfaces (unspent outputs of watched addresses, transactions as
 * the API's JSON) from the transactions it funds and broadcasts itself. Each transaction sent
 * goes first through the node's `testmempoolaccept` (it must be allowed), then
 * `sendrawtransaction`: the node's policy and script checks decide acceptance. The end-to-end
 * tests use the real API instead (test/support/stack.ts).
 */
import { hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import type { AssetClient } from '../../client/assets.js';
import { getNetwork } from '../../client/network.js';
import { Reservations } from '../../client/reservations.js';
import type { Transaction, UnspentOutput } from '../../client/types.js';
import type { TestNode } from './nodes.js';

export type NodeIndex = AssetClient & {
  /** Watches `address` (its outputs in later transactions become unspent outputs). */
  watch(address: string, script: Uint8Array): void;
  /** Pays the watched addresses from the node's wallet (the devnode: one transaction; bitcoind: one each, as its wallet pays an address once per transaction). */
  fund(payments: { address: string; sats: bigint }[]): Promise<void>;
  /** Raw hex of the transactions sent through `sendTransaction`. */
  readonly sent: string[];
};

const TX_OPTS = { allowUnknownOutputs: true, allowUnknownInputs: true, disableScriptCheck: true } as const;

export function nodeIndex(node: TestNode): NodeIndex {
  const network = getNetwork('regtest');
  const watched = new Map<string, string>(); // script hex → address
  const unspent = new Map<string, UnspentOutput & { address: string }>(); // txid:vout →
  const txs = new Map<string, Transaction>();
  const sent: string[] = [];

  function record(txHex: string, coinbase = false): string {
    const tx = btc.Transaction.fromRaw(hex.decode(txHex), TX_OPTS);
    const inputs: Transaction['inputs'] = [];
    for (let i = 0; i < tx.inputsLength; i++) {
      const inp = tx.getInput(i);
      const prevId = hex.encode(inp.txid!);
      unspent.delete(`${prevId}:${inp.index}`);
      const prev = txs.get(prevId)?.outputs[inp.index!];
      inputs.push({ transaction_hash: prevId, output_index: inp.index!, address: prev?.address ?? [], value: prev?.value ?? null });
    }
    const outputs: Transaction['outputs'] = [];
    for (let i = 0; i < tx.outputsLength; i++) {
      const o = tx.getOutput(i);
      const script = hex.encode(o.script!);
      const address = watched.get(script);
      outputs.push({ index: i, address: address ? [address] : [], script, value: o.amount!, used: false });
      if (address) unspent.set(`${tx.id}:${i}`, { txid: tx.id, vout: i, value: o.amount!, script, confirmations: 0, address });
    }
    txs.set(tx.id, {
      transaction_hash: tx.id,
      block_hash: [],
      coinbase,
      inputs,
      outputs,
      time: null,
      broadcast_time: '0001-01-01T00:00:00Z',
      addresses: [],
    });
    return tx.id;
  }

  return {
    network,
    reservations: new Reservations(),
    sent,
    watch(address, script) {
      watched.set(hex.encode(script), address);
    },
    async fund(payments) {
      const funding: string[] = [];
      const d = node.devnode;
      if (d) {
        const [first, ...rest] = payments;
        funding.push(d.wallet.createTx(first!.address, first!.sats, { outputs: rest.map((p) => ({ to: p.address, sats: p.sats })) }));
        await d.broadcast(funding[0]!);
      } else {
        for (const p of payments) funding.push(await node.call<string>('getrawtransaction', [await node.pay(p.address, p.sats)]));
      }
      for (const txHex of funding) {
        // Its inputs are the node wallet's: this index treats the funding transaction as a source of plain coins.
        const id = record(txHex);
        txs.set(id, { ...txs.get(id)!, coinbase: true, inputs: [] });
      }
    },
    async listUnspentOutputs(address) {
      return [...unspent.values()].filter((u) => u.address === address).map(({ address: _a, ...u }) => u);
    },
    async sendTransaction(tx) {
      const [test] = await node.call<{ txid: string; allowed: boolean; 'reject-reason'?: string }[]>('testmempoolaccept', [[tx.hex]]);
      if (!test?.allowed) throw new Error(`${node.kind} testmempoolaccept refused ${test?.txid}: ${test?.['reject-reason']}`);
      const txid = await node.call<string>('sendrawtransaction', [tx.hex]);
      sent.push(tx.hex);
      record(tx.hex);
      return txid;
    },
    async getTransaction(txid) {
      const t = txs.get(txid);
      if (!t) throw new Error(`node index: unknown transaction ${txid}`);
      return t;
    },
  };
}
