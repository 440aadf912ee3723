/**
 * An index whose tip the node reorged away while it was stopped, and far behind the node's new
 * chain (more than the bulk threshold): the stale tip is undone block by block, then the rest
 * is loaded in bulk. Before, the bulk path ran from the stale tip, stopped at its first block
 * (the chain changed under it), finished, and began again at once, forever (the kill -9 test's
 * last indexer hung that way after a reorg at the tip during its moves).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { freshBulkIndexOf, startTestIndexer, waitSynced } from '../../support/chain-indexer.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';

let node: Devnode;
let t: TestDatabase;
let ref: TestDatabase | undefined;

beforeAll(async () => {
  node = await startDevnode({ initialBlocks: 101 });
  t = await createMigratedDatabase('stale');
});
afterAll(async () => {
  await node?.stop();
  await Promise.all([t?.drop(), ref?.drop()]);
});

it('undoes a stale tip, then catches up in bulk', async () => {
  const first = await startTestIndexer(t, node);
  await node.wallet.send(node.wallet.newAddress('p2wpkh').address!, 70_000n);
  await node.mine(1);
  await waitSynced(t.db, node);
  await first.stop();
  const stale = (await readTip(t.db)).height;
  // The tip block replaced, and the new chain 70 blocks past it (indexerConfig's threshold: 50).
  await node.reorg(1, { newBlocks: 71, keepTxs: true });
  const second = await startTestIndexer(t, node);
  try {
    await waitSynced(t.db, node, 60_000);
  } finally {
    await second.stop();
  }
  expect((await readTip(t.db)).height).toBe(stale + 70);
  ref = await freshBulkIndexOf(node);
  expect({ ...(await snapshotIndex(t.db)), mempool: [] }).toEqual({ ...(await snapshotIndex(ref.db)), mempool: [] });
});
