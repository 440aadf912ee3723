/**
 * Changes of API keys as they happen: a trigger on `api_keys` (migration 0010) NOTIFYs
 * `blockwire_api_keys` with the key's id on every update or delete (a revocation above all); this
 * module LISTENs on a connection of its own (src/db/listen.ts), reconnecting every second while it is lost. Every
 * process that holds something on a key's behalf uses it: the API's key cache, the stream hub
 * (open sockets), the delivery workers (hooks). While the connection is down notifications are
 * lost: `onDown` tells the user to stop trusting what it remembers, `onUp` (after a reconnect as
 * after the first connect) to check again what it holds.
 * @module
 */
import type pg from 'pg';
import type { Logger } from '../log.js';
import { CHAIN_CHANNEL } from '../db/chain-changes.js';
import { listen } from '../db/listen.js';

export const KEY_CHANNEL = 'blockwire_api_keys';

export type KeyEventsOptions = {
  databaseUrl: string;
  /** application_name of the connection (pg_stat_activity). */
  applicationName: string;
  log?: Logger;
  /** A key changed (its id, as text). */
  onChange(keyId: string): void;
  /** With it, the connection also LISTENs for chain changes (src/db/chain-changes.ts) and calls it on each. */
  onChain?(): void;
  /** Listening (first connect, or a reconnect after notifications may have been lost). */
  onUp?(client: pg.Client): void;
  /** The connection was lost: notifications are missed until onUp. */
  onDown?(err: unknown): void;
};

export type KeyEvents = {
  /** True while the connection is up and listening. */
  readonly listening: boolean;
  /** Bumped by every notification and every (re)connect: a value that moved means "look again". */
  readonly generation: number;
  close(): Promise<void>;
};

/** Starts listening; resolves once the first attempt connected or failed (it keeps retrying). */
export async function listenKeyEvents(opts: KeyEventsOptions): Promise<KeyEvents> {
  let generation = 0;
  const listener = await listen({
    databaseUrl: opts.databaseUrl,
    applicationName: opts.applicationName,
    channels: opts.onChain ? [KEY_CHANNEL, CHAIN_CHANNEL] : [KEY_CHANNEL],
    log: opts.log,
    what: 'api key notifications',
    onNotification(channel, payload) {
      if (channel === CHAIN_CHANNEL) return opts.onChain?.();
      if (channel !== KEY_CHANNEL) return;
      generation++;
      if (payload) opts.onChange(payload);
    },
    onUp(c) {
      generation++;
      opts.onUp?.(c);
    },
    onDown(err) {
      generation++;
      opts.onDown?.(err);
    },
  });
  return {
    get listening() {
      return listener.listening;
    },
    get generation() {
      return generation;
    },
    close: () => listener.close(),
  };
}
