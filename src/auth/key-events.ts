/**
 * Changes of API keys as they happen: a trigger on `api_keys` (migration 0010) NOTIFYs
 * `blockwire_api_keys` with the key's id on every update or delete (a revocation above all); this
 * module LISTENs on a connection of its own, reconnecting every second while it is lost. Every
 * process that holds something on a key's behalf uses it: the API's key cache, the stream hub
 * (open sockets), the delivery workers (hooks). While the connection is down notifications are
 * lost: `onDown` tells the user to stop trusting what it remembers, `onUp` (after a reconnect as
 * after the first connect) to check again what it holds.
 * @module
 */
import pg from 'pg';
import type { Logger } from '../log.js';
import { CHAIN_CHANNEL } from '../db/chain-changes.js';

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
  const { log } = opts;
  let client: pg.Client | undefined;
  let listening = false;
  let closed = false;
  let generation = 0;
  let retry: NodeJS.Timeout | undefined;

  const later = () => {
    if (closed) return;
    retry = setTimeout(() => void connect(), 1000);
    retry.unref();
  };

  async function connect(): Promise<void> {
    if (closed) return;
    const c = new pg.Client({ connectionString: opts.databaseUrl, application_name: opts.applicationName });
    const lost = (err?: unknown) => {
      if (client !== c) return;
      client = undefined;
      listening = false;
      generation++;
      if (closed) return;
      log?.warn({ err }, 'api key notifications lost: reconnecting');
      opts.onDown?.(err);
      later();
    };
    c.on('error', lost);
    c.on('end', () => lost());
    c.on('notification', (n) => {
      if (client !== c) return;
      if (n.channel === CHAIN_CHANNEL) return opts.onChain?.();
      if (n.channel !== KEY_CHANNEL) return;
      generation++;
      if (n.payload) opts.onChange(n.payload);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${KEY_CHANNEL}`);
      if (opts.onChain) await c.query(`LISTEN ${CHAIN_CHANNEL}`);
      if (closed) {
        await c.end().catch(() => {});
        return;
      }
      client = c;
      listening = true;
      generation++;
      opts.onUp?.(c);
    } catch (err) {
      log?.warn({ err }, 'cannot listen for api key changes; retrying');
      void c.end().catch(() => {});
      later();
    }
  }
  await connect();

  return {
    get listening() {
      return listening;
    },
    get generation() {
      return generation;
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      listening = false;
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    },
  };
}
