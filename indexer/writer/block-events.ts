/**
 * The outbox events a block's apply writes in its transaction besides block.connected:
 * tx.confirmed and tx.confirmations of watched addresses (with the watched_txs bookkeeping they
 * need), and tx.replaced / tx.dropped for mempool transactions the block mined over or
 * conflicted with, which leave the mempool tables here.
 * @module
 */
import { sql } from 'kysely';
import type { DecodedBlock } from '../../src/bitcoin/block.js';
import { sqlTxNumHeight, txNumHeight, txNumOf } from '../../src/db/tx-num.js';
import { hashKey, type BlockRows, type Touch } from './derive.js';
import type { OutboxEvent, Watch } from '../events.js';
import {
  deleteMempoolTxs,
  mempoolDescendants,
  mempoolSpendersOf,
  mempoolTxidsAmong,
  toBuffer,
  type RemovedTouch,
} from '../mempool-rows.js';
import { int8s, type Trx } from './chain-rows.js';

/** Confirmation targets are at most 100 (subscriptions CHECK); watched_txs keeps this many blocks. */
const WATCH_KEEP_BLOCKS = 1100;
const MAX_TARGET = 100;

/** Whether the mempool tables hold any transaction (catching up they are empty: `removeFromMempool` is skipped). */
export async function mempoolHoldsAny(trx: Trx): Promise<boolean> {
  return (await sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM mempool_txs) AS any`.execute(trx)).rows[0]?.any === true;
}

/** Mempool transactions that the block mined or conflicted with leave the mempool tables. */
export async function removeFromMempool(
  trx: Trx,
  block: DecodedBlock,
  watches: (keys: string[]) => Promise<Map<string, Watch>>,
): Promise<OutboxEvent[]> {
  const txids = block.txs.map((t) => t.txid);
  const mined = await mempoolTxidsAmong(trx, txids);
  if (mined.length > 0) await deleteMempoolTxs(trx, mined);
  const outpoints: { txid: Uint8Array; vout: number }[] = [];
  const spenderOf = new Map<string, Uint8Array>();
  block.txs.forEach((tx, i) => {
    if (i === 0 && tx.isCoinbase) return;
    for (const input of tx.inputs) {
      outpoints.push({ txid: input.prevTxid, vout: input.vout });
      spenderOf.set(`${hashKey(input.prevTxid)}:${input.vout}`, tx.txid);
    }
  });
  const blockIds = new Set(txids.map(hashKey));
  const conflicts = new Map<string, { txid: Buffer; by: Uint8Array }>();
  for (const s of await mempoolSpendersOf(trx, outpoints)) {
    if (blockIds.has(hashKey(s.txid))) continue;
    conflicts.set(hashKey(s.txid), { txid: s.txid, by: spenderOf.get(`${hashKey(s.prevTxid)}:${s.prevVout}`)! });
  }
  if (conflicts.size === 0) return [];
  const direct = [...conflicts.values()].map((c) => c.txid);
  const desc = await mempoolDescendants(trx, direct);
  const removed = (await deleteMempoolTxs(trx, [...direct, ...desc])).touches;
  return removalEvents(removed, await watches(removed.map((r) => r.key)), (txid) => conflicts.get(hashKey(txid))?.by);
}

/** tx.replaced (when `replacedBy` names the replacement) or tx.dropped for watched addresses. */
export function removalEvents(
  removed: readonly RemovedTouch[],
  watched: ReadonlyMap<string, Watch>,
  replacedBy: (txid: Buffer) => Uint8Array | undefined,
): OutboxEvent[] {
  const events: OutboxEvent[] = [];
  for (const r of removed) {
    const w = watched.get(r.key);
    if (!w) continue;
    const by = replacedBy(r.txid);
    events.push({
      type: by ? 'tx.replaced' : 'tx.dropped',
      addrKey: r.key,
      address: w.address,
      txid: r.txid,
      confirmations: 0,
      received: r.received,
      sent: r.sent,
      ...(by ? { replacedBy: by } : {}),
    });
  }
  return events;
}

/** tx.confirmed for the block's watched touches (recorded in watched_txs) and tx.confirmations for earlier ones. */
export async function confirmationEvents(trx: Trx, rows: BlockRows, watched: ReadonlyMap<string, Watch>): Promise<OutboxEvent[]> {
  const events: OutboxEvent[] = [];
  const base = txNumOf(rows.height, 0);
  const mine = (rows.touches ?? []).filter((t: Touch) => watched.has(t.key));
  for (const t of mine) {
    const w = watched.get(t.key)!;
    events.push({
      type: 'tx.confirmed',
      addrKey: t.key,
      address: w.address,
      txid: rows.txs[t.pos]!.txid,
      blockHash: rows.hash,
      height: rows.height,
      confirmations: 1,
      received: t.received,
      sent: t.sent,
    });
  }
  if (rows.height >= 1) {
    const from = txNumOf(Math.max(0, rows.height - MAX_TARGET + 1), 0);
    const r = await sql<{
      tx_num: bigint;
      addr_key: string;
      txid: Buffer;
      received: bigint;
      sent: bigint;
      target: number;
      address: string;
      block_hash: Buffer;
    }>`
      SELECT t.tx_num, t.addr_key, t.txid, t.received, t.sent, w.confirmations AS target, w.address, b.hash AS block_hash
      FROM watched_txs t
      JOIN watched_addresses w ON w.addr_key = t.addr_key
      JOIN blocks b ON b.height = ${sqlTxNumHeight(sql.ref('t.tx_num'))}
      WHERE t.tx_num >= ${from.toString()}::int8 AND t.tx_num < ${base.toString()}::int8
      ORDER BY t.tx_num, t.addr_key`.execute(trx);
    for (const x of r.rows) {
      const h = txNumHeight(x.tx_num);
      const conf = rows.height - h + 1;
      if (conf < 2 || conf > x.target) continue;
      events.push({
        type: 'tx.confirmations',
        addrKey: x.addr_key,
        address: x.address,
        txid: x.txid,
        blockHash: x.block_hash,
        height: h,
        confirmations: conf,
        received: x.received,
        sent: x.sent,
      });
    }
  }
  if (mine.length > 0) {
    await sql`
      INSERT INTO watched_txs (tx_num, addr_key, txid, received, sent)
      SELECT * FROM unnest(${int8s(mine.map((t) => base + t.pos))}::int8[], ${mine.map((t) => t.key)}::uuid[],
        ${mine.map((t) => toBuffer(rows.txs[t.pos]!.txid))}::bytea[], ${mine.map((t) => t.received.toString())}::int8[], ${mine.map((t) => t.sent.toString())}::int8[])
      ON CONFLICT DO NOTHING`.execute(trx);
  }
  await pruneWatchedTxs(trx, rows.height);
  return events;
}

/** watched_txs keeps the rows of the last WATCH_KEEP_BLOCKS blocks below `height`, the block just applied. */
export async function pruneWatchedTxs(trx: Trx, height: number): Promise<void> {
  if (height > WATCH_KEEP_BLOCKS)
    await sql`DELETE FROM watched_txs WHERE tx_num < ${txNumOf(height - WATCH_KEEP_BLOCKS, 0).toString()}::int8`.execute(trx);
}
