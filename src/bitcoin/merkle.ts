/**
 * Merkle roots as Core computes them (ComputeMerkleRoot: an odd level repeats its last hash),
 * the BIP141 witness merkle root (coinbase wtxid taken as zero) and the witness commitment
 * carried by the coinbase. All hashes in internal byte order.
 * @module
 */
import { hash as nodeHash } from 'node:crypto';
import { equalBytes, sha256d } from './hash.js';
import { compactSizeBytes, writeCompactSize } from './wire.js';
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

/**
 * Every level of the Merkle tree over `hashes` as Core builds it (an odd level's last hash is
 * paired with itself): level 0 is `hashes`, the last level holds the root alone.
 */
export function merkleLevels(hashes: readonly Uint8Array[]): Uint8Array[][] {
  if (hashes.length === 0) throw new RangeError('a Merkle tree needs at least one hash');
  const levels: Uint8Array[][] = [[...hashes]];
  for (let level = levels[0]!; level.length > 1;) {
    const next: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) {
      const right = level[i + 1] ?? level[i]!;
      next.push(new Uint8Array(nodeHash('sha256', nodeHash('sha256', Buffer.concat([level[i]!, right]), 'buffer'), 'buffer')));
    }
    levels.push(next);
    level = next;
  }
  return levels;
}

/**
 * The Merkle branch of leaf `pos` (Electrum's `get_merkle`, Esplora's `merkle-proof`): the sibling
 * at each level from the leaves up, the node itself where an odd level has no sibling.
 */
export function merkleBranch(levels: readonly (readonly Uint8Array[])[], pos: number): Uint8Array[] {
  const leaves = levels[0]!;
  if (!Number.isInteger(pos) || pos < 0 || pos >= leaves.length)
    throw new RangeError(`position ${pos} is outside the ${leaves.length} leaves`);
  const branch: Uint8Array[] = [];
  for (let h = 0, p = pos; h < levels.length - 1; h++, p >>= 1) {
    const level = levels[h]!;
    branch.push(level[p ^ 1] ?? level[p]!);
  }
  return branch;
}

/** The root a leaf and its branch lead to (what a proof's verifier computes). */
export function merkleRootFromBranch(leaf: Uint8Array, branch: readonly Uint8Array[], pos: number): Uint8Array {
  let h = leaf;
  for (let i = 0; i < branch.length; i++) {
    const pair = (pos >> i) & 1 ? Buffer.concat([branch[i]!, h]) : Buffer.concat([h, branch[i]!]);
    h = new Uint8Array(nodeHash('sha256', nodeHash('sha256', pair, 'buffer'), 'buffer'));
  }
  return h;
}

/**
 * Core's CPartialMerkleTree serialized (the part of `gettxoutproof` after the 80-byte header):
 * uint32 transaction count, the hashes of the depth-first traversal, and its flag bits, low bit
 * first. `matches[i]` marks the leaves the proof is for.
 */
export function partialMerkleTree(levels: readonly (readonly Uint8Array[])[], matches: ReadonlySet<number>): Uint8Array {
  const count = levels[0]!.length;
  const hashes: Uint8Array[] = [];
  const bits: boolean[] = [];
  const top = levels.length - 1;
  const traverse = (height: number, pos: number): void => {
    let parentOfMatch = false;
    for (let p = pos << height; p < (pos + 1) << height && p < count; p++) if (matches.has(p)) parentOfMatch = true;
    bits.push(parentOfMatch);
    if (height === 0 || !parentOfMatch) {
      hashes.push(levels[height]![pos]!);
      return;
    }
    traverse(height - 1, pos * 2);
    if (pos * 2 + 1 < levels[height - 1]!.length) traverse(height - 1, pos * 2 + 1);
  };
  traverse(top, 0);
  const flagBytes = new Uint8Array((bits.length + 7) >> 3);
  bits.forEach((b, i) => {
    if (b) flagBytes[i >> 3]! |= 1 << (i & 7);
  });
  const out = Buffer.alloc(
    4 + compactSizeBytes(hashes.length) + 32 * hashes.length + compactSizeBytes(flagBytes.length) + flagBytes.length,
  );
  let o = out.writeUInt32LE(count, 0);
  o = writeCompactSize(out, o, hashes.length);
  for (const h of hashes) o += Buffer.from(h).copy(out, o);
  o = writeCompactSize(out, o, flagBytes.length);
  out.set(flagBytes, o);
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}
