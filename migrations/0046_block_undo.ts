/**
 * The undo store: per block of the newest INDEXER_UNDO_BLOCKS, the outputs of earlier blocks it
 * spent (value and script, packed as `txs.outs` is: src/db/packed.ts), in input order, then the
 * outputs of the block itself that it spent, in input order (what undo reads when the node no
 * longer has the block; rows this migration wrote before it kept those hold the first part). The
 * per-block apply writes a block's row in its transaction and deletes the rows that fall out of
 * the window; undo restores the spent outputs from it instead of decoding each prevout's
 * transaction in `txs`. A block without a row (loaded by the bulk path, or deeper than the
 * window) is undone from the prevouts' `txs.outs` as before.
 *
 * An existing index gets the rows of its newest UNDO_BLOCKS_MIN blocks here, from the outs of
 * the transactions they spent (the rows the per-block apply would have written); a larger
 * window fills as blocks are applied.
 */
import { sql, type Kysely } from 'kysely';
import { UNDO_BLOCKS_MIN } from '../src/config.js';
import { decodeIns, decodeOuts, encodeOuts, type PackedOut } from '../src/db/packed.js';
import { firstTxNum } from '../src/db/tx-num.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE block_undo (height int4 PRIMARY KEY, spent bytea NOT NULL)`.execute(db);
  // An index in the middle of a bulk sync has no keys on txs to look prevouts up with: its
  // newest blocks are bulk-loaded, undone from txs like every block without a row.
  const bulk = await sql<{
    active: boolean | null;
  }>`SELECT (value->>'active')::boolean AS active FROM sync_state WHERE key = 'bulk'`.execute(db);
  if (bulk.rows[0]?.active === true) return;
  const tip = (await sql<{ height: number }>`SELECT height FROM chain_tip WHERE id = 1`.execute(db)).rows[0]?.height ?? -1;
  for (let h = Math.max(0, tip - UNDO_BLOCKS_MIN + 1); h <= tip; h++) await fillUndo(db, h);
}

/** Writes the `block_undo` row of the block at `height` from the stored transactions it spent. */
async function fillUndo(db: Kysely<unknown>, height: number): Promise<void> {
  const lo = firstTxNum(height);
  const txs = await sql<{ ins: Buffer }>`
    SELECT ins FROM txs WHERE tx_num >= ${lo.toString()}::int8 AND tx_num < ${firstTxNum(height + 1).toString()}::int8 ORDER BY tx_num`.execute(
    db,
  );
  const all = txs.rows.flatMap((t) => decodeIns(t.ins));
  const refs = [...all.filter((r) => r.txNum < lo), ...all.filter((r) => r.txNum >= lo)];
  const prev = await sql<{ tx_num: bigint; outs: Buffer }>`
    SELECT tx_num, outs FROM txs WHERE tx_num = ANY(${[...new Set(refs.map((r) => r.txNum.toString()))]}::int8[])`.execute(db);
  const outs = new Map(prev.rows.map((r) => [BigInt(r.tx_num), decodeOuts(r.outs)]));
  const spent: PackedOut[] = refs.map((r) => {
    const out = outs.get(r.txNum)?.[r.vout];
    if (out === undefined) throw new Error(`block ${height} spends ${r.txNum}:${r.vout}, which the index does not hold`);
    return out;
  });
  await sql`INSERT INTO block_undo (height, spent) VALUES (${height}, ${encodeOuts(spent)})`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE block_undo`.execute(db);
}
