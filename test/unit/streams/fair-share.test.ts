/**
 * Fair delivery as pure steps: the circuit breaker of a hook (slowed, open, half-open probe,
 * closed again; pauses doubling to a cap; a pause another worker persisted adopted) and the
 * shares of a worker per key and per hook (run as wide as the share allows, park a few, defer
 * the rest; a paused hook's jobs deferred to the end of its pause).
 */
import { describe, expect, it } from 'vitest';
import {
  CLOSED,
  breakerAdopt,
  breakerAfter,
  breakerGate,
  breakerStart,
  openFor,
  persisted,
  type Breaker,
  type BreakerPolicy,
} from '../../../streams/breaker.js';
import {
  EMPTY_FAIR_STATE,
  admit,
  adopt,
  breakerOf,
  fairPolicy,
  observe,
  release,
  roundRobin,
  type Ask,
  type FairPolicy,
  type FairState,
} from '../../../streams/fair-share.js';
import { testConfig } from '../../../src/config.js';

const bp: BreakerPolicy = { failures: 3, openMs: 1000, maxOpenMs: 5000 };
const policy: FairPolicy = { perKey: 4, perHook: 2, parkPerKey: 1, reserve: 4, waitMs: 500, probeMs: 3000, breaker: bp };

describe('circuit breaker', () => {
  it('slows a failing hook to one delivery, opens after `failures` in a row, and a success closes it', () => {
    let b: Breaker = CLOSED;
    expect(breakerGate(b, 0)).toEqual({ width: Infinity });
    b = breakerAfter(b, 'failed', 10, bp);
    expect(b).toEqual({ state: 'slowed', failures: 1 });
    expect(breakerGate(b, 10)).toEqual({ width: 1 });
    expect(breakerAfter(b, 'answered', 11, bp)).toBe(CLOSED);
    b = breakerAfter(breakerAfter(b, 'failed', 20, bp), 'failed', 30, bp);
    expect(b).toEqual({ state: 'open', opens: 1, until: 1030 });
    expect(breakerGate(b, 1029)).toEqual({ until: 1030 });
  });

  it('lets one probe through after the pause; a failed probe doubles the pause up to the cap, an answer closes', () => {
    let b: Breaker = { state: 'open', opens: 1, until: 1000 };
    expect(breakerGate(b, 1000)).toEqual({ width: 1 });
    expect(breakerStart(b, 999)).toBe(b);
    b = breakerStart(b, 1000);
    expect(b).toEqual({ state: 'half_open', opens: 1 });
    b = breakerAfter(b, 'failed', 2000, bp);
    expect(b).toEqual({ state: 'open', opens: 2, until: 4000 });
    expect([1, 2, 3, 4, 10, 100].map((n) => openFor(n, bp))).toEqual([1000, 2000, 4000, 5000, 5000, 5000]);
    b = breakerAfter(breakerStart(b, 4000), 'answered', 4100, bp);
    expect(b).toBe(CLOSED);
  });

  it('keeps a pause as it is when an attempt begun before it fails late', () => {
    const b: Breaker = { state: 'open', opens: 1, until: 1000 };
    expect(breakerAfter(b, 'failed', 500, bp)).toBe(b);
  });

  it('adopts a running pause another worker persisted, and nothing else', () => {
    const other = persisted({ state: 'open', opens: 3, until: 9000 });
    expect(other).toEqual({ state: 'open', until: new Date(9000) });
    expect(breakerAdopt(CLOSED, other, 1000)).toEqual({ state: 'open', opens: 1, until: 9000 });
    expect(breakerAdopt({ state: 'slowed', failures: 2 }, other, 1000)).toEqual({ state: 'open', opens: 1, until: 9000 });
    expect(breakerAdopt(CLOSED, other, 9000)).toBe(CLOSED);
    expect(breakerAdopt(CLOSED, { state: 'slowed', until: null }, 1000)).toBe(CLOSED);
    const mine: Breaker = { state: 'half_open', opens: 2 };
    expect(breakerAdopt(mine, other, 1000)).toBe(mine);
  });
});

