/**
 * CORS (API_CORS_ORIGINS): off by default; when origins are configured a browser page on one of
 * them gets its preflight answered without an apiKey, may send apiKey / Idempotency-Key, and may
 * read the Link and rate-limit headers; any other origin gets no CORS headers, so its browser
 * refuses the answer. Authentication is unchanged: CORS never replaces the apiKey.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHarness, type ApiHarness } from './harness.js';
import { loadConfig } from '../../../src/config.js';

const APP = 'https://wallet.example.com';

describe('CORS', () => {
  let off: ApiHarness;
  let on: ApiHarness;
  beforeAll(async () => {
    off = await createApiHarness();
    on = await createApiHarness({ settings: { corsOrigins: [APP, 'http://127.0.0.1:5173'] } }, off.t);
  });
  afterAll(async () => {
    await on?.close();
    await off?.close();
  });

  const preflight = (h: ApiHarness, origin: string, headers = 'apikey,content-type') =>
    h.app.inject({
      method: 'OPTIONS',
      url: '/v1/blockchain',
      headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': headers },
    });

  it('sends no CORS headers unless origins are configured', async () => {
    const res = await off.app.inject({ method: 'GET', url: '/v1/subscriptions', headers: { apiKey: off.key, origin: APP } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const pre = await preflight(off, APP);
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
    expect(pre.statusCode).not.toBe(204);
  });

  it('answers a preflight from an allowed origin without an apiKey', async () => {
    const res = await preflight(on, APP, 'apikey,content-type,idempotency-key');
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(
      String(res.headers['access-control-allow-headers'])
        .toLowerCase()
        .split(',')
        .map((x) => x.trim()),
    ).toEqual(expect.arrayContaining(['apikey', 'content-type', 'idempotency-key']));
    expect(String(res.headers['access-control-allow-methods'])).toContain('POST');
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('lets the page read Link and rate-limit headers of an authenticated answer', async () => {
    const res = await on.app.inject({ method: 'GET', url: '/v1/subscriptions', headers: { apiKey: on.key, origin: APP } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(String(res.headers['access-control-expose-headers'])).toContain('Link');
    expect(String(res.headers['access-control-expose-headers'])).toContain('RateLimit-Remaining');
    expect(res.headers.vary).toContain('Origin');
  });

  it('still requires the apiKey: a cross-origin request without one is 401 with the spec body', async () => {
    const res = await on.app.inject({ method: 'GET', url: '/v1/blockchain', headers: { origin: APP } });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error_type: expect.any(String), error_code: expect.any(String), retry: false });
    expect(res.headers['access-control-allow-origin']).toBe(APP); // the page can read why
  });

  it('gives another origin no CORS headers', async () => {
    const res = await on.app.inject({
      method: 'GET',
      url: '/v1/subscriptions',
      headers: { apiKey: on.key, origin: 'https://evil.example' },
    });
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const pre = await preflight(on, 'https://evil.example');
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('API_CORS_ORIGINS is validated: origins only, * alone', () => {
    expect(loadConfig({ API_CORS_ORIGINS: `${APP}, http://127.0.0.1:5173` }).apiCorsOrigins).toEqual([APP, 'http://127.0.0.1:5173']);
    expect(loadConfig({ API_CORS_ORIGINS: '*' }).apiCorsOrigins).toEqual(['*']);
    expect(loadConfig({}).apiCorsOrigins).toEqual([]);
    expect(() => loadConfig({ API_CORS_ORIGINS: 'https://a.example/path' })).toThrow('API_CORS_ORIGINS');
    expect(() => loadConfig({ API_CORS_ORIGINS: '*, https://a.example' })).toThrow('cannot be combined');
    expect(() => loadConfig({ API_CORS_ORIGINS: 'wallet.example.com' })).toThrow('is not an origin');
  });
});
