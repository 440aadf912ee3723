/**
 * LISTEN on a connection of its own, kept: while the connection is lost notifications are
 * missed, so the user is told (`onDown`), the connection is tried again every `retryMs`, and
 * `onUp` says when it listens again (after the first connect as after a reconnect: whatever
 * happened meanwhile is to be looked at again). The API key events (src/auth/key-events.ts) and
 * the relay's wake-up (streams/outbox-wakeup.ts) listen through it.
 * @module
 */
import pg from 'pg';
import type { Logger } from '../log.js';

export type ListenOptions = {
  databaseUrl: string;
  /** application_name of the connection (pg_stat_activity). */
  applicationName: string;
  channels: readonly string[];
  log?: Logger | undefined;
  /** Delay between connection attempts while it is lost (default 1000 ms). */
  retryMs?: number | undefined;
  /** What is missed while the connection is lost, for the log ("api key notifications"). */
  what: string;
  onNotification(channel: string, payload: string | undefined): void;
  /** Listening: after the first connect, or a reconnect after notifications may have been lost. */
  onUp?(client: pg.Client): void;
  /** The connection was lost: notifications are missed until onUp. */
  onDown?(err: unknown): void;
};

export type Listener = {
  /** True while the connection is up and listening. */
  readonly listening: boolean;
  close(): Promise<void>;
};

/** Starts listening; resolves once the first attempt connected or failed (it keeps retrying). */
export async function listen(opts: ListenOptions): Promise<Listener> {
  const { log } = opts;
  const retryMs = opts.retryMs ?? 1000;
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const later = () => {
    if (closed) return;
    retry = setTimeout(() => void connect(), retryMs);
    retry.unref();
  };

  async function connect(): Promise<void> {
    if (closed) return;
    const c = new pg.Client({ connectionString: opts.databaseUrl, application_name: opts.applicationName });
    const lost = (err?: unknown) => {
      if (client !== c) return;
      client = undefined;
      if (closed) return;
      log?.warn({ err }, `${opts.what} lost: reconnecting`);
      opts.onDown?.(err);
      later();
    };
    c.on('error', lost);
    c.on('end', () => lost());
    c.on('notification', (n) => {
      if (client === c) opts.onNotification(n.channel, n.payload);
    });
    try {
      await c.connect();
      for (const channel of opts.channels) await c.query(`LISTEN ${channel}`);
      if (closed) {
        await c.end().catch(() => undefined);
        return;
      }
      client = c;
      opts.onUp?.(c);
    } catch (err) {
      log?.warn({ err }, `cannot listen for ${opts.what}; retrying`);
      void c.end().catch(() => undefined);
      later();
    }
  }
  await connect();

  return {
    get listening() {
      return client !== undefined;
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}
