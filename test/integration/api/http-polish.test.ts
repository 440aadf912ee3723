/**
 * The HTTP edges a newcomer hits first: a known path with the wrong method is 405 with `Allow`
 * (not 404), `GET /v1/` answers an index of the routes with links, and a DELETE sent with
 * `Content-Type: application/json` and no body (as many clients send it) is accepted. Input
 * that once reached PostgreSQL or a lenient parser gets a clean 4xx in each dialect's error
 * body: NUL characters in paths, queries and bodies; integers written as `0x10`, `1e2`, `+10`,
 * ` 10` or `1.0`; a JSON body sent as `text/plain` (415).
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
      for (const expected of [
        'GET /v1/blockchain',
        'GET /v1/addresses/:address/balance',
        'POST /v1/transactions',
        'POST /v1/subscriptions',
        'DELETE /v1/subscriptions/:id',
        'POST /v1/stamps',
      ])
        expect(routes).toContain(expected);
      expect(routes.every((x) => !x.startsWith('HEAD'))).toBe(true);
      expect(body.routes.filter((x) => x.summary).length).toBeGreaterThan(5);
    }
  });

  it('DELETE with Content-Type: application/json and no body is accepted', async () => {
    const created = await h.app.inject({
      method: 'POST',
      url: '/v1/subscriptions',
      headers: { apiKey: h.key, 'content-type': 'application/json' },
      payload: JSON.stringify({ address: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080' }),
    });
    expect(created.statusCode, created.body).toBeLessThan(300);
    const { id } = created.json() as { id: string };
    const deleted = await h.app.inject({
      method: 'DELETE',
      url: `/v1/subscriptions/${id}`,
      headers: { apiKey: h.key, 'content-type': 'application/json' },
    });
    expect(deleted.statusCode, deleted.body).toBeLessThan(300);
    const list = (await h.get('/v1/subscriptions')).json() as { id: string }[];
    expect(list.map((s) => s.id)).not.toContain(id);
    // A POST with the same headers and no body is still an error: it needs one.
    const empty = await h.app.inject({
      method: 'POST',
      url: '/v1/subscriptions',
      headers: { apiKey: h.key, 'content-type': 'application/json' },
    });
    expect(empty.statusCode).toBe(400);
  });

  const coinstackBody = (r: { statusCode: number; json: () => unknown }) => {
    const b = r.json() as Record<string, unknown>;
    expect(Object.keys(b).slice(0, 4)).toEqual(['error_type', 'error_code', 'error_message', 'retry']);
    expect(Number.isInteger(b.error_code)).toBe(true);
    return b;
  };

  /** POST …/subscriptions with an action holding a NUL character. */
  const postNulAction = (url: string, headers: Record<string, string>) =>
    h.app.inject({
      method: 'POST',
      url,
      headers: { ...headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ address: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080', action: 'hook_\u0000' }),
    });

  it('NUL characters are refused before the database: 400 in each dialect, never 500', async () => {
    // /v1: a path parameter and a query value (400 ERR_INVALID_PARAMETER), a body string (400 ERR_INVALID_BODY).
    const del = await h.app.inject({ method: 'DELETE', url: '/v1/subscriptions/%00', headers: { apiKey: h.key } });
    expect(del.statusCode, del.body).toBe(400);
    expect(del.json()).toMatchObject({ error_code: 'ERR_INVALID_PARAMETER', error_type: 'invalid_request' });
    const post = await postNulAction('/v1/subscriptions', { apiKey: h.key });
    expect(post.statusCode, post.body).toBe(400);
    expect(post.json()).toMatchObject({ error_code: 'ERR_INVALID_BODY', error_type: 'invalid_request' });
    const query = await h.app.inject({ method: 'GET', url: '/v1/subscriptions?cursor=%00', headers: { apiKey: h.key } });
    expect(query.statusCode, query.body).toBe(400);
    expect(query.json()).toMatchObject({ error_code: 'ERR_INVALID_PARAMETER' });
    // Coinstack paths: its error body.
    for (const method of ['DELETE', 'GET'] as const) {
      const r = await h.app.inject({ method, url: '/subscriptions/%00', headers: { apikey: h.key } });
      expect(r.statusCode, `${method} ${r.body}`).toBe(400);
      coinstackBody(r);
    }
    const cs = await postNulAction('/subscriptions', { apikey: h.key });
    expect(cs.statusCode, cs.body).toBe(400);
    coinstackBody(cs);
  });

  it('a JSON body sent as text/plain is 415 ERR_UNSUPPORTED_MEDIA_TYPE', async () => {
    const payload = JSON.stringify({ address: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080' });
    const r = await h.app.inject({
      method: 'POST',
      url: '/v1/subscriptions',
      headers: { apiKey: h.key, 'content-type': 'text/plain' },
      payload,
    });
    expect(r.statusCode, r.body).toBe(415);
    expect(r.json()).toMatchObject({ error_code: 'ERR_UNSUPPORTED_MEDIA_TYPE', error_type: 'unsupported_media_type' });
    // And application/json still works.
    const ok = await h.app.inject({
      method: 'POST',
      url: '/v1/subscriptions',
      headers: { apiKey: h.key, 'content-type': 'application/json' },
      payload,
    });
    expect(ok.statusCode, ok.body).toBeLessThan(300);
  });

  it('query and path integers are decimal digits only: 0x10, 1e2, +10, " 10", 1.0 are 400 ERR_INVALID_PARAMETER', async () => {
    for (const url of [
      '/v1/subscriptions?limit=0x10',
      '/v1/subscriptions?limit=1e2',
      '/v1/subscriptions?limit=%2B10',
      '/v1/subscriptions?limit=%2010',
      '/v1/subscriptions?limit=10.0',
      '/v1/blocks/height/1.0',
      '/v1/blocks/height/0x10',
      '/v1/blocks/height/1e2',
      '/v1/blocks/height/+10',
      '/v1/blocks/height/%2010',
      '/v1/blocks?start_height=1e2',
    ]) {
      const r = await h.get(url);
      expect(r.statusCode, `${url} ${r.body}`).toBe(400);
      expect(r.json(), url).toMatchObject({ error_code: 'ERR_INVALID_PARAMETER', error_type: 'invalid_request' });
    }
    // Plain digits still pass validation.
    expect((await h.get('/v1/subscriptions?limit=10')).statusCode).toBe(200);
    expect((await h.get('/v1/blocks/height/5')).statusCode).not.toBe(400);
  });
});
