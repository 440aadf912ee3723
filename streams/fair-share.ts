/**
 * Fair shares of a delivery worker: which job may send now, and how wide. Pure step functions
 * over an explicit state (`FairState`); the delivery worker (delivery-worker.ts) keeps one state
 * per transport and applies the decisions to BullMQ.
 *
 * A job asks to send `want` deliveries of one hook at once (a batch job: up to
 * BLOCKWIRE_DELIVERY_BATCH_CONCURRENCY; a delivery's own job: 1). It gets:
 * - `run` with a width: deliveries of its hook in flight stay within the hook's share
 *   (BLOCKWIRE_WEBHOOK_HOOK_CONCURRENCY, 1 while its breaker is not closed: streams/breaker.ts)
 *   and those of its API key within the key's (BLOCKWIRE_WEBHOOK_KEY_CONCURRENCY). The width is
 *   held until the job ends (`release`).
 * - `park`: its share is full but its hook is healthy, and few of its key's jobs are parked
 *   (`parkPerKey`) or the worker has more than `reserve` slots free besides: it waits in the
 *   process for a share to free (a flood of one healthy hook keeps its pipe full without a
 *   round trip through Redis, and without taking the slots kept for the other keys).
 * - `defer` until a time: its hook's breaker is open (until the end of the pause), or its share
 *   is full and it may not park (a hook being probed or slowed: until its one delivery in
 *   flight has surely ended). The worker moves the job back to the delayed set: it holds no
 *   worker slot while it waits, and it keeps its attempts.
 * A key thus holds at most `perKey` deliveries in flight, and parks `parkPerKey` jobs, or more
 * only while `reserve` slots stay free: the other keys always find slots, whatever its
 * receivers do.
 * @module
 */
import type { Config } from '../src/config.js';
import {
  CLOSED,
  breakerAdopt,
  breakerAfter,
  breakerGate,
  breakerStart,
  type AttemptVerdict,
  type Breaker,
  type BreakerPolicy,
  type PersistedBreaker,
} from './breaker.js';

/** How long a job waits, out of the worker, for a full share of a healthy hook or key. */
const SHARE_WAIT_MS = 500;

export type FairPolicy = {
  /** Deliveries of one API key in flight at most (per worker process and transport). */
  perKey: number;
  /** Deliveries of one hook in flight at most. */
  perHook: number;
  /** Jobs of one key parked in the process (waiting for its share, holding a slot) at least allowed. */
  parkPerKey: number;
  /**
   * Worker slots kept free for the other keys: a key parks more than `parkPerKey` jobs only
   * while more than this many slots are free.
   */
  reserve: number;
  /** How long a job deferred for a full share waits before it is tried again (the first time), in ms. */
  waitMs: number;
  /**
   * How long a job of a hook whose breaker is not closed waits while the hook's one delivery is
   * in flight, in ms (the attempt's time limit: that delivery has ended by then).
   */
  probeMs: number;
  breaker: BreakerPolicy;
};

export type FairState = {
  /** Deliveries in flight (widths granted) by key, and by hook. */
  readonly keys: ReadonlyMap<string, number>;
  readonly hooks: ReadonlyMap<string, number>;
  /** Parked jobs by key. */
  readonly parked: ReadonlyMap<string, number>;
  /** Breakers that are not closed, by hook. */
  readonly breakers: ReadonlyMap<string, Breaker>;
};

export const EMPTY_FAIR_STATE: FairState = { keys: new Map(), hooks: new Map(), parked: new Map(), breakers: new Map() };

/**
 * A job asking to send: `parked` when it is parked already (asking again after a wake-up);
 * `mayPark: false` (the worker is closing) defers it rather than park it; `deferrals`: how
 * often it was deferred before (each doubles its next wait for a share, up to `probeMs`);
 * `freeSlots`: the worker's slots not taken by any job now (this one aside).
 */
export type Ask = { key: string; hook: string; want: number; parked?: boolean; mayPark?: boolean; deferrals?: number; freeSlots?: number };

/** What a job was granted: release it when the job ends. */
export type Grant = { key: string; hook: string; width: number };

export type Decision =
  { kind: 'run'; grant: Grant } | { kind: 'park' } | { kind: 'defer'; until: number; reason: 'paused' | 'hook' | 'key' };

/** A step's new state; `breaker` when the hook's breaker changed state (to persist and show). */
export type Step<T> = { state: FairState } & T & { breaker?: Breaker };

function add(m: ReadonlyMap<string, number>, k: string, d: number): ReadonlyMap<string, number> {
  const out = new Map(m);
  const v = (m.get(k) ?? 0) + d;
  if (v > 0) out.set(k, v);
  else out.delete(k);
  return out;
}

function withBreaker(m: ReadonlyMap<string, Breaker>, hook: string, b: Breaker): ReadonlyMap<string, Breaker> {
  const out = new Map(m);
  if (b.state === 'closed') out.delete(hook);
  else out.set(hook, b);
  return out;
}

/** The hook's breaker in this state. */
export function breakerOf(s: FairState, hook: string): Breaker {
  return s.breakers.get(hook) ?? CLOSED;
}

