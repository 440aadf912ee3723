/**
 * The spends key. The GIN index behind outspends (api/queries/spends.ts) maps each group of 16
 * consecutive transactions (tx_num >> 4) to the transactions spending an output of one of them;
 * the lookup reads the spenders of T's whole group (~30 rows) and keeps the inputs naming T.
 * A row's keys are the groups of its inputs' prevouts, from one of two sources:
 * - `txs.spent_group int4`: written by the indexer (both modes: it resolves every prevout's
 *   tx_num anyway) when every input spends from one group — three transactions in four — as
 *   that group in 32 bits (height × 2^11 + position / 16), which the index expression turns
 *   back into the tx_num group with integer operators;
 * - otherwise (several groups, a row written before migration 0052, a group that does not fit)
 *   the column is null and the expression decodes `ins` in PL/pgSQL (`spent_tx_groups`,
 *   migrations/0022_spent_groups_fast.ts), as every row did before.
 * So the column costs 4 bytes (often none: the row's alignment padding) where an int8[] of the
 * groups cost ~37, and the function runs for one row in four. Null is always a correct value.
 * @module
 */
import { sql, type RawBuilder } from 'kysely';
import { TX_NUM_SPAN } from './tx-num.js';

/** Transactions per group: 2^GROUP_BITS. */
const GROUP_BITS = 4;
const GROUP = 2 ** GROUP_BITS;
/** Groups of one block in the 32-bit form: positions below 2^15 (a 4 MWU block holds fewer than 25,000 transactions). */
const SLOT_BITS = 11;
const SLOTS = 2 ** SLOT_BITS;
/** Group numbers of one block in the tx_num form: 2^20 positions / 16 = 2^BLOCK_GROUP_BITS. */
const BLOCK_GROUP_BITS = Math.log2(TX_NUM_SPAN) - GROUP_BITS;
const BLOCK_GROUPS = 2 ** BLOCK_GROUP_BITS;
/** Heights the 32-bit form holds: 2^21 (as int4, the upper half wraps to negative values). */
const HEIGHTS = 2 ** (32 - SLOT_BITS);

/** The group of a prevout's tx_num (a number: tx_nums stay below 2^53). */
export function spentGroup(txNum: number): number {
  return Math.floor(txNum / GROUP);
}

/** A group in the column's 32-bit form (a signed int4), or null when it does not fit. */
export function groupKey(group: number): number | null {
  const height = Math.floor(group / BLOCK_GROUPS);
  const slot = group - height * BLOCK_GROUPS;
  if (slot >= SLOTS || height >= HEIGHTS) return null;
  return (height * SLOTS + slot) | 0;
}

/**
 * Tracks one transaction's inputs for `txs.spent_group`: `reset` before its inputs, `add` each
 * prevout's tx_num, then `key` (no allocation: the writer's hot path).
 */
export class SpentGroupKey {
  private first = -1;
  private single = true;

  reset(): void {
    this.first = -1;
    this.single = true;
  }

  add(prevTxNum: number): void {
    const g = spentGroup(prevTxNum);
    if (this.first < 0) this.first = g;
    else if (g !== this.first) this.single = false;
  }

  /** The column's value: the one group's key, or null (no inputs, several groups, no fit). */
  key(): number | null {
    return this.first < 0 || !this.single ? null : groupKey(this.first);
  }
}

/**
 * SQL: the spends keys of the `txs` row `alias` (the index expression: the lookup must write it
 * the same way for the planner to use the index). Without an alias, the bare expression of the
 * index definition.
 */
export function spendsKeysSql(alias?: string): string {
  const c = (name: string) => (alias ? `${alias}.${name}` : name);
  const g = c('spent_group');
  return (
    `(CASE WHEN ${g} IS NULL THEN spent_tx_groups(${c('ins')}) ` +
    `ELSE ARRAY[(((${g}::int8 & 4294967295) >> ${SLOT_BITS}) << ${BLOCK_GROUP_BITS}) | (${g} & ${SLOTS - 1})] END)`
  );
}

/** SQL: the group of the tx_num in column `ref` (e.g. `t.tx_num`), as the keys hold it. */
export function sqlSpentGroupOf(ref: string): RawBuilder<string> {
  return sql<string>`(${sql.ref(ref)} >> ${sql.raw(String(GROUP_BITS))})`;
}
