/**
 * A LISTEN connection of its own, and the read barrier it gives. `listenChannels` LISTENs on the
 * given channels, reconnecting every `retryMs` (1 s) while the connection is lost; while it is down
 * notifications are lost, so `onDown` tells the user to stop trusting what it remembers and
 * `onUp` (after a reconnect as after the first connect) to look again.
 *
 * The read barrier (`createReadBarrier`): PostgreSQL delivers every notification committed before
 * a query ahead of that query's answer, so once a `SELECT 1` started on the listening connection
 * after some moment has returned, every notification committed before that moment has been
 * handled. Waiters at once share one barrier query.
 * @module
 */
import pg from 'pg';
import type { Logger } from '../log.js';

export type ListenOptions = {
  databaseUrl: string;
  /** application_name of the connection (pg_stat_activity). */
  applicationName: string;
  /** The channels listened to (fixed identifiers, not user input). */
  channels: readonly string[];
  /** What is lost, for the logs ("api key notifications"). */
  what: string;
  log?: Logger | undefined;
  /** Delay between connection attempts while it is lost (default 1000 ms). */
  retryMs?: number | undefined;
  onNotification(channel: string, payload: string | undefined): void;
  /** Listening (first connect, or a reconnect after notifications may have been lost). */
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
export async function listenChannels(opts: ListenOptions): Promise<Listener> {
  const { log } = opts;
  const retryMs = opts.retryMs ?? 1000;
  let client: pg.Client | undefined;
  let listening = false;
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
      listening = false;
      if (closed) return;
      log?.warn({ err }, `${opts.what} lost: reconnecting`);
      opts.onDown?.(err);
      later();
    };
    c.on('error', lost);
    c.on('end', () => lost());
    c.on('notification', (n) => {
      if (client === c && opts.channels.includes(n.channel)) opts.onNotification(n.channel, n.payload);
    });
    try {
      await c.connect();
      for (const channel of opts.channels) await c.query(`LISTEN ${channel}`);
      if (closed) {
        await c.end().catch(() => {});
        return;
      }
      client = c;
      listening = true;
      opts.onUp?.(c);
    } catch (err) {
      log?.warn({ err }, `cannot listen for ${opts.what}; retrying`);
      void c.end().catch(() => {});
      later();
    }
  }
  await connect();

  return {
    get listening() {
      return listening;
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

/** Resolves once every notification committed before the call has been handled on `c` (rejects when `c` fails). */
export type ReadBarrier = (c: pg.Client) => Promise<void>;

export function createReadBarrier(): ReadBarrier {
  /** The barrier query in flight, and the one queued to start after it (shared by waiters). */
  let inflight: Promise<void> | null = null;
  let queued: Promise<void> | null = null;

  function run(c: pg.Client): Promise<void> {
    const p = c.query('SELECT 1').then(
      () => {
        if (inflight === p) inflight = null;
      },
      (err: unknown) => {
        if (inflight === p) inflight = null;
        throw err;
      },
    );
    return p;
  }

  return (c) => {
    if (!inflight) return (inflight = run(c));
    // The query in flight may have started before this call: wait for the next one.
    queued ??= inflight
      .catch(() => {})
      .then(() => {
        queued = null;
        return (inflight = run(c));
      });
    return queued;
  };
}
