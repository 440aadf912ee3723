/**
 * Finding `txs` rows by txid: the index is a B-tree on `txid_key(txid)`, the txid's first 8
 * bytes as an int8 (migrations/0007_txid_key.ts), so every lookup names the key for the index
 * and the full txid for the row. Use these instead of `txid = …` on `txs`, which would read the
 * whole table.
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

/**
 * The confirmed unspent output `(txid, vout)` as a subquery over `utxos` (its columns): `utxos`
 * is keyed by `(tx_num, vout)` (migrations/0009_utxos_tx_num.ts), so the txid is first turned
 * into its tx_num through `txs`. Two txs rows share a txid only for BIP30's duplicate coinbases,
 * and then at most one of them still has the output. Join it `LATERAL (…) u ON true`, or test it
 * with `EXISTS (…)`.
 */
export function unspentAt(txid: RawBuilder<unknown>, vout: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`SELECT u.* FROM txs t JOIN utxos u ON u.tx_num = t.tx_num AND u.vout = ${vout} WHERE ${txidIs(sql.ref('t.txid'), txid)}`;
}
