import { sha256 } from '@noble/hashes/sha2.js';
/**
 * An in-memory implementation of the client SDK's small `BuilderClient`/`AssetClient`
 * interfaces for unit tests of pure builder logic: unspent outputs per address given by the
 * test, transactions recorded instead of broadcast. Not a mock of any module: the SDK takes this
 * interface by design (a browser app can back it with anything).
 */
import { hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import type { AssetClient } from '../../client/assets.js';
import { getNetwork, type NetworkName } from '../../client/network.js';
import { Reservations } from '../../client/reservations.js';
import type { Transaction, UnspentOutput } from '../../client/types.js';

export type MemoryClient = AssetClient & {
  /** Adds an unspent output paying `script` at `address`. */
  fund(address: string, script: Uint8Array, value: bigint, txid?: string, vout?: number): UnspentOutput;
  /** Removes spent outputs (`txid:vout`) from the unspent lists. */
  spend(outpoints: string[]): void;
  /** Raw hex of every transaction sent. */
  readonly sent: string[];
  /** Counts `listUnspentOutputs` calls. */
  readonly calls: { listUnspent: number; getTransaction: number };
  /** Makes the next `sendTransaction` calls fail with these errors. */
  failNextSends: unknown[];
  /** Transactions served by getTransaction. */
  readonly transactions: Map<string, Transaction>;
};

let counter = 0;
function fakeTxid(): string {
  counter++;
  return hex.encode(sha256(new TextEncoder().encode(`memory-${counter}-${Math.random()}`)));
}

export function memoryClient(network: NetworkName = 'regtest'): MemoryClient {
  const utxos = new Map<string, UnspentOutput[]>();
  const sent: string[] = [];
  const calls = { listUnspent: 0, getTransaction: 0 };
  const transactions = new Map<string, Transaction>();
  const c: MemoryClient = {
    network: getNetwork(network),
    reservations: new Reservations(),
    sent,
    calls,
    transactions,
    failNextSends: [],
    fund(address, script, value, txid = fakeTxid(), vout = 0) {
      const u: UnspentOutput = { txid, vout, value, script: hex.encode(script), confirmations: 1 };
      utxos.set(address, [...(utxos.get(address) ?? []), u]);
      return u;
    },
    spend(outpoints) {
      const gone = new Set(outpoints);
      for (const [a, list] of utxos)
        utxos.set(
          a,
          list.filter((u) => !gone.has(`${u.txid}:${u.vout}`)),
        );
    },
    async listUnspentOutputs(address) {
      calls.listUnspent++;
      // Let other builders run between the fetch and the selection, as real I/O would.
      await new Promise((r) => setTimeout(r, 1));
      return [...(utxos.get(address) ?? [])];
    },
    async sendTransaction(tx) {
      const err = c.failNextSends.shift();
      if (err) throw err;
      sent.push(tx.hex);
      return btc.Transaction.fromRaw(hex.decode(tx.hex), { allowUnknownOutputs: true }).id;
    },
    async getTransaction(txid) {
      calls.getTransaction++;
      const t = transactions.get(txid);
      if (!t) throw new Error(`memory client: no transaction ${txid}`);
      return t;
    },
  };
  return c;
}
