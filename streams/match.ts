/**
 * Matching: which subscriptions (and so which API keys and hooks) an event goes to. Pure — the
 * relay, the stream hub's gap fill and a resuming client's catch-up all call the same
 * `matchEvent`, so every path delivers the same set. Rules (docs/events.md "Matching"):
 * block events → chain subscriptions; tx events → address subscriptions of the event's address
 * and wallet subscriptions of the wallets its row leads (src/db/wallet-event.ts: one delivery
 * per transaction and event for a wallet), tx.confirmations only up to the subscription's target; stamp.confirmed → its key's streams;
 * nothing older than the subscription (`seq <= startSeq`).
 * @module
 */
import { readWalletParts, type WalletPart } from '../src/db/wallet-event.js';
import { toPayload, type ChainEvent } from './events.js';

/** A live subscription as matching needs it. */
export type SubscriptionRef = {
  id: string;
  keyId: bigint;
  kind: 'address' | 'chain' | 'wallet';
  /** Address key (uuid text) of an address subscription. */
  addrKey: string | null;
  /** Wallet id of a wallet subscription. */
  walletId: string | null;
  /** Hook the events are also pushed to; null = stream only. */
  hookId: string | null;
  /** The hook's transport, null without a hook or when the hook can take no delivery. */
  hookType: 'http' | 'sns' | null;
  /** False when the hook is disabled (deliveries are logged as failed, not attempted). */
  hookActive: boolean;
  /** True when the hook's circuit breaker is not closed (its jobs queue behind the others': streams/breaker.ts). */
  hookFailing?: boolean;
  /** Confirmation target: tx.confirmations events above it are not delivered. */
  confirmations: number;
  /** Events with a seq at or below this predate the subscription. */
  startSeq: bigint;
};

/** One event for one key, through one subscription (null for key events); `wallet` for a wallet subscription. */
export type Delivery = { event: ChainEvent; keyId: bigint; subscription: SubscriptionRef | null; wallet?: WalletPart };

/** Subscriptions indexed for matching. */
export type SubscriptionIndex = {
  byAddress: ReadonlyMap<string, readonly SubscriptionRef[]>;
  byWallet: ReadonlyMap<string, readonly SubscriptionRef[]>;
  chain: readonly SubscriptionRef[];
};

const byId = (a: SubscriptionRef, b: SubscriptionRef) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Indexes subscriptions by address key; chain subscriptions apart. Order is by id (deterministic). */
export function indexSubscriptions(subs: Iterable<SubscriptionRef>): SubscriptionIndex {
  const byAddress = new Map<string, SubscriptionRef[]>();
  const byWallet = new Map<string, SubscriptionRef[]>();
  const chain: SubscriptionRef[] = [];
  const add = (map: Map<string, SubscriptionRef[]>, k: string, s: SubscriptionRef) => {
    const list = map.get(k);
    if (list) list.push(s);
    else map.set(k, [s]);
  };
  for (const s of subs) {
    if (s.kind === 'chain') chain.push(s);
    else if (s.kind === 'wallet') {
      if (s.walletId !== null) add(byWallet, s.walletId, s);
    } else if (s.addrKey !== null) add(byAddress, s.addrKey, s);
  }
  for (const list of byAddress.values()) list.sort(byId);
  for (const list of byWallet.values()) list.sort(byId);
  chain.sort(byId);
  return { byAddress, byWallet, chain };
}

/** True when `sub` wants `event` (the subscription's kind already fits the event). */
function wants(sub: SubscriptionRef, event: ChainEvent): boolean {
  if (event.seq <= sub.startSeq) return false;
  if (event.type === 'tx.confirmations' && event.confirmations > sub.confirmations) return false;
  return true;
}

