/**
 * CZMQNotificationInterface: turns validation signals into ZMQ messages in Core's order.
 * Mempool add: hashtx, rawtx, sequence `A` + mempool sequence. Non-block removal: sequence `R`.
 * Block connected: hashtx and rawtx for every transaction, then sequence `C`. Disconnected: the
 * same with `D`. New tip (not during initial block download): hashblock, rawblock. Hashes are
 * sent in display order, as bitcoind does.
 * @module
 */
import { hexToBytes } from '../src/bitcoin/hash.js';
import { txidOf, type BlockEntry } from './chain.js';
import type { MempoolEntry } from './mempool.js';
import type { NodeSignals } from './node.js';
import type { ZmqPublisher } from './zmq.js';

function sequenceBody(hashHex: string, label: 'A' | 'R' | 'C' | 'D', mempoolSeq?: bigint): Uint8Array {
  const body = new Uint8Array(mempoolSeq === undefined ? 33 : 41);
  body.set(hexToBytes(hashHex), 0);
  body[32] = label.charCodeAt(0);
  if (mempoolSeq !== undefined) new DataView(body.buffer).setBigUint64(33, mempoolSeq, true);
  return body;
}

/** The signals the ZMQ publisher listens to. */
export function zmqSignals(pub: ZmqPublisher): NodeSignals {
  const txMessages = (txid: string, raw: Uint8Array) => {
    pub.publish('hashtx', hexToBytes(txid));
    pub.publish('rawtx', raw);
  };
  const blockTxs = (e: BlockEntry) => {
    for (const tx of e.block.txs) txMessages(txidOf(tx), tx.bytes);
  };
  return {
    txAdded(entry: MempoolEntry, seq: bigint) {
      txMessages(entry.txid, entry.tx.bytes);
      pub.publish('sequence', sequenceBody(entry.txid, 'A', seq));
    },
    txRemoved(entry: MempoolEntry, _reason, seq: bigint) {
      pub.publish('sequence', sequenceBody(entry.txid, 'R', seq));
    },
    blockConnected(e: BlockEntry) {
      blockTxs(e);
      pub.publish('sequence', sequenceBody(e.hash, 'C'));
    },
    blockDisconnected(e: BlockEntry) {
      blockTxs(e);
      pub.publish('sequence', sequenceBody(e.hash, 'D'));
    },
    updatedBlockTip(tip: BlockEntry, fork: BlockEntry, ibd: boolean) {
      if (ibd || tip === fork) return;
      pub.publish('hashblock', hexToBytes(tip.hash));
      pub.publish('rawblock', tip.block.bytes);
    },
  };
}
