/**
 * Checkpoint proofs of block headers (protocol 1.4 `cp_height`): the Merkle branch of a header's
 * block hash in the tree of every block hash from 0 to `cp_height`, and that tree's root. A
 * naive proof near mainnet's tip hashes ~900,000 hashes; as ElectrumX does, the tree is cut
 * into subtrees of `chunk` leaves whose roots are kept once computed (complete subtrees only:
 * a subtree's root never changes unless a reorg reaches below its end, and `forgetFrom` drops
 * those), so a proof hashes one subtree and the level of subtree roots.
 * @module
 */
import { hash } from 'node:crypto';
import { merkleBranch, merkleLevels } from '../src/bitcoin/merkle.js';

const sha256d = (b: Uint8Array) => hash('sha256', hash('sha256', b, 'buffer'), 'buffer');

/**
 * Branch and root of leaf `pos` in the tree over `leaves`; with `height`, the tree is climbed to
 * that height even past a lone node (hashed with itself, as the node would be in the larger
 * tree whose subtree it is).
 */
export function branchAndRoot(leaves: readonly Uint8Array[], pos: number, height?: number): { branch: Uint8Array[]; root: Uint8Array } {
  const levels = merkleLevels(leaves);
  const branch = merkleBranch(levels, pos);
  let root: Uint8Array = levels[levels.length - 1]![0]!;
  if (height !== undefined) {
    for (let h = levels.length - 1; h < height; h++) {
      branch.push(root);
      root = sha256d(Buffer.concat([root, root]));
    }
  }
  return { branch, root };
}

/** Reads the block hashes (internal byte order) at heights from … to (inclusive). */
export type HashSource = (from: number, to: number) => Promise<Buffer[]>;

export class HeaderProofs {
  private readonly roots = new Map<number, Uint8Array>();
  private readonly bits: number;

  constructor(
    private readonly hashes: HashSource,
    /** Leaves per subtree (a power of two; ElectrumX uses 2,048). */
    private readonly chunk = 2048,
  ) {
    if (chunk < 2 || (chunk & (chunk - 1)) !== 0) throw new RangeError('chunk must be a power of two');
    this.bits = Math.log2(chunk);
  }

  /** Forgets the subtree roots that include heights ≥ `height` (a block there was undone). */
  forgetFrom(height: number): void {
    for (const c of this.roots.keys()) if ((c + 1) * this.chunk > height) this.roots.delete(c);
  }

  /** Branch (deepest first) and root for the block at `height` in the tree of blocks 0 … `cpHeight`. */
  async prove(height: number, cpHeight: number): Promise<{ branch: Uint8Array[]; root: Uint8Array }> {
    if (height > cpHeight) throw new RangeError(`height ${height} is above cp_height ${cpHeight}`);
    const n = cpHeight + 1;
    if (n <= this.chunk) return branchAndRoot(await this.read(0, cpHeight), height);
    const c = height >> this.bits;
    const last = (n - 1) >> this.bits;
    const leaves = await this.read(c * this.chunk, Math.min((c + 1) * this.chunk, n) - 1);
    const lower = branchAndRoot(leaves, height - c * this.chunk, this.bits);
    const chunkRoots: Uint8Array[] = [];
    for (let k = 0; k <= last; k++) {
      if (k === c) chunkRoots.push(lower.root);
      else chunkRoots.push(await this.chunkRoot(k, n));
    }
    const upper = branchAndRoot(chunkRoots, c);
    return { branch: [...lower.branch, ...upper.branch], root: upper.root };
  }

  private async chunkRoot(k: number, n: number): Promise<Uint8Array> {
    const end = (k + 1) * this.chunk;
    const complete = end <= n;
    if (complete) {
      const held = this.roots.get(k);
      if (held) return held;
    }
    const leaves = await this.read(k * this.chunk, Math.min(end, n) - 1);
    const root = branchAndRoot(leaves, 0, this.bits).root;
    if (complete) this.roots.set(k, root);
    return root;
  }

  private async read(from: number, to: number): Promise<Buffer[]> {
    const hashes = await this.hashes(from, to);
    if (hashes.length !== to - from + 1) throw new RangeError(`blocks ${from} … ${to} are not all indexed`);
    return hashes;
  }
}