/** The deliveries of one event, in subscription id order. */
export function matchEvent(event: ChainEvent, index: SubscriptionIndex): Delivery[] {
  switch (event.type) {
    case 'stamp.confirmed':
    case 'stamp.unconfirmed':
      return [{ event, keyId: event.keyId, subscription: null }];
    case 'block.connected':
    case 'block.disconnected':
      return index.chain.filter((s) => wants(s, event)).map((s) => ({ event, keyId: s.keyId, subscription: s }));
    default: {
      const subs = index.byAddress.get(event.addrKey) ?? [];
      const out: Delivery[] = subs.filter((s) => wants(s, event)).map((s) => ({ event, keyId: s.keyId, subscription: s }));
      for (const wallet of readWalletParts(event.data)) {
        for (const s of index.byWallet.get(wallet.id) ?? [])
          if (wants(s, event)) out.push({ event, keyId: s.keyId, subscription: s, wallet });
      }
      return out;
    }
  }
}

/** The deliveries of many events, in event order. */
export function matchEvents(events: readonly ChainEvent[], index: SubscriptionIndex): Delivery[] {
  return events.flatMap((e) => matchEvent(e, index));
}

/** The address keys a batch of events touches (to load only the subscriptions that matter). */
export function addressKeysOf(events: readonly ChainEvent[]): string[] {
  const keys = new Set<string>();
  for (const e of events) if ('addrKey' in e) keys.add(e.addrKey);
  return [...keys];
}

/** The wallets whose parts a batch of events carries (their subscriptions must be loaded too). */
export function walletIdsOf(events: readonly ChainEvent[]): string[] {
  const ids = new Set<string>();
  for (const e of events) for (const w of readWalletParts(e.data)) ids.add(w.id);
  return [...ids];
}

/** Whether a batch has block events (chain subscriptions must then be loaded too). */
export function hasBlockEvents(events: readonly ChainEvent[]): boolean {
  return events.some((e) => e.type === 'block.connected' || e.type === 'block.disconnected');
}

/** Per event: its payload serialized once, with the two per-subscription fields as markers. */
const templates = new WeakMap<ChainEvent, readonly [string, string, string]>();
const SUB_VALUE = '\u0000sub';
const ACTION_VALUE = '\u0000action';
const SUB_MARK = JSON.stringify(SUB_VALUE);
const ACTION_MARK = JSON.stringify(ACTION_VALUE);

/**
 * A delivery's JSON in three shared pieces and its two own fragments (the subscription id and
 * the action, JSON-encoded): `t[0] + sub + t[1] + action + t[2]`. Every delivery of one event
 * shares the same `t` (the same array), so a batch can carry it once. Undefined for a wallet
 * delivery, whose body is the wallet's view of the event, built for it alone.
 */
export type DeliveryParts = { t: readonly [string, string, string]; sub: string; action: string };

export function deliveryParts(d: Delivery): DeliveryParts | undefined {
  if (d.wallet) return undefined;
  let t = templates.get(d.event);
  if (!t) {
    const json = JSON.stringify(toPayload(d.event, { id: SUB_VALUE, hookId: ACTION_VALUE }));
    const a = json.indexOf(SUB_MARK);
    const b = json.indexOf(ACTION_MARK);
    t = [json.slice(0, a), json.slice(a + SUB_MARK.length, b), json.slice(b + ACTION_MARK.length)];
    templates.set(d.event, t);
  }
  const sub = d.subscription;
  return { t, sub: sub ? JSON.stringify(sub.id) : 'null', action: sub?.hookId ? JSON.stringify(sub.hookId) : 'null' };
}

/** The JSON of delivery parts. */
export function partsJson(p: DeliveryParts): string {
  return `${p.t[0]}${p.sub}${p.t[1]}${p.action}${p.t[2]}`;
}

/**
 * The JSON a delivery sends (the same bytes on every transport): `toPayload` serialized, built
 * from a per-event template so an event with many subscribers is serialized once.
 */
export function deliveryJson(d: Delivery): string {
  const p = deliveryParts(d);
  return p ? partsJson(p) : JSON.stringify(toPayload(d.event, d.subscription, d.wallet));
}

/** A hook delivery's id: `<subscription id>-<event id>` (job id and `webhook-id`; never a ':'). */
export function deliveryId(subscriptionId: string, seq: bigint): string {
  return `${subscriptionId}-${seq}`;
}
