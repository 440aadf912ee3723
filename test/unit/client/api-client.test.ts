/**
 * The API client against a loopback HTTP server that answers as the API contract says (shapes,
 * error body, Link paging, Retry-After): headers, amounts, paging, errors, and sendTransaction's
 * retry rules. The real API is exercised in test/integration/client/e2e.test.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlockwireClient } from '../../../client/api.js';
import { ApiError, ConnectionError } from '../../../client/errors.js';
import { nextLink, retryAfterMs } from '../../../client/http.js';
import { Key } from '../../../client/keys.js';
import { TransactionBuilder } from '../../../client/builder.js';
import { memoryClient } from '../../support/client-memory.js';
import { addressToScript } from '../../../client/keys.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;
let server: Server;
let url: string;
let handler: Handler;
const seen: { method: string; url: string; apiKey: string | undefined; body: string; idem?: string }[] = [];

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}
function apiError(res: ServerResponse, status: number, code: string, retry: boolean, headers: Record<string, string> = {}) {
  json(res, status, { error_type: 'x', error_code: code, error_message: `${code} message`, retry, error_cause: 'node said no' }, headers);
}

beforeAll(async () => {
  server = createServer((req, res) => {
    // A connection per request: a kept-alive socket that this server closes on its idle timeout
    // just as the client sends on it (timers run late on a loaded machine) would fail one POST
    // with a ConnectionError, which sendTransaction rightly retries, adding an attempt.
    res.setHeader('connection', 'close');
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({
        method: req.method!,
        url: req.url!,
        apiKey: req.headers['apikey'] as string | undefined,
        body,
        idem: req.headers['idempotency-key'] as string | undefined,
      });
      if (req.headers['apikey'] !== 'bw_test') return apiError(res, 401, 'ERR_API_KEY_INVALID', false);
      handler(req, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const client = () => new BlockwireClient({ url, apiKey: 'bw_test', network: 'regtest' });
const TXID = 'ab'.repeat(32);
const SCRIPT_HASH = 'cd'.repeat(32);

describe('BlockwireClient routes', () => {
  it('sends the apiKey header to /v1 routes and converts amounts to bigint', async () => {
    handler = (req, _b, res) => {
      if (req.url === '/v1/blockchain') return json(res, 200, { best_block_hash: TXID, best_height: 7 });
      if (req.url?.startsWith('/v1/addresses/a1/balance')) return json(res, 200, { balance: 2_100_000_000_000_000 });
      if (req.url === `/v1/transactions/${TXID}`)
        return json(res, 200, {
          transaction_hash: TXID,
          block_hash: [],
          coinbase: true,
          inputs: [{ transaction_hash: '00'.repeat(32), output_index: -1, address: [], value: '' }],
          outputs: [{ index: 0, address: ['a1'], script: '51', value: '5000000000', used: false }],
          time: null,
          broadcast_time: '0001-01-01T00:00:00Z',
          addresses: ['a1'],
        });
      apiError(res, 404, 'ERR_ROUTE_NOT_FOUND', false);
    };
    const c = client();
    expect(await c.getBlockchain()).toEqual({ best_block_hash: TXID, best_height: 7 });
    expect(await c.getBalance('a1', { minConf: 1 })).toBe(2_100_000_000_000_000n);
    expect(seen.at(-1)!.url).toBe('/v1/addresses/a1/balance?min_conf=1');
    expect(seen.at(-1)!.apiKey).toBe('bw_test');
    const tx = await c.getTransaction(TXID);
    expect(tx.inputs[0]!.value).toBeNull();
    expect(tx.outputs[0]!.value).toBe(5_000_000_000n);
  });

  it('pages with the Link header, iterates across pages, and reads an unknown address as no outputs', async () => {
    const all = Array.from({ length: 7 }, (_, i) => i.toString(16).padStart(64, '0'));
    handler = (req, _b, res) => {
      const u = new URL(req.url!, 'http://x');
      if (u.pathname === '/v1/addresses/a1/history') {
        const from = Number(u.searchParams.get('cursor') ?? 0);
        const limit = Number(u.searchParams.get('limit') ?? 1000);
        const page = all.slice(from, from + limit);
        const next: Record<string, string> =
          from + limit < all.length ? { Link: `</v1/addresses/a1/history?limit=${limit}&cursor=${from + limit}>; rel="next"` } : {};
        return json(res, 200, page, next);
      }
      if (u.pathname === '/v1/addresses/a1/unspentoutputs' || u.pathname === `/v1/scripthash/${SCRIPT_HASH}/unspentoutputs`)
        return json(res, 200, [{ transaction_hash: TXID, index: 1, value: '1234', script: '51', confirmations: 0 }]);
      if (u.pathname === '/v1/wallets/w1/unspentoutputs')
        return json(res, 200, [
          {
            transaction_hash: TXID,
            index: 1,
            value: 1234,
            script: '51',
            confirmations: 0,
            address: 'a1',
            path: 'm/84h/1h/0h/0/3',
            change: false,
            address_index: 3,
          },
        ]);
      if (u.pathname.startsWith('/v1/addresses/fresh/')) return apiError(res, 404, 'ERR_ADDRESS_NOT_FOUND', false);
      apiError(res, 404, 'ERR_ROUTE_NOT_FOUND', false);
    };
    const c = client();
    const first = await c.getHistory('a1', { limit: 3 });
    expect(first.items).toEqual(all.slice(0, 3));
    expect(first.next).toBe(`${url}/v1/addresses/a1/history?limit=3&cursor=3`);
    expect((await c.historyPage(first.next!)).items).toEqual(all.slice(3, 6));
    const iterated: string[] = [];
    for await (const h of c.history('a1', { limit: 2 })) iterated.push(h);
    expect(iterated).toEqual(all);
    expect(await c.listUnspentOutputs('a1')).toEqual([{ txid: TXID, vout: 1, value: 1234n, script: '51', confirmations: 0 }]);
    // One method per target (an address; a script hash), one naming: UnspentOutput's txid/vout.
    expect(
      Object.getOwnPropertyNames(BlockwireClient.prototype)
        .filter((m) => /unspent/i.test(m))
        .sort(),
    ).toEqual(['getScriptUnspentOutputs', 'listUnspentOutputs']);
    expect(await c.getScriptUnspentOutputs({ hash: SCRIPT_HASH })).toEqual([
      { txid: TXID, vout: 1, value: 1234n, script: '51', confirmations: 0 },
    ]);
    expect(await c.listUnspentOutputs('fresh')).toEqual([]);
    // A wallet's outputs carry the same naming, plus where the wallet derives them.
    expect(await c.wallets.unspentOutputs('w1')).toEqual([
      {
        txid: TXID,
        vout: 1,
        value: 1234n,
        script: '51',
        confirmations: 0,
        address: 'a1',
        path: 'm/84h/1h/0h/0/3',
        change: false,
        address_index: 3,
      },
    ]);
    await expect(c.getBalance('fresh')).rejects.toMatchObject({ status: 404, code: 'ERR_ADDRESS_NOT_FOUND' });
    await expect(c.historyPage('http://evil.example/v1/addresses/a1/history')).rejects.toThrow(
      'Refusing to send the API key to another origin: http://evil.example',
    );
  });

  it('throws ApiError with the server body and status; synthesizes one for a non-JSON answer', async () => {
    handler = (req, _b, res) => {
      if (req.url === '/v1/blocks/x') return apiError(res, 400, 'ERR_INVALID_HASH', false);
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end('bad gateway');
    };
    const err = await client()
      .getBlock('x')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({
      status: 400,
      code: 'ERR_INVALID_HASH',
      retry: false,
      body: { error_cause: 'node said no', error_message: 'ERR_INVALID_HASH message' },
    });
    expect((err as Error).message).toBe('GET /v1/blocks/x failed with HTTP 400 ERR_INVALID_HASH: ERR_INVALID_HASH message');
    await expect(client().getBlock('y')).rejects.toMatchObject({ status: 502, code: 'HTTP_502', body: { error_message: 'bad gateway' } });
    await expect(new BlockwireClient({ url, apiKey: 'wrong' }).getBlockchain()).rejects.toMatchObject({
      status: 401,
      code: 'ERR_API_KEY_INVALID',
    });
  });

  it('posts stamps (with an Idempotency-Key), hooks and subscriptions with their bodies', async () => {
    handler = (req, body, res) => {
      if (req.method === 'POST' && req.url === '/v1/stamps') return json(res, 200, { stampid: `${TXID}-0` });
      if (req.method === 'POST' && req.url === '/v1/hooks')
        return json(res, 200, { id: 'h1', type: 'http', url: JSON.parse(body).url, secret: 'whsec_x' });
      if (req.method === 'POST' && req.url === '/v1/subscriptions') return json(res, 200, { id: 's1' });
      if (req.method === 'DELETE') return res.writeHead(204).end();
      apiError(res, 404, 'ERR_ROUTE_NOT_FOUND', false);
    };
    const c = client();
    expect(await c.createStamp('00'.repeat(32), { idempotencyKey: 'k1' })).toBe(`${TXID}-0`);
    expect(seen.at(-1)).toMatchObject({ body: JSON.stringify({ hash: '00'.repeat(32) }), idem: 'k1' });
    expect(await c.createHook({ type: 'http', url: 'http://127.0.0.1:9/h' })).toMatchObject({ id: 'h1', secret: 'whsec_x' });
    expect(await c.createSubscription({ address: 'a1', action: 'h1', confirmations: 3 })).toBe('s1');
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ address: 'a1', action: 'h1', confirmations: 3 });
    await c.deleteSubscription('s1');
    expect(seen.at(-1)).toMatchObject({ method: 'DELETE', url: '/v1/subscriptions/s1' });
  });
});

describe('sendTransaction', () => {
  // A real signed transaction, so the local decode check passes.
  async function signedHex(): Promise<string> {
    const m = memoryClient();
    const k = Key.random('regtest');
    m.fund(k.address(), addressToScript(k.address(), 'regtest'), 10_000n);
    return (await new TransactionBuilder(m).to(k.address('p2tr'), 5_000n).from(k, 'p2wpkh').build()).hex;
  }

  it('resubmits while the error says retry, honoring Retry-After, then succeeds', async () => {
    const answers = [
      (res: ServerResponse) => apiError(res, 503, 'ERR_TX_MEMPOOL_LIMIT', true, { 'Retry-After': '0' }),
      (res: ServerResponse) => apiError(res, 409, 'ERR_TX_INPUTS_MISSING', true),
      (res: ServerResponse) => json(res, 200, { transaction_hash: TXID }),
    ];
    handler = (_req, _b, res) => answers.shift()!(res);
    const hex = await signedHex();
    const retries: [number, string][] = [];
    const txid = await client().sendTransaction(hex, {
      initialDelayMs: 5,
      onRetry: (e, n) => retries.push([n, e instanceof ApiError ? e.code : e.message]),
    });
    expect(txid).toBe(TXID);
    expect(retries).toEqual([
      [1, 'ERR_TX_MEMPOOL_LIMIT'],
      [2, 'ERR_TX_INPUTS_MISSING'],
    ]);
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ tx: hex });
  });

  it('never resubmits a faulty transaction, and stops after maxAttempts', async () => {
    let posts = 0;
    handler = (_req, _b, res) => {
      posts++;
      apiError(res, 400, 'ERR_TX_REJECTED', false);
    };
    const hex = await signedHex();
    await expect(client().sendTransaction(hex, { initialDelayMs: 1 })).rejects.toMatchObject({ code: 'ERR_TX_REJECTED', retry: false });
    expect(posts).toBe(1);
    posts = 0;
    handler = (_req, _b, res) => {
      posts++;
      apiError(res, 503, 'ERR_NODE_UNAVAILABLE', true);
    };
    await expect(client().sendTransaction(hex, { initialDelayMs: 1, maxAttempts: 3 })).rejects.toMatchObject({
      code: 'ERR_NODE_UNAVAILABLE',
    });
    expect(posts).toBe(3);
    // Malformed bytes are refused before anything is sent.
    posts = 0;
    await expect(client().sendTransaction('0200')).rejects.toThrow(/The transaction does not decode/);
    expect(posts).toBe(0);
  });

  it('retries when nothing answers (connection refused) and reports a ConnectionError', async () => {
    const dead = new BlockwireClient({ url: 'http://127.0.0.1:1', apiKey: 'bw_test' });
    const errors: unknown[] = [];
    const err = await dead
      .sendTransaction(await signedHex(), { initialDelayMs: 1, maxAttempts: 2, onRetry: (e) => errors.push(e) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect(errors).toHaveLength(1);
  });
});

describe('http helpers', () => {
  it('parses Link and Retry-After headers', () => {
    expect(nextLink('</a?c=1>; rel="prev", </a?c=3>; rel="next"')).toBe('/a?c=3');
    expect(nextLink('<https://h/x>; rel=next')).toBe('https://h/x');
    expect(nextLink('</a>; rel="last"')).toBeNull();
    expect(nextLink(null)).toBeNull();
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(retryAfterMs('soon')).toBeUndefined();
  });
});
