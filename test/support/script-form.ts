/**
 * An index as releases before migration 0053_tagged_outs wrote it: every `txs.outs` in the
 * script form (src/db/packed.ts `encodeOuts`, each output's value and whole script), taken from
 * the blocks the rows were indexed from. The writer now writes the tagged form; tests of what
 * reads or upgrades the older rows build them with this.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { decodeBlock } from '../../src/bitcoin/block.js';
import { encodeOuts } from '../../src/db/packed.js';
import { txNumHeight, txNumPosition } from '../../src/db/tx-num.js';
import { txRowsFrom } from '../../src/db/tx-reads.js';

/**
 * Rewrites the outs of the `txs` rows that `which` selects (all by default) in the script form,
 * from `rawAt(height)`, the raw block each row's height holds; returns how many.
 */
export async function rewriteToScriptForm(
  db: Kysely<Database>,
  rawAt: (height: number) => Uint8Array,
  which: (txNum: bigint) => boolean = () => true,
): Promise<number> {
  const rows = await sql<{
    tx_num: string;
    txid: Buffer;
  }>`SELECT tx_num::text, txid FROM ${txRowsFrom(0n, null)} t ORDER BY tx_num`.execute(db);
  const blocks = new Map<number, ReturnType<typeof decodeBlock>>();
  const nums: string[] = [];
  const outs: Buffer[] = [];
  for (const r of rows.rows) {
    const n = BigInt(r.tx_num);
    if (!which(n)) continue;
    const height = txNumHeight(n);
    let block = blocks.get(height);
    if (!block) blocks.set(height, (block = decodeBlock(rawAt(height))));
    const tx = block.txs[txNumPosition(n)]!;
    if (!Buffer.from(tx.txid).equals(r.txid)) throw new Error(`txs row ${r.tx_num} is not the transaction of the block given`);
    nums.push(r.tx_num);
    outs.push(encodeOuts(tx.outputs));
  }
  await sql`
    UPDATE txs SET outs = r.outs FROM unnest(${nums}::int8[], ${outs}::bytea[]) AS r(tx_num, outs)
     WHERE txs.tx_num = r.tx_num`.execute(db);
  return nums.length;
}
