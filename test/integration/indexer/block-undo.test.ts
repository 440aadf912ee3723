/**
 * The undo store (block_undo): the per-block apply keeps, for each of the newest blocks, the
 * outputs of earlier blocks it spent, then its own it spent; undo restores them from there, not
 * from the node, and a block the node no longer has is rebuilt from the index's rows; a block
 * older than the window is undone from what the node says it spent.
 * regtest-chain-a's main chain, block by block, with a window of 100 blocks; and migration 0046
 * writing the rows an index built before it lacks.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../../../src/db/schema.js';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { decodeIns, decodeOuts, encodeOuts } from '../../../src/db/packed.js';
import { firstTxNum, txNumHeight, txNumPosition } from '../../../src/db/tx-num.js';
import { applyBlock, undoBlock } from '../../../indexer/writer/apply.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, loadChainA, type FixtureBlock } from '../../support/chain-fixture.js';
import { snapshotIndex, type IndexSnapshot } from '../../support/chain-snapshot.js';
import { migrations } from '../../../migrations/index.js';
import { rewriteToScriptForm } from '../../support/script-form.js';

const WINDOW = 100;

describeFixtures('the undo store', () => {
  let blocks: FixtureBlock[];
  let t: TestDatabase;
  let ref: TestDatabase;
  /** A fresh index of the chain up to `forkBelow - 1`, and up to the lower fork. */
  let atFork: IndexSnapshot;
  let atDeepFork: IndexSnapshot;
  const tip = () => blocks.length - 1;
  const fork = () => tip() - WINDOW;
  const deepFork = () => fork() - 20;
  const withoutTxs = (s: IndexSnapshot) => ({ ...s, txs: [] });
  const undoRow = async (db: TestDatabase['db'], h: number) =>
    (await sql<{ spent: Buffer }>`SELECT spent FROM block_undo WHERE height = ${h}`.execute(db)).rows[0]?.spent;
  let ownSpends = 0;

  beforeAll(async () => {
    const chain = loadChainA();
    blocks = chain.main.map((h) => chain.blocks.get(h)!);
    [t, ref] = await Promise.all([createMigratedDatabase('un'), createMigratedDatabase('ur')]);
    for (let h = 0; h <= tip(); h++)
      expect((await applyBlock(t.db, decodeBlock(blocks[h]!.raw), h, { undoBlocks: WINDOW })).kind).toBe('applied');
    for (let h = 0; h <= fork(); h++) {
      expect((await applyBlock(ref.db, decodeBlock(blocks[h]!.raw), h)).kind).toBe('applied');
      if (h === deepFork()) atDeepFork = await snapshotIndex(ref.db);
    }
    atFork = await snapshotIndex(ref.db);
  });
  afterAll(async () => {
    await Promise.all([t?.drop(), ref?.drop()]);
  });

  it('keeps the spent outputs of the newest blocks only, one per input: those of earlier blocks, then its own', async () => {
    const rows = await sql<{ height: number; spent: Buffer }>`SELECT height, spent FROM block_undo ORDER BY height`.execute(t.db);
    expect(rows.rows.map((r) => r.height)).toEqual(Array.from({ length: WINDOW }, (_, i) => fork() + 1 + i));
    let outputs = 0;
    for (const { height, spent } of rows.rows) {
      const ins = await sql<{ ins: Buffer }>`
        SELECT ins FROM txs WHERE tx_num >= ${firstTxNum(height).toString()}::int8 AND tx_num < ${firstTxNum(height + 1).toString()}::int8 ORDER BY tx_num`.execute(
        t.db,
      );
      const all = ins.rows.flatMap((r) => decodeIns(r.ins));
      const external = all.filter((ref) => ref.txNum < firstTxNum(height));
      const own = all.filter((ref) => ref.txNum >= firstTxNum(height));
      ownSpends += own.length;
      const got = decodeOuts(spent);
      expect(got.length, `block ${height}`).toBe(external.length + own.length);
      // Each is the output its input names, as the block that made it holds it.
      for (const [i, ref] of [...external, ...own].entries()) {
        const want = decodeBlock(blocks[txNumHeight(ref.txNum)]!.raw).txs[txNumPosition(ref.txNum)]!.outputs[ref.vout]!;
        expect({ value: got[i]!.value, script: Buffer.from(got[i]!.script).toString('hex') }).toEqual({
          value: want.value,
          script: Buffer.from(want.script).toString('hex'),
        });
      }
      outputs += got.length;
    }
    expect(outputs).toBeGreaterThan(WINDOW);
    expect(ownSpends, 'inputs spending an output of their own block').toBeGreaterThan(1);
  });

  it('undoes the blocks of the window from the index alone when the node no longer has them', async () => {
    const noBlocks = { getBlock: () => Promise.resolve(null) };
    const full = new FixtureChain(blocks);
    let rebuiltOwn = 0;
    let oldRowChecked = false;
    for (let h = tip(); h > fork(); h--) {
      const lo = firstTxNum(h);
      const ins = await sql<{ ins: Buffer }>`
        SELECT ins FROM txs WHERE tx_num >= ${lo.toString()}::int8 AND tx_num < ${firstTxNum(h + 1).toString()}::int8`.execute(t.db);
      const refs = ins.rows.flatMap((r) => decodeIns(r.ins));
      const own = refs.filter((ref) => ref.txNum >= lo).length;
      if (own > 0 && !oldRowChecked) {
        // A row written before the block's own spent outputs were kept: the rows cannot give
        // the block, so undo waits for the node (changing nothing), and takes it from the node.
        const external = refs.filter((ref) => ref.txNum < lo).length;
        await sql`UPDATE block_undo SET spent = ${encodeOuts(decodeOuts((await undoRow(t.db, h))!).slice(0, external))} WHERE height = ${h}`.execute(
          t.db,
        );
        const before = await snapshotIndex(t.db);
        await expect(undoBlock(t.db, h, noBlocks)).rejects.toMatchObject({ code: 'ERR_UNDO_BLOCK_MISSING' });
        expect(await snapshotIndex(t.db)).toEqual(before);
        expect((await undoBlock(t.db, h, full)).kind).toBe('undone');
        oldRowChecked = true;
        continue;
      }
      expect((await undoBlock(t.db, h, noBlocks)).kind, `block ${h}`).toBe('undone');
      rebuiltOwn += own;
    }
    expect(oldRowChecked).toBe(true);
    expect(rebuiltOwn, 'own outputs spent in the blocks rebuilt').toBeGreaterThan(0);
    expect(await snapshotIndex(t.db)).toEqual(atFork);
    // And applied again, as they were.
    for (let h = fork() + 1; h <= tip(); h++)
      expect((await applyBlock(t.db, decodeBlock(blocks[h]!.raw), h, { undoBlocks: WINDOW })).kind).toBe('applied');
  });

  it('undoes the blocks of the window from the store and the block, reading no stored outputs', async () => {
    // No txs row holds its outputs any more, and the node gives blocks but no spent outputs:
    // only block_undo can restore what the window's blocks spent.
    await sql`UPDATE txs SET outs = ''::bytea`.execute(t.db);
    const full = new FixtureChain(blocks);
    const blocksOnly = { getBlock: (hash: string) => full.getBlock(hash) };
    for (let h = tip(); h > fork(); h--) expect((await undoBlock(t.db, h, blocksOnly)).kind).toBe('undone');
    expect(withoutTxs(await snapshotIndex(t.db))).toEqual(withoutTxs(atFork));
    expect((await sql<{ n: number }>`SELECT count(*)::int4 AS n FROM block_undo`.execute(t.db)).rows[0]!.n).toBe(0);
  });

  it('stops, changing nothing, when the node no longer has a block without an undo row or what it spent', async () => {
    const node = new FixtureChain(blocks);
    const before = await snapshotIndex(t.db);
    node.hidden.add(blocks[fork()]!.hash);
    await expect(undoBlock(t.db, fork(), node)).rejects.toMatchObject({ code: 'ERR_UNDO_BLOCK_MISSING' });
    // Below the window, a node that gives the block but not the outputs it spent.
    await expect(undoBlock(t.db, fork(), { getBlock: (hash: string) => new FixtureChain(blocks).getBlock(hash) })).rejects.toMatchObject({
      code: 'ERR_UNDO_BLOCK_MISSING',
    });
    expect(await snapshotIndex(t.db)).toEqual(before);
  });

  it('undoes blocks below the window from the outputs the node says they spent', async () => {
    const node = new FixtureChain(blocks);
    for (let h = fork(); h > deepFork(); h--) expect((await undoBlock(t.db, h, node)).kind).toBe('undone');
    expect(withoutTxs(await snapshotIndex(t.db))).toEqual(withoutTxs(atDeepFork));
    // (the outs the first case emptied aside, the same transactions remain)
    const nums = async (db: typeof t.db) => (await sql<{ tx_num: string }>`SELECT tx_num::text FROM txs ORDER BY tx_num`.execute(db)).rows;
    expect(await nums(t.db)).toEqual(await nums(ref.db).then((r) => r.filter((x) => BigInt(x.tx_num) < firstTxNum(deepFork() + 1))));
  });

  it('asks the node nothing under the tip lock when the undo row is gone by then: stale, then undone', async () => {
    const h = deepFork() + 1;
    expect((await applyBlock(t.db, decodeBlock(blocks[h]!.raw), h, { undoBlocks: WINDOW })).kind).toBe('applied');
    const node = new FixtureChain(blocks);
    let asked = 0;
    const counting = {
      getBlock: (hash: string) => node.getBlock(hash),
      getSpentTxOuts: (hash: string) => {
        asked++;
        return node.getSpentTxOuts(hash);
      },
    };
    // The row seen before the transaction is gone once it holds the tip's lock.
    const gone = async (trx: Transaction<Database>) => {
      await sql`DELETE FROM block_undo WHERE height = ${h}`.execute(trx);
    };
    expect((await undoBlock(t.db, h, counting, { guard: gone })).kind).toBe('stale');
    expect(asked).toBe(0);
    expect((await undoBlock(t.db, h, counting)).kind).toBe('undone');
    expect(asked).toBe(1);
    expect(withoutTxs(await snapshotIndex(t.db))).toEqual(withoutTxs(atDeepFork));
  });

  it('migration 0046 gives an index built before it the rows the writer keeps', async () => {
    const rows = async () =>
      (await sql<{ height: number; spent: Buffer }>`SELECT height, spent FROM block_undo ORDER BY height`.execute(ref.db)).rows.map(
        (r) => `${r.height} ${r.spent.toString('hex')}`,
      );
    const written = await rows();
    expect(written.length).toBe(fork() + 1);
    // (0046 ran on indexes whose txs rows held scripts, as releases before 0053_tagged_outs wrote them)
    expect(await rewriteToScriptForm(ref.db, (h) => blocks[h]!.raw)).toBeGreaterThan(fork());
    const m = migrations['0046_block_undo']!;
    await m.down!(ref.db);
    await m.up(ref.db);
    expect(await rows()).toEqual(written);
  });

  it('migration 0046 leaves an index in the middle of a bulk sync to undo from txs', async () => {
    const m = migrations['0046_block_undo']!;
    await sql`INSERT INTO sync_state (key, value) VALUES ('bulk', '{"active": true, "from": -1, "height": 0}')`.execute(ref.db);
    await m.down!(ref.db);
    await m.up(ref.db);
    expect((await sql<{ n: number }>`SELECT count(*)::int4 AS n FROM block_undo`.execute(ref.db)).rows[0]!.n).toBe(0);
  });
});
