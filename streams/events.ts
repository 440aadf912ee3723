/**
 * Events as the streams see them: `ChainEvent`, decoded from an outbox row (docs/schema.md
 * "Outbox"; `seq` is the event id and the global order), and `EventPayload`, the versioned JSON
 * every transport sends (WebSocket frame, webhook body, SNS message; docs/events.md).
 * Pure: no I/O. Hashes leave in display (Core) byte order; amounts are integer satoshis.
 * @module
 */
import { hashToHex } from '../src/bitcoin/hash.js';
import { isoTime } from '../src/time.js';
import { EVENT_TYPES, MEMPOOL_EVENT_TYPES, type EventType, type OutboxTable } from '../src/db/schema.js';
import type { WalletAddressPart, WalletPart } from '../src/db/wallet-event.js';

export { EVENT_TYPES, type EventType };

/** Events about one address's transaction. */
const TX_EVENT_TYPES = ['tx.unconfirmed', 'tx.confirmed', 'tx.confirmations', 'tx.reorged', 'tx.replaced', 'tx.dropped'] as const;
export type TxEventType = (typeof TX_EVENT_TYPES)[number];
/** Events of chain subscriptions. */
const BLOCK_EVENT_TYPES = ['block.connected', 'block.disconnected'] as const;
export type BlockEventType = (typeof BLOCK_EVENT_TYPES)[number];

/** Events for one API key only, written with `key_id` (the stamp tracker's). */
const KEY_EVENT_TYPES = ['stamp.confirmed', 'stamp.unconfirmed'] as const;
export type KeyEventType = (typeof KEY_EVENT_TYPES)[number];

/** A block reference. */
export type BlockRef = { hash: string; height: number };

type EventBase = {
  /** Outbox seq: the event id, increasing in commit order. */
  seq: bigint;
  createdAt: Date;
  /** The block the event refers to (null for mempool events). */
  block: BlockRef | null;
  /** Opaque extra data of the row (`data` jsonb), passed through when present. */
  data: unknown;
};

export type TxEvent = EventBase & {
  type: TxEventType;
  addrKey: string;
  address: string;
  txid: string;
  confirmations: number;
  received: bigint;
  sent: bigint;
  /** tx.replaced: the replacing transaction. */
  replacedBy: string | null;
};

export type BlockEvent = EventBase & { type: BlockEventType; block: BlockRef };

/** An event for one API key only (stamp.confirmed, stamp.unconfirmed). */
export type KeyEvent = EventBase & {
  type: KeyEventType;
  keyId: bigint;
  txid: string | null;
  confirmations: number | null;
};

/** Every event kind the outbox carries, discriminated by `type`. */
export type ChainEvent = TxEvent | BlockEvent | KeyEvent;

/** An outbox row as read from Postgres. */
export type OutboxRow = Omit<OutboxTable, 'seq' | 'created_at'> & { seq: bigint; created_at: Date };

const txTypes = new Set<string>(TX_EVENT_TYPES);
const blockTypes = new Set<string>(BLOCK_EVENT_TYPES);
const keyTypes = new Set<string>(KEY_EVENT_TYPES);

function blockOf(row: OutboxRow): BlockRef | null {
  if (row.block_hash === null || row.height === null) return null;
  return { hash: hashToHex(row.block_hash), height: row.height };
}

function need<T>(value: T | null, field: string, row: OutboxRow): T {
  if (value === null) throw new TypeError(`outbox row ${row.seq} (${row.type}) has no ${field}`);
  return value;
}

/**
 * Decodes an outbox row. Throws a TypeError naming the row for a row that breaks the outbox
 * contract (unknown type, a tx event without address or txid, a block event without block).
 * (Object literals, not spreads: on the V8 of Node 20 a literal that adds properties after a
 * spread is built property by property in the runtime, some microseconds per event.)
 */
export function decodeOutboxRow(row: OutboxRow): ChainEvent {
  const block = blockOf(row);
  const data = row.data ?? null;
  if (txTypes.has(row.type)) {
    return {
      seq: row.seq,
      createdAt: row.created_at,
      block,
      data,
      type: row.type as TxEventType,
      addrKey: need(row.addr_key, 'addr_key', row),
      address: need(row.address, 'address', row),
      txid: hashToHex(need(row.txid, 'txid', row)),
      confirmations: row.confirmations ?? 0,
      received: row.received ?? 0n,
      sent: row.sent ?? 0n,
      replacedBy: row.replaced_by ? hashToHex(row.replaced_by) : null,
    };
  }
  if (blockTypes.has(row.type)) {
    return { seq: row.seq, createdAt: row.created_at, block: need(block, 'block', row), data, type: row.type as BlockEventType };
  }
  if (keyTypes.has(row.type)) {
    return {
      seq: row.seq,
      createdAt: row.created_at,
      block,
      data,
      type: row.type as KeyEventType,
      keyId: need(row.key_id, 'key_id', row),
      txid: row.txid ? hashToHex(row.txid) : null,
      confirmations: row.confirmations,
    };
  }
  throw new TypeError(`outbox row ${row.seq} has unknown type '${row.type}'`);
}

