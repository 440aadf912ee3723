/**
 * How a reader asks the confirmed balance of an address key: an address's balance is its
 * `balances` row plus the changes of the newest blocks waiting in `balances_recent`
 * (indexer/writer/balances-recent.ts: a live block writes its changes there, and the indexer adds
 * them into `balances` when it is idle, in one transaction). Every reader of a balance goes
 * through here, so that where a change waits never changes an answer. (A `balances` row alone
 * may be below zero while the block that paid the address waits in `balances_recent` and a
 * reorg took the payment back: the sum is right.)
 * @module
 */
import { sql, type RawBuilder } from 'kysely';

export type BalanceColumn = 'balance' | 'utxo_count';

/**
 * SQL text (int8): the key `key`'s confirmed balance in sats (`balance`) or count of unspent
 * outputs (`utxo_count`), 0 when it has none. `key` is SQL text naming a uuid (a column of the
 * enclosing statement, e.g. `k.addr_key`). Two correlated subqueries, each an index probe
 * (`balances_pkey`, `balances_recent_addr`), whatever the enclosing statement's shape: a grouped
 * union of the two tables joined to many keys would be planned as an aggregate of both whole
 * tables (test/integration/indexer/keyed-plans.test.ts).
 */
export function balanceOfSql(key: string, column: BalanceColumn): string {
  return `(coalesce((SELECT b.${column} FROM balances b WHERE b.addr_key = ${key}), 0)
    + coalesce((SELECT sum(r.${column}) FROM balances_recent r WHERE r.addr_key = ${key}), 0))::int8`;
}

/** `balanceOfSql` for a key given as SQL (a column reference or a bind parameter). */
export function sqlBalanceOf(key: RawBuilder<unknown>, column: BalanceColumn): RawBuilder<bigint> {
  const c = sql.raw(column);
  return sql<bigint>`(coalesce((SELECT b.${c} FROM balances b WHERE b.addr_key = ${key}::uuid), 0)
    + coalesce((SELECT sum(r.${c}) FROM balances_recent r WHERE r.addr_key = ${key}::uuid), 0))::int8`;
}

/**
 * SQL text: every address key with a confirmed balance, one row each, `balance` (int8) and
 * `utxo_count` (int4), the sums of its `balances` row and its `balances_recent` rows; an address
 * whose sums are both 0 has none, as an emptied `balances` row is deleted. For a reader of the
 * whole table (a snapshot); a reader of keys uses `balanceOfSql`.
 */
export const BALANCE_ROWS = `(SELECT addr_key, sum(balance)::int8 AS balance, sum(utxo_count)::int4 AS utxo_count
  FROM (SELECT addr_key, balance, utxo_count FROM balances UNION ALL SELECT addr_key, balance, utxo_count FROM balances_recent) br
  GROUP BY addr_key HAVING sum(balance) <> 0 OR sum(utxo_count) <> 0)`;
