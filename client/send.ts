/**
 * `sendTransaction`: broadcast a signed transaction and resubmit it while the failure says it
 * can succeed later (`retry` in the error body, or no answer at all), with bounded attempts and
 * backoff. A faulty transaction (malformed here, or `retry: false` from the server) is never
 * resubmitted. Resubmitting is safe: the same signed bytes always have the same txid.
 * @module
 */
import { hex } from '@scure/base';
import { Transaction as ScureTransaction } from '@scure/btc-signer';
import { backoffDelay, sleep, type BackoffOptions } from './backoff.js';
import { ApiError, ConnectionError } from './errors.js';

/** Options of `sendTransaction`. */
export type SendOptions = BackoffOptions & {
  /** Attempts in all, the first included (default 6). */
  maxAttempts?: number;
  /** Stops waiting and sending when aborted. */
  signal?: AbortSignal;
  /** Called before each resubmission with the error that caused it and the delay. */
  onRetry?: (err: ApiError | ConnectionError, attempt: number, delayMs: number) => void;
};

/** A transaction given as hex, raw bytes, or anything with a `hex` property (a built transaction). */
export type SignedTransaction = string | Uint8Array | { hex: string };

/** The hex of a signed transaction, checked to decode as one. @throws TypeError otherwise. */
function signedTransactionHex(tx: SignedTransaction): string {
  const txHex = typeof tx === 'string' ? tx.trim().toLowerCase() : tx instanceof Uint8Array ? hex.encode(tx) : tx.hex;
  let raw: Uint8Array;
  try {
    raw = hex.decode(txHex);
  } catch {
    throw new TypeError('The transaction is not valid hex');
  }
  try {
    ScureTransaction.fromRaw(raw, {
      allowUnknownInputs: true,
      allowUnknownOutputs: true,
      allowUnknownVersion: true,
      disableScriptCheck: true,
    });
  } catch (err) {
    throw new TypeError(`The transaction does not decode: ${err instanceof Error ? err.message : String(err)}`);
  }
  return txHex;
}

/** True when resubmitting after `err` can succeed. */
export function isRetryableSendError(err: unknown): err is ApiError | ConnectionError {
  return err instanceof ConnectionError || (err instanceof ApiError && err.retry);
}

/**
 * Broadcasts with `broadcast` until it succeeds, the error is not retryable, or `maxAttempts` is
 * reached (the last error is thrown). Honors the server's `Retry-After` when longer than the
 * backoff delay.
 */
export async function sendWithRetry(
  broadcast: (txHex: string) => Promise<string>,
  tx: SignedTransaction,
  opts: SendOptions = {},
): Promise<string> {
  const txHex = signedTransactionHex(tx);
  const maxAttempts = opts.maxAttempts ?? 6;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new RangeError('maxAttempts must be an integer ≥ 1');
  for (let attempt = 1; ; attempt++) {
    opts.signal?.throwIfAborted();
    try {
      return await broadcast(txHex);
    } catch (err) {
      if (!isRetryableSendError(err) || attempt >= maxAttempts) throw err;
      const delay = Math.max(backoffDelay(attempt, opts), err instanceof ApiError ? (err.retryAfterMs ?? 0) : 0);
      opts.onRetry?.(err, attempt, delay);
      await sleep(delay, opts.signal);
    }
  }
}
