/**
 * Merkle roots as Core computes them (ComputeMerkleRoot: an odd level repeats its last hash),
 * the BIP141 witness merkle root (coinbase wtxid taken as zero) and the witness commitment
 * carried by the coinbase. All hashes in internal byte order.
 * @module
 */
import { hash as nodeHash } from 'node:crypto';
import { equalBytes, sha256d } from './hash.js';
import type { DecodedBlock } from './block.js';
import type { DecodedTx } from './tx.js';

/** Result of a Merkle computation; `mutated` flags CVE-2012-2459 (identical sibling pairs). */
export interface MerkleResult {
  readonly root: Uint8Array;
  readonly mutated: boolean;
}

/** Core's ComputeMerkleRoot over `hashes` (zero hash for an empty list). */
export function computeMerkleRoot(hashes: readonly Uint8Array[]): MerkleResult {
  if (hashes.length === 0) return { root: new Uint8Array(32), mutated: false };
  // One buffer holds a whole level; each pair is hashed in place into the next level.
  let n = hashes.length;
  const level = new Uint8Array(32 * (n + 1));
  for (let i = 0; i < n; i++) {
    const h = hashes[i]!;
    if (h.length !== 32) throw new RangeError(`hash ${i} must be 32 bytes, got ${h.length}`);
    level.set(h, 32 * i);
  }
  let mutated = false;
  while (n > 1) {
    for (let i = 0; i + 1 < n; i += 2) {
      if (equalBytes(level.subarray(32 * i, 32 * i + 32), level.subarray(32 * i + 32, 32 * i + 64))) mutated = true;
    }
    if (n & 1) {
      level.copyWithin(32 * n, 32 * (n - 1), 32 * n);
      n += 1;
    }
    for (let i = 0; i < n; i += 2) {
      const h = nodeHash('sha256', nodeHash('sha256', level.subarray(32 * i, 32 * i + 64), 'buffer'), 'buffer');
      level.set(h, 16 * i);
    }
    n >>= 1;
  }
  return { root: level.slice(0, 32), mutated };
}

/** Merkle root of `hashes` (e.g. txids for the header's merkleRoot). */
export function merkleRoot(hashes: readonly Uint8Array[]): Uint8Array {
  return computeMerkleRoot(hashes).root;
}

/** Merkle root of a block's transactions: compare with `block.header.merkleRoot`. */
export function blockMerkleRoot(txs: readonly DecodedTx[]): Uint8Array {
  return merkleRoot(txs.map((t) => t.txid));
}

/** BIP141 witness root: merkle root of the wtxids with the coinbase's taken as 32 zero bytes. */
export function witnessMerkleRoot(txs: readonly DecodedTx[]): Uint8Array {
  return merkleRoot(txs.map((t, i) => (i === 0 ? new Uint8Array(32) : t.wtxid)));
}

const COMMITMENT_PREFIX = [0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed];

/**
 * The witness commitment of a coinbase (BIP141): the 32 bytes after `6a24aa21a9ed` in the
 * last output whose script starts so and is at least 38 bytes long; null when absent.
 */
export function witnessCommitment(coinbase: DecodedTx): Uint8Array | null {
  for (let i = coinbase.outputs.length - 1; i >= 0; i--) {
    const s = coinbase.outputs[i]!.script;
    if (s.length >= 38 && COMMITMENT_PREFIX.every((v, j) => s[j] === v)) return s.subarray(6, 38);
  }
  return null;
}

/** The commitment value: SHA256d(witness root || reserved value). */
export function computeWitnessCommitment(witnessRoot: Uint8Array, reservedValue: Uint8Array): Uint8Array {
  const buf = new Uint8Array(64);
  buf.set(witnessRoot, 0);
  buf.set(reservedValue, 32);
  return sha256d(buf);
}

/**
 * Checks the block's witness commitment against its wtxids: true or false when the coinbase
 * commits, null when it carries no commitment (pre-segwit blocks, or blocks without witness data).
 */
export function checkWitnessCommitment(block: DecodedBlock): boolean | null {
  const coinbase = block.txs[0];
  if (coinbase === undefined) return null;
  const commitment = witnessCommitment(coinbase);
  if (commitment === null) return null;
  const reserved = coinbase.inputs[0]?.witness[0];
  if (reserved === undefined || reserved.length !== 32) return false;
  return equalBytes(computeWitnessCommitment(witnessMerkleRoot(block.txs), reserved), commitment);
}
