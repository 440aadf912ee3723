/**
 * The Coinstack dialect's authentication (coinstackd's middleware, go-hmacauth at 15a76fa): an
 * `APIKey` header in any case or `?apikey=`; HMAC-signed requests over method, Host, path (no
 * query), timestamp, Content-MD5 and Content-Type, as the JS and Java SDKs sign them (the
 * signatures here are computed by the test from that definition, not by the server's code), with
 * the query forms of the browser SDK, the 15-minute window both ways, the body checked against
 * Content-MD5; failures as 401 text with go-hmacauth's messages. A signing key's access key is
 * no bearer token, and its secret is stored sealed, never in clear.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { createApiHarness, type ApiHarness } from '../api/harness.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { newServerKeyLine, parseKeyring } from '../../../src/auth/secret-box.js';
import { sign, timestamp } from './sign.js';

const ring = parseKeyring(newServerKeyLine());

describe('Coinstack dialect: authentication', () => {
  let h: ApiHarness;
  let access: string;
  let secret: string;
  const host = 'api.example:3000';
  beforeAll(async () => {
    h = await createApiHarness({ keyring: () => ring });
    const k = await createApiKey(h.t.db, { name: 'signing', secret: { keyring: ring } });
    access = k.key;
    secret = k.secret!;
  });
  afterAll(async () => h?.close());

  const signedGet = (path: string, opts: { ts?: string; host?: string; signHost?: string; query?: string; sig?: string } = {}) => {
    const ts = opts.ts ?? timestamp(new Date());
    const sig = opts.sig ?? sign(secret, { method: 'GET', host: opts.signHost ?? host, path, ts, type: 'application/json' });
    return h.app.inject({
      method: 'GET',
      url: path + (opts.query ?? ''),
      headers: {
        host: opts.host ?? host,
        'content-type': 'application/json',
        authorization: `APIKey=${access},Signature=${sig},Timestamp=${ts}`,
      },
    });
  };
  const text401 = (r: LightMyRequestResponse, message: string) => {
    expect(r.statusCode).toBe(401);
    expect(r.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(r.body).toBe(`${message}\n`);
  };

  it('the secret is stored sealed: neither the secret nor the access key is in the row', async () => {
    const row = await h.t.db.selectFrom('api_keys').selectAll().where('name', '=', 'signing').executeTakeFirstOrThrow();
    expect(row.secret_box).not.toBeNull();
    const stored = JSON.stringify(row, (_k, v: unknown) =>
      Buffer.isBuffer(v) ? v.toString('latin1') : typeof v === 'bigint' ? String(v) : v,
    );
    expect(stored.includes(secret)).toBe(false);
    expect(stored.includes(access)).toBe(false);
    expect(row.secret_box!.includes(Buffer.from(secret))).toBe(false);
  });

  it('an APIKey header in any case, or ?apikey=, authenticates a bearer key', async () => {
    for (const headers of [{ APIKey: h.key }, { apikey: h.key }, { APIKEY: h.key }, { ApiKey: h.key }]) {
      const r = await h.app.inject({ method: 'GET', url: '/blockchain', headers });
      expect(r.statusCode).not.toBe(401);
    }
    expect((await h.app.inject({ method: 'GET', url: `/blockchain?apikey=${h.key}` })).statusCode).not.toBe(401);
    // the query parameter is not a parameter of the route: a route with a strict query schema accepts it
    const a = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';
    const r = await h.app.inject({ method: 'GET', url: `/addresses/${a}/balance?apikey=${h.key}` });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ balance: 0 });
  });

  it('a signed GET passes; the query string is not signed; the Host may be signed without its port', async () => {
    expect((await signedGet('/blockchain')).statusCode).not.toBe(401);
    const r = await signedGet('/blockchain', { query: '?limit=10&skip=5' });
    expect(r.statusCode).not.toBe(401);
    expect((await signedGet('/blockchain', { signHost: 'api.example' })).statusCode).not.toBe(401);
    // a timestamp with fractions and another offset (the Java SDK's joda-time form)
    const ts = timestamp(new Date(), -300).replace(/(\d{2}:\d{2}:\d{2})/, '$1.123');
    expect((await signedGet('/blockchain', { ts })).statusCode).not.toBe(401);
  });

  it('go-hmacauth messages: missing header, malformed parts, timestamps, key, signature', async () => {
    text401(await h.app.inject({ method: 'GET', url: '/blockchain' }), 'Missing required header: "Authorization"');
    const ts = timestamp(new Date());
    const withAuth = (authorization: string) => h.app.inject({ method: 'GET', url: '/blockchain', headers: { host, authorization } });
    text401(await withAuth(`APIKey=${access},Signature=x`), 'Missing parameter in header string');
    text401(await withAuth(`APIKey=${access},Signature=x,Timestamp=${ts},Foo=1`), 'Invalid parameter in header string');
    text401(
      await withAuth(`APIKey=${access},APIKey=${access},Signature=x,Timestamp=${ts}`),
      'Repeated parameter: "APIKey" in header string',
    );
    text401(await withAuth(`APIKey,Signature=x,Timestamp=${ts}`), 'Invalid parameter in header string');
    text401(await withAuth(`APIKey=${access},Signature=x,Timestamp=yesterday`), 'Invalid timestamp. Requires RFC3339 format.');
    text401(await signedGet('/blockchain', { ts: timestamp(new Date(Date.now() - 16 * 60_000)) }), 'Signature expired');
    text401(await signedGet('/blockchain', { ts: timestamp(new Date(Date.now() + 16 * 60_000)) }), 'Timestamp out of range');
    expect((await signedGet('/blockchain', { ts: timestamp(new Date(Date.now() - 14 * 60_000)) })).statusCode).not.toBe(401);
    text401(await withAuth(`APIKey=${h.key},Signature=x,Timestamp=${ts}`), 'Invalid APIKey'); // a bearer key cannot sign
    text401(
      await signedGet('/blockchain', {
        sig: sign('wrong secret', { method: 'GET', host, path: '/blockchain', ts, type: 'application/json' }),
        ts,
      }),
      'Invalid Signature',
    );
    text401(
      await signedGet('/blocks', { signHost: host, ts }).then(() => signedGet('/blockchain', { signHost: 'other.example:3000' })),
      'Invalid Signature',
    );
  });

  it('an access key alone is no bearer token', async () => {
    const r = await h.app.inject({ method: 'GET', url: '/blockchain', headers: { apiKey: access } });
    expect(r.statusCode).toBe(401);
    expect((await h.get('/v1/blockchain', access)).json()).toMatchObject({ error_code: 'ERR_API_KEY_INVALID' });
  });

  it('a signed POST: Content-MD5 binds the body, no Content-Type needed (Java), query forms (browser)', async () => {
    const body = JSON.stringify({ tx: '00' });
    const md5 = createHash('md5').update(body).digest('base64');
    const ts = timestamp(new Date());
    const post = (headers: Record<string, string>, payload = body, url = '/transactions') =>
      h.app.inject({ method: 'POST', url, headers: { host, ...headers }, payload });
    // signed without a Content-Type: passes authentication and reaches the route (400: not a transaction)
    const sig = sign(secret, { method: 'POST', host, path: '/transactions', ts, md5 });
    const ok = await post({ authorization: `APIKey=${access},Signature=${sig},Timestamp=${ts}`, 'content-md5': md5 });
    expect(ok.statusCode).toBe(400);
    expect(ok.json()).toMatchObject({ error_type: 'io.coinstack#ValidationFailed', error_code: 3004 });
    text401(
      await post({ authorization: `APIKey=${access},Signature=${sig},Timestamp=${ts}`, 'content-md5': md5 }, JSON.stringify({ tx: '01' })),
      'Invalid Content-MD5 for body',
    );
    const noMd5 = sign(secret, { method: 'POST', host, path: '/transactions', ts });
    text401(await post({ authorization: `APIKey=${access},Signature=${noMd5},Timestamp=${ts}` }), 'Missing Content-MD5 for body');
    // the browser SDK: everything in the query, the real Content-Type replaced by ?content-type=
    const bsig = sign(secret, { method: 'POST', host, path: '/transactions', ts, md5, type: 'application/json' });
    const q = new URLSearchParams({ auth: `APIKey=${access},Signature=${bsig},Timestamp=${ts}`, md5, 'content-type': 'application/json' });
    const browser = await post({ 'content-type': 'application/x-www-form-urlencoded' }, body, `/transactions?${q.toString()}`);
    expect(browser.statusCode).toBe(400);
    expect(browser.json()).toMatchObject({ error_code: 3004 });
  });

  it('a signing key with only the read scope is refused on write routes as AccessDenied', async () => {
    const k = await createApiKey(h.t.db, { name: 'reader', scopes: ['read'], secret: { keyring: ring } });
    const body = JSON.stringify({ tx: '00' });
    const md5 = createHash('md5').update(body).digest('base64');
    const ts = timestamp(new Date());
    const sig = sign(k.secret!, { method: 'POST', host, path: '/transactions', ts, md5 });
    const r = await h.app.inject({
      method: 'POST',
      url: '/transactions',
      headers: { host, authorization: `APIKey=${k.key},Signature=${sig},Timestamp=${ts}`, 'content-md5': md5 },
      payload: body,
    });
    expect(r.statusCode).toBe(400);
    expect(r.json()).toEqual({
      error_type: 'io.coinstack#AccessDeniedError',
      error_code: 3001,
      error_message: 'Access Denied',
      retry: false,
      error_cause: "this API key lacks the 'write' scope",
    });
  });

  it('a bad bearer key is 401; /v1 keeps its own error body', async () => {
    text401(await h.app.inject({ method: 'GET', url: '/blockchain', headers: { apiKey: 'bw_nope' } }), 'Invalid APIKey');
    const v1 = await h.get('/v1/blockchain', 'bw_nope');
    expect(v1.json()).toEqual({
      error_type: 'authentication',
      error_code: 'ERR_API_KEY_INVALID',
      error_message: 'invalid API key',
      retry: false,
      error_cause: null,
    });
  });
});
