/**
 * Blocks whose spent outputs come from the node (indexer/writer/apply.ts `BlockToApply.spent`:
 * the spend returns no scripts, chain-rows.ts `spendUtxos`) on a real PostgreSQL, regtest-chain-a:
 * through the node's 7 reorgs the index, its undo store and its events equal those the writer
 * makes taking every spent output from the index; a node's output of another value (or one it
 * lacks) rolls the block back (ERR_SPENT_MISMATCH) and the block then applies from the index's
 * rows; lists of another shape than the block's are not used; and the run loop asks the node for
 * a live block's spent outputs beside the block, and after a disagreement stops asking and
 * applies the block from the index.
 */
import { Writable } from 'node:stream';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeBlock, type DecodedBlock } from '../../../src/bitcoin/block.js';
import type { Database } from '../../../src/db/schema.js';
import { applyBlocks, undoBlock } from '../../../indexer/writer/apply.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { TxidCache } from '../../../indexer/writer/txid-cache.js';
import type { SpentOutput } from '../../../indexer/node-rest.js';
import { createRunLoop } from '../../../indexer/run.js';
import { createLogger } from '../../../src/log.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, indexChainA, loadChainA } from '../../support/chain-fixture.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';

const undoRows = async (db: Kysely<Database>) =>
  (await sql<{ height: number; spent: Buffer }>`SELECT height, spent FROM block_undo ORDER BY height`.execute(db)).rows;
const events = async (db: Kysely<Database>) =>
  (
    await sql<{
      type: string;
    }>`SELECT type, addr_key, address, txid, block_hash, height, confirmations, received, sent FROM outbox ORDER BY seq`.execute(db)
  ).rows;

/** The first input of `block` that spends an output of an earlier block: [transaction, input]. */
function earlierSpend(block: DecodedBlock): [number, number] | null {
  const own = new Set(block.txs.map((tx) => Buffer.from(tx.txid).toString('hex')));
  for (let t = 1; t < block.txs.length; t++) {
    const j = block.txs[t]!.inputs.findIndex((i) => !own.has(Buffer.from(i.prevTxid).toString('hex')));
    if (j >= 0) return [t, j];
  }
  return null;
}

/** The node's spent outputs of `block` with that of its first input spending an earlier block's output changed in value (`drop`: left out). */
function altered(spent: SpentOutput[][], block: DecodedBlock, drop = false): SpentOutput[][] {
  const [t, j] = earlierSpend(block)!;
  return spent.map((l, i) =>
    i !== t ? l : drop ? l.filter((_, k) => k !== j) : l.map((o, k) => (k === j ? { ...o, value: o.value + 1n } : o)),
  );
}

