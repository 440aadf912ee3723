/**
 * Application errors with stable codes. Only two kinds change behaviour: a RetryableError is
 * retried with backoff by the loop that met it; a FatalError stops the process with a non-zero
 * exit (a restart beats a wedged index). Pure code throws TypeError/RangeError instead.
 * @module
 */

/** An error with a stable, documented code such as `ERR_RPC_UNAVAILABLE`. */
export class AppError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AppError';
    this.code = code;
  }
}

/** A failure that can succeed when tried again later (node down, Redis restarting…). */
export class RetryableError extends AppError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'RetryableError';
  }
}

/** A failure that no retry can fix (corrupt state, misconfiguration, reorg too deep). */
export class FatalError extends AppError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'FatalError';
  }
}

/** True when `err` (or an error it wraps) is marked retryable. */
export function isRetryable(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof RetryableError) return true;
    if (e instanceof FatalError) return false;
  }
  return false;
}
