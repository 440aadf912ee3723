/**
 * A small address index over a devnode, for the client SDK's signing tests that must not wait
 * for the full Blockwire stack: it implements the SDK's `BuilderClient`/`AssetClient` interfaces
 * (unspent outputs of watched addresses, transactions as the API's JSON) from the transactions
 * it funds and broadcasts itself. Broadcasting goes to the real devnode, whose script checks
 * decide acceptance. The end-to-end tests use the real API instead (test/support/stack.ts).
 */
import { hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import type { AssetClient } from '../../client/assets.js';
import { getNetwork } from '../../client/network.js';
import { Reservations } from '../../client/reservations.js';
import type { Transaction, UnspentOutput } from '../../client/types.js';
import type { Devnode } from '../../devnode/index.js';

export type DevnodeIndex = AssetClient & {
  /** Watches `address` (its outputs in later transactions become unspent outputs). */
  watch(address: string, script: Uint8Array): void;
  /** Pays the watched addresses from the devnode wallet (one transaction) and returns its txid. */
  fund(payments: { address: string; sats: bigint }[]): Promise<string>;
  /** Raw hex of the transactions sent through `sendTransaction`. */
  readonly sent: string[];
};

const TX_OPTS = { allowUnknownOutputs: true, allowUnknownInputs: true, disableScriptCheck: true } as const;

export function devnodeIndex(node: Devnode): DevnodeIndex {
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
    txs.set(tx.id, { transaction_hash: tx.id, block_hash: [], coinbase, inputs, outputs, time: null, broadcast_time: '0001-01-01T00:00:00Z', addresses: [] });
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
      const [first, ...rest] = payments;
      const txHex = node.wallet.createTx(first!.address, first!.sats, { outputs: rest.map((p) => ({ to: p.address, sats: p.sats })) });
      await node.broadcast(txHex);
      // Its inputs are the devnode wallet's: this index treats the funding transaction as a source of plain coins.
      const id = record(txHex);
      txs.set(id, { ...txs.get(id)!, coinbase: true, inputs: [] });
      return id;
    },
    async listUnspentOutputs(address) {
      return [...unspent.values()].filter((u) => u.address === address).map(({ address: _a, ...u }) => u);
    },
    async sendTransaction(tx) {
      const txid = await node.broadcast(tx.hex);
      sent.push(tx.hex);
      record(tx.hex);
      return txid;
    },
    async getTransaction(txid) {
      const t = txs.get(txid);
      if (!t) throw new Error(`devnode index: unknown transaction ${txid}`);
      return t;
    },
  };
}
