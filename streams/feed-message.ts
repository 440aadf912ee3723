/**
 * The message the relay publishes on the Redis channel for every batch it relays, and the hubs
 * consume: the seq range it covers, `(from, to]`, and each delivery's key, event id and JSON.
 * A hub that sees `from` above its own position knows it missed a message and fills the gap
 * from Postgres, so pub/sub loss costs latency, never events.
 * @module
 */

/** One event for one key, already serialized. */
export type FeedItem = { keyId: bigint; seq: bigint; json: string };

/** Every event with `from < seq <= to` was matched; `items` are the deliveries among them. */
export type FeedBatch = { from: bigint; to: bigint; items: FeedItem[] };

type Wire = { v: 1; from: string; to: string; items: [string, string, string][] };

export { feedChannel } from '../src/net/feed-channel.js';

export function encodeFeedBatch(b: FeedBatch): string {
  const wire: Wire = { v: 1, from: b.from.toString(), to: b.to.toString(), items: b.items.map((i) => [i.keyId.toString(), i.seq.toString(), i.json]) };
  return JSON.stringify(wire);
}

/** Decodes a channel message; throws a TypeError for anything else. */
export function decodeFeedBatch(text: string): FeedBatch {
  const w = JSON.parse(text) as Partial<Wire>;
  if (w.v !== 1 || typeof w.from !== 'string' || typeof w.to !== 'string' || !Array.isArray(w.items)) throw new TypeError('not a feed batch');
  return {
    from: BigInt(w.from),
    to: BigInt(w.to),
    items: w.items.map(([k, s, json]) => ({ keyId: BigInt(k), seq: BigInt(s), json })),
  };
}
