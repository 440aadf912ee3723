/**
 * Supervision of the child processes the quick start runs (redis-server, the embedded
 * PostgreSQL, a node it starts): a child that dies without being asked to is started again on
 * the same port and data, after a delay that doubles from `minDelayMs` up to `maxDelayMs` while
 * restarts keep failing or the child keeps dying soon after one, and falls back to `minDelayMs`
 * once it has stayed up for `stableMs`. Clients reconnect by themselves (pg pools, ioredis,
 * BullMQ): what the restart gives back is the endpoint they were configured with.
 * @module
 */
import type { Logger } from '../../src/log.js';

/** A child that can report its unexpected deaths and be started again. */
export type Restartable = {
  /** Calls `listener` whenever the child exits without stop() or restart() asking it to. */
  onCrash(listener: (how: string) => void): void;
  /** Starts it again (same port, same data). */
  restart(): Promise<void>;
};

export type SupervisorOptions = {
  name: string;
  log: Logger;
  minDelayMs?: number;
  maxDelayMs?: number;
  /** Up this long after a restart: the next crash waits `minDelayMs` again. */
  stableMs?: number;
};

export type Supervisor = {
  /** Restarts done so far. */
  readonly restarts: number;
  /** True while the child is down and a restart is pending or running. */
  readonly down: boolean;
  /** Stops supervising (before the child is stopped on purpose); a pending restart is cancelled. */
  stop(): void;
};

/** Supervises `child`; see the module comment. */
export function supervise(child: Restartable, opts: SupervisorOptions): Supervisor {
  const minDelayMs = opts.minDelayMs ?? 500;
  const maxDelayMs = opts.maxDelayMs ?? 30_000;
  const stableMs = opts.stableMs ?? 60_000;
  const log = opts.log.child({ component: `supervisor.${opts.name}` });
  let delay = minDelayMs;
  let upSince = Date.now();
  let restarts = 0;
  let down = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const attempt = async () => {
    timer = undefined;
    if (stopped) return;
    try {
      await child.restart();
      restarts += 1;
      down = false;
      upSince = Date.now();
      log.warn({ restarts }, `${opts.name} restarted`);
    } catch (err) {
      if (stopped) return;
      delay = Math.min(maxDelayMs, delay * 2);
      log.error({ err, retryInMs: delay }, `${opts.name} could not be restarted; trying again`);
      timer = setTimeout(() => void attempt(), delay);
      timer.unref();
    }
  };

  child.onCrash((how) => {
    if (stopped || down) return;
    down = true;
    // Dying again soon after a restart: wait longer each time; after a stable run, start over.
    const flapping = restarts > 0 && Date.now() - upSince < stableMs;
    delay = flapping ? Math.min(maxDelayMs, delay * 2) : minDelayMs;
    log.error({ how, restartInMs: delay }, `${opts.name} died; restarting it`);
    timer = setTimeout(() => void attempt(), delay);
    timer.unref();
  });

  return {
    get restarts() {
      return restarts;
    },
    get down() {
      return down;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
