/**
 * Process lifecycle: ordered shutdown hooks run once on SIGTERM/SIGINT or on request.
 * Only entrypoints call `installSignalHandlers`.
 * @module
 */
import type { Logger } from '../src/log.js';

export type Shutdown = {
  /** Registers a hook; hooks run in reverse order of registration (last started, first stopped). */
  add(name: string, hook: () => Promise<void> | void): void;
  /** Runs every hook once; later calls return the same promise. */
  run(reason: string): Promise<void>;
  readonly stopping: boolean;
  /** Resolves when shutdown has begun. */
  readonly signal: AbortSignal;
};

export function createShutdown(log: Logger): Shutdown {
  const hooks: { name: string; hook: () => Promise<void> | void }[] = [];
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  return {
    add(name, hook) {
      hooks.push({ name, hook });
    },
    run(reason) {
      if (running) return running;
      controller.abort(reason);
      running = (async () => {
        log.info({ reason }, 'shutting down');
        for (const { name, hook } of hooks.reverse()) {
          try {
            await hook();
          } catch (err) {
            log.error({ err, hook: name }, 'shutdown hook failed');
          }
        }
        log.info('stopped');
      })();
      return running;
    },
    get stopping() {
      return controller.signal.aborted;
    },
    get signal() {
      return controller.signal;
    },
  };
}

/** SIGTERM/SIGINT start the shutdown; a second signal exits at once. */
export function installSignalHandlers(shutdown: Shutdown, onDone: (code: number) => void): void {
  let signals = 0;
  const handler = (sig: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) onDone(130);
    void shutdown.run(sig).then(() => onDone(0));
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
