/**
 * What the indexer checks of a block the node sent before committing it: it decodes, it is the
 * block asked for (its hash), and its transactions are the ones its header commits to (Merkle
 * root, without the CVE-2012-2459 duplication). A failed check is retryable: the node is asked
 * again on the next turn. The run loop checks the hash when the block arrives and leaves the
 * Merkle root to the writer, which checks it inside the block's transaction, before the commit,
 * while PostgreSQL writes the rows (writer/apply.ts `applyBlocks`): the ~8,000 hashes of a
 * 4,000-transaction block then cost the block's latency nothing.
 * @module
 */
import { decodeBlock, type DecodedBlock } from '../src/bitcoin/block.js';
import { equalBytes, hashToHex } from '../src/bitcoin/hash.js';
import { computeMerkleRoot } from '../src/bitcoin/merkle.js';
import { RetryableError } from '../src/errors.js';

/** Decodes a fetched block and checks it is the one asked for; `checkMerkle` checks its transactions. */
export function decodeAsked(raw: Uint8Array, hash: string): DecodedBlock {
  const block = decodeBlock(raw);
  const got = hashToHex(block.hash);
  if (got !== hash) throw new RetryableError('ERR_BLOCK_MISMATCH', `asked the node for block ${hash} and got ${got}`);
  return block;
}

/** Checks that `block`'s transactions are the ones its header commits to. */
export function checkMerkle(block: DecodedBlock): void {
  const merkle = computeMerkleRoot(block.txs.map((t) => t.txid));
  if (merkle.mutated || !equalBytes(merkle.root, block.header.merkleRoot)) {
    throw new RetryableError('ERR_BLOCK_MERKLE', `block ${hashToHex(block.hash)} from the node does not match its Merkle root`);
  }
}

/** Decodes a fetched block and checks it is the one asked for and internally consistent. */
export function checkBlock(raw: Uint8Array, hash: string): DecodedBlock {
  const block = decodeAsked(raw, hash);
  checkMerkle(block);
  return block;
}
