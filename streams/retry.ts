/**
 * The retry schedule of webhook and SNS deliveries: exponential from 10 s (the base,
 * BLOCKWIRE_DELIVERY_RETRY_BASE_MS), doubling, capped at 6 h, each delay jittered by ±20 %, and
 * as many attempts as it takes for even the shortest jittered schedule from the default base to
 * cover 72 h before a delivery is dead-lettered (a shorter base keeps that number of attempts:
 * they then span less). A 429's Retry-After is a floor on the next delay. Pure; the BullMQ
 * backoff strategy (delivery-worker.ts) calls it.
 * @module
 */

/** The default base: the nominal delay before the first retry. */
export const RETRY_BASE_MS = 10_000;
export const RETRY_CAP_MS = 6 * 3600_000;
/** Each delay is nominal × (1 ± RETRY_JITTER). */
export const RETRY_JITTER = 0.2;
/** The shortest time between the first attempt and the dead letter. */
export const MIN_RETRY_WINDOW_MS = 72 * 3600_000;
/** Longest Retry-After honoured (longer ones are cut to this). */
const MAX_RETRY_AFTER_MS = RETRY_CAP_MS;

/** The un-jittered delay before retry number `retry` (1 = the delay after the first attempt). */
export function nominalDelay(retry: number, baseMs: number = RETRY_BASE_MS): number {
  if (!Number.isInteger(retry) || retry < 1) throw new RangeError(`retry must be an integer >= 1, got ${retry}`);
  return Math.min(RETRY_CAP_MS, baseMs * 2 ** Math.min(retry - 1, 40));
}

function attemptsCoveringWindow(): number {
  let retries = 0;
  let minTotal = 0;
  while (minTotal < MIN_RETRY_WINDOW_MS) {
    retries += 1;
    minTotal += Math.floor(nominalDelay(retries) * (1 - RETRY_JITTER));
  }
  return retries + 1;
}

/** Attempts in all (the first plus the retries) before a delivery is dead-lettered. */
export const MAX_ATTEMPTS = attemptsCoveringWindow();

/** The jittered delay before retry `retry`; `random` in [0, 1). */
export function retryDelay(retry: number, random: () => number = Math.random, baseMs: number = RETRY_BASE_MS): number {
  const factor = 1 - RETRY_JITTER + 2 * RETRY_JITTER * random();
  return Math.floor(nominalDelay(retry, baseMs) * factor);
}

/**
 * The delay before retry `retry` when the receiver said when to come back (429 Retry-After):
 * never sooner than it asked (up to MAX_RETRY_AFTER_MS), never sooner than the schedule.
 */
export function retryDelayAfter(
  retry: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
  baseMs: number = RETRY_BASE_MS,
): number {
  const scheduled = retryDelay(retry, random, baseMs);
  if (retryAfterMs === undefined) return scheduled;
  return Math.max(scheduled, Math.min(Math.max(0, retryAfterMs), MAX_RETRY_AFTER_MS));
}

/**
 * A Retry-After header value in milliseconds (RFC 9110: delay-seconds or an HTTP-date), or
 * undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, t - now);
}
