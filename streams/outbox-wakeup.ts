/**
 * What wakes the relay: a statement trigger on `outbox` (migration 0025) sends
 * `NOTIFY blockwire_outbox` when a transaction that inserted events commits; this module LISTENs
 * on a connection of its own (src/db/listen.ts) and lets the relay's wait end at once. The relay's poll stays as
 * the safety net: while the connection is lost notifications are missed, so the wait falls back
 * to the poll interval, the connection is tried again every `retryMs`, and a (re)connect counts
 * as a notification (whatever committed meanwhile is read at once).
 * @module
 */
import type { Logger } from '../src/log.js';
import { listenChannels } from '../src/db/listen.js';

/** The channel migration 0025's trigger notifies. */
const OUTBOX_CHANNEL = 'blockwire_outbox';

export type OutboxWakeup = {
  /** True while the connection is up and listening. */
  readonly listening: boolean;
  /**
   * Resolves at once when something was told since the last call (a notification, a
   * (re)connect), else at the next one, after `ms`, or when `signal` aborts.
   */
  wait(ms: number, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
};

export type OutboxWakeupOptions = {
  databaseUrl: string;
  /** application_name of the connection (pg_stat_activity). */
  applicationName: string;
  log: Logger;
  /** Delay between connection attempts while it is lost (default 1000 ms). */
  retryMs?: number;
};

/**
 * The waiting side, apart from the connection: `told` is set by a notification and taken by
 * the next wait, so a notification that comes while the relay is busy is not lost.
 */
type Doorbell = {
  ring(): void;
  wait(ms: number, signal: AbortSignal): Promise<void>;
};

function createDoorbell(): Doorbell {
  // Nothing is known before the first wait: the first one returns at once.
  let told = true;
  let waiter: (() => void) | null = null;
  return {
    ring() {
      told = true;
      waiter?.();
    },
    async wait(ms, signal) {
      if (!told && !signal.aborted) {
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal.removeEventListener('abort', done);
            waiter = null;
            resolve();
          };
          const timer = setTimeout(done, ms);
          signal.addEventListener('abort', done, { once: true });
          waiter = done;
        });
      }
      told = false;
    },
  };
}

/** Starts listening; resolves once the first attempt connected or failed (it keeps retrying). */
export async function listenOutbox(opts: OutboxWakeupOptions): Promise<OutboxWakeup> {
  const bell = createDoorbell();
  const listener = await listenChannels({
    databaseUrl: opts.databaseUrl,
    applicationName: opts.applicationName,
    channels: [OUTBOX_CHANNEL],
    log: opts.log,
    retryMs: opts.retryMs,
    what: 'outbox notifications (the relay polls meanwhile)',
    onNotification: () => bell.ring(),
    // Whatever committed while nobody listened is read now.
    onUp: () => bell.ring(),
  });
  return {
    get listening() {
      return listener.listening;
    },
    wait: (ms, signal) => bell.wait(ms, signal),
    close: () => listener.close(),
  };
}
