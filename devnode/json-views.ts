/**
 * Core's JSON views, field for field and in Core's key order: ScriptToUniv, TxToUniv (with
 * prevouts and fee from undo data), blockheaderToJSON, blockToJSON (verbosity 1–3),
 * getblockchaininfo, mempool entries and getmempoolinfo. Amounts are `Amount`s, written by
 * core-json.ts as Core does.
 * @module
 */
import { bytesToHex, hashToHex } from '../src/bitcoin/hash.js';
import type { DecodedTx } from '../src/bitcoin/tx.js';
import { scriptToAddress } from './address.js';
import { txidOf, wtxidOf, type BlockEntry, type Coin } from './chain.js';
import { chainworkHex, difficulty, targetHex } from './consensus.js';
import { amount } from './core-json.js';
import { inferDescriptor } from './descriptor.js';
import type { MempoolEntry } from './mempool.js';
import { signalsRbf } from './mempool-accept.js';
import type { Node } from './node.js';
import { POLICY } from './policy.js';
import { scriptToAsm } from './script.js';
import { classifyScript } from '../src/bitcoin/script.js';

/** ScriptToUniv(script, include_hex = true, include_address = true). */
export function scriptPubKeyJson(script: Uint8Array): Record<string, unknown> {
  const address = scriptToAddress(script);
  return {
    asm: scriptToAsm(script),
    desc: inferDescriptor(script),
    hex: bytesToHex(script),
    ...(address !== null ? { address } : {}),
    type: classifyScript(script),
  };
}

export type TxJsonOptions = {
  /** Spent coins (undo data): adds `fee`, and `prevout` per input when `prevouts` is true. */
  undo?: Coin[] | null;
  prevouts?: boolean;
  includeHex?: boolean;
  blockHash?: string;
};

/** TxToUniv. */
export function txJson(tx: DecodedTx, opts: TxJsonOptions = {}): Record<string, unknown> {
  const undo = opts.undo ?? null;
  const vin = tx.inputs.map((input, i) => {
    const o: Record<string, unknown> = {};
    if (tx.isCoinbase) {
      o.coinbase = bytesToHex(input.scriptSig);
    } else {
      o.txid = hashToHex(input.prevTxid);
      o.vout = input.vout;
      o.scriptSig = { asm: scriptToAsm(input.scriptSig, true), hex: bytesToHex(input.scriptSig) };
    }
    if (input.witness.length > 0) o.txinwitness = input.witness.map(bytesToHex);
    if (undo && opts.prevouts && !tx.isCoinbase) {
      const c = undo[i]!;
      o.prevout = { generated: c.coinbase, height: c.height, value: amount(c.value), scriptPubKey: scriptPubKeyJson(c.script) };
    }
    o.sequence = input.sequence;
    return o;
  });
  const vout = tx.outputs.map((out, n) => ({ value: amount(out.value), n, scriptPubKey: scriptPubKeyJson(out.script) }));
  const o: Record<string, unknown> = {
    txid: txidOf(tx),
    hash: wtxidOf(tx),
    version: tx.version,
    size: tx.size,
    vsize: tx.vsize,
    weight: tx.weight,
    locktime: tx.locktime,
    vin,
    vout,
  };
  if (undo && !tx.isCoinbase) {
    const valueIn = undo.reduce((s, c) => s + c.value, 0n);
    o.fee = amount(valueIn - tx.outputs.reduce((s, x) => s + x.value, 0n));
  }
  if (opts.blockHash) o.blockhash = opts.blockHash;
  if (opts.includeHex !== false) o.hex = bytesToHex(tx.bytes);
  return o;
}

/** blockheaderToJSON. */
export function headerJson(node: Node, e: BlockEntry): Record<string, unknown> {
  const chain = node.chain;
  const inChain = chain.contains(e);
  const h = e.block.header;
  const next = inChain ? chain.active[e.height + 1] : undefined;
  return {
    hash: e.hash,
    confirmations: inChain ? chain.height() - e.height + 1 : -1,
    height: e.height,
    version: h.version,
    versionHex: (h.version >>> 0).toString(16).padStart(8, '0'),
    merkleroot: hashToHex(h.merkleRoot),
    time: h.time,
    mediantime: e.mtp,
    nonce: h.nonce,
    bits: (h.bits >>> 0).toString(16).padStart(8, '0'),
    target: targetHex(h.bits),
    difficulty: difficulty(h.bits),
    chainwork: chainworkHex(e.chainwork),
    nTx: e.block.txs.length,
    ...(e.prev ? { previousblockhash: e.prev.hash } : {}),
    ...(next ? { nextblockhash: next.hash } : {}),
  };
}

/** blockToJSON: verbosity 1 (txids), 2 (transactions), 3 (with prevouts). */
export function blockJson(node: Node, e: BlockEntry, verbosity: 1 | 2 | 3): Record<string, unknown> {
  const b = e.block;
  const undo = e.undo;
  const tx =
    verbosity === 1
      ? b.txs.map(txidOf)
      : b.txs.map((t, i) => txJson(t, { undo: i > 0 && undo ? undo[i - 1] : null, prevouts: verbosity === 3 }));
  return { ...headerJson(node, e), strippedsize: b.strippedSize, size: b.size, weight: b.weight, tx };
}

