/**
 * The retry schedule: exponential with bounded jitter,
 * at least 72 h before the dead letter even with the shortest jitter, Retry-After as a floor,
 * and the HTTP status → outcome table.
 */
import { describe, expect, it } from 'vitest';
import {
  MAX_ATTEMPTS,
  MIN_RETRY_WINDOW_MS,
  RETRY_CAP_MS,
  RETRY_JITTER,
  nominalDelay,
  parseRetryAfter,
  retryDelay,
  retryDelayAfter,
} from '../../../streams/retry.js';
import { classifyHttpStatus } from '../../../streams/transport.js';
import { classifySnsError } from '../../../streams/sns/sns-transport.js';
import { deliveryBackoff, RetryLaterError, seriesOf } from '../../../streams/delivery-worker.js';

const retries = Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) => i + 1);

describe('retry schedule', () => {
  it('doubles from 10 s up to a 6 h cap', () => {
    expect([1, 2, 3, 4].map((r) => nominalDelay(r))).toEqual([10_000, 20_000, 40_000, 80_000]);
    expect(nominalDelay(40)).toBe(RETRY_CAP_MS);
    expect(() => nominalDelay(0)).toThrow('retry must be an integer >= 1, got 0');
  });

  it('doubles from another base (BLOCKWIRE_DELIVERY_RETRY_BASE_MS) to the same cap, jittered the same', () => {
    expect([1, 2, 3, 4].map((r) => nominalDelay(r, 1000))).toEqual([1000, 2000, 4000, 8000]);
    expect(nominalDelay(40, 1000)).toBe(RETRY_CAP_MS);
    expect(retryDelay(1, () => 0, 1000)).toBe(800);
    expect(retryDelay(1, () => 0.999999, 1000)).toBe(1199);
    expect(retryDelayAfter(1, 5_000, () => 0.5, 1000)).toBe(5_000);
    expect(retryDelayAfter(2, undefined, () => 0.5, 1000)).toBe(2_000);
  });

  it('covers at least 72 h with the shortest jitter, and not absurdly more with the longest', () => {
    const min = retries.reduce((s, r) => s + retryDelay(r, () => 0), 0);
    const max = retries.reduce((s, r) => s + retryDelay(r, () => 0.999999), 0);
    expect(min).toBeGreaterThanOrEqual(MIN_RETRY_WINDOW_MS);
    // One retry fewer would not cover the window: MAX_ATTEMPTS is the least that does.
    expect(min - retryDelay(MAX_ATTEMPTS - 1, () => 0)).toBeLessThan(MIN_RETRY_WINDOW_MS);
    expect(max).toBeLessThan(MIN_RETRY_WINDOW_MS * 1.7);
  });

  it('keeps every jittered delay within ±20 % of nominal', () => {
    let seed = 1;
    const rnd = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    for (const r of retries) {
      for (let i = 0; i < 50; i++) {
        const d = retryDelay(r, rnd);
        expect(d).toBeGreaterThanOrEqual(Math.floor(nominalDelay(r) * (1 - RETRY_JITTER)));
        expect(d).toBeLessThanOrEqual(Math.ceil(nominalDelay(r) * (1 + RETRY_JITTER)));
      }
    }
  });

  it('never retries sooner than Retry-After asked (up to the cap), nor sooner than the schedule', () => {
    expect(retryDelayAfter(1, 120_000, () => 0.5)).toBe(120_000);
    expect(retryDelayAfter(1, 1_000, () => 0.5)).toBe(10_000);
    expect(retryDelayAfter(1, 48 * 3600_000, () => 0.5)).toBe(RETRY_CAP_MS);
    expect(retryDelayAfter(3, undefined, () => 0.5)).toBe(40_000);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:30 GMT', now)).toBe(90_000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it("hands the processor's delay to BullMQ and finds the series in a job id", () => {
    expect(deliveryBackoff(3, 'blockwire', new RetryLaterError('x', 1234))).toBe(1234);
    const d = deliveryBackoff(3, 'blockwire', new Error('db down'));
    expect(d).toBeGreaterThanOrEqual(32_000);
    expect(d).toBeLessThanOrEqual(48_000);
    expect(seriesOf('sub_a-10')).toBe(0);
    expect(seriesOf('sub_a-10-r3')).toBe(3);
  });
});

describe('HTTP answer → outcome', () => {
  it.each([
    [200, 'delivered'],
    [204, 'delivered'],
    [299, 'delivered'],
    [301, 'retry'],
    [302, 'retry'],
    [307, 'retry'],
    [400, 'permanent'],
    [401, 'permanent'],
    [404, 'permanent'],
    [410, 'permanent'],
    [422, 'permanent'],
    [408, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [502, 'retry'],
    [503, 'retry'],
  ])('%i → %s', (status, kind) => {
    expect(classifyHttpStatus(status).kind).toBe(kind);
  });

  it('disables the hook on 410 only', () => {
    expect(classifyHttpStatus(410)).toMatchObject({ kind: 'permanent', disableHook: 'receiver answered 410 Gone' });
    expect(classifyHttpStatus(404)).not.toHaveProperty('disableHook');
  });

  it('keeps Retry-After of a 429 and names a redirect it did not follow', () => {
    expect(classifyHttpStatus(429, { retryAfter: '7' })).toMatchObject({ kind: 'retry', retryAfterMs: 7000 });
    expect(classifyHttpStatus(302, { location: 'http://169.254.169.254/latest/meta-data/' })).toMatchObject({
      kind: 'retry',
      error: 'receiver answered 302: redirect to http://169.254.169.254/latest/meta-data/ not followed',
    });
  });
});

describe('SNS error → outcome', () => {
  const err = (name: string, fault: 'client' | 'server', status: number) =>
    Object.assign(new Error(name), { name, $fault: fault, $metadata: { httpStatusCode: status } });
  it('disables on a missing topic, fails on other client faults, retries throttling and server faults', () => {
    expect(classifySnsError(err('NotFoundException', 'client', 404))).toMatchObject({ kind: 'permanent', disableHook: expect.any(String) });
    expect(classifySnsError(err('AuthorizationErrorException', 'client', 403))).toMatchObject({ kind: 'permanent' });
    expect(classifySnsError(err('ThrottledException', 'client', 400))).toMatchObject({ kind: 'retry' });
    expect(classifySnsError(err('InternalErrorException', 'server', 500))).toMatchObject({ kind: 'retry' });
    expect(classifySnsError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toMatchObject({
      kind: 'retry',
      status: null,
    });
  });
});
