/**
 * The status of a script hash, exactly as the protocol defines it (protocol-basics "Status"):
 * confirmed transactions by height and position in the block, then mempool transactions ordered
 * by (-height, txid as display hex), where a mempool transaction's height is -1 when one of its
 * inputs is unconfirmed and 0 otherwise; the status is the SHA-256 (hex) of the concatenated
 * `txid:height:` strings, or null when there is no transaction. PURE.
 * @module
 */
import { hash } from 'node:crypto';
import { hashToHex } from '../src/bitcoin/hash.js';
import type { ScriptHistory } from '../src/db/queries/script-hash.js';

/** One line of `blockchain.scripthash.get_history` (mempool entries carry their fee). */
export type HistoryItem = { tx_hash: string; height: number; fee?: number };

/** The history items in the protocol's order (confirmed ones as given: chain order). */
export function historyItems(h: Extract<ScriptHistory, { kind: 'ok' }>): HistoryItem[] {
  const items: HistoryItem[] = h.confirmed.map((e) => ({ tx_hash: hashToHex(e.txid), height: e.height }));
  items.push(...mempoolItems(h));
  return items;
}

/** The mempool items in the protocol's order: height 0 before -1, then by txid hex. */
export function mempoolItems(h: Extract<ScriptHistory, { kind: 'ok' }>): HistoryItem[] {
  const m = h.mempool.map((e) => ({ tx_hash: hashToHex(e.txid), height: e.height as number, fee: e.fee === null ? 0 : Number(e.fee) }));
  m.sort((a, b) => b.height - a.height || (a.tx_hash < b.tx_hash ? -1 : a.tx_hash > b.tx_hash ? 1 : 0));
  return m;
}

/** The status hash of items in the protocol's order, or null when there are none. */
export function statusHash(items: readonly HistoryItem[]): string | null {
  if (items.length === 0) return null;
  let s = '';
  for (const i of items) s += `${i.tx_hash}:${i.height}:`;
  return hash('sha256', s, 'hex');
}
