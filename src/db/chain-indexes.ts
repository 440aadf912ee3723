/**
 * The keys and indexes of the chain tables that a bulk sync drops and rebuilds: one definition
 * each, used by the migration that brings an existing index to it (migrations/0009_utxos_tx_num.ts)
 * and by the bulk sync (indexer/writer/bulk.ts: dropped at its beginning, built by its finish).
 * test/integration/db/chain-indexes.test.ts compares what the bulk finish builds with what the
 * migrations leave (pg_indexes, pg_constraint). Changing a definition here needs a migration
 * that moves existing indexes to it.
 *
 * Fill factors: `txs` and `utxos` are keyed by tx_num, chain order, so their primary keys only
 * grow at their right edge (undo re-inserts the few outputs a block spent) and are kept full: the
 * per-block path appends to the rightmost page, which splits without leaving room behind.
 * Random-key B-trees (utxos_addr, history, balances, txs_txid_key: txids are random) keep the
 * default 90: a full one would split nearly every page within days of live blocks.
 * @module
 */

import { spendsKeysSql } from './spent-groups.js';

export type ChainTable = 'txs' | 'tx_parts' | 'utxos' | 'history' | 'history_recent' | 'balances' | 'balances_recent' | 'script_aliases';

export interface ChainIndex {
  readonly table: ChainTable;
  readonly name: string;
  /** A primary key's columns, e.g. `(tx_num, vout)`. */
  readonly primaryKey?: string;
  /** An index's method and key, e.g. `USING gin (...)` or `(addr_key, tx_num DESC)`. */
  readonly index?: string;
  /** Storage parameters, e.g. `fillfactor = 100`. */
  readonly with?: string;
  /** A partial index's predicate. */
  readonly where?: string;
}

export const CHAIN_INDEXES: readonly ChainIndex[] = [
  { table: 'txs', name: 'txs_pkey', primaryKey: '(tx_num)', with: 'fillfactor = 100' },
  // A B-tree on the txid's first 8 bytes (migrations/0007_txid_key.ts, src/db/txid-key.ts).
  { table: 'txs', name: 'txs_txid_key', index: '(txid_key(txid))' },
  // Who spent what (migrations/0052_spent_group_column.ts): a GIN over the groups of the
  // prevouts, from txs.spent_group where the writer could fill it, else decoded from the inputs
  // (src/db/spent-groups.ts); the slowest build of the bulk finish (one core). docs/sync.md "Size".
  {
    table: 'txs',
    name: 'txs_spent_groups',
    index: `USING gin (${spendsKeysSql()})`,
    with: 'fastupdate = on, gin_pending_list_limit = 1024',
    where: 'length(ins) > 0',
  },
  // The transactions kept in parts (migrations/0062_tx_parts.ts), and who spent what among them:
  // the groups a part's `ins` (its transactions' input references, back to back) spend from
  // (0063_tx_parts_lean). Built after the bulk finish has folded its rows into parts.
  { table: 'tx_parts', name: 'tx_parts_pkey', primaryKey: '(part)' },
  { table: 'tx_parts', name: 'tx_parts_spent_groups', index: 'USING gin (spent_tx_groups(ins))' },
  { table: 'utxos', name: 'utxos_pkey', primaryKey: '(tx_num, vout)', with: 'fillfactor = 100' },
  { table: 'utxos', name: 'utxos_addr', index: '(addr_key, tx_num DESC, vout DESC)', where: 'addr_key IS NOT NULL' },
  { table: 'history', name: 'history_pkey', primaryKey: '(addr_key, first_tx_num)' },
  // The newest blocks' chunk rows (migrations/0064_history_recent.ts): the same key. A bulk sync
  // moves them into `history` and keeps this one (the table is empty while it runs).
  { table: 'history_recent', name: 'history_recent_pkey', primaryKey: '(addr_key, first_tx_num)' },
  { table: 'balances', name: 'balances_pkey', primaryKey: '(addr_key)' },
  // The newest blocks' balance changes (migrations/0065_balances_recent.ts): an address's rows,
  // for the readers. Not unique (a row per block). A bulk sync keeps it (the table is empty after
  // its finish).
  { table: 'balances_recent', name: 'balances_recent_addr', index: '(addr_key)' },
  { table: 'script_aliases', name: 'script_aliases_pkey', primaryKey: '(script_key)' },
];

/** The definition named `name`. */
export function chainIndex(name: string): ChainIndex {
  const ix = CHAIN_INDEXES.find((i) => i.name === name);
  if (!ix) throw new Error(`no chain index ${name}`);
  return ix;
}

const withClause = (ix: ChainIndex): string => (ix.with ? ` WITH (${ix.with})` : '');

/** The statement that builds `ix`. */
export function createIndexSql(ix: ChainIndex): string {
  const withPart = withClause(ix);
  if (ix.primaryKey) return `ALTER TABLE ${ix.table} ADD CONSTRAINT ${ix.name} PRIMARY KEY ${ix.primaryKey}${withPart}`;
  return `CREATE INDEX ${ix.name} ON ${ix.table} ${ix.index}${withPart}${ix.where ? ` WHERE ${ix.where}` : ''}`;
}

/**
 * The statements that build `ix` under a share lock on its table, so that other indexes of the
 * table can build at the same time in other transactions (the bulk finish): a primary key as its
 * unique index first, then attached as the constraint (`USING INDEX`: the same index and
 * constraint as `createIndexSql` gives; the attach takes the exclusive lock, for an instant, once
 * the other builds have committed). Other indexes: `createIndexSql`.
 */
export function createIndexSteps(ix: ChainIndex): string[] {
  if (!ix.primaryKey) return [createIndexSql(ix)];
  return [
    `CREATE UNIQUE INDEX ${ix.name} ON ${ix.table} ${ix.primaryKey}${withClause(ix)}`,
    `ALTER TABLE ${ix.table} ADD CONSTRAINT ${ix.name} PRIMARY KEY USING INDEX ${ix.name}`,
  ];
}

/** The statement that drops `ix` if it exists. */
export function dropIndexSql(ix: ChainIndex): string {
  return ix.primaryKey ? `ALTER TABLE ${ix.table} DROP CONSTRAINT IF EXISTS ${ix.name}` : `DROP INDEX IF EXISTS ${ix.name}`;
}

/** The statements that build, or drop, every chain index of `tables`, in definition order. */
export function chainIndexSql(kind: 'create' | 'drop', tables: readonly ChainTable[]): string[] {
  return CHAIN_INDEXES.filter((ix) => tables.includes(ix.table)).map(kind === 'create' ? createIndexSql : dropIndexSql);
}
