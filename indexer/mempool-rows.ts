/**
 * Data access for the mempool tables (docs/schema.md "Mempool"): add transactions, remove them
 * with what they did to each address, and find the mempool transactions that conflict with a
 * set of spent outpoints and their descendants. Used by block apply (mined and conflicted
 * transactions leave in the block's transaction) and by the mempool sync.
 * @module
 */
import { sql, type Transaction } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { addWalletDeltas } from './wallet-balances.js';
import { aliasesOf, insertScriptAliases } from './writer/script-aliases.js';

type Trx = Transaction<Database>;

/** A mempool transaction ready to store: outputs and spends resolved, per-address amounts. */
export interface MempoolTxRow {
  txid: Uint8Array;
  raw: Uint8Array;
  firstSeen: Date;
  fee: bigint | null;
  vsize: number;
  outputs: { vout: number; key: string | null; value: bigint; script: Uint8Array }[];
  spends: { prevTxid: Uint8Array; prevVout: number }[];
  addresses: { key: string; received: bigint; sent: bigint }[];
}

/** What a removed mempool transaction did to one address. */
export interface RemovedTouch {
  txid: Buffer;
  key: string;
  received: bigint;
  sent: bigint;
}

export const toBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

/** Stores mempool transactions (callers pass each at most once and never one already stored). */
export async function insertMempoolTxs(trx: Trx, txs: readonly MempoolTxRow[]): Promise<void> {
  if (txs.length === 0) return;
  await sql`
    INSERT INTO mempool_txs (txid, raw, first_seen, fee, vsize)
    SELECT * FROM unnest(${txs.map((t) => toBuffer(t.txid))}::bytea[], ${txs.map((t) => toBuffer(t.raw))}::bytea[],
      ${txs.map((t) => t.firstSeen.toISOString())}::timestamptz[], ${txs.map((t) => (t.fee === null ? null : t.fee.toString()))}::int8[],
      ${txs.map((t) => t.vsize)}::int4[])`.execute(trx);
  const outs = txs.flatMap((t) => t.outputs.map((o) => ({ txid: t.txid, ...o })));
  if (outs.length > 0) {
    await sql`
      INSERT INTO mempool_outputs (txid, vout, addr_key, value, script)
      SELECT * FROM unnest(${outs.map((o) => toBuffer(o.txid))}::bytea[], ${outs.map((o) => o.vout)}::int4[], ${outs.map((o) => o.key)}::uuid[],
        ${outs.map((o) => o.value.toString())}::int8[], ${outs.map((o) => toBuffer(o.script))}::bytea[])`.execute(trx);
  }
  await insertScriptAliases(trx, aliasesOf(outs.map((o) => o.script)));
  const spends = txs.flatMap((t) => t.spends.map((s) => ({ txid: t.txid, ...s })));
  if (spends.length > 0) {
    await sql`
      INSERT INTO mempool_spends (prev_txid, prev_vout, txid)
      SELECT * FROM unnest(${spends.map((s) => toBuffer(s.prevTxid))}::bytea[], ${spends.map((s) => s.prevVout)}::int4[], ${spends.map((s) => toBuffer(s.txid))}::bytea[])`.execute(
      trx,
    );
  }
  const addrs = txs.flatMap((t) => t.addresses.map((a) => ({ txid: t.txid, ...a })));
  if (addrs.length > 0) {
    await sql`
      INSERT INTO mempool_addresses (addr_key, txid, received, sent)
      SELECT * FROM unnest(${addrs.map((a) => a.key)}::uuid[], ${addrs.map((a) => toBuffer(a.txid))}::bytea[],
        ${addrs.map((a) => a.received.toString())}::int8[], ${addrs.map((a) => a.sent.toString())}::int8[])`.execute(trx);
    await addWalletDeltas(
      trx,
      'unconfirmed',
      addrs.map((a) => ({ key: a.key, sats: a.received - a.sent })),
    );
  }
}

