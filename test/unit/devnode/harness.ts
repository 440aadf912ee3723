/**
 * An in-process devnode node model for unit tests: no sockets, a recording signal listener
 * (the ZMQ notifier's view), a wallet with a fixed seed and helpers to mine.
 */
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { hexToBytes } from '../../../src/bitcoin/hash.js';
import type { BlockEntry } from '../../../devnode/chain.js';
import { genesisBytes } from '../../../devnode/consensus.js';
import { assembleBlock } from '../../../devnode/miner.js';
import { Node, type NodeSignals } from '../../../devnode/node.js';
import { Wallet } from '../../../devnode/wallet.js';
import { regtestScript } from '../../../devnode/address.js';
import { silentLogger } from '../../../src/log.js';
import type { DecodedTx } from '../../../src/bitcoin/tx.js';

/** One validation signal, as the ZMQ notifier receives it. */
export type Signal =
  | { kind: 'A' | 'R'; txid: string; seq: bigint; reason?: string }
  | { kind: 'C' | 'D'; hash: string }
  | { kind: 'tip'; hash: string; ibd: boolean };

export function createTestNode(seedByte = 7) {
  const node = new Node({ genesis: decodeBlock(genesisBytes()), verifyScripts: true, log: silentLogger() });
  const signals: Signal[] = [];
  const listener: NodeSignals = {
    txAdded: (e, seq) => signals.push({ kind: 'A', txid: e.txid, seq }),
    txRemoved: (e, reason, seq) => signals.push({ kind: 'R', txid: e.txid, seq, reason }),
    blockConnected: (e) => signals.push({ kind: 'C', hash: e.hash }),
    blockDisconnected: (e) => signals.push({ kind: 'D', hash: e.hash }),
    updatedBlockTip: (e, _fork, ibd) => signals.push({ kind: 'tip', hash: e.hash, ibd }),
  };
  node.setSignals(listener);
  const wallet = new Wallet(node, new Uint8Array(32).fill(seedByte));
  const payout = regtestScript(wallet.address('p2wpkh'))!;
  const mine = (n = 1, opts: { txs?: DecodedTx[]; parent?: BlockEntry; useMempool?: boolean } = {}): BlockEntry[] => {
    const out: BlockEntry[] = [];
    let parent = opts.parent;
    for (let i = 0; i < n; i++) {
      const block = assembleBlock(node, {
        payoutScript: payout,
        useMempool: opts.useMempool ?? !parent,
        ...(i === 0 && opts.txs ? { txs: opts.txs } : {}),
        ...(parent ? { parent } : {}),
      });
      const r = node.processBlock(block);
      if (r.status === 'invalid') throw new Error(`block rejected: ${r.reason} ${r.debug}`);
      if (r.status === 'duplicate-invalid') throw new Error('duplicate-invalid');
      out.push(r.entry);
      if (parent) parent = r.entry;
    }
    return out;
  };
  return { node, wallet, signals, mine, payout };
}

export function hex(s: string): Uint8Array {
  return hexToBytes(s);
}
