/**
 * Reorgs against the running indexer on the devnode, each compared
 * with a fresh index of the final chain:
 * - depth matrix 1, 2, 6, 10, 100 with transactions in the replaced blocks;
 * - shapes (mempool/electrs #112): reconfirmed at the same height and index, at the same height
 *   and another index, at a later height, dropped to the mempool, double-spent by a conflicting
 *   transaction in the new branch; events for a watched address exactly once per change;
 * - a reorg to a lower height (invalidateblock of 2, no replacement);
 * - the orphaned block not served by the node: undone from the index's own rows (its undo
 *   row holds what the block spent, of earlier blocks and of its own); without its undo row (a
 *   bulk-loaded block) undo needs the node: the indexer waits, saying why, and undoes it once
 *   the node serves it again;
 * - blocks applied out of order or twice are refused or no-ops (one block.connected each).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { segwitAddress } from '../../../src/bitcoin/address.js';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import type { IndexerHandle } from '../../../indexer/main.js';
import { applyBlock } from '../../../indexer/writer/apply.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import {
  freshBulkIndexOf,
  readEvents,
  startTestIndexer,
  waitMempoolSynced,
  waitSynced,
  watchAddress,
} from '../../support/chain-indexer.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';
import { waitFor } from '../../support/wait.js';

describe('reorgs on the devnode', () => {
  let node: Devnode;
  let t: TestDatabase;
  let ix: IndexerHandle;
  let watched: string;
  const dbs: TestDatabase[] = [];

  const rawTx = async (txid: string) => Buffer.from(await (await fetch(`${node.restUrl}/tx/${txid}.bin`)).arrayBuffer()).toString('hex');
  const rawBlock = async (hash: string) => new Uint8Array(await (await fetch(`${node.restUrl}/block/${hash}.bin`)).arrayBuffer());
  const txEvents = async (txid: string) =>
    (await readEvents(t.db)).filter((e) => e.txid === txid && e.address === watched).map((e) => [e.type, e.block]);
  /** Some traffic of every address type, mined into `blocks` blocks. */
  const traffic = async (blocks: number) => {
    for (let i = 0; i < blocks; i++) {
      for (const type of ['p2pkh', 'p2sh-p2wpkh', 'p2wpkh', 'p2tr'] as const)
        await node.wallet.send(node.wallet.newAddress(type).address!, 10_000n + BigInt(i));
      await node.mine(1);
    }
  };
  const assertEqualsFreshIndex = async () => {
    await waitSynced(t.db, node);
    await waitMempoolSynced(t.db, node);
    const ref = await freshBulkIndexOf(node);
    dbs.push(ref);
    const [got, want] = await Promise.all([snapshotIndex(t.db), snapshotIndex(ref.db)]);
    expect({ ...got, mempool: [] }).toEqual(want);
  };

  beforeAll(async () => {
    node = await startDevnode({ initialBlocks: 110 });
    t = await createMigratedDatabase('rg');
    dbs.push(t);
    ix = await startTestIndexer(t, node);
    watched = segwitAddress(0, randomBytes(20), 'regtest');
    await watchAddress(t.db, watched, 1);
    await waitSynced(t.db, node);
  });
  afterAll(async () => {
    await ix?.stop();
    await node?.stop();
    await Promise.all(dbs.map((d) => d.drop()));
  });

  for (const depth of [1, 2, 6, 10, 100]) {
    it(`reorg of depth ${depth} equals a fresh index`, async () => {
      await traffic(Math.min(depth, 10));
      if (depth > 10) await node.mine(depth - 10);
      await waitSynced(t.db, node);
      const before = ix.metrics().reorgs;
      const r = await node.reorg(depth, { newBlocks: depth + 1, keepTxs: true });
      expect(r.disconnected).toHaveLength(depth);
      await assertEqualsFreshIndex();
      expect(ix.metrics().reorgs).toBeGreaterThan(before);
    });
  }

  describe('shapes', () => {
    /** Pays the watched address, waits for tx.unconfirmed, mines it: txid and block hash. */
    const confirmedPayment = async (sats: bigint) => {
      const txid = await node.wallet.send(watched, sats);
      await waitFor('tx.unconfirmed', async () => (await txEvents(txid)).length === 1);
      const [block] = await node.mine(1);
      await waitSynced(t.db, node);
      return { txid, block: block! };
    };

    it('reconfirmed at the same height and index', async () => {
      const { txid, block } = await confirmedPayment(11_000n);
      const r = await node.reorg(1, { newBlocks: 1, keepTxs: true });
      await waitSynced(t.db, node);
      expect(await txEvents(txid)).toEqual([
        ['tx.unconfirmed', null],
        ['tx.confirmed', block],
        ['tx.reorged', block],
        ['tx.confirmed', r.connected[0]],
      ]);
      await assertEqualsFreshIndex();
    });

    it('reconfirmed at the same height at another index', async () => {
      const { txid, block } = await confirmedPayment(12_000n);
      const hex = await rawTx(txid);
      await node.invalidate(block);
      await waitSynced(t.db, node);
      const other = node.wallet.createTx(node.wallet.newAddress('p2wpkh').address!, 5_000n, { includeUnconfirmed: false });
      const [b2] = await node.mine(1, { txs: [other, hex], includeMempool: false });
      await waitSynced(t.db, node);
      const txs = decodeBlock(await rawBlock(b2!)).txs.map((x) => hashToHex(x.txid));
      expect(txs.indexOf(txid)).toBe(2);
      const evs = (await txEvents(txid)).filter(([type]) => type !== 'tx.unconfirmed');
      expect(evs).toEqual([
        ['tx.confirmed', block],
        ['tx.reorged', block],
        ['tx.confirmed', b2],
      ]);
      await assertEqualsFreshIndex();
    });

    it('reconfirmed at a later height', async () => {
      const { txid, block } = await confirmedPayment(13_000n);
      const hex = await rawTx(txid);
      await node.invalidate(block);
      const [empty] = await node.mine(1, { includeMempool: false });
      const [later] = await node.mine(1, { txs: [hex], includeMempool: false });
      await waitSynced(t.db, node);
      expect(empty).not.toBe(later);
      const evs = (await txEvents(txid)).filter(([type]) => type !== 'tx.unconfirmed');
      expect(evs).toEqual([
        ['tx.confirmed', block],
        ['tx.reorged', block],
        ['tx.confirmed', later],
      ]);
      await assertEqualsFreshIndex();
    });

    it('dropped back to the mempool', async () => {
      const { txid, block } = await confirmedPayment(14_000n);
      await node.reorg(1, { newBlocks: 2, keepTxs: false });
      await waitSynced(t.db, node);
      await waitMempoolSynced(t.db, node);
      expect(node.mempool()).toContain(txid);
      expect(await txEvents(txid)).toEqual([
        ['tx.unconfirmed', null],
        ['tx.confirmed', block],
        ['tx.reorged', block],
        ['tx.unconfirmed', null],
      ]);
      await assertEqualsFreshIndex();
      await node.mine(1);
      await waitSynced(t.db, node);
    });

    it('double-spent by a conflicting transaction in the new branch', async () => {
      const { txid, block } = await confirmedPayment(15_000n);
      const spent = decodeTx(Buffer.from(await rawTx(txid), 'hex')).inputs.map((i) => `${hashToHex(i.prevTxid)}:${i.vout}`);
      await node.invalidate(block);
      await waitSynced(t.db, node);
      await waitMempoolSynced(t.db, node);
      const conflict = node.wallet.createTx(node.wallet.newAddress('p2tr').address!, 9_000n, { from: spent });
      const conflictId = hashToHex(decodeTx(Buffer.from(conflict, 'hex')).txid);
      const [b2] = await node.mine(1, { txs: [conflict], includeMempool: false });
      await waitSynced(t.db, node);
      await waitMempoolSynced(t.db, node);
      expect(await txEvents(txid)).toEqual([
        ['tx.unconfirmed', null],
        ['tx.confirmed', block],
        ['tx.reorged', block],
        ['tx.unconfirmed', null],
        ['tx.replaced', null],
      ]);
      const replaced = (await readEvents(t.db)).find((e) => e.txid === txid && e.type === 'tx.replaced')!;
      expect(replaced.replacedBy).toBe(conflictId);
      expect(b2).toBeDefined();
      await assertEqualsFreshIndex();
    });
  });

  it('reorg to a lower height: two blocks invalidated, none replacing them', async () => {
    await traffic(3);
    await waitSynced(t.db, node);
    const tip = node.tip();
    const gone = [node.blockHash(tip.height), node.blockHash(tip.height - 1)];
    await node.invalidate(gone[1]!);
    await waitSynced(t.db, node);
    expect((await readTip(t.db)).height).toBe(tip.height - 2);
    const disc = (await readEvents(t.db, ['block.disconnected'])).slice(-2).map((e) => e.block);
    expect(disc).toEqual(gone);
    await assertEqualsFreshIndex();
    await node.reconsider(gone[1]!);
    await waitSynced(t.db, node);
  });

  it('undoes an orphaned block the node does not serve from the index alone', async () => {
    await traffic(1);
    await waitSynced(t.db, node);
    const orphan = node.tip().hash;
    node.faults.hideBlock(orphan);
    const r = await node.reorg(1, { newBlocks: 2 });
    expect(r.disconnected).toEqual([orphan]);
    await assertEqualsFreshIndex();
    expect((await readEvents(t.db, ['block.disconnected'])).at(-1)?.block).toBe(orphan);
    node.faults.unhideBlock(orphan);
  });

  it('waits for a block without an undo row that the node does not serve for a while, then undoes it', async () => {
    await traffic(1);
    await waitSynced(t.db, node);
    const orphan = node.tip().hash;
    // (as a bulk-loaded block has none)
    await sql`DELETE FROM block_undo WHERE height = ${node.tip().height}`.execute(t.db);
    const height = node.tip().height;
    node.faults.hideBlock(orphan);
    const r = await node.reorg(1, { newBlocks: 2 });
    expect(r.disconnected).toEqual([orphan]);
    await waitFor('the indexer to say it lacks the block', () => ix.status().lastError?.includes(orphan) === true);
    expect(hashToHex((await readTip(t.db)).hash!)).toBe(orphan);
    expect((await readTip(t.db)).height).toBe(height);
    node.faults.unhideBlock(orphan);
    await assertEqualsFreshIndex();
  });

  it('refuses out-of-order blocks and applies a duplicate once', async () => {
    await traffic(2);
    await waitSynced(t.db, node);
    await ix.stop();
    const tip = node.tip();
    const [parent] = await node.mine(1);
    const [child] = await node.mine(1);
    const childBlock = decodeBlock(await rawBlock(child!));
    const parentBlock = decodeBlock(await rawBlock(parent!));
    expect((await applyBlock(t.db, childBlock, tip.height + 2)).kind).toBe('stale');
    expect((await applyBlock(t.db, parentBlock, tip.height + 1)).kind).toBe('applied');
    expect((await applyBlock(t.db, parentBlock, tip.height + 1)).kind).toBe('already');
    expect((await applyBlock(t.db, childBlock, tip.height + 2)).kind).toBe('applied');
    expect((await applyBlock(t.db, childBlock, tip.height + 2)).kind).toBe('already');
    const connected = (await readEvents(t.db, ['block.connected'])).filter((e) => e.block === parent || e.block === child);
    expect(connected).toHaveLength(2);
    ix = await startTestIndexer(t, node);
    await assertEqualsFreshIndex();
  });
});