/** Removes the given mempool transactions; returns how many were stored and their per-address rows. */
export async function deleteMempoolTxs(trx: Trx, txids: readonly Uint8Array[]): Promise<{ count: number; touches: RemovedTouch[] }> {
  if (txids.length === 0) return { count: 0, touches: [] };
  const ids = txids.map(toBuffer);
  const gone = await sql`DELETE FROM mempool_txs WHERE txid = ANY(${ids}::bytea[])`.execute(trx);
  await sql`DELETE FROM mempool_outputs WHERE txid = ANY(${ids}::bytea[])`.execute(trx);
  await sql`DELETE FROM mempool_spends WHERE txid = ANY(${ids}::bytea[])`.execute(trx);
  const r = await sql<{ txid: Buffer; addr_key: string; received: bigint; sent: bigint }>`
    DELETE FROM mempool_addresses WHERE txid = ANY(${ids}::bytea[]) RETURNING txid, addr_key, received, sent`.execute(trx);
  await addWalletDeltas(
    trx,
    'unconfirmed',
    r.rows.map((x) => ({ key: x.addr_key, sats: x.sent - x.received })),
  );
  return {
    count: Number(gone.numAffectedRows ?? 0n),
    touches: r.rows.map((x) => ({ txid: x.txid, key: x.addr_key, received: x.received, sent: x.sent })),
  };
}

/** Which of `txids` are in the mempool tables. */
export async function mempoolTxidsAmong(trx: Trx, txids: readonly Uint8Array[]): Promise<Buffer[]> {
  if (txids.length === 0) return [];
  const r = await sql<{ txid: Buffer }>`SELECT txid FROM mempool_txs WHERE txid = ANY(${txids.map(toBuffer)}::bytea[])`.execute(trx);
  return r.rows.map((x) => x.txid);
}

/** Mempool transactions spending any of `outpoints`: spender txid with the outpoint it spends. */
export async function mempoolSpendersOf(
  trx: Trx,
  outpoints: readonly { txid: Uint8Array; vout: number }[],
): Promise<{ txid: Buffer; prevTxid: Buffer; prevVout: number }[]> {
  if (outpoints.length === 0) return [];
  const r = await sql<{ txid: Buffer; prev_txid: Buffer; prev_vout: number }>`
    SELECT s.txid, s.prev_txid, s.prev_vout
    FROM unnest(${outpoints.map((o) => toBuffer(o.txid))}::bytea[], ${outpoints.map((o) => o.vout)}::int4[]) AS q(txid, vout)
    JOIN mempool_spends s ON s.prev_txid = q.txid AND s.prev_vout = q.vout`.execute(trx);
  return r.rows.map((x) => ({ txid: x.txid, prevTxid: x.prev_txid, prevVout: x.prev_vout }));
}

/**
 * For transactions that left (`victim`: txid hex, with the outpoints they spent), records in
 * `replacedBy` the mempool transaction that spends one of those outpoints now: its replacement.
 * A victim already in `replacedBy` keeps its entry.
 */
export async function addMempoolReplacers(
  trx: Trx,
  victims: readonly { victim: string; txid: Uint8Array; vout: number }[],
  replacedBy: Map<string, Uint8Array>,
): Promise<void> {
  if (victims.length === 0) return;
  const victimOf = new Map(victims.map((o) => [`${Buffer.from(o.txid).toString('hex')}:${o.vout}`, o.victim]));
  for (const s of await mempoolSpendersOf(trx, victims)) {
    const victim = victimOf.get(`${s.prevTxid.toString('hex')}:${s.prevVout}`);
    if (victim !== undefined && !replacedBy.has(victim)) replacedBy.set(victim, s.txid);
  }
}

/** Every mempool transaction that spends an output of `txids`, transitively (not `txids`). */
export async function mempoolDescendants(trx: Trx, txids: readonly Uint8Array[]): Promise<Buffer[]> {
  if (txids.length === 0) return [];
  const ids = txids.map(toBuffer);
  const r = await sql<{ txid: Buffer }>`
    WITH RECURSIVE d(txid) AS (
      SELECT unnest(${ids}::bytea[])
      UNION
      SELECT s.txid FROM mempool_spends s JOIN d ON s.prev_txid = d.txid
    )
    SELECT txid FROM d WHERE NOT (txid = ANY(${ids}::bytea[]))`.execute(trx);
  return r.rows.map((x) => x.txid);
}