/** Decides whether a job may send now (`now` in ms). */
export function admit(s: FairState, ask: Ask, now: number, policy: FairPolicy): Step<{ decision: Decision }> {
  const b = breakerOf(s, ask.hook);
  const gate = breakerGate(b, now);
  const unpark = (st: FairState): FairState => (ask.parked ? { ...st, parked: add(st.parked, ask.key, -1) } : st);
  if ('until' in gate) return { state: unpark(s), decision: { kind: 'defer', until: gate.until, reason: 'paused' } };
  const hookRoom = Math.min(policy.perHook, gate.width) - (s.hooks.get(ask.hook) ?? 0);
  const keyRoom = policy.perKey - (s.keys.get(ask.key) ?? 0);
  if (hookRoom > 0 && keyRoom > 0) {
    const width = Math.max(1, Math.min(ask.want, hookRoom, keyRoom));
    const started = breakerStart(b, now);
    const state: FairState = {
      ...unpark(s),
      keys: add(s.keys, ask.key, width),
      hooks: add(s.hooks, ask.hook, width),
      breakers: started === b ? s.breakers : withBreaker(s.breakers, ask.hook, started),
    };
    return {
      state,
      decision: { kind: 'run', grant: { key: ask.key, hook: ask.hook, width } },
      ...(started === b ? {} : { breaker: started }),
    };
  }
  const reason = hookRoom > 0 ? 'key' : 'hook';
  const parkedOthers = (s.parked.get(ask.key) ?? 0) - (ask.parked ? 1 : 0);
  const room = parkedOthers < policy.parkPerKey || (ask.freeSlots ?? 0) > policy.reserve;
  if (ask.mayPark !== false && b.state === 'closed' && room) {
    return { state: ask.parked ? s : { ...s, parked: add(s.parked, ask.key, 1) }, decision: { kind: 'park' } };
  }
  const wait = b.state === 'closed' ? Math.min(policy.probeMs, policy.waitMs * 2 ** Math.min(ask.deferrals ?? 0, 20)) : policy.probeMs;
  return { state: unpark(s), decision: { kind: 'defer', until: now + wait, reason } };
}

/** A job that ran has ended: its width is free again. */
export function release(s: FairState, g: Grant): FairState {
  return { ...s, keys: add(s.keys, g.key, -g.width), hooks: add(s.hooks, g.hook, -g.width) };
}

/** An attempt to the hook ended (`verdict`): its breaker moves on. */
export function observe(s: FairState, hook: string, verdict: AttemptVerdict, now: number, policy: FairPolicy): Step<object> {
  const b = breakerOf(s, hook);
  const next = breakerAfter(b, verdict, now, policy.breaker);
  if (next === b || (next.state === b.state && next.state !== 'open'))
    return { state: next === b ? s : { ...s, breakers: withBreaker(s.breakers, hook, next) } };
  return { state: { ...s, breakers: withBreaker(s.breakers, hook, next) }, breaker: next };
}

/** Takes over a pause another worker process persisted for the hook (streams/breaker.ts `breakerAdopt`). */
export function adopt(s: FairState, hook: string, other: PersistedBreaker, now: number): Step<object> {
  const b = breakerOf(s, hook);
  const next = breakerAdopt(b, other, now);
  return next === b ? { state: s } : { state: { ...s, breakers: withBreaker(s.breakers, hook, next) } };
}

/**
 * The items in turns over their keys: each key's first item, then each key's second…, keys in
 * the order they first appear (the relay adds a batch's jobs so: a key with many hooks does not
 * stand in front of the others' first job). Stable within a key.
 */
export function roundRobin<T>(items: readonly T[], keyOf: (item: T) => string): T[] {
  const byKey = new Map<string, T[]>();
  for (const it of items) {
    const k = keyOf(it);
    const list = byKey.get(k);
    if (list) list.push(it);
    else byKey.set(k, [it]);
  }
  const lists = [...byKey.values()];
  const out: T[] = [];
  for (let i = 0; out.length < items.length; i++) for (const l of lists) if (i < l.length) out.push(l[i]!);
  return out;
}

/** The policy of a worker process from the configuration (shares of `concurrency` at least 1). */
export function fairPolicy(
  c: Pick<
    Config,
    | 'webhookConcurrency'
    | 'webhookKeyShare'
    | 'webhookHookShare'
    | 'webhookTimeoutMs'
    | 'webhookBreakerFailures'
    | 'webhookBreakerOpenMs'
    | 'webhookBreakerMaxOpenMs'
  >,
): FairPolicy {
  const perKey = Math.max(1, Math.floor(c.webhookConcurrency * c.webhookKeyShare));
  return {
    perKey,
    perHook: Math.max(1, Math.floor(c.webhookConcurrency * c.webhookHookShare)),
    parkPerKey: Math.max(1, Math.floor(perKey / 2)),
    reserve: perKey,
    waitMs: SHARE_WAIT_MS,
    probeMs: c.webhookTimeoutMs + 1000,
    breaker: {
      failures: c.webhookBreakerFailures,
      openMs: c.webhookBreakerOpenMs,
      maxOpenMs: Math.max(c.webhookBreakerOpenMs, c.webhookBreakerMaxOpenMs),
    },
  };
}
