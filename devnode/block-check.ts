/**
 * Block checks that need no UTXO set: Core's CheckBlock (proof of work, Merkle root and its
 * CVE-2012-2459 mutation, size, one coinbase first, CheckTransaction, legacy sigops) and
 * ContextualCheckBlockHeader/ContextualCheckBlock (bits, time rules, version, finality, BIP34
 * height, witness commitment, weight). Throws BlockInvalid with Core's reject reasons.
 * @module
 */
import type { DecodedBlock } from '../src/bitcoin/block.js';
import { equalBytes } from '../src/bitcoin/hash.js';
import { computeMerkleRoot, computeWitnessCommitment, witnessCommitment, witnessMerkleRoot } from '../src/bitcoin/merkle.js';
import { BlockInvalid, isFinalTx, txidOf, type BlockEntry } from './chain.js';
import { checkProofOfWork, REGTEST, scriptNumPush } from './consensus.js';
import { checkTransaction } from './mempool-accept.js';
import { sigOpCount } from './script.js';

/** CheckBlock. */
export function checkBlock(block: DecodedBlock): void {
  if (!checkProofOfWork(block.hash, block.header.bits)) throw new BlockInvalid('high-hash', 'proof of work failed');
  const merkle = computeMerkleRoot(block.txs.map((t) => t.txid));
  if (!equalBytes(merkle.root, block.header.merkleRoot)) throw new BlockInvalid('bad-txnmrklroot', 'hashMerkleRoot mismatch');
  if (merkle.mutated) throw new BlockInvalid('bad-txns-duplicate', 'duplicate transaction');
  if (block.txs.length === 0 || block.txs.length * 4 > REGTEST.maxBlockWeight || block.strippedSize * 4 > REGTEST.maxBlockWeight) {
    throw new BlockInvalid('bad-blk-length', 'size limits failed');
  }
  if (!block.txs[0]!.isCoinbase) throw new BlockInvalid('bad-cb-missing', 'first tx is not coinbase');
  for (let i = 1; i < block.txs.length; i++) {
    if (block.txs[i]!.isCoinbase) throw new BlockInvalid('bad-cb-multiple', 'more than one coinbase');
  }
  let sigops = 0;
  for (const tx of block.txs) {
    const bad = checkTransaction(tx);
    if (bad) throw new BlockInvalid(bad, `Transaction check failed (tx hash ${txidOf(tx)}) ${bad}`);
    for (const i of tx.inputs) sigops += sigOpCount(i.scriptSig, false);
    for (const o of tx.outputs) sigops += sigOpCount(o.script, false);
  }
  if (sigops * 4 > REGTEST.maxBlockSigopsCost) throw new BlockInvalid('bad-blk-sigops', 'out-of-bounds SigOpCount');
}

/** ContextualCheckBlockHeader + ContextualCheckBlock against the parent `prev`. */
export function contextualCheckBlock(block: DecodedBlock, prev: BlockEntry, now: number | null): void {
  const h = block.header;
  const height = prev.height + 1;
  if (h.bits !== REGTEST.bits) throw new BlockInvalid('bad-diffbits', 'incorrect proof of work');
  if (h.time <= prev.mtp) throw new BlockInvalid('time-too-old', "block's timestamp is too early");
  if (now !== null && h.time > now + REGTEST.maxFutureBlockTime)
    throw new BlockInvalid('time-too-new', 'block timestamp too far in the future');
  if (h.version >= 0 && h.version < 4)
    throw new BlockInvalid(
      `bad-version(0x${(h.version >>> 0).toString(16).padStart(8, '0')})`,
      `rejected nVersion=0x${(h.version >>> 0).toString(16).padStart(8, '0')} block`,
    );

  for (const tx of block.txs) {
    if (!isFinalTx(tx, height, prev.mtp)) throw new BlockInvalid('bad-txns-nonfinal', 'non-final transaction');
  }
  const expect = scriptNumPush(height);
  const sig = block.txs[0]!.inputs[0]!.scriptSig;
  if (sig.length < expect.length || !equalBytes(sig.subarray(0, expect.length), expect)) {
    throw new BlockInvalid('bad-cb-height', 'block height mismatch in coinbase');
  }
  const commitment = witnessCommitment(block.txs[0]!);
  if (commitment) {
    const reserved = block.txs[0]!.inputs[0]!.witness;
    if (reserved.length !== 1 || reserved[0]!.length !== 32)
      throw new BlockInvalid('bad-witness-nonce-size', 'CheckWitnessMalleation : invalid witness reserved value size');
    const expected = computeWitnessCommitment(witnessMerkleRoot(block.txs), reserved[0]!);
    if (!equalBytes(expected, commitment))
      throw new BlockInvalid('bad-witness-merkle-match', 'CheckWitnessMalleation : witness merkle commitment mismatch');
  } else if (block.txs.some((t) => t.hasWitness)) {
    throw new BlockInvalid('unexpected-witness', 'ContextualCheckBlock : unexpected witness data found');
  }
  if (block.weight > REGTEST.maxBlockWeight) throw new BlockInvalid('bad-blk-weight', `ContextualCheckBlock : weight limit failed`);
}
