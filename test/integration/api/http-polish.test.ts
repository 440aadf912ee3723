/**
 * The HTTP edges a newcomer hits first: a known path with the wrong method is 405 with `Allow`
 * (not 404), `GET /v1/` answers an index of the routes with links, and a DELETE sent with
 * `Content-Type: application/json` and no body (as many clients send it) is accepted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHarness, type ApiHarness } from './harness.js';

describe('HTTP polish', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await createApiHarness();
  });
  afterAll(async () => h?.close());

  it('a wrong method on a known path: 405 ERR_METHOD_NOT_ALLOWED with Allow; an unknown path stays 404', async () => {
    for (const [method, url, allow] of [
      ['POST', '/v1/blockchain', 'GET, HEAD'],
      ['DELETE', '/v1/addresses/bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080/balance', 'GET, HEAD'],
      ['PUT', '/v1/subscriptions', 'GET, HEAD, POST'],
      ['GET', '/v1/transactions', 'POST'],
      ['POST', '/v1/subscriptions/123', 'DELETE'],
    ] as const) {
      const r = await h.app.inject({ method, url, headers: { apiKey: h.key } });
      expect(r.statusCode, `${method} ${url}`).toBe(405);
      expect(r.headers.allow, `${method} ${url}`).toBe(allow);
      expect(r.json()).toMatchObject({ error_code: 'ERR_METHOD_NOT_ALLOWED', error_type: 'method_not_allowed', retry: false });
    }
    const unknown = await h.app.inject({ method: 'GET', url: '/v1/nothing-here', headers: { apiKey: h.key } });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers.allow).toBeUndefined();
  });

  it('GET /v1/ answers an index: links and every public route with its method and summary', async () => {
    for (const url of ['/v1', '/v1/']) {
      const r = await h.app.inject({ method: 'GET', url }); // no key needed: it holds no data
      expect(r.statusCode, url).toBe(200);
      const body = r.json() as { links: Record<string, string>; routes: { method: string; path: string; summary?: string }[] };
      expect(body.links).toEqual({ openapi: '/openapi.json', health: '/healthz', stream: '/v1/stream' });
      const routes = body.routes.map((x) => `${x.method} ${x.path}`);
      for (const expected of ['GET /v1/blockchain', 'GET /v1/addresses/:address/balance', 'POST /v1/transactions', 'POST /v1/subscriptions', 'DELETE /v1/subscriptions/:id', 'POST /v1/stamps']) expect(routes).toContain(expected);
      expect(routes.every((x) => !x.startsWith('HEAD'))).toBe(true);
      expect(body.routes.filter((x) => x.summary).length).toBeGreaterThan(5);
    }
  });

  it('DELETE with Content-Type: application/json and no body is accepted', async () => {
    const created = await h.app.inject({ method: 'POST', url: '/v1/subscriptions', headers: { apiKey: h.key, 'content-type': 'application/json' }, payload: JSON.stringify({ address: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080' }) });
    expect(created.statusCode, created.body).toBeLessThan(300);
    const { id } = created.json() as { id: string };
    const deleted = await h.app.inject({ method: 'DELETE', url: `/v1/subscriptions/${id}`, headers: { apiKey: h.key, 'content-type': 'application/json' } });
    expect(deleted.statusCode, deleted.body).toBeLessThan(300);
    const list = (await h.get('/v1/subscriptions')).json() as { id: string }[];
    expect(list.map((s) => s.id)).not.toContain(id);
    // A POST with the same headers and no body is still an error: it needs one.
    const empty = await h.app.inject({ method: 'POST', url: '/v1/subscriptions', headers: { apiKey: h.key, 'content-type': 'application/json' } });
    expect(empty.statusCode).toBe(400);
  });
});
