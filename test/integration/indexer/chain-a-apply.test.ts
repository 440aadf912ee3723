/**
 * regtest-chain-a through applyBlock/undoBlock on real Postgres, following the node's own C/D
 * order (its 7 reorgs included): every address's balance, history and unspent outputs equal
 * what Bitcoin Core computed (expected.json), and the tables equal a fresh index of the final
 * chain applied straight through.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { applyBlock, undoBlock } from '../../../indexer/writer/apply.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, loadChainA } from '../../support/chain-fixture.js';
import { keyOfAddress, readAddresses, snapshotIndex } from '../../support/chain-snapshot.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';

describeFixtures('regtest-chain-a applied block by block', () => {
  let replayed: TestDatabase;
  let fresh: TestDatabase;

  beforeAll(async () => {
    [replayed, fresh] = await Promise.all([createMigratedDatabase('ia'), createMigratedDatabase('ib')]);
  });
  afterAll(async () => {
    await Promise.all([replayed?.drop(), fresh?.drop()]);
  });

  it('replays the C/D sequence with its reorgs to the expected tip', async () => {
    const chain = loadChainA();
    const g = chain.blocks.get(chain.main[0]!)!;
    expect((await applyBlock(replayed.db, decodeBlock(g.raw), 0)).kind).toBe('applied');
    let undos = 0;
    for (const step of chain.steps) {
      const b = chain.blocks.get(step.hash)!;
      if (step.label === 'C') {
        const r = await applyBlock(replayed.db, decodeBlock(b.raw), b.height);
        expect(r.kind, `connect ${b.height} ${step.hash}`).toBe('applied');
      } else {
        const r = await undoBlock(replayed.db, b.height, new FixtureChain(chain.blocks.values()));
        expect(r.kind, `disconnect ${b.height}`).toBe('undone');
        undos++;
      }
    }
    expect(undos).toBe(17);
    const tip = await readTip(replayed.db);
    expect(tip.height).toBe(chain.expected.best_height);
    expect(hashToHex(tip.hash!)).toBe(chain.expected.best_block_hash);
  });

  it('answers every address as Bitcoin Core does', async () => {
    const chain = loadChainA();
    const entries = Object.entries(chain.expected.addresses);
    expect(entries.length).toBe(5301);
    let checked = 0;
    const index = await readAddresses(
      replayed.db,
      entries.map(([address]) => keyOfAddress(address, 'regtest')),
    );
    for (const [address, want] of entries) {
      const got = index.get(keyOfAddress(address, 'regtest'))!;
      expect(got.balance, address).toBe(BigInt(want.balance));
      expect(got.history, address).toEqual(want.history);
      const sortKey = (u: { height: number; transaction_hash: string; index: number }) =>
        `${String(u.height).padStart(8, '0')}${u.transaction_hash}${u.index}`;
      expect(
        [...got.unspent].sort((a, b) => sortKey(a).localeCompare(sortKey(b))),
        address,
      ).toEqual([...want.unspent].sort((a, b) => sortKey(a).localeCompare(sortKey(b))));
      checked++;
    }
    expect(checked).toBe(5301);
  });

  it('equals a fresh index of the final chain', async () => {
    const chain = loadChainA();
    for (let h = 0; h < chain.main.length; h++) {
      const r = await applyBlock(fresh.db, decodeBlock(chain.blocks.get(chain.main[h]!)!.raw), h);
      expect(r.kind).toBe('applied');
    }
    const [a, b] = await Promise.all([snapshotIndex(replayed.db), snapshotIndex(fresh.db)]);
    expect(a).toEqual(b);
  });

  it('apply, undo, re-apply: the state before and after each step is restored exactly (blockbook round trip)', async () => {
    const chain = loadChainA();
    const tip = await readTip(fresh.db);
    const top = chain.blocks.get(chain.main[tip.height]!)!;
    const s2 = await snapshotIndex(fresh.db);
    expect((await undoBlock(fresh.db, tip.height, new FixtureChain(chain.blocks.values()))).kind).toBe('undone');
    const s1 = await snapshotIndex(fresh.db);
    expect(s1.tip.height).toBe(tip.height - 1);
    expect((await undoBlock(fresh.db, tip.height - 1, new FixtureChain(chain.blocks.values()))).kind).toBe('undone');
    expect((await applyBlock(fresh.db, decodeBlock(chain.blocks.get(chain.main[tip.height - 1]!)!.raw), tip.height - 1)).kind).toBe(
      'applied',
    );
    expect(await snapshotIndex(fresh.db)).toEqual(s1);
    expect((await applyBlock(fresh.db, decodeBlock(top.raw), tip.height)).kind).toBe('applied');
    expect(await snapshotIndex(fresh.db)).toEqual(s2);
  });

  it('wrote one block event per connect and disconnect', async () => {
    const chain = loadChainA();
    const rows = await replayed.db.selectFrom('outbox').select(['type', 'height']).orderBy('seq').execute();
    expect(rows.filter((r) => r.type === 'block.connected').length).toBe(chain.steps.filter((s) => s.label === 'C').length + 1);
    expect(rows.filter((r) => r.type === 'block.disconnected').length).toBe(17);
  });
});
