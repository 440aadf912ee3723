/**
 * PURE: the block undo reads (derive.ts `UndoBlock`), rebuilt from the index's own rows when the
 * node no longer has it — a node killed before it wrote its newest block to disk forgets that
 * block on restart, and a pruned node drops old ones. The block's `txs` rows give each
 * transaction's txid, input references and output values; an output's script comes from
 * `utxos` while it is unspent, and from the block's `block_undo` row when the block itself spent
 * it (the row's second part); the prevouts' txids come from their own `txs` rows. An output in
 * neither place is one the index keeps under no key (OP_RETURN, over 10,000 bytes), as its tag
 * says: undo needs no script for it. A block without such a row (bulk-loaded, below the undo
 * window, or written before the block's own spent outputs were kept while it spends some)
 * cannot be rebuilt: undo then waits for the node.
 * @module
 */
import { decodeIns, decodeOuts, decodeOutTags, isTaggedOuts, type PackedOut } from '../../src/db/packed.js';
import { outTagOf } from '../../src/db/out-tags.js';
import type { TxOutput } from '../../src/bitcoin/tx.js';
import type { UndoBlock } from './derive.js';

/** A `txs` row of the block, in position order. */
export interface StoredBlockTx {
  readonly txNum: number;
  readonly txid: Uint8Array;
  readonly ins: Uint8Array;
  readonly outs: Uint8Array;
}

/** What the rows hold of the block's surroundings. */
export interface StoredBlockRows {
  /** The block's first tx_num. */
  readonly base: number;
  readonly txs: readonly StoredBlockTx[];
  /** The block's `block_undo` row. */
  readonly undo: Uint8Array;
  /** Scripts of the block's outputs still in `utxos`, by `${tx_num}:${vout}`. */
  readonly unspent: ReadonlyMap<string, Uint8Array>;
  /** Txids of the earlier transactions its inputs spend, by tx_num. */
  readonly prevTxids: ReadonlyMap<number, Uint8Array>;
}

/** The rows cannot give the block (the node must): why. */
export class NotRebuildableError extends Error {
  override readonly name = 'NotRebuildableError';
}

const NO_SCRIPT = new Uint8Array(0);

/**
 * The block at `rows.base` as undo reads it.
 * @throws NotRebuildableError when the rows do not hold a script undo needs.
 * @throws RangeError when the rows contradict each other (a script whose tag is not the row's).
 */
export function rebuildBlock(rows: StoredBlockRows): UndoBlock {
  const { base, txs } = rows;
  const refs = txs.map((t) => decodeIns(t.ins));
  const entries = decodeOuts(rows.undo);
  let earlier = 0;
  for (const list of refs) for (const r of list) if (Number(r.txNum) < base) earlier++;
  const own = new Map<string, PackedOut>();
  let k = earlier;
  for (const list of refs)
    for (const r of list) {
      if (Number(r.txNum) < base) continue;
      const entry = entries[k++];
      if (entry === undefined)
        throw new NotRebuildableError(`its block_undo row holds ${entries.length} outputs, not the ones it spends of its own`);
      own.set(`${r.txNum}:${r.vout}`, entry);
    }
  if (k !== entries.length) throw new RangeError(`its block_undo row holds ${entries.length} outputs, its inputs spend ${k}`);

  return {
    txs: txs.map((t, pos) => {
      const outputs: TxOutput[] = isTaggedOuts(t.outs)
        ? decodeOutTags(t.outs).map(({ value, tag }, vout) => {
            const id = `${t.txNum}:${vout}`;
            const script = rows.unspent.get(id) ?? own.get(id)?.script ?? tag.script;
            if (script === null || script === undefined) {
              if (tag.own !== null) throw new NotRebuildableError(`output ${id} is kept under a key, and no row holds its script`);
              return { value, script: NO_SCRIPT };
            }
            if (outTagOf(script).own !== tag.own) throw new RangeError(`the script of output ${id} is not the one its tag names`);
            return { value, script };
          })
        : decodeOuts(t.outs);
      const inputs = refs[pos]!.map((r) => {
        const n = Number(r.txNum);
        const prevTxid = n >= base ? txs[n - base]?.txid : rows.prevTxids.get(n);
        if (prevTxid === undefined) throw new RangeError(`input of ${t.txNum} spends ${n}, which has no txs row`);
        return { prevTxid, vout: r.vout };
      });
      return { txid: t.txid, isCoinbase: pos === 0, inputs, outputs };
    }),
  };
}
