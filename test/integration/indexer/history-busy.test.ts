/**
 * HISTORY_BUSY on the index (`applyHistoryBusy`, run by the indexer and `blockwire import` as they
 * start): an empty index still at busy 0 takes it; an index with blocks, or one switched before its
 * first block, keeps its own; 0 changes nothing. The indexer role on a devnode applies it (the
 * import's is in import.test.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import { applyHistoryBusy } from '../../../indexer/writer/history-switch.js';
import { foldHistoryWhenDue } from '../../../indexer/writer/history-build.js';
import pg from 'pg';
import { applyBlock, undoBlock } from '../../../indexer/writer/apply.js';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import type { Database } from '../../../src/db/schema.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { FixtureChain, loadMainnet600 } from '../../support/chain-fixture.js';
import { describeFixtures } from '../../support/fixtures.js';
import { startDevnode } from '../../../devnode/index.js';
import { startTestIndexer, waitSynced } from '../../support/chain-indexer.js';
import { readHistoryPlaces } from '../../support/chain-snapshot.js';

const busyOf = async (db: Kysely<Database>) =>
  (await sql<{ busy: number; folded: number }>`SELECT busy, folded FROM history_bucket_params`.execute(db)).rows[0]!;

describe('applyHistoryBusy', () => {
  const dbs: TestDatabase[] = [];
  afterAll(async () => {
    for (const t of dbs) await t.drop();
  });
  const fresh = async () => {
    const t = await createMigratedDatabase('hbusy');
    dbs.push(t);
    return t.db;
  };

  it('an empty index takes it once; a later value leaves the layout it took', async () => {
    const db = await fresh();
    expect(await applyHistoryBusy(db, 100)).toEqual({ applied: true, busy: 100 });
    expect(await busyOf(db)).toEqual({ busy: 100, folded: 0 });
    expect(await applyHistoryBusy(db, 100)).toEqual({ applied: false, busy: 100 });
    expect(await applyHistoryBusy(db, 0)).toEqual({ applied: false, busy: 100 });
    expect(await applyHistoryBusy(db, 30)).toEqual({ applied: false, busy: 100 });
    expect(await busyOf(db)).toEqual({ busy: 100, folded: 0 });
  });

  it('0 on an empty index changes nothing', async () => {
    const db = await fresh();
    expect(await applyHistoryBusy(db, 0)).toEqual({ applied: false, busy: 0 });
    expect((await busyOf(db)).busy).toBe(0);
  });

  it('the indexer folds at least the tip short of the tip (the fold holds the params row, not the chain)', async () => {
    const db = await fresh();
    await expect(foldHistoryWhenDue(db, { lag: 0 })).rejects.toThrow('lag must be a positive integer, got 0');
  });

  it('refuses a negative or fractional value', async () => {
    const db = await fresh();
    await expect(applyHistoryBusy(db, -1)).rejects.toThrow('busy must be a non-negative integer');
    await expect(applyHistoryBusy(db, 1.5)).rejects.toThrow('busy must be a non-negative integer');
    expect((await busyOf(db)).busy).toBe(0);
  });

  it('runs its guard in its transaction, and writes nothing when the guard throws', async () => {
    const db = await fresh();
    await expect(
      applyHistoryBusy(db, 100, {
        guard: async () => {
          throw new Error('not the writer');
        },
      }),
    ).rejects.toThrow('not the writer');
    expect((await busyOf(db)).busy).toBe(0);
  });
});

describeFixtures('on an index with blocks (mainnet blocks)', () => {
  const dbs: TestDatabase[] = [];
  afterAll(async () => {
    for (const t of dbs) await t.drop();
  });

  it('a fold in progress (the params row held) lets a block be applied beside it, and makes an undo wait for it', async () => {
    const t = await createMigratedDatabase('hbusyf');
    dbs.push(t);
    await sql`UPDATE history_bucket_params SET busy = 100 WHERE id = 1`.execute(t.db);
    const chain = loadMainnet600();
    for (const b of chain.slice(0, 21)) expect((await applyBlock(t.db, decodeBlock(b.raw), b.height)).kind).toBe('applied');
    const fold = new pg.Client({ connectionString: t.url });
    await fold.connect();
    try {
      // What a fold's transaction holds from its first statement to its commit.
      await fold.query('BEGIN');
      await fold.query('SELECT * FROM history_bucket_params WHERE id = 1 FOR UPDATE');
      expect((await applyBlock(t.db, decodeBlock(chain[21]!.raw), 21)).kind).toBe('applied');
      const node = new FixtureChain(chain.slice(0, 22));
      let undone = false;
      const undo = undoBlock(t.db, 21, node).then((r) => {
        undone = true;
        return r;
      });
      await new Promise((r) => setTimeout(r, 500));
      expect(undone).toBe(false);
      await fold.query('COMMIT');
      expect((await undo).kind).toBe('undone');
    } finally {
      await fold.end();
    }
  });

  it('keeps busy 0 on an index with blocks (chunk rows only): switching it is `blockwire history-buckets`', async () => {
    const t = await createMigratedDatabase('hbusyb');
    dbs.push(t);
    for (const b of loadMainnet600().slice(0, 3)) expect((await applyBlock(t.db, decodeBlock(b.raw), b.height)).kind).toBe('applied');
    expect(await applyHistoryBusy(t.db, 100)).toEqual({ applied: false, busy: 0 });
    expect((await busyOf(t.db)).busy).toBe(0);
  });
});

describe('the indexer role', () => {
  it('switches an empty index on at HISTORY_BUSY as it starts, and its bulk sync folds into the buckets', async () => {
    const node = await startDevnode({ initialBlocks: 80 });
    const t = await createMigratedDatabase('hbusyix');
    try {
      // (the bulk path for a catch-up over 50 blocks: indexerConfig)
      // (the default: the devnode's coinbases pay one address, 80 entries, at most HISTORY_BUSY's 100)
      const ix = await startTestIndexer(t, node, { zmq: false });
      try {
        await waitSynced(t.db, node);
      } finally {
        await ix.stop();
      }
      expect((await busyOf(t.db)).busy).toBe(100);
      const places = await readHistoryPlaces(t.db);
      expect(places.records.size).toBeGreaterThan(0);
      // Started again with another value: the index keeps its layout.
      const again = await startTestIndexer(t, node, { zmq: false, config: { historyBusy: 30 } });
      await again.stop();
      expect((await busyOf(t.db)).busy).toBe(100);
    } finally {
      await t.drop();
      await node.stop();
    }
  });
});
