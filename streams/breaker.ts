/**
 * The circuit breaker of one hook (Svix-style): a receiver that keeps failing (timeouts,
 * refused connections, 5xx, 408/429) is first slowed down, then paused, and tried again later
 * with one delivery at a time; it closes as soon as the receiver answers. Pure step functions
 * over an explicit state; the delivery worker (streams/fair-share.ts, delivery-worker.ts) holds
 * the state of each hook and persists its changes (`hooks.breaker_*`, shown on the hook).
 *
 * States:
 * - `closed`: normal; the hook's share of the worker applies.
 * - `slowed`: the last attempt(s) failed (fewer than `failures` in a row): one delivery in
 *   flight at a time.
 * - `open`: `failures` attempts in a row failed: nothing is sent before `until` (the pause
 *   doubles on each failed probe, from `openMs` up to `maxOpenMs`); the hook's deliveries wait
 *   in the queue without holding a worker slot and keep their attempts.
 * - `half_open`: the pause is over: one delivery (the probe) at a time. Its success closes the
 *   breaker, its failure opens it again for twice as long.
 * @module
 */
import type { BreakerStateName } from '../src/db/schema.js';

export type BreakerPolicy = {
  /** Failed attempts in a row that open the breaker. */
  failures: number;
  /** First pause, in ms. */
  openMs: number;
  /** Longest pause, in ms. */
  maxOpenMs: number;
};

export type Breaker =
  | { readonly state: 'closed' }
  | { readonly state: 'slowed'; readonly failures: number }
  | { readonly state: 'open'; readonly opens: number; readonly until: number }
  | { readonly state: 'half_open'; readonly opens: number };

export const CLOSED: Breaker = { state: 'closed' };

/** How an attempt of the hook's ended, as the breaker sees it. */
export type AttemptVerdict = 'answered' | 'failed';

/** What the breaker lets through at `now`: up to `width` deliveries in flight, or none before `until`. */
export type BreakerGate = { width: number } | { until: number };

/** How long the breaker stays open after its `opens`-th opening in a row. */
export function openFor(opens: number, policy: BreakerPolicy): number {
  return Math.min(policy.maxOpenMs, policy.openMs * 2 ** Math.min(Math.max(0, opens - 1), 30));
}

/** What the breaker lets through at `now` (an open one past its pause lets one probe through). */
export function breakerGate(b: Breaker, now: number): BreakerGate {
  switch (b.state) {
    case 'closed':
      return { width: Infinity };
    case 'open':
      return now < b.until ? { until: b.until } : { width: 1 };
    case 'slowed':
    case 'half_open':
      return { width: 1 };
  }
}

/** The breaker once an attempt is let through at `now`: an open one past its pause turns half-open. */
export function breakerStart(b: Breaker, now: number): Breaker {
  return b.state === 'open' && now >= b.until ? { state: 'half_open', opens: b.opens } : b;
}

/** The breaker after an attempt ended at `now`. */
export function breakerAfter(b: Breaker, verdict: AttemptVerdict, now: number, policy: BreakerPolicy): Breaker {
  if (verdict === 'answered') return CLOSED;
  switch (b.state) {
    case 'closed':
    case 'slowed': {
      const failures = (b.state === 'slowed' ? b.failures : 0) + 1;
      return failures >= policy.failures ? { state: 'open', opens: 1, until: now + openFor(1, policy) } : { state: 'slowed', failures };
    }
    case 'half_open':
      return { state: 'open', opens: b.opens + 1, until: now + openFor(b.opens + 1, policy) };
    case 'open':
      // (an attempt that started before the breaker opened: the pause stands as it is)
      return b;
  }
}

/** The state as persisted and shown (`hooks.breaker_state`, `breaker_until`). */
export type PersistedBreaker = { state: BreakerStateName; until: Date | null };

export function persisted(b: Breaker): PersistedBreaker {
  return { state: b.state, until: b.state === 'open' ? new Date(b.until) : null };
}

/**
 * The breaker of this process merged with the one another worker process persisted: a pause
 * another worker started (still running at `now`) is adopted by one that has not opened its own.
 */
export function breakerAdopt(b: Breaker, other: PersistedBreaker, now: number): Breaker {
  if (other.state !== 'open' || other.until === null || other.until.getTime() <= now) return b;
  if (b.state === 'open' || b.state === 'half_open') return b;
  return { state: 'open', opens: 1, until: other.until.getTime() };
}
