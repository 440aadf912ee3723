/**
 * What the indexer checks of a block the node sent before applying it: it decodes, it is the
 * block asked for (its hash), and its transactions are the ones its header commits to (Merkle
 * root, without the CVE-2012-2459 duplication). A failed check is retryable: the node is asked
 * again on the next turn.
 * @module
 */
import { decodeBlock, type DecodedBlock } from '../src/bitcoin/block.js';
import { equalBytes, hashToHex } from '../src/bitcoin/hash.js';
import { computeMerkleRoot } from '../src/bitcoin/merkle.js';
import { RetryableError } from '../src/errors.js';

/** Decodes a fetched block and checks it is the one asked for and internally consistent. */
export function checkBlock(raw: Uint8Array, hash: string): DecodedBlock {
  const block = decodeBlock(raw);
  const got = hashToHex(block.hash);
  if (got !== hash) throw new RetryableError('ERR_BLOCK_MISMATCH', `asked the node for block ${hash} and got ${got}`);
  const merkle = computeMerkleRoot(block.txs.map((t) => t.txid));
  if (merkle.mutated || !equalBytes(merkle.root, block.header.merkleRoot)) {
    throw new RetryableError('ERR_BLOCK_MERKLE', `block ${hash} from the node does not match its Merkle root`);
  }
  return block;
}
