/**
 * Outbox events of the indexer (docs/schema.md "Outbox"): building rows for watched addresses
 * and appending them under the outbox ordering lock, inside the caller's transaction (the
 * block's or the mempool change's), so an event exists exactly when its change committed.
 * @module
 */
import { sql, type Transaction } from 'kysely';
import type { Database, EventType, MempoolEventType } from '../src/db/schema.js';
import { lockOutbox } from '../src/db/outbox-lock.js';
import { buildWalletParts, type WalletMembership } from '../src/db/wallet-event.js';

/** One outbox row as the indexer fills it (null/absent columns stay NULL). */
export interface OutboxEvent {
  type: EventType | MempoolEventType;
  addrKey?: string;
  address?: string;
  txid?: Uint8Array;
  blockHash?: Uint8Array;
  height?: number;
  confirmations?: number;
  received?: bigint;
  sent?: bigint;
  replacedBy?: Uint8Array;
  /** The row's `data` (mempool events: `{keys}`); a wallet part, when the row has one, wins. */
  data?: unknown;
}

/** A watched address: the largest confirmation target of its subscriptions and its text. */
export interface Watch {
  confirmations: number;
  address: string;
}

type Trx = Transaction<Database>;

const buf = (b: Uint8Array | undefined) => (b === undefined ? null : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

/** Whether any address is watched at all (most blocks then need no per-address work). */
export async function anyWatched(trx: Trx): Promise<boolean> {
  return (await sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM watched_addresses) AS any`.execute(trx)).rows[0]?.any === true;
}

/** The watched addresses among `keys` (uuid strings). */
export async function loadWatches(trx: Trx, keys: Iterable<string>): Promise<Map<string, Watch>> {
  const list = [...new Set(keys)];
  const out = new Map<string, Watch>();
  if (list.length === 0) return out;
  // Most installations watch few addresses: skip the key list when nothing is watched at all.
  if (!(await anyWatched(trx))) return out;
  const r = await sql<{ addr_key: string; confirmations: number; address: string }>`
    SELECT addr_key, confirmations, address FROM watched_addresses WHERE addr_key = ANY(${list}::uuid[])`.execute(trx);
  for (const row of r.rows) out.set(row.addr_key, { confirmations: row.confirmations, address: row.address });
  return out;
}

/** The wallets with live subscriptions among `keys`' addresses: addr_key → its wallets and paths. */
async function loadWalletMembership(trx: Trx, keys: readonly string[]): Promise<WalletMembership> {
  const out = new Map<string, { walletId: string; path: string }[]>();
  if (keys.length === 0) return out;
  const r = await sql<{ addr_key: string; wallet_id: string; path: string }>`
    SELECT wa.addr_key, wa.wallet_id, min(wa.path) AS path
      FROM subscriptions s JOIN wallet_addresses wa ON wa.wallet_id = s.wallet_id
     WHERE s.kind = 'wallet' AND s.deleted_at IS NULL AND wa.addr_key = ANY(${[...new Set(keys)]}::uuid[])
     GROUP BY wa.addr_key, wa.wallet_id
     ORDER BY wa.wallet_id`.execute(trx);
  for (const x of r.rows) {
    const list = out.get(x.addr_key) ?? [];
    list.push({ walletId: x.wallet_id, path: x.path });
    out.set(x.addr_key, list);
  }
  return out;
}

/**
 * Appends `events` in order (takes the outbox lock first; no-op for none). Rows of a
 * transaction touching a subscribed wallet carry the wallet's part in `data`
 * (src/db/wallet-event.ts).
 */
export async function appendEvents(trx: Trx, events: readonly OutboxEvent[]): Promise<void> {
  if (events.length === 0) return;
  const keys = events.flatMap((e) => (e.addrKey !== undefined ? [e.addrKey] : []));
  const data = buildWalletParts(events, await loadWalletMembership(trx, keys)).map((d, i) => {
    const v = d ?? events[i]!.data;
    return v === null || v === undefined ? null : JSON.stringify(v);
  });
  await lockOutbox(trx);
  // unnest keeps one statement per 10k events whatever their number (no parameter limit).
  for (let i = 0; i < events.length; i += 10_000) {
    const part = events.slice(i, i + 10_000);
    const partData = data.slice(i, i + 10_000);
    await sql`
      INSERT INTO outbox (type, addr_key, address, txid, block_hash, height, confirmations, received, sent, replaced_by, data)
      SELECT type, addr_key, address, txid, block_hash, height, confirmations, received, sent, replaced_by, data FROM unnest(
        ${part.map((e) => e.type)}::text[], ${part.map((e) => e.addrKey ?? null)}::uuid[], ${part.map((e) => e.address ?? null)}::text[],
        ${part.map((e) => buf(e.txid))}::bytea[], ${part.map((e) => buf(e.blockHash))}::bytea[], ${part.map((e) => e.height ?? null)}::int4[],
        ${part.map((e) => e.confirmations ?? null)}::int4[], ${part.map((e) => (e.received === undefined ? null : e.received.toString()))}::int8[],
        ${part.map((e) => (e.sent === undefined ? null : e.sent.toString()))}::int8[], ${part.map((e) => buf(e.replacedBy))}::bytea[], ${partData}::jsonb[])
      WITH ORDINALITY AS u(type, addr_key, address, txid, block_hash, height, confirmations, received, sent, replaced_by, data, ord)
      ORDER BY ord`.execute(trx);
  }
}
