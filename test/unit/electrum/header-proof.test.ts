/**
 * Checkpoint proofs cut into subtrees equal the plain Merkle branch over every block hash, for
 * trees of every size around the subtree boundaries (Core's rule: an odd level repeats its last
 * hash), and forgetting subtrees after a reorg gives proofs of the new hashes.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { HeaderProofs } from '../../../electrum/header-proof.js';
import { merkleBranch, merkleLevels, merkleRoot } from '../../../src/bitcoin/merkle.js';

describe('HeaderProofs', () => {
  it('equals the kernel merkleBranch and merkleRoot over all leaves for every tree size 1 … 40 and every leaf (subtrees of 8)', async () => {
    const hashes = Array.from({ length: 40 }, () => randomBytes(32));
    const proofs = new HeaderProofs(async (from, to) => hashes.slice(from, to + 1), 8);
    for (let n = 1; n <= 40; n++) {
      for (let i = 0; i < n; i++) {
        const want = merkleBranch(merkleLevels(hashes.slice(0, n)), i);
        const got = await proofs.prove(i, n - 1);
        expect(Buffer.from(got.root).toString('hex')).toBe(Buffer.from(merkleRoot(hashes.slice(0, n))).toString('hex'));
        expect(got.branch.map((b) => Buffer.from(b).toString('hex'))).toEqual(want.map((b) => Buffer.from(b).toString('hex')));
      }
    }
  });

  it('forgetFrom drops the subtrees a reorg reached', async () => {
    const hashes = Array.from({ length: 40 }, () => randomBytes(32));
    const proofs = new HeaderProofs(async (from, to) => hashes.slice(from, to + 1), 8);
    await proofs.prove(39, 39);
    hashes[20] = randomBytes(32);
    proofs.forgetFrom(20);
    expect(Buffer.from((await proofs.prove(0, 39)).root).equals(Buffer.from(merkleRoot(hashes)))).toBe(true);
  });

  it('refuses a height above cp_height and a chain the index does not hold', async () => {
    const proofs = new HeaderProofs(
      async (from, to) => Array.from({ length: Math.max(0, Math.min(to, 4) - from + 1) }, () => randomBytes(32)),
      8,
    );
    await expect(proofs.prove(5, 4)).rejects.toThrow('height 5 is above cp_height 4');
    await expect(proofs.prove(0, 9)).rejects.toThrow('not all indexed');
  });
});