describe('fair shares', () => {
  const A = (hook: string, want = 1, more: Partial<Ask> = {}): Ask => ({ key: 'A', hook, want, ...more });

  it('runs a job as wide as its hook and key shares allow, then parks one, then defers the rest', () => {
    let s: FairState = EMPTY_FAIR_STATE;
    const r1 = admit(s, A('h1', 4), 0, policy);
    expect(r1.decision).toEqual({ kind: 'run', grant: { key: 'A', hook: 'h1', width: 2 } });
    s = r1.state;
    const r2 = admit(s, A('h2', 4), 0, policy);
    expect(r2.decision).toEqual({ kind: 'run', grant: { key: 'A', hook: 'h2', width: 2 } });
    s = r2.state;
    expect(s.keys.get('A')).toBe(4);
    const r3 = admit(s, A('h3'), 0, policy);
    expect(r3.decision).toEqual({ kind: 'park' });
    s = r3.state;
    expect(s.parked.get('A')).toBe(1);
    const r4 = admit(s, A('h4', 1, { freeSlots: 4 }), 0, policy);
    expect(r4.decision).toEqual({ kind: 'defer', until: 500, reason: 'key' });
    // More parked only while more than `reserve` slots stay free for the other keys.
    expect(admit(s, A('h4', 1, { freeSlots: 5 }), 0, policy).decision).toEqual({ kind: 'park' });
    // Another key is not held back by A.
    const b = admit(r4.state, { key: 'B', hook: 'hb', want: 1 }, 0, policy);
    expect(b.decision).toEqual({ kind: 'run', grant: { key: 'B', hook: 'hb', width: 1 } });
    // A share freed: the parked job asks again and runs, no longer counted as parked.
    s = release(r4.state, { key: 'A', hook: 'h1', width: 2 });
    const again = admit(s, A('h3', 1, { parked: true }), 1, policy);
    expect(again.decision).toEqual({ kind: 'run', grant: { key: 'A', hook: 'h3', width: 1 } });
    expect(again.state.parked.has('A')).toBe(false);
    s = release(release(again.state, { key: 'A', hook: 'h3', width: 1 }), { key: 'A', hook: 'h2', width: 2 });
    expect(s.keys.size + s.hooks.size + s.parked.size).toBe(0);
  });

  it('holds a hook to its own share within the key, and a closing worker defers instead of parking', () => {
    const r1 = admit(EMPTY_FAIR_STATE, A('h1', 2), 0, policy);
    const r2 = admit(r1.state, A('h1'), 0, policy);
    expect(r2.decision).toEqual({ kind: 'park' });
    const r3 = admit(r1.state, A('h1', 1, { mayPark: false }), 0, policy);
    expect(r3.decision).toEqual({ kind: 'defer', until: 500, reason: 'hook' });
    expect(r3.state.parked.has('A')).toBe(false);
  });

  it('gives a failing hook one delivery at a time, defers its other jobs past that attempt, then pauses it until its probe', () => {
    let s: FairState = EMPTY_FAIR_STATE;
    const run = admit(s, A('h1', 4), 0, policy);
    expect(run.decision).toMatchObject({ kind: 'run', grant: { width: 2 } });
    const slowed = observe(run.state, 'h1', 'failed', 10, policy);
    expect(slowed.breaker).toEqual({ state: 'slowed', failures: 1 });
    s = release(slowed.state, { key: 'A', hook: 'h1', width: 2 });
    const one = admit(s, A('h1', 4), 20, policy);
    expect(one.decision).toEqual({ kind: 'run', grant: { key: 'A', hook: 'h1', width: 1 } });
    // Its next job neither runs nor parks (it would hold a slot behind a hanging attempt).
    const behind = admit(one.state, A('h1'), 20, policy);
    expect(behind.decision).toEqual({ kind: 'defer', until: 3020, reason: 'hook' });
    s = observe(one.state, 'h1', 'failed', 30, policy).state;
    const opened = observe(s, 'h1', 'failed', 40, policy);
    expect(opened.breaker).toEqual({ state: 'open', opens: 1, until: 1040 });
    s = release(opened.state, { key: 'A', hook: 'h1', width: 1 });
    expect(admit(s, A('h1'), 100, policy).decision).toEqual({ kind: 'defer', until: 1040, reason: 'paused' });
    // The pause ends: one probe runs (half-open), the next job waits past it.
    const probe = admit(s, A('h1', 4), 1040, policy);
    expect(probe.decision).toEqual({ kind: 'run', grant: { key: 'A', hook: 'h1', width: 1 } });
    expect(probe.breaker).toEqual({ state: 'half_open', opens: 1 });
    expect(admit(probe.state, A('h1'), 1041, policy).decision).toEqual({ kind: 'defer', until: 4041, reason: 'hook' });
    const closed = observe(probe.state, 'h1', 'answered', 1050, policy);
    expect(closed.breaker).toBe(CLOSED);
    expect(breakerOf(closed.state, 'h1')).toBe(CLOSED);
    expect(closed.state.breakers.size).toBe(0);
  });

  it('reports a breaker change only when its state changes', () => {
    const s1 = observe(EMPTY_FAIR_STATE, 'h', 'answered', 0, policy);
    expect(s1.breaker).toBeUndefined();
    const s2 = observe(s1.state, 'h', 'failed', 0, policy);
    expect(s2.breaker).toEqual({ state: 'slowed', failures: 1 });
    const s3 = observe(s2.state, 'h', 'failed', 0, policy);
    expect(s3.breaker).toBeUndefined();
    expect(breakerOf(s3.state, 'h')).toEqual({ state: 'slowed', failures: 2 });
  });

  it('adopts a pause another worker persisted', () => {
    const s = adopt(EMPTY_FAIR_STATE, 'h', { state: 'open', until: new Date(5000) }, 0).state;
    expect(admit(s, A('h'), 10, policy).decision).toEqual({ kind: 'defer', until: 5000, reason: 'paused' });
  });

  it('orders items in turns over their keys, stable within a key', () => {
    const items = ['a1', 'a2', 'a3', 'b1', 'a4', 'c1', 'b2'];
    expect(roundRobin(items, (s) => s[0]!)).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
    expect(roundRobin([], (s: string) => s)).toEqual([]);
  });

  it('derives the shares from the configuration, at least one each', () => {
    const p = fairPolicy(testConfig({ webhookConcurrency: 64, webhookKeyShare: 0.25, webhookHookShare: 0.125, webhookTimeoutMs: 2000 }));
    expect(p).toMatchObject({ perKey: 16, perHook: 8, parkPerKey: 8, reserve: 16, probeMs: 3000 });
    expect(fairPolicy(testConfig({ webhookConcurrency: 2, webhookKeyShare: 0.25, webhookHookShare: 0.125 }))).toMatchObject({
      perKey: 1,
      perHook: 1,
      parkPerKey: 1,
    });
  });
});
