/**
 * Exponential backoff with full jitter, and a sleep that an AbortSignal can cut short. Shared by
 * `sendTransaction` and the stream client's reconnects.
 * @module
 */

/** Backoff settings. */
export type BackoffOptions = {
  /** Delay before the first retry, ms (default 500). */
  initialDelayMs?: number;
  /** Upper bound of a delay, ms (default 30 000). */
  maxDelayMs?: number;
  /** Growth factor per attempt (default 2). */
  factor?: number;
};

/**
 * The delay before retry number `attempt` (1-based): a random value in [d/2, d] where
 * d = min(max, initial × factor^(attempt-1)), so that many clients do not retry in step.
 */
export function backoffDelay(attempt: number, opts: BackoffOptions = {}, random: () => number = Math.random): number {
  const initial = opts.initialDelayMs ?? 500;
  const max = opts.maxDelayMs ?? 30_000;
  const factor = opts.factor ?? 2;
  const d = Math.min(max, initial * factor ** Math.max(0, attempt - 1));
  return Math.round(d / 2 + (random() * d) / 2);
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
