/**
 * regtest-chain-a replayed by the devnode one recorded C/D event at a time (its 7 reorgs and 13
 * stale blocks included) while the real indexer follows over RPC, REST and ZMQ: every address's
 * balance, history and unspent outputs end equal to expected.json, and the outbox's block events
 * are exactly the node's connects and disconnects, in order.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import type { IndexerHandle } from '../../../indexer/main.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures, fixturePath } from '../../support/fixtures.js';
import { loadChainA } from '../../support/chain-fixture.js';
import { keyOfAddress, readAddresses } from '../../support/chain-snapshot.js';
import { readEvents, startTestIndexer, waitSynced } from '../../support/chain-indexer.js';

describeFixtures('regtest-chain-a followed from the devnode', () => {
  let node: Devnode;
  let t: TestDatabase;
  let ix: IndexerHandle;

  beforeAll(async () => {
    node = await startDevnode({ replay: { dir: fixturePath('regtest-chain-a'), pace: 'manual' } });
    t = await createMigratedDatabase('cad');
    ix = await startTestIndexer(t, node);
    await waitSynced(t.db, node);
  });
  afterAll(async () => {
    await ix?.stop();
    await node?.stop();
    await t?.drop();
  });

  it('follows every connect and disconnect and ends on the expected chain', { timeout: 300_000 }, async () => {
    const chain = loadChainA();
    const total = node.replay!.position().total;
    expect(total).toBe(chain.steps.length);
    for (let i = 0; i < total; i++) {
      node.replay!.step(1);
      await waitSynced(t.db, node);
    }
    expect(node.tip()).toEqual({ height: chain.expected.best_height, hash: chain.expected.best_block_hash });
    const blocks = await readEvents(t.db, ['block.connected', 'block.disconnected']);
    // Genesis first, then the node's own sequence of C and D.
    expect(blocks.map((e) => `${e.type === 'block.connected' ? 'C' : 'D'} ${e.block}`)).toEqual([
      `C ${chain.main[0]}`,
      ...chain.steps.map((s) => `${s.label} ${s.hash}`),
    ]);
    expect(ix.metrics().reorgs).toBeGreaterThanOrEqual(7);
  });

  it('answers every address as Bitcoin Core does', async () => {
    const chain = loadChainA();
    const entries = Object.entries(chain.expected.addresses);
    const index = await readAddresses(
      t.db,
      entries.map(([address]) => keyOfAddress(address, 'regtest')),
    );
    for (const [address, want] of entries) {
      const got = index.get(keyOfAddress(address, 'regtest'))!;
      expect(got.balance, address).toBe(BigInt(want.balance));
      expect(got.history, address).toEqual(want.history);
      const key = (u: { height: number; transaction_hash: string; index: number }) =>
        `${String(u.height).padStart(8, '0')}${u.transaction_hash}${u.index}`;
      expect(
        [...got.unspent].sort((a, b) => key(a).localeCompare(key(b))),
        address,
      ).toEqual([...want.unspent].sort((a, b) => key(a).localeCompare(key(b))));
    }
  });
});
