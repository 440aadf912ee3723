/**
 * Migration 0009_utxos_tx_num re-keys `utxos` from `(txid, vout)` to `(tx_num, vout)` in place.
 * Checked from an index with today's layout: every migration but 0009 (the list main ships),
 * regtest-chain-a indexed block by block with its seven reorgs, then the migration, then the
 * same answers (the rows of every chain table, Core's view of each address, each transaction's
 * unspent outputs) and an index that keeps working (blocks undone and applied again end equal to
 * an index built on the new layout from the start). The rows of `utxos` are the same in both
 * layouts; only the key differs, so the per-block path writes the old layout's rows as before.
 * During a bulk sync (keys dropped) the migration leaves the key to the bulk finish.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Migrator, sql, type Kysely } from 'kysely';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import type { Database } from '../../../src/db/schema.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import { findConfirmedTxs, getOutputSpendState } from '../../../api/queries/chain.js';
import { silentLogger } from '../../../src/log.js';
import { migrations } from '../../../migrations/index.js';
import { applyBlock, undoBlock } from '../../../indexer/writer/apply.js';
import { beginBulk, finishBulk } from '../../../indexer/writer/bulk.js';
import { createMigratedDatabase, createTestDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, indexChainA, type ChainA } from '../../support/chain-fixture.js';
import { keyOfAddress, readAddresses, snapshotIndex } from '../../support/chain-snapshot.js';

/** Every migration main ships today: all but 0009. */
async function migrateAsToday(db: Kysely<Database>): Promise<void> {
  const today = Object.fromEntries(Object.entries(migrations).filter(([name]) => name !== '0009_utxos_tx_num'));
  const m = new Migrator({
    db: db as Kysely<unknown>,
    provider: { getMigrations: async () => today },
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
    allowUnorderedMigrations: true,
  });
  const r = await m.migrateToLatest();
  if (r.error) throw r.error;
}

async function utxosKey(db: Kysely<Database>): Promise<string | null> {
  const r = await sql<{
    def: string;
  }>`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'utxos'::regclass AND contype = 'p'`.execute(db);
  return r.rows[0]?.def ?? null;
}

/** What the readers answer: the rows, Core's view of each address, each transaction's unspent outputs. */
async function answers(db: Kysely<Database>, chain: ChainA) {
  const addresses = Object.keys(chain.expected.addresses);
  const views = await readAddresses(
    db,
    addresses.map((a) => keyOfAddress(a, 'regtest')),
  );
  const txids = (await sql<{ txid: Buffer }>`SELECT txid FROM txs ORDER BY tx_num`.execute(db)).rows.map((r) => r.txid);
  const txs = await findConfirmedTxs(db, txids);
  const spendState = await Promise.all(txids.map(async (txid) => [...(await getOutputSpendState(db, txid)).unspent].sort((a, b) => a - b)));
  return {
    snapshot: await snapshotIndex(db),
    addresses: addresses.map((a) => [a, views.get(keyOfAddress(a, 'regtest'))]),
    unspent: txs.map((t, i) => `${hashToHex(txids[i]!)} ${t?.unspent_vouts.sort((a, b) => a - b).join(',')} ${spendState[i]!.join(',')}`),
  };
}

describeFixtures('migration 0009: utxos keyed by (tx_num, vout)', () => {
  let old: TestDatabase;
  let fresh: TestDatabase;
  let chain: ChainA;
  let before: Awaited<ReturnType<typeof answers>>;

  beforeAll(async () => {
    old = await createTestDatabase('u9old');
    await migrateAsToday(old.db);
    expect(await utxosKey(old.db)).toBe('PRIMARY KEY (txid, vout)');
    chain = await indexChainA(old.db);
    before = await answers(old.db, chain);
    fresh = await createMigratedDatabase('u9new');
    await indexChainA(fresh.db);
  });
  afterAll(async () => {
    await old?.drop();
    await fresh?.drop();
  });

  it("the index built on today's layout answers as Core does", () => {
    for (const [address, want] of Object.entries(chain.expected.addresses)) {
      const view = before.addresses.find(([a]) => a === address)![1] as {
        balance: bigint;
        unspent: { transaction_hash: string; index: number }[];
      };
      expect(view.balance, address).toBe(BigInt(want.balance));
      expect(view.unspent.map((u) => `${u.transaction_hash}:${u.index}`).sort(), address).toEqual(
        want.unspent.map((u) => `${u.transaction_hash}:${u.index}`).sort(),
      );
    }
    expect(before.snapshot.utxos.length).toBeGreaterThan(0);
  });

  it('re-keys utxos in place; every answer stays and equals an index built on the new layout', async () => {
    await migrateToLatest(old.db);
    expect(await utxosKey(old.db)).toBe('PRIMARY KEY (tx_num, vout)');
    expect(await answers(old.db, chain)).toEqual(before);
    expect(await answers(fresh.db, chain)).toEqual(before);
  });

  it('the migrated index undoes and applies blocks as one built on the new layout', async () => {
    const tip = chain.expected.best_height;
    for (let h = tip; h > tip - 12; h--) expect((await undoBlock(old.db, h, new FixtureChain(chain.blocks.values()))).kind).toBe('undone');
    for (let h = tip - 11; h <= tip; h++)
      expect((await applyBlock(old.db, decodeBlock(chain.blocks.get(chain.main[h]!)!.raw), h)).kind).toBe('applied');
    expect(await snapshotIndex(old.db)).toEqual(await snapshotIndex(fresh.db));
  });
});

it('during a bulk sync the migration leaves the key to the bulk finish', async () => {
  const t = await createTestDatabase('u9bulk');
  const client = new pg.Client({ connectionString: t.url });
  try {
    await migrateAsToday(t.db);
    await client.connect();
    const deps = { databaseUrl: t.url, log: silentLogger(), batchTxs: 1000 };
    await beginBulk(client, deps, -1);
    await client.query('INSERT INTO utxos (txid, vout, tx_num, value, script) VALUES ($1, 0, 1, 500, $2)', [
      Buffer.alloc(32, 1),
      Buffer.from([0x51]),
    ]);
    await migrateToLatest(t.db);
    expect(await utxosKey(t.db)).toBeNull();
    await finishBulk(client, deps);
    expect(await utxosKey(t.db)).toBe('PRIMARY KEY (tx_num, vout)');
  } finally {
    await client.end().catch(() => {});
    await t.drop();
  }
});