describeFixtures('spent outputs from the node', () => {
  const chain = loadChainA();
  const node = new FixtureChain(chain.blocks.values());
  const main = chain.main.map((h) => decodeBlock(chain.blocks.get(h)!.raw));
  let plain: TestDatabase;
  let given: TestDatabase;
  let t: TestDatabase;
  /** The first main block from the middle on that spends an output of an earlier block. */
  const h = main.findIndex((b, height) => height >= main.length / 2 && earlierSpend(b) !== null);
  /** The next such block after h + 1, and the last block the run loop applies (two blocks further). */
  const b = main.findIndex((x, height) => height > h + 1 && earlierSpend(x) !== null);
  const end = b + 2;
  const apply = async (db: Kysely<Database>, block: DecodedBlock, height: number, spent?: SpentOutput[][], txids?: TxidCache) =>
    (await applyBlocks(db, [{ block, height, ...(spent ? { spent } : {}) }], txids ? { txids } : {}))[0]!;

  beforeAll(async () => {
    [plain, given, t] = await Promise.all([createMigratedDatabase('sfp'), createMigratedDatabase('sfg'), createMigratedDatabase('sft')]);
    await indexChainA(plain.db);
    // The same steps, each block with the outputs it spent as the node gives them.
    const txids = new TxidCache(1_000_000);
    expect((await apply(given.db, main[0]!, 0, (await node.getSpentTxOuts(chain.main[0]!))!, txids)).kind).toBe('applied');
    for (const step of chain.steps) {
      const b = chain.blocks.get(step.hash)!;
      if (step.label === 'C') {
        const r = await apply(given.db, decodeBlock(b.raw), b.height, (await node.getSpentTxOuts(step.hash))!, txids);
        expect(r.kind, `connect ${b.height}`).toBe('applied');
      } else expect((await undoBlock(given.db, b.height, node, { txids })).kind).toBe('undone');
    }
    for (let height = 0; height < h; height++) expect((await apply(t.db, main[height]!, height)).kind).toBe('applied');
  }, 600_000);
  afterAll(async () => {
    await Promise.all([plain, given, t].map((d) => d?.drop()));
  });

  it('gives the same index, undo store and events through the reorgs', async () => {
    expect(await snapshotIndex(given.db)).toEqual(await snapshotIndex(plain.db));
    const undo = await undoRows(given.db);
    expect(undo.length).toBeGreaterThan(100);
    expect(undo).toEqual(await undoRows(plain.db));
    expect(await events(given.db)).toEqual(await events(plain.db));
  });

  it('rolls back a block the node gives another value or one output less for, which then applies from the index', async () => {
    const spent = (await node.getSpentTxOuts(chain.main[h]!))!;
    const before = await snapshotIndex(t.db);
    for (const wrong of [altered(spent, main[h]!), altered(spent, main[h]!, true)]) {
      // (one output less is another shape: not used, the block applies from the index; undone again below)
      const r = apply(t.db, main[h]!, h, wrong);
      if (wrong.every((l, i) => l.length === spent[i]!.length)) {
        await expect(r).rejects.toMatchObject({ code: 'ERR_SPENT_MISMATCH' });
        expect(await snapshotIndex(t.db)).toEqual(before);
      } else {
        expect((await r).kind).toBe('applied');
        expect((await undoBlock(t.db, h, node)).kind).toBe('undone');
        expect(await snapshotIndex(t.db)).toEqual(before);
      }
    }
    // A list per transaction missing: not the block's shape either.
    expect((await apply(t.db, main[h]!, h, spent.slice(1))).kind).toBe('applied');
    expect((await undoBlock(t.db, h, node)).kind).toBe('undone');
    expect((await apply(t.db, main[h]!, h, spent)).kind).toBe('applied');
    expect((await readTip(t.db)).height).toBe(h);
  });

  it('the run loop asks for a live block’s spent outputs and, after a disagreement, takes them from the index', async () => {
    const r = await createMigratedDatabase('sfr');
    const ref = await createMigratedDatabase('sfq');
    const asked: { hash: string; restOnly: boolean }[] = [];
    /** The block whose spent outputs the node gives wrong (once it is live). */
    const bad = chain.main[b]!;
    const live = new (class extends FixtureChain {
      override async getSpentTxOuts(hash: string, opts?: { restOnly?: boolean }) {
        asked.push({ hash, restOnly: opts?.restOnly === true });
        const s = await super.getSpentTxOuts(hash);
        return s && hash === bad ? altered(s, main[b]!) : s;
      }
    })(chain.blocks.values());
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    try {
      for (let height = 0; height <= end; height++) expect((await apply(ref.db, main[height]!, height)).kind).toBe('applied');
      for (let height = 0; height < h; height++) expect((await apply(r.db, main[height]!, height)).kind).toBe('applied');
      live.setActive(chain.main.slice(0, h));
      const loop = createRunLoop({
        db: r.db,
        source: live,
        log: createLogger({ level: 'debug', format: 'json', destination }),
        pollIntervalMs: 10,
        maxReorgDepth: 100,
        txidCacheTxs: 1_000_000,
      });
      const running = loop.run();
      try {
        // One block at a time, each at the node's tip when the loop reads it.
        for (let height = h; height <= end; height++) {
          live.connect(chain.main[height]!);
          loop.wake();
          for (let i = 0; i < 2000 && (await readTip(r.db)).height < height; i++) await new Promise((res) => setTimeout(res, 10));
          expect((await readTip(r.db)).height).toBe(height);
        }
      } finally {
        await loop.stop();
        await running.catch(() => undefined);
      }
      expect(await snapshotIndex(r.db)).toEqual(await snapshotIndex(ref.db));
      expect(await undoRows(r.db)).toEqual(await undoRows(ref.db));
      // Asked for each live block, REST only, up to the one it disagreed on; never after it.
      const hashes = asked.map((a) => a.hash);
      expect(asked.every((a) => a.restOnly)).toBe(true);
      expect(hashes).toContain(chain.main[h]!);
      expect(hashes).toContain(bad);
      expect(hashes).not.toContain(chain.main[b + 1]!);
      expect(hashes).not.toContain(chain.main[end]!);
      expect(lines.filter((l) => /disagree/.test(String(l.msg)))).toHaveLength(1);
    } finally {
      await Promise.all([r.drop(), ref.drop()]);
    }
  });
});
