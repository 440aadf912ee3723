/**
 * Catching up block by block with several blocks per Postgres transaction (applyBlocks,
 * INDEXER_CATCHUP_BLOCKS): the index and the outbox end exactly as with one transaction per
 * block, row for row, whether the blocks are written together (a turn: apply-turn.ts) or one
 * by one (a watched address); a turn writes each table once; a block that does not extend the
 * tip ends the batch with the blocks before it applied;
 * the run loop takes batches while behind the node and a single block at its tip, and logs with
 * each block the blocks committed with it (not those fetched that the writing budget left out).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createDb } from '../../../src/db/connect.js';
import { Writable } from 'node:stream';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { createLogger } from '../../../src/log.js';
import { applyBlock, applyBlocks } from '../../../indexer/writer/apply.js';
import { createRunLoop } from '../../../indexer/run.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, loadChainA } from '../../support/chain-fixture.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';
import { freshBulkIndexOf, readEvents, startTestIndexer, waitSynced, watchAddress } from '../../support/chain-indexer.js';

const outboxOf = async (t: TestDatabase) => (await readEvents(t.db)).map(({ seq: _seq, ...e }) => e);

/** Every row of the tables a block's apply writes, as stored (history chunks and undo rows as they are), without timestamps. */
async function rowsOf(t: TestDatabase): Promise<Record<string, string[]>> {
  const tables = [
    'blocks',
    'txs',
    'utxos',
    'balances',
    'history',
    'block_undo',
    'script_aliases',
    'asset_txs',
    'watched_txs',
    'chain_tip',
    'wallets',
  ];
  const out: Record<string, string[]> = {};
  for (const table of tables) {
    const r = await sql<{ r: string }>`
      SELECT (to_jsonb(t) - 'updated_at' - 'created_at')::text AS r FROM ${sql.table(table)} t ORDER BY 1`.execute(t.db);
    out[table] = r.rows.map((x) => x.r);
  }
  return out;
}

/** Applies `blocks` to `single` one transaction per block and to `batched` in groups of 7; both end with the same rows and events. */
async function expectSameAsOneByOne(
  single: TestDatabase,
  batched: TestDatabase,
  blocks: readonly { block: ReturnType<typeof decodeBlock>; height: number }[],
): Promise<void> {
  for (const { block, height } of blocks) expect((await applyBlock(single.db, block, height)).kind).toBe('applied');
  // Groups of 7: batches cross every kind of block of the chain (spends of outputs created in
  // an earlier block of the same batch included).
  for (let i = 0; i < blocks.length; i += 7) {
    const results = await applyBlocks(batched.db, blocks.slice(i, i + 7));
    expect(results.map((r) => r.kind)).toEqual(blocks.slice(i, i + 7).map(() => 'applied'));
  }
  expect(await snapshotIndex(batched.db)).toEqual(await snapshotIndex(single.db));
  const [a, b] = await Promise.all([rowsOf(batched), rowsOf(single)]);
  for (const table of Object.keys(b)) expect(a[table], table).toEqual(b[table]);
  expect(await outboxOf(batched)).toEqual(await outboxOf(single));
}

