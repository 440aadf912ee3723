/**
 * Errors answered before any route runs, over a real socket: a path segment too long for the
 * router is 414 in the dialect's error body, only after the key was checked (401 first), and
 * echoes neither the path nor a key given in the query; an overlong hash within the router's
 * limit reaches its route (400 ERR_INVALID_HASH); headers over 16 KB (431), malformed HTTP (400)
 * and a request that never finishes arriving (408) get Blockwire's error body instead of Node's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createApiHarness, type ApiHarness } from './harness.js';

/** Writes `request` on a new connection; resolves with everything read until the server closes or `ms` pass. */
function exchange(port: number, request: string, ms = 15_000): Promise<{ status: number; headers: string; body: string; raw: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let raw = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      const [head = '', body = ''] = raw.split('\r\n\r\n');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
      if (!m) return reject(new Error(`no HTTP answer: ${JSON.stringify(raw.slice(0, 200))}`));
      resolve({ status: Number(m[1]), headers: head, body, raw });
    };
    const timer = setTimeout(done, ms);
    socket.on('data', (d: Buffer) => {
      raw += String(d);
      // A keep-alive answer is whole once Content-Length bytes of body arrived.
      const [head, body] = raw.split('\r\n\r\n');
      const len = /content-length: (\d+)/i.exec(head ?? '');
      if (len && body !== undefined && Buffer.byteLength(body) >= Number(len[1])) done();
    });
    socket.on('close', done);
    socket.on('error', () => undefined);
  });
}

describe('errors before routing', () => {
  let h: ApiHarness;
  let port: number;
  const long = 'f'.repeat(1500);
  const get = (path: string, headers: Record<string, string> = {}) =>
    exchange(
      port,
      `GET ${path} HTTP/1.1\r\nHost: x\r\n${Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')}\r\n`,
    );

  beforeAll(async () => {
    h = await createApiHarness({ settings: { requestTimeoutMs: 1000 } });
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    port = (h.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => h?.close());

  it("a path segment too long for the router: 401 without a valid key, then 414 in the dialect's body, echoing nothing", async () => {
    const missing = await get(`/v1/transactions/${long}`);
    expect(missing.status).toBe(401);
    expect(JSON.parse(missing.body)).toMatchObject({ error_code: 'ERR_API_KEY_MISSING' });
    const wrong = await get(`/v1/transactions/${long}`, { apiKey: 'bw_wrong' });
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body)).toMatchObject({ error_code: 'ERR_API_KEY_INVALID' });

    const v1 = await get(`/v1/transactions/${long}`, { apiKey: h.key });
    expect(v1.status).toBe(414);
    expect(JSON.parse(v1.body)).toEqual({
      error_type: 'invalid_request',
      error_code: 'ERR_URI_TOO_LONG',
      error_message: 'a path parameter is too long',
      retry: false,
      error_cause: null,
    });
    // The Coinstack dialect, its key in the query as its browser SDK sends it.
    const bare = await get(`/transactions/${long}?apikey=${h.key}`);
    expect(bare.status).toBe(400);
    expect(JSON.parse(bare.body)).toMatchObject({
      error_code: 3004,
      error_type: 'io.coinstack#ValidationFailed',
      error_cause: 'a path parameter is too long',
    });
    const bareWrong = await get(`/transactions/${long}?apikey=bw_wrong`);
    expect(bareWrong.status).toBe(401);
    for (const r of [missing, wrong, v1, bare, bareWrong]) {
      expect(r.raw).not.toContain('ffffffffff');
      expect(r.raw).not.toContain(h.key);
      expect(r.raw).not.toContain('bw_wrong');
    }
  });

  it("an overlong hash within the router's limit is refused by its route: 400 ERR_INVALID_HASH (after the key)", async () => {
    const hash = 'f'.repeat(300);
    expect((await get(`/v1/transactions/${hash}`)).status).toBe(401);
    const r = await get(`/v1/transactions/${hash}`, { apiKey: h.key });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body)).toMatchObject({ error_code: 'ERR_INVALID_HASH' });
  });

  it('headers over 16 KB: 431 ERR_HEADERS_TOO_LARGE; malformed HTTP: 400 ERR_BAD_REQUEST; both in the error body', async () => {
    const big = await get('/v1/blockchain', { apiKey: h.key, 'x-filler': 'x'.repeat(20_000) });
    expect(big.status).toBe(431);
    expect(JSON.parse(big.body)).toEqual({
      error_type: 'invalid_request',
      error_code: 'ERR_HEADERS_TOO_LARGE',
      error_message: 'request headers too large',
      retry: false,
      error_cause: null,
    });
    expect(big.raw).not.toContain(h.key);
    for (const request of [
      'GET /v1/blockchain HTTP/1.1\r\nHost x\r\n\r\n',
      '\u0001\u0002 not http\r\n\r\n',
      'POST /v1/stamps HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello',
    ]) {
      const r = await exchange(port, request);
      expect(r.status, JSON.stringify(request)).toBe(400);
      expect(JSON.parse(r.body)).toMatchObject({ error_code: 'ERR_BAD_REQUEST', retry: false });
    }
  });

  it('a request that never finishes arriving: 408 ERR_CLIENT_TIMEOUT, then the connection is closed', async () => {
    const r = await exchange(port, `GET /v1/blockchain HTTP/1.1\r\nHost: x\r\napiKey: ${h.key}\r\n`);
    expect(r.status).toBe(408);
    expect(JSON.parse(r.body)).toEqual({
      error_type: 'invalid_request',
      error_code: 'ERR_CLIENT_TIMEOUT',
      error_message: 'request not received in time',
      retry: true,
      error_cause: null,
    });
  });

  it('a body sent a byte at a time past the limit: 408 ERR_CLIENT_TIMEOUT, then the connection is closed while the client still sends', async () => {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.on('error', () => undefined);
    let raw = '';
    socket.on('data', (d: Buffer) => (raw += String(d)));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(
      `POST /v1/subscriptions HTTP/1.1\r\nHost: x\r\napiKey: ${h.key}\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{`,
    );
    // One byte every 200 ms (the limit is 1 s here) until the server closes: 60,000 bytes would take 3 hours.
    let sent = 1;
    const drip = setInterval(() => {
      if (!socket.destroyed) socket.write(' ', () => undefined);
      sent++;
    }, 200);
    await closed;
    clearInterval(drip);
    expect(sent).toBeLessThan(60_000);
    const [head = '', body = ''] = raw.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 408 /);
    expect(head.toLowerCase()).toContain('connection: close');
    expect(JSON.parse(body)).toMatchObject({ error_code: 'ERR_CLIENT_TIMEOUT', retry: true });
  });
});
