/**
 * One set of definitions for the chain tables' keys and indexes (src/db/chain-indexes.ts): what
 * the bulk finish builds equals what the migrations leave, index by index (pg_indexes, storage
 * parameters included) and constraint by constraint (pg_constraint), on a fresh database and on
 * one migrated from the list main ships today (all but 0009).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../../src/db/schema.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import { CHAIN_INDEXES } from '../../../src/db/chain-indexes.js';
import { silentLogger } from '../../../src/log.js';
import { beginBulk, finishBulk } from '../../../indexer/writer/bulk.js';
import { createMigratedDatabase, createTestDatabase, migrateAllBut, type TestDatabase } from '../../support/db.js';

const TABLES = [...new Set(CHAIN_INDEXES.map((ix) => ix.table))];

async function schemaOf(db: Kysely<Database>) {
  const indexes = await sql<{ tablename: string; indexname: string; indexdef: string }>`
    SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = ANY(${TABLES}::text[]) ORDER BY 1, 2`.execute(
    db,
  );
  const constraints = await sql<{ rel: string; conname: string; contype: string; def: string }>`
    SELECT conrelid::regclass::text AS rel, conname, contype, pg_get_constraintdef(oid) AS def
      FROM pg_constraint WHERE conrelid::regclass::text = ANY(${TABLES}::text[]) ORDER BY 1, 2`.execute(db);
  return { indexes: indexes.rows, constraints: constraints.rows };
}

describe('chain indexes: the bulk finish builds what the migrations define', () => {
  let migrated: TestDatabase;
  let upgraded: TestDatabase;
  let bulk: TestDatabase;
  beforeAll(async () => {
    migrated = await createMigratedDatabase('ci');
    upgraded = await createTestDatabase('ciup');
    await migrateAllBut(upgraded.db, '0009_utxos_tx_num');
    await migrateToLatest(upgraded.db);
    bulk = await createMigratedDatabase('cibk');
    const client = new pg.Client({ connectionString: bulk.url });
    await client.connect();
    try {
      const deps = { databaseUrl: bulk.url, log: silentLogger(), batchTxs: 1000 };
      await beginBulk(client, deps, -1);
      expect((await schemaOf(bulk.db)).indexes.filter((i) => CHAIN_INDEXES.some((ix) => ix.name === i.indexname))).toEqual([]);
      await finishBulk(client, deps);
    } finally {
      await client.end();
    }
  });
  afterAll(async () => {
    await Promise.all([migrated, upgraded, bulk].map((t) => t?.drop()));
  });

  it('every defined index exists after the migrations, with its definition', async () => {
    const s = await schemaOf(migrated.db);
    expect(s.indexes.map((i) => i.indexname).sort()).toEqual(CHAIN_INDEXES.map((ix) => ix.name).sort());
    expect(s.indexes.find((i) => i.indexname === 'utxos_pkey')!.indexdef).toBe(
      "CREATE UNIQUE INDEX utxos_pkey ON public.utxos USING btree (tx_num, vout) WITH (fillfactor='100')",
    );
    expect(s.indexes.find((i) => i.indexname === 'txs_pkey')!.indexdef).toBe(
      "CREATE UNIQUE INDEX txs_pkey ON public.txs USING btree (tx_num) WITH (fillfactor='100')",
    );
  });

  it('balances keeps room for HOT updates (fillfactor 80), also after the bulk finish rebuilt it', async () => {
    const opts = async (t: TestDatabase) =>
      (await sql<{ o: string[] | null }>`SELECT reloptions AS o FROM pg_class WHERE oid = 'balances'::regclass`.execute(t.db)).rows[0]!.o;
    expect(await opts(migrated)).toEqual(['fillfactor=80']);
    expect(await opts(upgraded)).toEqual(['fillfactor=80']);
    expect(await opts(bulk)).toEqual(['fillfactor=80']);
  });

  it("an index upgraded from today's migrations has the same indexes and constraints", async () => {
    expect(await schemaOf(upgraded.db)).toEqual(await schemaOf(migrated.db));
  });

  it('the bulk finish builds the same indexes and constraints', async () => {
    expect(await schemaOf(bulk.db)).toEqual(await schemaOf(migrated.db));
  });
});