describeFixtures('applyBlocks: several blocks in one transaction', () => {
  let single: TestDatabase;
  let batched: TestDatabase;

  beforeAll(async () => {
    [single, batched] = await Promise.all([createMigratedDatabase('cbs'), createMigratedDatabase('cbb')]);
  });
  afterAll(async () => {
    await Promise.all([single?.drop(), batched?.drop()]);
  });

  it('leaves the same rows and events as one transaction per block (blocks written together)', async () => {
    const chain = loadChainA();
    const blocks = chain.main.map((hash, height) => ({ block: decodeBlock(chain.blocks.get(hash)!.raw), height }));
    // The chain spends, within 7 blocks, outputs of earlier blocks: a turn resolves them in memory.
    await expectSameAsOneByOne(single, batched, blocks);
  });

  it('leaves the same rows and events as one transaction per block with an address watched (blocks one by one)', async () => {
    const chain = loadChainA();
    const blocks = chain.main.map((hash, height) => ({ block: decodeBlock(chain.blocks.get(hash)!.raw), height }));
    const [s, b] = await Promise.all([createMigratedDatabase('cbws'), createMigratedDatabase('cbwb')]);
    try {
      const watched = Object.keys(chain.expected.addresses)[0]!;
      for (const t of [s, b]) await watchAddress(t.db, watched, 3);
      await expectSameAsOneByOne(s, b, blocks);
      expect((await readEvents(b.db)).some((e) => e.type === 'tx.confirmed')).toBe(true);
    } finally {
      await Promise.all([s.drop(), b.drop()]);
    }
  });

  it('writes a turn of blocks with each table once, after the locks, planner settings and mempool check', async () => {
    const chain = loadChainA();
    const t = await createMigratedDatabase('cbq');
    const statements: string[] = [];
    const db = createDb(t.url, { max: 2, onQuery: (q) => void statements.push(q) });
    try {
      const blocks = chain.main.slice(0, 8).map((hash, height) => ({ block: decodeBlock(chain.blocks.get(hash)!.raw), height }));
      expect((await applyBlocks(db, blocks)).map((r) => r.kind)).toEqual(blocks.map(() => 'applied'));
      const count = (re: RegExp) => statements.filter((q) => re.test(q)).length;
      // One wallet lock and one outbox lock (8 blocks' events), one planner setting, one look at the mempool tables.
      expect(count(/pg_advisory_xact_lock/)).toBe(2);
      expect(count(/set_config\('enable_hashjoin'/)).toBe(1);
      expect(count(/FROM mempool_txs/)).toBe(1);
      // Nothing watched: the 8 blocks are one turn, each table written once.
      for (const table of ['blocks', 'block_undo', 'outbox']) expect(count(new RegExp(`INSERT INTO ${table} `)), table).toBe(1);
      for (const table of ['txs', 'utxos', 'history']) expect(count(new RegExp(`^COPY ${table} `)), table).toBe(1);
      expect(count(/DELETE FROM utxos u USING \(\s*SELECT t.tx_num/)).toBeLessThanOrEqual(1);
      expect(count(/MERGE INTO balances/)).toBe(1);
      expect(count(/UPDATE chain_tip/)).toBe(1);
    } finally {
      await db.destroy();
      await t.drop();
    }
  });

  it('stops at a block that does not extend the tip, the blocks before it applied', async () => {
    const chain = loadChainA();
    const t = await createMigratedDatabase('cbx');
    try {
      const at = (h: number) => ({ block: decodeBlock(chain.blocks.get(chain.main[h]!)!.raw), height: h });
      expect((await applyBlocks(t.db, [at(0), at(1)])).map((r) => r.kind)).toEqual(['applied', 'applied']);
      // Block 3 after block 2 is fine; block 5 in place of 4 does not extend 3.
      const r = await applyBlocks(t.db, [at(2), at(3), { block: at(5).block, height: 4 }, at(5)]);
      expect(r.map((x) => x.kind)).toEqual(['applied', 'applied', 'stale']);
      const tip = await readTip(t.db);
      expect(tip.height).toBe(3);
      expect(hashToHex(tip.hash!)).toBe(chain.main[3]);
      // A batch starting with the tip itself answers 'already' and writes nothing.
      expect((await applyBlocks(t.db, [at(3), at(4)])).map((x) => x.kind)).toEqual(['already']);
      expect((await readTip(t.db)).height).toBe(3);
    } finally {
      await t.drop();
    }
  });
});

describeFixtures('the run loop under a writing budget', () => {
  it('logs with each block the blocks committed in its transaction', async () => {
    const chain = loadChainA();
    const node = new FixtureChain(chain.main.map((h) => chain.blocks.get(h)!));
    node.setActive(chain.main);
    const t = await createMigratedDatabase('cbu');
    // A watched address: blocks are applied one by one, under the budget (a turn writes its blocks together).
    await watchAddress(t.db, Object.keys(chain.expected.addresses)[0]!, 1);
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString('utf8').split('\n'))
          if (l.includes('"block applied"')) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    // Turns of 5 blocks fetched; a budget of 0 ms commits each transaction after its first block.
    const loop = createRunLoop({
      db: t.db,
      source: node,
      log: createLogger({ level: 'info', format: 'json', destination }),
      pollIntervalMs: 50,
      maxReorgDepth: 100,
      catchupBlocks: 5,
      catchupBudgetMs: 0,
    });
    const running = loop.run();
    try {
      const last = chain.main.length - 1;
      for (let i = 0; i < 2400 && (await readTip(t.db)).height < last; i++) await new Promise((r) => setTimeout(r, 50));
      expect((await readTip(t.db)).height).toBe(last);
    } finally {
      await loop.stop();
      await running.catch(() => undefined);
      await t.drop();
    }
    expect(lines.map((l) => l.height)).toEqual(chain.main.map((_, h) => h));
    expect(lines.filter((l) => l.batch !== undefined)).toEqual([]);
  });
});

describe('the run loop catching up', () => {
  let node: Devnode;
  let t: TestDatabase;
  const lines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    node = await startDevnode({ initialBlocks: 101 });
    const to = node.wallet.address('p2wpkh');
    for (let i = 0; i < 40; i++) {
      for (let k = 0; k <= i % 4; k++) await node.wallet.send(to, 20_000n + BigInt(k));
      await node.mine(1);
    }
    t = await createMigratedDatabase('cbl');
  });
  afterAll(async () => {
    await node?.stop();
    await t?.drop();
  });

  it('applies batches while behind, one block at the tip, and equals a fresh index', async () => {
    await watchAddress(t.db, node.wallet.address('p2wpkh'), 1);
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString('utf8').split('\n'))
          if (l.includes('"block applied"')) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    const ix = await startTestIndexer(t, node, {
      config: { indexerBulkThreshold: 100_000, indexerCatchupBlocks: 16 },
      log: createLogger({ level: 'info', format: 'json', destination }),
    });
    try {
      await waitSynced(t.db, node);
      const batches = lines.map((l) => Number(l.batch ?? 1));
      // Batches of up to 16 blocks (fewer when a transaction's 250 ms writing budget ends it).
      expect(Math.max(...batches)).toBeGreaterThan(1);
      expect(Math.max(...batches)).toBeLessThanOrEqual(16);
      expect(lines.length).toBe(node.tip().height + 1);
      // At the tip: a new block is a transaction of its own.
      await node.wallet.send(node.wallet.address('p2wpkh'), 30_000n);
      await node.mine(1);
      await waitSynced(t.db, node);
      expect(lines.at(-1)!.batch).toBeUndefined();
      expect(lines.at(-1)!.height).toBe(node.tip().height);
    } finally {
      await ix.stop();
    }
    const ref = await freshBulkIndexOf(node);
    try {
      const [a, b] = await Promise.all([snapshotIndex(t.db), snapshotIndex(ref.db)]);
      expect(a.utxos).toEqual(b.utxos);
      expect(a.balances).toEqual(b.balances);
      expect(a.txs).toEqual(b.txs);
      expect(a.blocks).toEqual(b.blocks);
    } finally {
      await ref.drop();
    }
    // Every block's events: one block.connected per height, in order, and the watched address's
    // tx.confirmed events of each block right after it.
    const connected = (await readEvents(t.db, ['block.connected'])).map((e) => e.height);
    expect(connected).toEqual(Array.from({ length: node.tip().height + 1 }, (_, h) => h));
  });
});
