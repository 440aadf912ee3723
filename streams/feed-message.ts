/**
 * The message the relay publishes on the Redis channel for every batch it relays, and the hubs
 * consume: the seq range it covers, `(from, to]`, and each delivery's key, event id and JSON.
 * A hub that sees `from` above its own position knows it missed a message and fills the gap
 * from Postgres, so pub/sub loss costs latency, never events.
 *
 * Wire version 2 carries each event's JSON once: a delivery built from an event's template
 * (streams/match.ts `deliveryParts`) is sent as the template's index and its own two fragments,
 * so a block for 10,000 chain subscriptions is ~0.6 MB instead of ~3.7 MB of JSON strings inside
 * JSON (half the relay's and each hub's CPU for the message at that size). Version 1 (every
 * JSON whole) is still read; a hub too old for version 2 ignores the message and fills the gap
 * from Postgres.
 * @module
 */
import { partsJson, type DeliveryParts } from './match.js';

/** One event for one key, already serialized; `parts` when built from its event's shared template. */
export type FeedItem = { keyId: bigint; seq: bigint; json: string; parts?: DeliveryParts };

/** Every event with `from < seq <= to` was matched; `items` are the deliveries among them. */
export type FeedBatch = { from: bigint; to: bigint; items: FeedItem[] };

/** An item on the wire: [key, seq, json], or [key, seq, template index, sub, action] (version 2). */
type WireItem = [string, string, string] | [string, string, number, string, string];
type Wire =
  | { v: 1; from: string; to: string; items: [string, string, string][] }
  | { v: 2; from: string; to: string; templates: (readonly [string, string, string])[]; items: WireItem[] };

export { feedChannel } from '../src/net/feed-channel.js';

export function encodeFeedBatch(b: FeedBatch): string {
  const templates: (readonly [string, string, string])[] = [];
  const index = new Map<readonly [string, string, string], number>();
  const items = b.items.map((i): WireItem => {
    if (!i.parts) return [i.keyId.toString(), i.seq.toString(), i.json];
    let t = index.get(i.parts.t);
    if (t === undefined) {
      t = templates.push(i.parts.t) - 1;
      index.set(i.parts.t, t);
    }
    return [i.keyId.toString(), i.seq.toString(), t, i.parts.sub, i.parts.action];
  });
  const wire: Wire = { v: 2, from: b.from.toString(), to: b.to.toString(), templates, items };
  return JSON.stringify(wire);
}

const isText = (x: unknown): x is string => typeof x === 'string';

/** Decodes a channel message; throws a TypeError for anything else. */
export function decodeFeedBatch(text: string): FeedBatch {
  const w = JSON.parse(text) as Partial<Wire> & { templates?: unknown };
  if ((w.v !== 1 && w.v !== 2) || typeof w.from !== 'string' || typeof w.to !== 'string' || !Array.isArray(w.items))
    throw new TypeError('not a feed batch');
  const templates = w.v === 2 && Array.isArray(w.templates) ? (w.templates as unknown[]) : [];
  return {
    from: BigInt(w.from),
    to: BigInt(w.to),
    items: (w.items as unknown[][]).map((item) => {
      const [k, s, x, sub, action] = item;
      if (!isText(k) || !isText(s)) throw new TypeError('not a feed batch');
      if (isText(x) && item.length === 3) return { keyId: BigInt(k), seq: BigInt(s), json: x };
      const t = typeof x === 'number' ? templates[x] : undefined;
      if (!Array.isArray(t) || t.length !== 3 || !t.every(isText) || !isText(sub) || !isText(action))
        throw new TypeError('not a feed batch');
      return { keyId: BigInt(k), seq: BigInt(s), json: partsJson({ t: t as [string, string, string], sub, action }) };
    }),
  };
}
