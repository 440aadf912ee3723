/**
 * Mainnet block 866342 (4,864 transactions, 7,972 inputs) with the outputs its inputs spent, in
 * input order (the fixtures' Floresta spent_utxos). Each previous transaction gets a tx_num
 * below the block: in its creation height's block, numbered in the order this block first names
 * it (one spending an earlier transaction of the block gets one too, which no lookup reads: the
 * derivation resolves in-block spends from the block). Read by the derive tests and
 * bench/live-derive.
 */
import { readFileSync } from 'node:fs';
import { decodeBlock, type DecodedBlock } from '../../src/bitcoin/block.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { txNumOf } from '../../src/db/tx-num.js';
import { fixturePath } from './fixtures.js';

export const MAINNET_BLOCK_HEIGHT = 866342;

/** One input of the block with the output it spends. */
export interface SpentInput {
  /** The spending transaction's position in the block. */
  readonly pos: number;
  readonly prevTxid: Uint8Array;
  readonly vout: number;
  readonly txNum: number;
  readonly value: bigint;
  readonly script: Uint8Array;
}

type Spent = { txout: { value: number; script_pubkey: string }; creation_height: number };

/** The block and every non-coinbase input's spent output, in block order. */
export function loadMainnetBlock(): { block: DecodedBlock; inputs: SpentInput[] } {
  const h = MAINNET_BLOCK_HEIGHT;
  const block = decodeBlock(new Uint8Array(readFileSync(fixturePath('mainnet', 'blocks', `mainnet_h${h}.raw`))));
  const spent = JSON.parse(readFileSync(fixturePath('mainnet', 'blocks', `mainnet_h${h}.spent_utxos.json`), 'utf8')) as Spent[];
  const prevTxNum = new Map<string, number>();
  const perHeight = new Map<number, number>();
  const inputs: SpentInput[] = [];
  block.txs.forEach((tx, pos) => {
    if (pos === 0) return;
    for (const input of tx.inputs) {
      const s = spent[inputs.length];
      if (s === undefined) throw new Error(`spent_utxos of block ${h} ends before its inputs do`);
      const id = hashToHex(input.prevTxid);
      let n = prevTxNum.get(id);
      if (n === undefined) {
        const at = perHeight.get(s.creation_height) ?? 0;
        perHeight.set(s.creation_height, at + 1);
        n = txNumOf(s.creation_height - 1, at);
        prevTxNum.set(id, n);
      }
      inputs.push({
        pos,
        prevTxid: input.prevTxid,
        vout: input.vout,
        txNum: n,
        value: BigInt(s.txout.value),
        script: new Uint8Array(Buffer.from(s.txout.script_pubkey, 'hex')),
      });
    }
  });
  if (inputs.length !== spent.length)
    throw new Error(`spent_utxos of block ${h} holds ${spent.length} outputs, its inputs ${inputs.length}`);
  return { block, inputs };
}