/** The JSON of one event for one subscription (docs/events.md, version 1). */
export type EventPayload = {
  /** Event id (outbox seq): increasing; resume a stream with `?after=<id>`. */
  id: number;
  type: EventType;
  /** When the event was recorded, ISO 8601 UTC to the second. */
  created_at: string;
  subscription_id: string | null;
  /** The hook id of the subscription, null for stream-only subscriptions and key events. */
  action: string | null;
  address: string | null;
  transaction_hash: string | null;
  block: BlockRef | null;
  confirmations: number | null;
  /** Satoshis the transaction pays to `address`. */
  received: number | null;
  /** Satoshis the transaction spends from `address`. */
  sent: number | null;
  /** tx.replaced only: the transaction that replaced this one. */
  replaced_by?: string;
  /** Extra data of key events (stamp.confirmed, stamp.unconfirmed), when the writer gave some. */
  data?: unknown;
  /** Wallet subscriptions: the wallet; `address`, `received` and `sent` are then the wallet's (docs/wallets.md "Events"). */
  wallet?: string;
  /** Derivation path of `address` in the wallet. */
  path?: string;
  /** received − sent over the wallet's addresses. */
  net?: number;
  /** Every address of the wallet the transaction touches. */
  addresses?: WalletAddressPart[];
};

function safeNumber(v: bigint, what: string): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new RangeError(`${what} ${v} is beyond 2^53`);
  return n;
}

/** A payload's fields in the order docs/events.md shows (the JSON's order), as one literal (see decodeOutboxRow). */
function payloadOf(
  event: ChainEvent,
  sub: { id: string; hookId: string | null } | null,
  address: string | null,
  txid: string | null,
  confirmations: number | null,
  received: number | null,
  sent: number | null,
): EventPayload {
  return {
    id: safeNumber(event.seq, 'event id'),
    type: event.type,
    created_at: isoTime(event.createdAt),
    subscription_id: sub?.id ?? null,
    action: sub?.hookId ?? null,
    address,
    transaction_hash: txid,
    block: event.block,
    confirmations,
    received,
    sent,
  };
}

/** The payload of `event` as delivered for subscription `sub` (null for key events). */
export function toPayload(event: ChainEvent, sub: { id: string; hookId: string | null } | null, wallet?: WalletPart): EventPayload {
  switch (event.type) {
    case 'block.connected':
    case 'block.disconnected':
      return payloadOf(event, sub, null, null, null, null, null);
    case 'stamp.confirmed':
    case 'stamp.unconfirmed': {
      const p = payloadOf(event, sub, null, event.txid, event.confirmations, null, null);
      if (event.data !== null) p.data = event.data;
      return p;
    }
    default: {
      const p = wallet
        ? payloadOf(event, sub, wallet.address, event.txid, event.confirmations, wallet.received, wallet.sent)
        : payloadOf(
            event,
            sub,
            event.address,
            event.txid,
            event.confirmations,
            safeNumber(event.received, 'received'),
            safeNumber(event.sent, 'sent'),
          );
      if (event.replacedBy !== null) p.replaced_by = event.replacedBy;
      if (wallet) {
        p.wallet = wallet.id;
        p.path = wallet.path;
        p.net = wallet.net;
        p.addresses = wallet.addresses;
      }
      return p;
    }
  }
}

const mempoolTypes = new Set<string>(MEMPOOL_EVENT_TYPES);

/**
 * Decodes rows, handing each row that breaks the contract to `onInvalid` and leaving it out.
 * The mempool's own events (mempool.added / mempool.removed) concern no subscription: left out.
 */
export function decodeOutboxRows(rows: readonly OutboxRow[], onInvalid: (row: OutboxRow, err: Error) => void): ChainEvent[] {
  const out: ChainEvent[] = [];
  for (const row of rows) {
    if (mempoolTypes.has(row.type)) continue;
    try {
      out.push(decodeOutboxRow(row));
    } catch (err) {
      onInvalid(row, err as Error);
    }
  }
  return out;
}
