/**
 * Process lifecycle: ordered shutdown hooks run once on SIGTERM/SIGINT or on request.
 * Only entrypoints call `installSignalHandlers`.
 * @module
 */
import type { Logger } from '../src/log.js';

export type Shutdown = {
  /**
   * Registers a hook; hooks run in reverse order of registration (last started, first stopped).
   * `takesMs`: how long the hook means to take (the drain); it is called slow only past that.
   */
  add(name: string, hook: () => Promise<void> | void, takesMs?: number): void;
  /** Runs every hook once; later calls return the same promise. */
  run(reason: string): Promise<void>;
  /**
   * A start-up in progress: a stop asked for meanwhile aborts `signal` at once (the start-up
   * checks it between its steps) but runs the hooks only once `starting` has settled, so that
   * nothing is closed under a role still starting (the database pool under the streams role, say).
   * Call it before the stop can begin (in the tick that starts the start-up).
   */
  startingUntil(starting: Promise<unknown>): void;
  readonly stopping: boolean;
  /** The hook running now, while the stop runs: what a stop that outlasts its limit waits for. */
  readonly pending: string | undefined;
  /** Resolves when shutdown has begun. */
  readonly signal: AbortSignal;
};

export function createShutdown(log: Logger): Shutdown {
  const hooks: { name: string; hook: () => Promise<void> | void; takesMs: number }[] = [];
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  let pending: string | undefined;
  let starting: Promise<unknown> = Promise.resolve();
  return {
    add(name, hook, takesMs = 0) {
      hooks.push({ name, hook, takesMs });
    },
    run(reason) {
      if (running) return running;
      controller.abort(reason);
      running = (async () => {
        log.info({ reason }, 'shutting down');
        pending = 'start-up';
        await starting.catch(() => {});
        for (const { name, hook, takesMs } of hooks.reverse()) {
          pending = name;
          try {
            await watchedStep(log, name, hook, { quietMs: takesMs });
          } catch (err) {
            log.error({ err, hook: name }, 'shutdown hook failed');
          }
        }
        pending = undefined;
        log.info('stopped');
      })();
      return running;
    },
    startingUntil(p) {
      starting = p;
    },
    get stopping() {
      return controller.signal.aborted;
    },
    get pending() {
      return pending;
    },
    get signal() {
      return controller.signal;
    },
  };
}

/** How often a stop step that has not finished says so. */
const SLOW_STEP_MS = 5000;

/**
 * Runs one step of a stop and, while it has not finished, warns every `everyMs` (after `quietMs`,
 * the time the step means to take) which step it is: a graceful stop that runs into
 * SHUTDOWN_TIMEOUT_MS then says what it waited for.
 */
export async function watchedStep<T>(
  log: Logger,
  step: string,
  run: () => Promise<T> | T,
  opts: { everyMs?: number; quietMs?: number } = {},
): Promise<T> {
  const everyMs = opts.everyMs ?? SLOW_STEP_MS;
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const warn = () => {
    log.warn({ step, ms: Date.now() - started }, 'still stopping');
    timer = setTimeout(warn, everyMs).unref();
  };
  timer = setTimeout(warn, (opts.quietMs ?? 0) + everyMs).unref();
  try {
    return await run();
  } finally {
    clearTimeout(timer);
  }
}

/** SIGTERM/SIGINT start the shutdown; a second signal exits at once. */
export function installSignalHandlers(shutdown: Shutdown, onDone: (code: number) => void): void {
  let signals = 0;
  const handler = (sig: NodeJS.Signals) => {
    signals += 1;
    // At once, even while the start-up that the stop waits for is still running.
    if (signals > 1) process.exit(130);
    void shutdown.run(sig).then(() => onDone(0));
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
