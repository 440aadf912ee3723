/**
 * Block assembly as Core's BlockAssembler + generatetoaddress do it on regtest: mempool packages
 * by ancestor feerate (above the 1 sat/kvB block minimum), a coinbase paying subsidy plus fees
 * with the BIP34 height and witness commitment, time max(MTP + 1, now), and a nonce ground until
 * the header meets the regtest target.
 * @module
 */
import { decodeBlock, type DecodedBlock } from '../src/bitcoin/block.js';
import { hexToHash } from '../src/bitcoin/hash.js';
import { merkleRoot } from '../src/bitcoin/merkle.js';
import { decodeTx, type DecodedTx } from '../src/bitcoin/tx.js';
import { compactSizeBytes, writeCompactSize } from '../src/bitcoin/wire.js';
import { outpointKey, prevTxidOf, txidOf, type BlockEntry } from './chain.js';
import { blockSubsidy, buildCoinbase, grindHeader, REGTEST } from './consensus.js';
import type { Node } from './node.js';

export type BlockTemplateOptions = {
  /** Output script the coinbase pays. */
  payoutScript: Uint8Array;
  /** Transactions to include, in this order (generateblock). */
  txs?: DecodedTx[];
  /** Fill the block from the mempool (generatetoaddress); only when mining on the tip. */
  useMempool: boolean;
  /** Parent block (default: the tip). */
  parent?: BlockEntry;
  /** Header time (default: max(MTP + 1, now)). */
  time?: number;
};

/** Weight Core keeps free for the coinbase (DEFAULT_BLOCK_RESERVED_WEIGHT). */
const RESERVED_WEIGHT = 8000;
/** -blockmintxfee: 1 sat/kvB since Core 30. */
const BLOCK_MIN_FEE_PER_KVB = 1n;

/** Mempool transactions in ancestor-feerate package order (BlockAssembler::addPackageTxs). */
function selectFromMempool(node: Node): DecodedTx[] {
  const mp = node.mempool;
  const chosen = new Set<string>();
  const out: DecodedTx[] = [];
  let weight = RESERVED_WEIGHT;
  const skipped = new Set<string>();
  for (;;) {
    let best: { pkg: string[]; fee: bigint; vsize: number; weight: number } | null = null;
    for (const e of mp.all()) {
      if (chosen.has(e.txid) || skipped.has(e.txid)) continue;
      const pkg = [...mp.ancestors(e.txid)].filter((a) => !chosen.has(a));
      pkg.push(e.txid);
      let fee = 0n;
      let vsize = 0;
      let w = 0;
      for (const t of pkg) {
        const x = mp.get(t)!;
        fee += x.fee;
        vsize += x.vsize;
        w += x.weight;
      }
      if (fee * 1000n < BLOCK_MIN_FEE_PER_KVB * BigInt(vsize)) continue;
      if (weight + w > REGTEST.maxBlockWeight) {
        skipped.add(e.txid);
        continue;
      }
      if (!best || fee * BigInt(best.vsize) > best.fee * BigInt(vsize)) best = { pkg, fee, vsize, weight: w };
    }
    if (!best) break;
    for (const t of mp.topological(best.pkg)) {
      chosen.add(t);
      out.push(mp.get(t)!.tx);
    }
    weight += best.weight;
  }
  return out;
}

/** Fees the given transactions pay, where their inputs can be found (0 for those that cannot). */
function feesOf(node: Node, txs: DecodedTx[]): bigint {
  const inBlock = new Map<string, bigint>();
  let total = 0n;
  for (const tx of txs) {
    const entry = node.mempool.get(txidOf(tx));
    if (entry) total += entry.fee;
    else {
      let valueIn = 0n;
      let known = true;
      for (let i = 0; i < tx.inputs.length && known; i++) {
        const key = outpointKey(prevTxidOf(tx, i), tx.inputs[i]!.vout);
        const v = inBlock.get(key) ?? node.chain.utxo.get(key)?.value;
        if (v === undefined) known = false;
        else valueIn += v;
      }
      const valueOut = tx.outputs.reduce((s, o) => s + o.value, 0n);
      if (known && valueIn >= valueOut) total += valueIn - valueOut;
    }
    tx.outputs.forEach((o, v) => inBlock.set(outpointKey(txidOf(tx), v), o.value));
  }
  return total;
}

/** Assembles and grinds a block; the caller submits it (node.processBlock). */
export function assembleBlock(node: Node, opts: BlockTemplateOptions): DecodedBlock {
  const parent = opts.parent ?? node.chain.tip();
  const height = parent.height + 1;
  const txs = [...(opts.txs ?? [])];
  if (opts.useMempool && parent === node.chain.tip()) {
    const have = new Set(txs.map(txidOf));
    for (const t of selectFromMempool(node)) if (!have.has(txidOf(t))) txs.push(t);
  }
  const witnessRoot = merkleRoot([new Uint8Array(32), ...txs.map((t) => t.wtxid)]);
  const coinbaseRaw = buildCoinbase(height, opts.payoutScript, blockSubsidy(height) + feesOf(node, txs), witnessRoot);
  const coinbase = decodeTx(coinbaseRaw);
  const root = merkleRoot([coinbase.txid, ...txs.map((t) => t.txid)]);
  const time = opts.time ?? Math.max(parent.mtp + 1, node.now());
  const { header } = grindHeader({
    version: REGTEST.blockVersion,
    prevHash: hexToHash(parent.hash),
    merkleRoot: root,
    time,
    bits: REGTEST.bits,
    nonce: 0,
  });
  const all = [coinbase, ...txs];
  const size = 80 + compactSizeBytes(all.length) + all.reduce((s, t) => s + t.size, 0);
  const raw = new Uint8Array(size);
  raw.set(header, 0);
  let p = writeCompactSize(raw, 80, all.length);
  for (const t of all) {
    raw.set(t.bytes, p);
    p += t.size;
  }
  return decodeBlock(raw);
}
