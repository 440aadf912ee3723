/**
 * Esplora's JSON shapes (Blockstream's esplora API.md, the key order of Blockstream's electrs
 * structs): the transaction (`txid, version, locktime, vin, vout, size, weight, fee, status`) built
 * from its serialized bytes and the outputs its inputs spend, the confirmation status, the block
 * (`id, height, version, timestamp, tx_count, size, weight, merkle_root, previousblockhash,
 * mediantime, nonce, bits, difficulty`), a block's status, an unspent output, an output's spend,
 * and an address's or script's statistics. Amounts are integers in satoshis.
 * @module
 */
import { bitsToDifficulty, decodeHeader } from '../../src/bitcoin/block.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import type { DecodedTx } from '../../src/bitcoin/tx.js';
import type { NetworkName } from '../../src/config.js';
import type { BlockHeaderRow } from '../queries/blocks.js';
import type { TxoStats } from '../queries/address-stats.js';
import type { Spend } from '../queries/spends.js';
import { innerScripts, scriptAddress, scriptAsm, scriptType } from './esplora-script.js';

const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** The block a confirmed transaction is in. */
export type BlockRef = { hash: Uint8Array; height: number; time: number };

/** `status` of a transaction: `{confirmed: false}` in the mempool. */
export function txStatus(block: BlockRef | undefined) {
  return block
    ? { confirmed: true, block_height: block.height, block_hash: hashToHex(block.hash), block_time: block.time }
    : { confirmed: false };
}

/** An output as electrs's TxOutValue. */
function esploraOutput(o: { value: bigint; script: Uint8Array }, network: NetworkName) {
  const address = scriptAddress(o.script, network);
  return {
    scriptpubkey: hex(o.script),
    scriptpubkey_asm: scriptAsm(o.script),
    scriptpubkey_type: scriptType(o.script),
    ...(address !== undefined ? { scriptpubkey_address: address } : {}),
    value: Number(o.value),
  };
}

type Prevout = { value: bigint; script: Uint8Array } | undefined;

/**
 * A transaction as electrs's TransactionValue: `tx` its decoded bytes, `prevouts[i]` the output
 * input i spends (undefined for a coinbase input), `block` where it is confirmed. The fee is the
 * inputs' values less the outputs' (0 for a coinbase).
 */
export function esploraTransaction(tx: DecodedTx, prevouts: readonly Prevout[], block: BlockRef | undefined, network: NetworkName) {
  let fee = 0n;
  const vin = tx.inputs.map((input, i) => {
    const prevout = tx.isCoinbase ? undefined : prevouts[i];
    if (prevout) fee += prevout.value;
    const inner = prevout ? innerScripts(prevout.script, input.scriptSig, input.witness) : {};
    return {
      txid: hashToHex(input.prevTxid),
      vout: input.vout,
      prevout: prevout ? esploraOutput(prevout, network) : null,
      scriptsig: hex(input.scriptSig),
      scriptsig_asm: scriptAsm(input.scriptSig),
      ...(input.witness.length > 0 ? { witness: input.witness.map(hex) } : {}),
      is_coinbase: tx.isCoinbase,
      sequence: input.sequence,
      ...(inner.redeem ? { inner_redeemscript_asm: scriptAsm(inner.redeem) } : {}),
      ...(inner.witness ? { inner_witnessscript_asm: scriptAsm(inner.witness) } : {}),
    };
  });
  const vout = tx.outputs.map((o) => {
    fee -= o.value;
    return esploraOutput(o, network);
  });
  return {
    txid: hashToHex(tx.txid),
    version: tx.version,
    locktime: tx.locktime,
    vin,
    vout,
    size: tx.size,
    weight: tx.weight,
    fee: tx.isCoinbase ? 0 : Number(fee),
    status: txStatus(block),
  };
}

/** A block as electrs's BlockValue (`previousblockhash` null for the genesis block). */
export function esploraBlock(row: BlockHeaderRow) {
  const h = decodeHeader(row.header);
  return {
    id: hashToHex(row.hash),
    height: row.height,
    version: h.version,
    timestamp: h.time,
    tx_count: row.tx_count,
    size: row.size,
    weight: row.weight,
    merkle_root: hashToHex(h.merkleRoot),
    previousblockhash: row.height === 0 ? null : hashToHex(row.prev_hash),
    mediantime: row.median_time,
    nonce: h.nonce,
    bits: h.bits,
    // (Core's getblock prints the double with 16 significant digits)
    difficulty: Number(bitsToDifficulty(h.bits).toPrecision(16)),
  };
}

/** A block's status: on the main chain with its height and successor, else `in_best_chain: false`. */
export function blockStatus(row: { height: number; next_hash: Uint8Array | null } | undefined) {
  return row
    ? { in_best_chain: true, height: row.height, next_best: row.next_hash ? hashToHex(row.next_hash) : null }
    : { in_best_chain: false, height: null, next_best: null };
}

/** An unspent output as electrs's UtxoValue. */
export function esploraUtxo(u: { txid: Uint8Array; vout: number; value: bigint }, block: BlockRef | undefined) {
  return { txid: hashToHex(u.txid), vout: u.vout, status: txStatus(block), value: Number(u.value) };
}

/** An output's spend as electrs's SpendingValue (`{spent: false}` when nothing spends it). */
export function esploraOutspend(s: Spend | null) {
  if (s === null) return { spent: false };
  return { spent: true, txid: hashToHex(s.txid), vin: s.vin, status: txStatus(s.block ?? undefined) };
}

/** `chain_stats` / `mempool_stats` in electrs's ScriptStats order. */
export function esploraStats(s: TxoStats) {
  return {
    tx_count: s.tx_count,
    funded_txo_count: s.funded_txo_count,
    spent_txo_count: s.spent_txo_count,
    funded_txo_sum: s.funded_txo_sum,
    spent_txo_sum: s.spent_txo_sum,
  };
}
