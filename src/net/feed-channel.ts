/**
 * The Redis channel the relay publishes every batch of outbox events on (streams/relay.ts), read
 * by the stream hubs and, as a wake-up, by the API's Coinstack push feed.
 * @module
 */

/** The channel name under a Redis prefix. */
export function feedChannel(prefix: string): string {
  return `${prefix}-events`;
}
