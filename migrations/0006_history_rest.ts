/**
 * `history` without the columns it can derive: a chunk is `(addr_key, first_tx_num, rest)`,
 * where `rest` holds the entries after the first (8-byte big-endian tx_nums, ascending). The
 * first entry is `first_tx_num` itself, the count and the last entry follow from `rest`. 16
 * bytes less per row (~13 % of the table, the index's largest after `txs`; docs/schema.md).
 * The table is rebuilt rather than altered so that no dropped column stays behind in its rows.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE history_rest (
      addr_key     uuid NOT NULL,
      first_tx_num int8 NOT NULL,
      rest         bytea NOT NULL
    );
    INSERT INTO history_rest SELECT addr_key, first_tx_num, substring(entries FROM 9) FROM history ORDER BY addr_key, first_tx_num;
    DROP TABLE history;
    ALTER TABLE history_rest RENAME TO history;
    ALTER TABLE history ADD CONSTRAINT history_pkey PRIMARY KEY (addr_key, first_tx_num);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE history_full (
      addr_key     uuid NOT NULL,
      first_tx_num int8 NOT NULL,
      last_tx_num  int8 NOT NULL,
      n            int4 NOT NULL,
      entries      bytea NOT NULL
    );
    INSERT INTO history_full
      SELECT addr_key, first_tx_num,
             CASE WHEN length(rest) = 0 THEN first_tx_num ELSE ('x' || encode(substring(rest FROM length(rest) - 7), 'hex'))::bit(64)::int8 END,
             1 + length(rest) / 8, int8send(first_tx_num) || rest
      FROM history ORDER BY addr_key, first_tx_num;
    DROP TABLE history;
    ALTER TABLE history_full RENAME TO history;
    ALTER TABLE history ADD CONSTRAINT history_pkey PRIMARY KEY (addr_key, first_tx_num);
  `.execute(db);
}
