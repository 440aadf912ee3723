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
import { CHAIN_INDEXES, chainIndex, chainIndexSql, createIndexSql, createIndexSteps } from '../../../src/db/chain-indexes.js';
import { silentLogger } from '../../../src/log.js';
import { beginBulk, finishBulk } from '../../../indexer/writer/bulk.js';
import { PENDING_LIMIT_KB } from '../../../indexer/writer/parts-gin.js';
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
  // Columns too: the finish writes utxos and history into new tables (NOT NULL is no constraint row in PostgreSQL 17).
  const columns = await sql<{ rel: string; attname: string; type: string; notnull: boolean; storage: string }>`
    SELECT attrelid::regclass::text AS rel, attname, format_type(atttypid, atttypmod) AS type, attnotnull AS notnull, attstorage AS storage
      FROM pg_attribute WHERE attrelid::regclass::text = ANY(${TABLES}::text[]) AND attnum > 0 AND NOT attisdropped ORDER BY 1, attnum`.execute(
    db,
  );
  return { indexes: indexes.rows, constraints: constraints.rows, columns: columns.rows };
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
    // (transaction parts on, with history buckets: the finish drops and builds the parts' indexes too)
    await sql`UPDATE history_bucket_params SET busy = 100 WHERE id = 1`.execute(bulk.db);
    await sql`UPDATE txid_bucket_params SET fold = true WHERE id = 1`.execute(bulk.db);
    const client = new pg.Client({ connectionString: bulk.url });
    await client.connect();
    try {
      const deps = { databaseUrl: bulk.url, log: silentLogger(), batchTxs: 1000 };
      await beginBulk(client, deps, -1);
      // Every chain index is dropped while the batches load, but the newest blocks' chunk rows'
      // key (the bulk sync moves those rows into history and leaves the table empty), their
      // balance changes' index (the finish empties that table, computing balances anew), the parts'
      // key (the finish drops and builds it) and the parts' GIN, which takes the batches' rows
      // into its pending list (indexer/writer/parts-gin.ts): the finish merges it and restores its
      // definition.
      const left = (await schemaOf(bulk.db)).indexes.filter((i) => CHAIN_INDEXES.some((ix) => ix.name === i.indexname));
      expect(left.map((i) => i.indexname)).toEqual([
        'balances_recent_addr',
        'history_recent_pkey',
        'tx_parts_pkey',
        'tx_parts_spent_groups',
      ]);
      expect(left[3]!.indexdef).toContain(`WITH (fastupdate='on', gin_pending_list_limit='${PENDING_LIMIT_KB}')`);
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

  it('history_buckets fills its pages (fillfactor 100: a fold rewrites its buckets in one transaction, no HOT room to keep)', async () => {
    const opts = async (t: TestDatabase) =>
      (await sql<{ o: string[] | null }>`SELECT reloptions AS o FROM pg_class WHERE oid = 'history_buckets'::regclass`.execute(t.db))
        .rows[0]!.o;
    expect(await opts(migrated)).toEqual(['fillfactor=100']);
    expect(await opts(upgraded)).toEqual(['fillfactor=100']);
    expect(await opts(bulk)).toEqual(['fillfactor=100']);
  });

  it("an index upgraded from today's migrations has the same indexes and constraints", async () => {
    expect(await schemaOf(upgraded.db)).toEqual(await schemaOf(migrated.db));
  });

  it('the bulk finish builds the same indexes and constraints', async () => {
    expect(await schemaOf(bulk.db)).toEqual(await schemaOf(migrated.db));
  });
});

/**
 * The bulk finish builds the txs B-trees while another of its transactions builds the spends GIN
 * (bulk.ts FINISH_PARTS): a build holds a share lock on txs to its commit, and the primary key's
 * steps must not wait for it but to attach (ALTER TABLE … ADD PRIMARY KEY waits for the whole GIN
 * build). A held SHARE lock stands in for the GIN's build.
 */
describe('chain indexes: txs B-trees build beside another build of txs', () => {
  let t: TestDatabase;
  let other: pg.Client;
  let builder: pg.Client;
  beforeAll(async () => {
    t = await createMigratedDatabase('cisl');
    other = new pg.Client({ connectionString: t.url });
    builder = new pg.Client({ connectionString: t.url });
    await Promise.all([other.connect(), builder.connect()]);
  });
  afterAll(async () => {
    await Promise.all([other, builder].map((c) => c?.end().catch(() => {})));
    await t?.drop();
  });

  const underShareLock = async (statements: string[]) => {
    await builder.query(chainIndexSql('drop', ['txs']).join(';'));
    await other.query('BEGIN');
    await other.query('LOCK TABLE txs IN SHARE MODE');
    await builder.query('BEGIN');
    await builder.query("SET LOCAL lock_timeout = '500ms'");
    const done: string[] = [];
    try {
      for (const s of statements) {
        await builder.query(s);
        done.push(s);
      }
    } catch (err) {
      done.push(`failed: ${(err as Error).message}`);
    }
    await builder.query('ROLLBACK');
    await other.query('ROLLBACK');
    return done;
  };

  it('the unique index and txid_key build, only the attach waits', async () => {
    const [build, attach] = createIndexSteps(chainIndex('txs_pkey'));
    const txid = createIndexSql(chainIndex('txs_txid_key'));
    expect(await underShareLock([build!, txid, attach!])).toEqual([build, txid, 'failed: canceling statement due to lock timeout']);
    // The single statement the migrations use would wait from the start.
    expect(await underShareLock([createIndexSql(chainIndex('txs_pkey'))])).toEqual(['failed: canceling statement due to lock timeout']);
  });
});