/** size_on_disk: block data as stored in blk files (8-byte framing each). */
function sizeOnDisk(node: Node): number {
  let n = 0;
  for (const b of node.chain.blocks.values()) n += b.block.size + 8;
  return n;
}

/** GuessVerificationProgress as regtest shows it: 1 once out of IBD. */
function verificationProgress(node: Node): number {
  if (!node.isInitialBlockDownload()) return 1;
  const tip = node.chain.tip();
  const age = Math.max(0, node.now() - tip.block.header.time);
  return tip.chainTx / (tip.chainTx + age / 1000);
}

/** getblockchaininfo. */
export function chainInfoJson(node: Node): Record<string, unknown> {
  const tip = node.chain.tip();
  const h = tip.block.header;
  return {
    chain: 'regtest',
    blocks: tip.height,
    headers: maxHeaderHeight(node),
    bestblockhash: tip.hash,
    bits: (h.bits >>> 0).toString(16).padStart(8, '0'),
    target: targetHex(h.bits),
    difficulty: difficulty(h.bits),
    time: h.time,
    mediantime: tip.mtp,
    verificationprogress: verificationProgress(node),
    initialblockdownload: node.isInitialBlockDownload(),
    chainwork: chainworkHex(tip.chainwork),
    size_on_disk: sizeOnDisk(node),
    pruned: false,
    warnings: [],
  };
}

/** Height of the best valid header (m_best_header): the active tip unless a valid fork is longer. */
function maxHeaderHeight(node: Node): number {
  let best = node.chain.tip();
  for (const b of node.chain.leaves) if (b.failed === 'no' && b.chainwork > best.chainwork) best = b;
  return best.height;
}

/** entryToJSON (getrawmempool verbose, getmempoolentry, REST mempool contents). */
export function mempoolEntryJson(node: Node, e: MempoolEntry): Record<string, unknown> {
  const mp = node.mempool;
  const anc = [...mp.ancestors(e.txid)].map((t) => mp.get(t)!);
  const desc = [...mp.descendants(e.txid)].map((t) => mp.get(t)!);
  const sum = (xs: MempoolEntry[], f: (x: MempoolEntry) => bigint) => xs.reduce((s, x) => s + f(x), 0n);
  return {
    vsize: e.vsize,
    weight: e.weight,
    time: e.time,
    height: e.height,
    descendantcount: desc.length + 1,
    descendantsize: desc.reduce((s, x) => s + x.vsize, e.vsize),
    ancestorcount: anc.length + 1,
    ancestorsize: anc.reduce((s, x) => s + x.vsize, e.vsize),
    wtxid: e.wtxid,
    fees: {
      base: amount(e.fee),
      modified: amount(e.fee),
      ancestor: amount(sum(anc, (x) => x.fee) + e.fee),
      descendant: amount(sum(desc, (x) => x.fee) + e.fee),
    },
    depends: [...e.parents],
    spentby: [...e.children],
    'bip125-replaceable': signalsRbf(mp, e.tx),
    unbroadcast: e.unbroadcast,
  };
}

/** getrawmempool / REST contents: verbose map, txid list, or txids with mempool_sequence. */
export function mempoolJson(node: Node, verbose: boolean, withSequence: boolean): unknown {
  const entries = node.mempool.all();
  if (verbose) {
    const o: Record<string, unknown> = {};
    for (const e of entries) o[e.txid] = mempoolEntryJson(node, e);
    return o;
  }
  const txids = entries.map((e) => e.txid);
  if (!withSequence) return txids;
  return { txids, mempool_sequence: Number(node.mempool.sequence) };
}

/** Core's rough DynamicMemoryUsage of the mempool (the `usage` field; a value, not a contract). */
function mempoolUsage(node: Node): number {
  let n = 0;
  for (const e of node.mempool.all()) n += 640 + e.tx.size * 2 + e.tx.inputs.length * 96 + e.tx.outputs.length * 64;
  return n;
}

/** getmempoolinfo / REST mempool info. */
export function mempoolInfoJson(node: Node): Record<string, unknown> {
  const entries = node.mempool.all();
  return {
    loaded: true,
    size: entries.length,
    bytes: entries.reduce((s, e) => s + e.vsize, 0),
    usage: mempoolUsage(node),
    total_fee: amount(entries.reduce((s, e) => s + e.fee, 0n)),
    maxmempool: 300_000_000,
    mempoolminfee: amount(POLICY.minRelayFeePerKvB),
    minrelaytxfee: amount(POLICY.minRelayFeePerKvB),
    incrementalrelayfee: amount(POLICY.incrementalRelayFeePerKvB),
    unbroadcastcount: entries.filter((e) => e.unbroadcast).length,
    fullrbf: true,
    permitbaremultisig: true,
    maxdatacarriersize: POLICY.maxDataCarrierBytes,
  };
}
