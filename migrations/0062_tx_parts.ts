/**
 * The tables of the transaction parts (docs/lean-layout.md "Transaction parts: the plan"),
 * created empty: every transaction stays in `txs` until a fold moves a range of blocks' rows into
 * parts, and the readers read both (src/db/tx-reads.ts), so an index without parts answers as
 * before.
 * - `tx_parts (part → txids, ends, outs, ins, spent_groups, seen)`: up to 64 consecutive
 *   transactions of one block in a row (src/db/tx-parts.ts), fill factor 100 (a part is written
 *   once, whole); `spent_groups` the distinct spends keys of its transactions (what
 *   `txs_spent_groups` indexes per row), under a GIN index of its own (0063_tx_parts_lean
 *   indexes `spent_tx_groups(ins)` in its place).
 * - `txid_bucket_params`, one row (`base`, `ext`, `split` as `history_bucket_params`', `records`
 *   in the buckets, `fold`: whether the history fold moves transactions into parts, TX_PARTS), and `txid_buckets (bucket → log)`: 9-byte records, newest first
 *   (src/db/txid-buckets.ts), fill factor 100, `log` stored MAIN (small rows, kept in line).
 * - the format's SQL functions (`bw_txid_bucket`, `bw_txid_cut`), and the chain change trigger of
 *   0019 on both tables (a cached answer read from them is dropped when they change).
 * `down` drops them while they are empty; with parts in them it refuses (`txs` would lack their
 * transactions).
 */
import { sql, type Kysely } from 'kysely';
import { TXID_BUCKET_FUNCTIONS } from '../src/db/txid-buckets.js';

const FUNCTIONS = ['bw_txid_cut(bytea, bytea)', 'bw_txid_bucket(bytea, int4, int4, int4)'];

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE tx_parts (
      part int8 NOT NULL, txids bytea NOT NULL, ends bytea NOT NULL, outs bytea NOT NULL, ins bytea NOT NULL,
      spent_groups int8[] NOT NULL, seen bytea) WITH (fillfactor = 100)`.execute(db);
  await sql`ALTER TABLE tx_parts ADD CONSTRAINT tx_parts_pkey PRIMARY KEY (part)`.execute(db);
  await sql`CREATE INDEX tx_parts_spent_groups ON tx_parts USING gin (spent_groups)`.execute(db);
  await sql`CREATE TABLE txid_bucket_params (
      id int2 PRIMARY KEY CHECK (id = 1),
      base int2 NOT NULL CHECK (base BETWEEN 0 AND 31),
      ext int2 NOT NULL CHECK (ext >= 0 AND base + ext <= 31),
      split int4 NOT NULL CHECK (split >= 0),
      records int8 NOT NULL CHECK (records >= 0),
      fold boolean NOT NULL DEFAULT false,
      CHECK (split = 0 OR (base + ext < 31 AND split < (1::int8 << (base + ext)))))`.execute(db);
  await sql`INSERT INTO txid_bucket_params (id, base, ext, split, records) VALUES (1, 16, 0, 0, 0)`.execute(db);
  await sql`CREATE TABLE txid_buckets (bucket int4 NOT NULL, log bytea NOT NULL) WITH (fillfactor = 100)`.execute(db);
  await sql`ALTER TABLE txid_buckets ALTER COLUMN log SET STORAGE MAIN`.execute(db);
  await sql`ALTER TABLE txid_buckets ADD CONSTRAINT txid_buckets_pkey PRIMARY KEY (bucket)`.execute(db);
  for (const text of TXID_BUCKET_FUNCTIONS) await sql.raw(text).execute(db);
  for (const t of ['tx_parts', 'txid_buckets'])
    await sql
      .raw(
        `CREATE TRIGGER ${t}_chain_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${t}
      FOR EACH STATEMENT EXECUTE FUNCTION blockwire_chain_notify()`,
      )
      .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const filled = await sql<{ n: string }>`SELECT count(*) AS n FROM (SELECT 1 FROM tx_parts LIMIT 1) p`.execute(db);
  if (Number(filled.rows[0]!.n) > 0)
    throw new Error('tx_parts holds transactions that txs lacks: fold them back (an undo) or import into a new database');
  await sql`DROP TABLE txid_buckets`.execute(db);
  await sql`DROP TABLE txid_bucket_params`.execute(db);
  await sql`DROP TABLE tx_parts`.execute(db);
  for (const f of FUNCTIONS) await sql.raw(`DROP FUNCTION ${f}`).execute(db);
}
