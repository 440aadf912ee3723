/**
 * What a delivery transport (HTTP webhook, SNS) answers for one attempt, and the rule that turns
 * an HTTP status into that answer: 2xx delivered; 410 permanent and the hook disabled;
 * 408 and 429 retried (429 no sooner than Retry-After); any other 4xx permanent; 3xx (never
 * followed), 5xx and no answer at all retried.
 * @module
 */
import type { HookRow } from '../src/db/queries/tenancy-hooks.js';
import type { DeliveryJobData } from './queues.js';
import { parseRetryAfter } from './retry.js';

/**
 * What a transport reports of the exchange besides its result: the answer's first bytes as text,
 * and the `webhook-timestamp` the request was signed with (unix seconds; http only).
 */
type Answered = { response?: string; signedAt?: number };

export type SendResult = Answered &
  (
    | { kind: 'delivered'; status: number | null }
    | { kind: 'retry'; status: number | null; error: string; retryAfterMs?: number }
    | { kind: 'permanent'; status: number | null; error: string; disableHook?: string }
  );

/** Bytes of a receiver's answer kept in the delivery log (`deliveries.last_response`). */
export const RESPONSE_EXCERPT_BYTES = 2048;

/**
 * The text kept of an answer's first bytes: UTF-8, with each NUL as U+FFFD (PostgreSQL text
 * cannot hold NUL: left in, it would fail the statement that records the attempt's outcome).
 */
export function responseExcerpt(chunks: readonly Buffer[]): string {
  const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\ufffd') : text;
}

/** Sends one delivery to one hook. Never throws for a receiver's failure: it returns it. */
export interface Transport {
  send(hook: HookRow, job: DeliveryJobData): Promise<SendResult>;
  close?(): Promise<void>;
}

/** The result of an HTTP answer with status `status`. */
export function classifyHttpStatus(status: number, headers: { retryAfter?: string; location?: string } = {}, now = Date.now()): SendResult {
  if (status >= 200 && status < 300) return { kind: 'delivered', status };
  if (status === 410)
    return { kind: 'permanent', status, error: 'receiver answered 410 Gone: hook disabled', disableHook: 'receiver answered 410 Gone' };
  if (status === 429) {
    const retryAfterMs = parseRetryAfter(headers.retryAfter, now);
    return {
      kind: 'retry',
      status,
      error: 'receiver answered 429 Too Many Requests',
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
  }
  if (status === 408) return { kind: 'retry', status, error: 'receiver answered 408 Request Timeout' };
  if (status >= 400 && status < 500) return { kind: 'permanent', status, error: `receiver answered ${status}` };
  if (status >= 300 && status < 400) {
    const where = headers.location ? ` to ${headers.location.slice(0, 200)}` : '';
    return { kind: 'retry', status, error: `receiver answered ${status}: redirect${where} not followed` };
  }
  return { kind: 'retry', status, error: `receiver answered ${status}` };
}
