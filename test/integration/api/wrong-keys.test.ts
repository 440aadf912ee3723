/**
 * Requests with wrong keys are limited per client address (API_AUTH_FAILURE_LIMIT per window):
 * above the limit an address is answered 429 ERR_RATE_LIMITED with Retry-After and no lookup,
 * whatever key it presents that this process has not verified before; other addresses, requests
 * without a key (401, no lookup) and keys this process verified before are not affected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHarness, type ApiHarness } from './harness.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { createKeyVerifier, type KeyVerifier } from '../../../src/auth/key-cache.js';

const WRONG = 'bw_' + 'x'.repeat(40);

describe('wrong keys, limited per address', () => {
  let t: TestDatabase;
  let keys: KeyVerifier;
  let h: ApiHarness;
  const get = (key: string | undefined, remoteAddress: string) =>
    h.app.inject({ method: 'GET', url: '/v1/subscriptions', remoteAddress, headers: key === undefined ? {} : { apiKey: key } });

  beforeAll(async () => {
    t = await createMigratedDatabase('wrongkeys');
    keys = await createKeyVerifier({ db: t.db, databaseUrl: t.url });
    h = await createApiHarness({ settings: { authFailureLimit: 5 }, verifyKey: (k) => keys.verify(k), peekKey: (k) => keys.peek(k) }, t);
  });
  afterAll(async () => {
    await h?.close();
    await keys?.close();
    await t?.drop();
  });

  it('five wrong keys from an address, then 429 for any key it has not used before; other addresses unaffected', async () => {
    const fresh = await h.newKey({ name: 'never-used' });
    for (let i = 0; i < 5; i++) {
      const r = await get(`${WRONG.slice(0, -1)}${i}`, '10.0.0.1');
      expect(r.statusCode).toBe(401);
      expect(r.json()).toMatchObject({ error_code: 'ERR_API_KEY_INVALID' });
    }
    const limited = await get(WRONG, '10.0.0.1');
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({
      error_type: 'rate_limited',
      error_code: 'ERR_RATE_LIMITED',
      error_message: 'too many requests with invalid API keys from this address',
      retry: true,
      error_cause: null,
    });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // A valid key this process has not verified yet waits too (it cannot be told from a guess without a lookup).
    expect((await get(fresh, '10.0.0.1')).statusCode).toBe(429);
    // No key at all costs nothing: still its 401.
    expect((await get(undefined, '10.0.0.1')).json()).toMatchObject({ error_code: 'ERR_API_KEY_MISSING' });
    // Another address: its own count.
    expect((await get(fresh, '10.0.0.2')).statusCode).toBe(200);
    expect((await get(WRONG, '10.0.0.2')).statusCode).toBe(401);
  });

  it('a key this process verified before still passes from an address over its limit', async () => {
    expect((await get(h.key, '10.0.0.3')).statusCode).toBe(200);
    for (let i = 0; i < 5; i++) expect((await get(WRONG, '10.0.0.3')).statusCode).toBe(401);
    expect((await get(WRONG, '10.0.0.3')).statusCode).toBe(429);
    expect((await get(h.key, '10.0.0.3')).statusCode).toBe(200);
  });
});
