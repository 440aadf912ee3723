/**
 * The Coinstack dialect's answers on a hand-written index (test/integration/api/mini-chain.ts),
 * each as coinstackd writes it (restserver.go, model.go), and what the Java SDK
 * (shepelt/coinstack-sdk-java CoreBackEndAdaptor) relies on, at the HTTP level: its signing (host
 * without port, joda timestamps, no Content-Type on GET and on POST /transactions and
 * /subscriptions), the fields it reads with getString/getInt/getLong/getBoolean/getJSONArray,
 * exactly 200 on success, DELETE /subscriptions answered 200 with a body, and every error body
 * holding error_type, an integer error_code, error_message and retry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { createApiHarness, type ApiHarness } from '../api/harness.js';
import { A, B, blockHash, blockTime, c0, c1, insertMiniChain, m1, t1 } from '../api/mini-chain.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { newServerKeyLine, parseKeyring } from '../../../src/auth/secret-box.js';
import { javaHeaders } from './sign.js';

const ring = parseKeyring(newServerKeyLine());
const hex = (b: Buffer) => Buffer.from(b).reverse().toString('hex');
const internal = (display: string) => Buffer.from(display, 'hex').reverse().toString('hex');
const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');
const BTC = 100_000_000;

/** What the Java SDK's processError needs of every error body (else InvalidResponseException). */
function expectCoinstackError(r: LightMyRequestResponse, status: number, code: number, cause?: string) {
  expect(r.statusCode, r.body).toBe(status);
  const b = r.json() as Record<string, unknown>;
  expect(Object.keys(b).slice(0, 4)).toEqual(['error_type', 'error_code', 'error_message', 'retry']);
  expect(typeof b.error_type).toBe('string');
  expect(Number.isInteger(b.error_code)).toBe(true);
  expect(b.error_code).toBe(code);
  expect(typeof b.error_message).toBe('string');
  expect(typeof b.retry).toBe('boolean');
  if (cause !== undefined) expect(b.error_cause).toBe(cause);
  return b;
}

