/**
 * The history buckets' tables (docs/lean-layout.md "Building the history buckets: the plan"),
 * created empty, with `busy` 0: the readers read them beside `history` (src/db/history-reads.ts)
 * and the per-block writer (indexer/writer/history-rows.ts) keeps an address in its bucket only
 * while it has at most `busy` entries, so at 0 every address's history stays in `history` and
 * every answer is what it was. The build that fills them (and sets `busy`) comes with the bulk
 * path's share.
 * - `history_bucket_params`, one row: `base` bits of the key's bytes 0..3 and `ext` of its bytes
 *   4..7 name a bucket (`split` buckets are split to `ext + 1`: linear hashing), `busy` is the
 *   entry count above which an address keeps its history in `history` chunk rows (0: all of them), `records` the
 *   records in the buckets. A table rather than a `sync_state` key: a reader joins it in the
 *   statement that reads the buckets, so it never combines the bits of one state with the rows of
 *   another. `base` 16 for an index begun on the per-block path; a bulk finish into an empty
 *   table chooses its own.
 * - `history_buckets (bucket → log)`: 13-byte records, newest first (src/db/history-buckets.ts),
 *   fill factor 70 so that a block's prepend stays on its page (HOT), `log` stored MAIN (set
 *   before any row is written: compressed in place before it goes out of line).
 * - the format's SQL functions (`bw_hist_bucket`, `bw_hist_tx`, `bw_hist_cut`), and the chain
 *   change trigger of 0019 on the buckets (a held history page is read from them too).
 * `down` drops them while the buckets are empty; with records in them it refuses: records keep
 * 8 of the key's 16 bytes, so `history` cannot be rebuilt from them (`blockwire import` into a
 * new database instead).
 */
import { sql, type Kysely } from 'kysely';
import { HISTORY_BUCKET_FUNCTIONS } from '../src/db/history-buckets.js';

const FUNCTIONS = [
  'bw_hist_cut(bytea, bytea)',
  'bw_hist_tx(int8)',
  'bw_hist_bucket(uuid, int4, int4, int4)',
  'bw_hist_bucket_at(bytea, int4, int4)',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE history_bucket_params (
      id int2 PRIMARY KEY CHECK (id = 1),
      base int2 NOT NULL CHECK (base BETWEEN 0 AND 31),
      ext int2 NOT NULL CHECK (ext >= 0 AND base + ext <= 31),
      split int4 NOT NULL CHECK (split >= 0),
      busy int4 NOT NULL CHECK (busy >= 0),
      records int8 NOT NULL CHECK (records >= 0),
      -- (a bucket below split is looked up with ext + 1 bits: they must fit an int4 id)
      CHECK (split = 0 OR (base + ext < 31 AND split < (1::int8 << (base + ext)))))`.execute(db);
  await sql`INSERT INTO history_bucket_params (id, base, ext, split, busy, records) VALUES (1, 16, 0, 0, 0, 0)`.execute(db);
  await sql`CREATE TABLE history_buckets (bucket int4 NOT NULL, log bytea NOT NULL) WITH (fillfactor = 70)`.execute(db);
  await sql`ALTER TABLE history_buckets ALTER COLUMN log SET STORAGE MAIN`.execute(db);
  await sql`ALTER TABLE history_buckets ADD CONSTRAINT history_buckets_pkey PRIMARY KEY (bucket)`.execute(db);
  for (const text of HISTORY_BUCKET_FUNCTIONS) await sql.raw(text).execute(db);
  await sql`CREATE TRIGGER history_buckets_chain_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON history_buckets
      FOR EACH STATEMENT EXECUTE FUNCTION blockwire_chain_notify()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const filled = await sql<{ n: string }>`SELECT count(*) AS n FROM (SELECT 1 FROM history_buckets LIMIT 1) b`.execute(db);
  if (Number(filled.rows[0]!.n) > 0)
    throw new Error(
      "history_buckets holds records: they keep 8 of each key's 16 bytes, so history cannot be rebuilt from them; import into a new database instead",
    );
  await sql`DROP TABLE history_buckets`.execute(db);
  await sql`DROP TABLE history_bucket_params`.execute(db);
  for (const f of FUNCTIONS) await sql.raw(`DROP FUNCTION ${f}`).execute(db);
}
