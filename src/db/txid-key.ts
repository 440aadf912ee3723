/**
 * Finding `txs` rows by txid: the index is a B-tree on `txid_key(txid)`, the txid's first 8
 * bytes as an int8 (migrations/0007_txid_key.ts), so every lookup names the key for the index
 * and the full txid for the row. Use these instead of `txid = …` on `txs`, which would read the
 * whole table: in the writer (indexer/writer/) and in src/db/tx-reads.ts, the only readers of
 * `txs` (every other statement asks tx-reads.ts).
 * @module
 */
import { sql, type RawBuilder } from 'kysely';

/** `column` (a txs.txid reference, e.g. `sql.ref('t.txid')`) equals the bytea `value`. */
export function txidIs(column: RawBuilder<unknown>, value: unknown): RawBuilder<boolean> {
  return txidIsKeyed(column, sql`txid_key(${value}::bytea)`, sql`${value}::bytea`);
}

/**
 * `column` equals the txid `value` whose key (`txid_key`) `key` already is: a statement sending
 * many txids sends their keys too (src/db/pg-array.ts `int8PrefixArray`), so PostgreSQL computes none.
 */
export function txidIsKeyed(column: RawBuilder<unknown>, key: RawBuilder<unknown>, value: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`(txid_key(${column}) = ${key} AND ${column} = ${value})`;
}

/** `column` is one of `values` (txids as Buffers). */
export function txidIn(column: RawBuilder<unknown>, values: readonly Uint8Array[]): RawBuilder<boolean> {
  return sql<boolean>`(txid_key(${column}) = ANY(ARRAY(SELECT txid_key(v) FROM unnest(${values}::bytea[]) AS v)) AND ${column} = ANY(${values}::bytea[]))`;
}
