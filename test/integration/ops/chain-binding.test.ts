/**
 * An index bound to the chain it followed: the quick start's data directory moved
 * from the stand-in to another regtest node (both regtest: the same genesis, different blocks
 * from height 1) is refused before the indexer starts, naming both blocks and asking for a new
 * data directory, instead of undoing the whole index as a reorg. The same node, an empty index and
 * a node still syncing (no block 1 yet: genesis compared) pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { hexToHash } from '../../../src/bitcoin/hash.js';
import { assertIndexOnNodeChain, OtherChainError } from '../../../cli/ops/chain-binding.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';

let indexed: Devnode;
let other: Devnode;
let fresh: Devnode;
let t: TestDatabase;
const client = (n: Devnode) => new BitcoindClient({ url: n.rpcUrl, timeoutMs: 30_000 });

beforeAll(async () => {
  [indexed, other, fresh] = await Promise.all([startDevnode({ initialBlocks: 3 }), startDevnode({ initialBlocks: 3 }), startDevnode()]);
  t = await createMigratedDatabase('chainbind');
}, 120_000);
afterAll(async () => {
  await Promise.all([indexed?.stop(), other?.stop(), fresh?.stop()]);
  await t?.drop();
});

describe('the index and the node it follows', () => {
  it('an empty index goes with any node', async () => {
    await expect(assertIndexOnNodeChain(t.db, client(other), 'data directory D')).resolves.toBeUndefined();
  });

  it('passes on the chain it indexed and refuses another, naming both blocks', async () => {
    for (const height of [0, 1, 2]) {
      const hash = Buffer.from(hexToHash(indexed.blockHash(height)));
      await t.db
        .insertInto('blocks')
        .values({ height, hash, prev_hash: Buffer.alloc(32), header: Buffer.alloc(80), time: 0, tx_count: 1, size: 0, weight: 0 })
        .execute();
    }
    await expect(assertIndexOnNodeChain(t.db, client(indexed), 'data directory D')).resolves.toBeUndefined();
    expect(other.blockHash(1)).not.toBe(indexed.blockHash(1));
    const refused = await assertIndexOnNodeChain(t.db, client(other), 'data directory D').then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(OtherChainError);
    expect((refused as Error).message).toBe(
      `the index (data directory D) follows another chain than this node's: its block 1 is ${indexed.blockHash(1)}, the node's is ${other.blockHash(1)}. ` +
        'Following this node would undo the whole index. Use a new data directory (BLOCKWIRE_DATA_DIR) or database (DATABASE_URL) for this node, or point it back at the node it indexed.',
    );
    // A node with no block 1 yet (syncing) shares the genesis: not refused.
    await expect(assertIndexOnNodeChain(t.db, client(fresh), 'data directory D')).resolves.toBeUndefined();
  });
});
