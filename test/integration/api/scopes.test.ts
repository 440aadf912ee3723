/**
 * Scopes: every route that changes something — whoever registered it
 * (broadcast, stamps, hooks, subscriptions, redelivery…) — is a `write` route, and a `read` key
 * gets 403 ERR_SCOPE on each of them before anything runs; it still reads (a POST that only
 * reads, the address batch, included). Routes are taken from
 * /openapi.json, so a route added later is covered without editing this test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHarness, type ApiHarness } from './harness.js';

type Op = { security: unknown[]; 'x-scope'?: string };

/** POSTs that change nothing (a read whose question is too large for a URL): read routes. */
const READ_POSTS = new Set(['post /v1/addresses/batch']);

describe('scopes of every registered route', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await createApiHarness();
  });
  afterAll(async () => h?.close());

  it('non-GET routes need the write scope; a read key is refused on each', async () => {
    const doc = (await h.get('/openapi.json', null)).json() as { paths: Record<string, Record<string, Op>> };
    const readKey = await h.newKey({ scopes: ['read'] });
    const writes: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (op.security.length === 0) continue; // public (health)
        if (method === 'get' || READ_POSTS.has(`${method} ${path}`)) {
          expect(op['x-scope'], `${method} ${path}`).toBe('read');
          continue;
        }
        expect(op['x-scope'], `${method} ${path}`).toBe('write');
        const url = path.replace(/\{[^}]+\}/g, 'a'.repeat(64));
        const r = await h.app.inject({ method: method.toUpperCase() as 'POST', url, headers: { apiKey: readKey }, payload: {} });
        expect(r.statusCode, `${method} ${url}`).toBe(403);
        expect(r.json(), `${method} ${url}`).toMatchObject({ error_code: 'ERR_SCOPE', error_type: 'forbidden', retry: false });
        writes.push(`${method} ${path}`);
      }
    }
    // broadcast, stamps, hooks and subscriptions (the bare paths, Coinstack's dialect, are not in /openapi.json)
    expect(writes).toEqual(
      expect.arrayContaining([
        'post /v1/transactions',
        'post /v1/stamps',
        'post /v1/hooks',
        'post /v1/subscriptions',
        'delete /v1/subscriptions/{id}',
      ]),
    );
    expect((await h.get('/v1/hooks', readKey)).statusCode).toBe(200);
    const batch = await h.app.inject({
      method: 'POST',
      url: '/v1/addresses/batch',
      headers: { apiKey: readKey },
      payload: { addresses: ['bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080'] },
    });
    expect(batch.statusCode, batch.body).toBe(200);
  });
});