describe('the Coinstack dialect on a hand-written index', () => {
  let h: ApiHarness;
  let access: string;
  let secret: string;
  const host = 'blockwire.example:3000';
  const get = (url: string) => h.app.inject({ method: 'GET', url, headers: { apikey: h.key } });
  const java = (method: 'GET' | 'POST' | 'DELETE', path: string, body?: string) =>
    h.app.inject({
      method,
      url: path,
      headers: javaHeaders(access, secret, { method, host, path, ...(body !== undefined ? { body } : {}) }),
      ...(body !== undefined ? { payload: body } : {}),
    });

  beforeAll(async () => {
    // (the hooks' host resolves to a public address without asking DNS)
    h = await createApiHarness({
      keyring: () => ring,
      hookUrls: { allowPrivate: false, resolve: async () => [{ address: '93.184.216.34', family: 4 }] },
    });
    await insertMiniChain(h.t.db);
    const k = await createApiKey(h.t.db, { name: 'java', secret: { keyring: ring } });
    access = k.key;
    secret = k.secret!;
  });
  afterAll(async () => h?.close());

  it('GET /blocks/{hash}: model.go Block, children only below the tip; Java reads children[0], parent, confirmation_time', async () => {
    const b0 = await java('GET', `/blocks/${hex(blockHash[0]!)}`);
    expect(b0.statusCode).toBe(200);
    expect(b0.body).toBe(
      JSON.stringify({
        block_hash: hex(blockHash[0]!),
        height: 0,
        confirmation_time: iso(blockTime[0]!),
        parent: '0'.repeat(64),
        children: [hex(blockHash[1]!)],
        transaction_list: [c0.hex],
      }),
    );
    const b1 = (await get(`/blocks/${hex(blockHash[1]!)}`)).json();
    expect(b1).toEqual({
      block_hash: hex(blockHash[1]!),
      height: 1,
      confirmation_time: iso(blockTime[1]!),
      parent: hex(blockHash[0]!),
      transaction_list: [c1.hex, t1.hex],
    });
    expectCoinstackError(await get(`/blocks/${'ab'.repeat(32)}`), 404, 3003, 'Requested block not found.');
    expectCoinstackError(await get('/blocks/xyz'), 404, 3003, 'Requested block not found.');
    expect((await get(`/blocks/height/1`)).json()).toEqual([hex(blockHash[1]!)]);
    expectCoinstackError(await get('/blocks/height/9'), 404, 3003);
    expectCoinstackError(await get('/blocks/height/x'), 400, 3004);
    expect((await get(`/blocks/${hex(blockHash[1]!)}/transactions`)).json()).toEqual([c1.hex, t1.hex]);
    expectCoinstackError(await get(`/blocks/${hex(blockHash[1]!)}/other`), 404, 3003, 'not found');
  });

  it('GET /transactions/{hash}: model.go Transaction; Java reads input address[0], values as longs, used, time', async () => {
    const r = await java('GET', `/transactions/${t1.hex}`);
    expect(r.statusCode).toBe(200);
    expect(r.body).toBe(
      JSON.stringify({
        transaction_hash: t1.hex,
        block_hash: [{ block_hash: hex(blockHash[1]!), block_height: 1 }],
        coinbase: false,
        is_deleted: false,
        inputs: [{ transaction_hash: c0.hex, output_index: 0, address: [A], value: String(50 * BTC) }],
        outputs: [
          {
            index: 0,
            address: [A],
            value: String(30 * BTC),
            script: (r.json() as { outputs: { script: string }[] }).outputs[0]!.script,
            used: true,
          },
          {
            index: 1,
            address: [B],
            value: '1999990000',
            script: (r.json() as { outputs: { script: string }[] }).outputs[1]!.script,
            used: false,
          },
          { index: 2, value: '0', script: '6a0568656c6c6f', used: false },
        ],
        time: iso(blockTime[1]!),
        addresses: [A, B],
      }),
    );
    const coinbase = (await get(`/transactions/${c0.hex}`)).json();
    expect(coinbase).toMatchObject({ coinbase: true, inputs: [], addresses: [A] });
    const mempool = (await get(`/transactions/${m1.hex}`)).json() as { block_hash: unknown[]; time: string };
    expect(mempool.block_hash).toEqual([]);
    expect(Math.abs(Date.parse(mempool.time) - Date.now())).toBeLessThan(600_000);
    expect(mempool).not.toHaveProperty('broadcast_time');
    expectCoinstackError(await get(`/transactions/${'cd'.repeat(32)}`), 404, 3003, 'Requested transaction not found.');
    expectCoinstackError(await get('/transactions/12'), 404, 3003, 'Requested transaction not found.');
    // ?format=hex of a mempool transaction: its bytes, as text
    const raw = await get(`/transactions/${m1.hex}?format=hex`);
    expect(raw.headers['content-type']).toMatch(/^text\/plain/);
    expect(raw.body).toBe(m1.raw.toString('hex'));
  });

  it('balance: a number (Java getLong); immature coinbase outputs left out; a never-used address 0', async () => {
    // B: c1 (a coinbase with 1 confirmation) is not spendable yet; t1:1 and m1:0 are
    expect((await java('GET', `/addresses/${B}/balance`)).json()).toEqual({ balance: 1_999_990_000 + 10 * BTC });
    expect((await get(`/v1/addresses/${B}/balance`)).json()).toEqual({ balance: 7_999_990_000 });
    expect((await get(`/addresses/${A}/balance`)).json()).toEqual({ balance: 1_999_000_000 });
    expect((await get('/addresses/bcrt1qa5pzh3yzt94etaygkd4zlxkru7kkl6ssecgx6n/balance')).json()).toEqual({ balance: 0 });
    expectCoinstackError(await get('/addresses/nope/balance'), 400, 3004);
  });

  it('unspent outputs: internal byte order, mempool first, immature coinbase and mempool-spent outputs left out, amount', async () => {
    const b = (await java('GET', `/addresses/${B}/unspentoutputs`)).json() as {
      transaction_hash: string;
      index: number;
      value: string;
      confirmations: number;
      script: string;
    }[];
    expect(b.map((u) => [u.transaction_hash, u.index, u.value, u.confirmations])).toEqual([
      [internal(m1.hex), 0, String(10 * BTC), 0],
      [internal(t1.hex), 1, '1999990000', 1],
    ]);
    expect(Object.keys(b[0]!)).toEqual(['transaction_hash', 'index', 'value', 'script', 'confirmations']);
    // A's t1:0 is spent by m1 in the mempool
    expect(((await get(`/addresses/${A}/unspentoutputs`)).json() as { transaction_hash: string }[]).map((u) => u.transaction_hash)).toEqual(
      [internal(m1.hex)],
    );
    // amount: stop once the running sum reaches it
    expect((await get(`/addresses/${B}/unspentoutputs?amount=5`)).json()).toHaveLength(1);
    expect((await get(`/addresses/${B}/unspentoutputs?amount=${10 * BTC + 1}`)).json()).toHaveLength(2);
    expect((await get(`/addresses/${B}/unspentoutputs?amount=junk`)).json()).toHaveLength(2);
    expect((await get('/addresses/bcrt1qa5pzh3yzt94etaygkd4zlxkru7kkl6ssecgx6n/unspentoutputs')).json()).toEqual([]);
  });

  it('history: mempool first then newest first; skip, limit and confirmed as coinstackd reads them', async () => {
    const all = [m1.hex, t1.hex, c0.hex];
    expect((await java('GET', `/addresses/${A}/history`)).json()).toEqual(all);
    expect((await get(`/addresses/${A}/history?skip=1`)).json()).toEqual(all.slice(1));
    expect((await get(`/addresses/${A}/history?skip=2&limit=1`)).json()).toEqual([c0.hex]);
    expect((await get(`/addresses/${A}/history?limit=1`)).json()).toEqual([m1.hex]);
    expect((await get(`/addresses/${A}/history?limit=0`)).json()).toEqual([]);
    expect((await get(`/addresses/${A}/history?limit=-5`)).json()).toEqual(all);
    expect((await get(`/addresses/${A}/history?confirmed=1`)).json()).toEqual([t1.hex, c0.hex]);
    expect((await get(`/addresses/${A}/history?confirmed=0`)).json()).toEqual([m1.hex]);
    expect((await get(`/addresses/${A}/history?skip=9`)).json()).toEqual([]);
    expect((await get(`/addresses/${A}/history?skip=x&limit=y&confirmed=z`)).json()).toEqual(all);
    expectCoinstackError(await get(`/addresses/${A}/history?skip=-1`), 400, 3004, 'skip count must be greater than zero');
    expect((await get('/addresses/bcrt1qa5pzh3yzt94etaygkd4zlxkru7kkl6ssecgx6n/history')).json()).toEqual([]);
  });

  it('POST /transactions without a Content-Type (Java): the body is read as JSON; errors as CoinStackError', async () => {
    // no node in this harness: the broadcast is answered 503 ServerUnavailable once the body was read
    expectCoinstackError(await java('POST', '/transactions', JSON.stringify({ tx: t1.raw.toString('hex') })), 503, 4002);
    expectCoinstackError(await java('POST', '/transactions', JSON.stringify({ tx: 'zz' })), 400, 3004);
    expectCoinstackError(await java('POST', '/transactions', '{"tx":'), 400, 3004);
    expectCoinstackError(await java('POST', '/transactions', JSON.stringify({ tx: '00' })), 400, 3004);
  });

  it('subscriptions as the Java SDK sends them: POST {action, address} without Content-Type → 200 {id}; GET items; DELETE → 200 with a body', async () => {
    // the action: a hook of the same key, made with a signed request (hooks are Blockwire's own)
    const hookRes = await java('POST', '/hooks', JSON.stringify({ type: 'http', url: 'https://hooks.example.com/java' }));
    expect(hookRes.statusCode).toBe(201);
    const hook = hookRes.json() as { id: string };
    const otherHook = (
      await h.app.inject({
        method: 'POST',
        url: '/v1/hooks',
        headers: { apiKey: h.key },
        payload: { type: 'http', url: 'https://hooks.example.com/other' },
      })
    ).json() as { id: string };
    const created = await java('POST', '/subscriptions', JSON.stringify({ action: hook.id, address: A }));
    expect(created.statusCode).toBe(200);
    const id = (created.json() as { id: string }).id;
    expect(typeof id).toBe('string');
    // another key's hook is no action of this key
    expectCoinstackError(
      await java('POST', '/subscriptions', JSON.stringify({ action: otherHook.id, address: A })),
      404,
      3003,
      'Requested action not found.',
    );
    const list = await java('GET', '/subscriptions');
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual([{ id, address: A, action: hook.id }]);
    const deleted = await java('DELETE', `/subscriptions/${id}`);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.body.length).toBeGreaterThan(0);
    expect((await java('GET', '/subscriptions')).json()).toEqual([]);
    expectCoinstackError(await java('DELETE', `/subscriptions/${id}`), 404, 3003);
    expectCoinstackError(await java('POST', '/subscriptions', JSON.stringify({ action: null, address: 'nope' })), 400, 3004);
  });

  it('routes coinstackd has and Blockwire does not serve answer its error shape; unknown paths its plain 404', async () => {
    expectCoinstackError(await get(`/contracts/${A}/status`), 500, 4001, 'smart contract is not enabled');
    expect(
      await h.app
        .inject({
          method: 'POST',
          url: `/contracts/${A}/query`,
          headers: { apikey: h.key },
          payload: { query: { type: 'LSC', body: 'eA==' } },
        })
        .then((r) => r.statusCode),
    ).toBe(500);
    expect((await get(`/contracts/${A}/grantees`)).json()).toEqual([]);
    const source = await get(`/contracts/${A}/source`);
    expect(source.statusCode).toBe(500);
    expect(source.body).toBe(
      'error_code:4001\nerror_message:The server encountered an internal error trying to fulfill the request.\nerror_cause:smart contract is not enabled',
    );
    expectCoinstackError(await get('/contracts/whatever'), 404, 3003, 'not found');
    for (const p of ['/aliases', '/aliases/x', '/roles', '/roles/enabled', `/roles/${A}`]) {
      expectCoinstackError(await get(p), 503, 4002, 'Permission is not supported. Set privnetnodekey to use permission.');
    }
    const unknown = await get('/nothing/here');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['content-type']).toMatch(/^text\/plain/);
    expect(unknown.body).toBe('404 page not found');
    // /v1 keeps its own answers
    expect((await h.app.inject({ method: 'GET', url: '/v1/nothing', headers: { apiKey: h.key } })).json()).toMatchObject({
      error_code: 'ERR_ROUTE_NOT_FOUND',
    });
  });
});
