/**
 * Confirmed transactions with the outputs their inputs spend, from the node: one JSON-RPC batch
 * of `getrawtransaction <txid> 2 <blockhash>` (Core takes each input's prevout from the block's
 * undo data, so no -txindex is needed; electrs reads transactions the same way). The transaction
 * views take outputs and prevouts from here rather than from `txs`, so that the index need not
 * keep the scripts of spent outputs (docs/schema.md), and their serialized size and weight, which
 * the index does not keep either (0058_txs_sizes_dropped). A node that cannot be reached, or no longer
 * has the block (pruned below it), makes the read fail with 503 ERR_NODE_UNAVAILABLE.
 * @module
 */
import { decodeBlock } from '../src/bitcoin/block.js';
import { hashToHex, hexToBytes, hexToHash } from '../src/bitcoin/hash.js';
import { ServiceError } from '../src/errors.js';
import { btcToSats, type TxInfo } from '../src/rpc/types.js';
import type { NodeClient } from './deps.js';

type NodeOutput = { value: bigint; script: Uint8Array };

/**
 * A transaction's outputs and inputs (none for a coinbase), each input with the output it spends,
 * and its serialized bytes (witness included) and BIP141 weight.
 */
export type NodeTx = {
  inputs: { prevTxid: Uint8Array; vout: number; prevout: NodeOutput }[];
  outputs: NodeOutput[];
  sizes: { size: number; weight: number };
};

const output = (o: { value: number; scriptPubKey: { hex: string } }): NodeOutput => ({
  value: btcToSats(o.value),
  script: hexToBytes(o.scriptPubKey.hex),
});

/** Core's verbose transaction (verbosity 2) as a NodeTx. */
function nodeTx(info: TxInfo): NodeTx {
  const inputs: NodeTx['inputs'] = [];
  for (const i of info.vin) {
    if (i.coinbase !== undefined) continue;
    if (i.txid === undefined || i.vout === undefined || !i.prevout)
      throw new ServiceError('ERR_NODE_UNAVAILABLE', { message: `the node gave no prevout for an input of ${info.txid}` });
    inputs.push({ prevTxid: hexToHash(i.txid), vout: i.vout, prevout: output(i.prevout) });
  }
  return { inputs, outputs: info.vout.map(output), sizes: { size: info.size, weight: info.weight } };
}

/**
 * The transactions `wanted` (each with the block that holds it), in order, from the node.
 * Not for the genesis coinbase, which Core does not hand out as a transaction.
 */
export async function nodeTransactions(
  node: NodeClient | undefined,
  wanted: readonly { txid: Uint8Array; blockHash: Uint8Array }[],
): Promise<NodeTx[]> {
  if (wanted.length === 0) return [];
  if (!node?.batch)
    throw new ServiceError('ERR_NODE_UNAVAILABLE', { message: 'no node is configured to read confirmed transactions from' });
  let answers: unknown[];
  try {
    answers = await node.batch.call(
      node,
      wanted.map((w) => ({ method: 'getrawtransaction', params: [hashToHex(w.txid), 2, hashToHex(w.blockHash)] })),
    );
  } catch (err) {
    throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: err });
  }
  return answers.map((a) => {
    if (a instanceof Error || typeof a !== 'object' || a === null) throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: a });
    return nodeTx(a as TxInfo);
  });
}

/**
 * The genesis block's coinbase, which Core does not hand out as a transaction: its outputs
 * from the block itself (`getblock <hash> 0`); it has no input that spends.
 */
export async function nodeGenesisCoinbase(node: NodeClient | undefined, blockHash: Uint8Array): Promise<NodeTx> {
  if (!node?.getBlockRaw)
    throw new ServiceError('ERR_NODE_UNAVAILABLE', { message: 'no node is configured to read the genesis block from' });
  let raw: Uint8Array;
  try {
    raw = await node.getBlockRaw(hashToHex(blockHash));
  } catch (err) {
    throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: err });
  }
  const coinbase = decodeBlock(raw).txs[0]!;
  return {
    inputs: [],
    outputs: coinbase.outputs.map((o) => ({ value: o.value, script: o.script })),
    sizes: { size: coinbase.size, weight: coinbase.weight },
  };
}
