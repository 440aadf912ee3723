/**
 * Every route's shape and every error path on a small hand-written index (mini-chain.ts):
 * mempool in balance/history/unspent with 0 confirmations, min_conf, the coinbase input, the
 * OP_RETURN `data`, `used`, `children`, unconfirmed `time: null`, the error bodies and statuses.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHarness, type ApiHarness } from './harness.js';
import { A, B, blockHash, blockTime, c0, c1, insertMiniChain, m1, t1 } from './mini-chain.js';
import { ERROR_CODES } from '../../../src/errors.js';
import { addressToScript, segwitAddress } from '../../../src/bitcoin/address.js';
import { addressKey } from '../../../src/db/address-key.js';
import { getBalanceParts, getBalancePartsMany } from '../../../api/queries/address.js';
import { findConfirmedTx, findConfirmedTxs } from '../../../api/queries/chain.js';

const hex = (b: Buffer) => Buffer.from(b).reverse().toString('hex');
const BTC = 100_000_000;

function expectError(r: { statusCode: number; json: () => unknown }, code: keyof typeof ERROR_CODES) {
  const info = ERROR_CODES[code];
  expect(r.statusCode).toBe(info.status);
  const body = r.json() as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(['error_cause', 'error_code', 'error_message', 'error_type', 'retry']);
  expect(body).toMatchObject({ error_code: code, error_type: info.type });
  expect(typeof body.error_message).toBe('string');
  expect(JSON.stringify(body)).not.toMatch(/at .*\.(ts|js):\d+/);
}

describe('api routes on a hand-written index', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await createApiHarness();
    await insertMiniChain(h.t.db);
  });
  afterAll(async () => h?.close());

  it('GET /blockchain', async () => {
    expect((await h.get('/v1/blockchain')).json()).toEqual({ best_block_hash: hex(blockHash[1]!), best_height: 1 });
  });

  it('GET /blocks/{hash}: parent, children, transaction_list, ISO time', async () => {
    const b0 = (await h.get(`/v1/blocks/${hex(blockHash[0]!)}`)).json();
    // (/v1 adds the header's fields: test/integration/api/core-reads.test.ts)
    expect(b0).toMatchObject({
      block_hash: hex(blockHash[0]!),
      height: 0,
      confirmation_time: new Date(blockTime[0]! * 1000).toISOString().replace('.000Z', 'Z'),
      parent: '0'.repeat(64),
      children: [hex(blockHash[1]!)],
      transaction_list: [c0.hex],
    });
    const b1 = (await h.get(`/v1/blocks/${hex(blockHash[1]!).toUpperCase()}`)).json();
    expect(b1).toMatchObject({ height: 1, parent: hex(blockHash[0]!), children: [], transaction_list: [c1.hex, t1.hex] });
  });

  it('balance includes the mempool; min_conf=1 leaves it out', async () => {
    expect((await h.get(`/v1/addresses/${A}/balance`)).json()).toEqual({ balance: 1_999_000_000 });
    expect((await h.get(`/v1/addresses/${A}/balance?min_conf=1`)).json()).toEqual({ balance: 0 });
    expect((await h.get(`/v1/addresses/${B}/balance`)).json()).toEqual({ balance: 7_999_990_000 });
    expect((await h.get(`/v1/addresses/${B}/balance?min_conf=1`)).json()).toEqual({ balance: 6_999_990_000 });
    expect((await h.get(`/v1/addresses/${B}/balance?min_conf=2`)).json()).toEqual({ balance: 0 });
  });

  it('history: newest first, mempool first; min_conf narrows it', async () => {
    expect((await h.get(`/v1/addresses/${A}/history`)).json()).toEqual([m1.hex, t1.hex, c0.hex]);
    expect((await h.get(`/v1/addresses/${B}/history`)).json()).toEqual([m1.hex, t1.hex, c1.hex]);
    expect((await h.get(`/v1/addresses/${A}/history?min_conf=1`)).json()).toEqual([t1.hex, c0.hex]);
    expect((await h.get(`/v1/addresses/${A}/history?min_conf=2`)).json()).toEqual([c0.hex]);
  });

  it('balance requests arriving together (one batched query) each get their own answer', async () => {
    const unused = segwitAddress(0, new Uint8Array(20).fill(7), 'regtest');
    const urls = [A, B, A, unused, B].map((a) => `/v1/addresses/${a}/balance`);
    const answers = await Promise.all(urls.map((u) => h.get(u)));
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.map((r) => r.json().balance)).toEqual([1_999_000_000, 7_999_990_000, 1_999_000_000, 0, 7_999_990_000]);
    const keys = [A, B, unused].map((a) => addressKey(addressToScript(a, 'regtest')));
    const many = await getBalancePartsMany(h.t.db, [...keys, keys[0]!]);
    const one = await Promise.all([...keys, keys[0]!].map((k) => getBalanceParts(h.t.db, k)));
    expect(many).toEqual(one);
    expect(many.map((p) => p.confirmed + p.mempool)).toEqual([1_999_000_000n, 7_999_990_000n, 0n, 1_999_000_000n]);
  });

  it('transaction requests arriving together (one batched query) each get their own answer', async () => {
    const unknown = '11'.repeat(32);
    const hashes = [t1.hex, c0.hex, m1.hex, unknown, c1.hex, t1.hex];
    const alone: { statusCode: number; body: string }[] = [];
    for (const x of hashes) alone.push(await h.get(`/v1/transactions/${x}`));
    const together = await Promise.all(hashes.map((x) => h.get(`/v1/transactions/${x}`)));
    expect(together.map((r) => r.statusCode)).toEqual([200, 200, 200, 404, 200, 200]);
    expect(together.map((r) => r.body)).toEqual(alone.map((r) => r.body));
    const txids = [t1.txid, c0.txid, Buffer.from(unknown, 'hex'), c1.txid, t1.txid].map((t) => Buffer.from(t));
    const many = await findConfirmedTxs(h.t.db, txids);
    expect(many).toEqual(await Promise.all(txids.map((t) => findConfirmedTx(h.t.db, t))));
    expect(many.map((r) => r?.txid.toString('hex'))).toEqual(
      [t1.txid, c0.txid, undefined, c1.txid, t1.txid].map((t) => t && Buffer.from(t).toString('hex')),
    );
  });

  it('unspent outputs: mempool with 0 confirmations, mempool-spent outputs left out; sum = balance', async () => {
    const a = (await h.get(`/v1/addresses/${A}/unspentoutputs`)).json();
    expect(a).toEqual([{ transaction_hash: m1.hex, index: 1, value: String(1_999_000_000), script: '0014' + A_PROGRAM, confirmations: 0 }]);
    const b = (await h.get(`/v1/addresses/${B}/unspentoutputs`)).json() as {
      value: string;
      confirmations: number;
      transaction_hash: string;
      index: number;
    }[];
    expect(b.map((u) => [u.transaction_hash, u.index, u.confirmations])).toEqual([
      [m1.hex, 0, 0],
      [t1.hex, 1, 1],
      [c1.hex, 0, 1],
    ]);
    expect(b.reduce((s, u) => s + Number(u.value), 0)).toBe(7_999_990_000);
    expect((await h.get(`/v1/addresses/${A}/unspentoutputs?min_conf=1`)).json()).toEqual([]);
  });

  it('paging: limit and Link rel="next" walk the whole list across the mempool/chain seam', async () => {
    for (const kind of ['history', 'unspentoutputs']) {
      const full = (await h.get(`/v1/addresses/${B}/${kind}`)).json() as unknown[];
      const seen: unknown[] = [];
      let url: string | undefined = `/v1/addresses/${B}/${kind}?limit=1`;
      while (url) {
        const r = await h.get(url);
        expect(r.statusCode).toBe(200);
        const page = r.json() as unknown[];
        expect(Array.isArray(page)).toBe(true);
        seen.push(...page);
        const link = r.headers.link as string | undefined;
        url = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
        if (url) expect(url.startsWith(`/v1/addresses/${B}/${kind}?`)).toBe(true);
      }
      expect(seen).toEqual(full);
      expect(seen.length).toBe(3);
    }
  });

  it('a confirmed transaction: inputs with prevout address/value, used flags, OP_RETURN data', async () => {
    const r = (await h.get(`/v1/transactions/${t1.hex}`)).json();
    expect(r).toEqual({
      transaction_hash: t1.hex,
      block_hash: [{ block_hash: hex(blockHash[1]!), block_height: 1 }],
      coinbase: false,
      inputs: [{ transaction_hash: c0.hex, output_index: 0, address: [A], value: String(50 * BTC) }],
      outputs: [
        { index: 0, address: [A], script: '0014' + A_PROGRAM, value: String(30 * BTC), used: true },
        { index: 1, address: [B], script: expect.stringMatching(/^76a914[0-9a-f]{40}88ac$/), value: String(1_999_990_000), used: false },
        { index: 2, address: [], script: '6a0568656c6c6f', value: '0', used: false, data: Buffer.from('hello').toString('hex') },
      ],
      time: new Date(blockTime[1]! * 1000).toISOString().replace('.000Z', 'Z'),
      broadcast_time: '2023-11-14T22:15:00Z',
      addresses: [A, B],
      // /v1: the fee from the index; sizes need the node's bytes (no node here: null)
      fee: 10_000,
      fee_rate: null,
      size: null,
      vsize: null,
      weight: null,
      replaceable: false,
      bip125_replaceable: false,
    });
  });

  it('outspends: a confirmed output spent by a confirmed transaction (the spends index)', async () => {
    const r = await h.get(`/v1/transactions/${c0.hex}/outspends`);
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject([{ spent: true, txid: t1.hex, vin: 0, status: { confirmed: true, block_height: 1 } }]);
  });

  it("a coinbase transaction: the spec's coinbase input and the year-0001 broadcast_time", async () => {
    const r = (await h.get(`/v1/transactions/${c0.hex}`)).json();
    expect(r).toMatchObject({
      coinbase: true,
      inputs: [{ transaction_hash: '0'.repeat(64), output_index: -1, address: [], value: '' }],
      outputs: [{ index: 0, address: [A], value: String(50 * BTC), used: true }],
      broadcast_time: '0001-01-01T00:00:00Z',
      addresses: [A],
    });
  });

  it('a mempool transaction: time null, no block, broadcast_time = first seen', async () => {
    const r = (await h.get(`/v1/transactions/${m1.hex}`)).json();
    expect(r).toMatchObject({
      transaction_hash: m1.hex,
      block_hash: [],
      coinbase: false,
      time: null,
      broadcast_time: '2026-01-02T03:04:05Z',
      inputs: [{ transaction_hash: t1.hex, output_index: 0, address: [A], value: String(30 * BTC) }],
      outputs: [
        { index: 0, address: [B], value: String(10 * BTC), used: false },
        { index: 1, address: [A], value: String(1_999_000_000), used: false },
      ],
      addresses: [A, B],
    });
  });

  describe('error paths', () => {
    it('malformed hashes → 400 ERR_INVALID_HASH, before the database', async () => {
      for (const bad of ['zz', 'ab'.repeat(31), 'ab'.repeat(33), 'g'.repeat(64), '%20'.repeat(3)]) {
        expectError(await h.get(`/v1/blocks/${bad}`), 'ERR_INVALID_HASH');
        expectError(await h.get(`/v1/transactions/${bad}`), 'ERR_INVALID_HASH');
      }
    });
    it('unknown hashes → 404', async () => {
      expectError(await h.get(`/v1/blocks/${'ab'.repeat(32)}`), 'ERR_BLOCK_NOT_FOUND');
      expectError(await h.get(`/v1/transactions/${'ab'.repeat(32)}`), 'ERR_TX_NOT_FOUND');
    });
    it('bad address → 400 ERR_INVALID_ADDRESS; another network → 400 ERR_WRONG_NETWORK', async () => {
      const badChecksum = A.slice(0, -1) + (A.endsWith('8') ? '9' : '8');
      for (const bad of ['hello', badChecksum, 'bcrt1qqqqq', '1'.repeat(40), A.toUpperCase().slice(0, 20) + A.slice(20)]) {
        for (const kind of ['balance', 'history', 'unspentoutputs'])
          expectError(await h.get(`/v1/addresses/${encodeURIComponent(bad)}/${kind}`), 'ERR_INVALID_ADDRESS');
      }
      for (const other of [
        'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq',
        'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx',
        '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2',
      ]) {
        const r = await h.get(`/v1/addresses/${other}/balance`);
        expectError(r, 'ERR_WRONG_NETWORK');
      }
    });
    it('valid address without transactions → balance 0, empty history and unspent outputs', async () => {
      const fresh = 'bcrt1qa5pzh3yzt94etaygkd4zlxkru7kkl6ssecgx6n';
      const answers = await Promise.all(['balance', 'history', 'unspentoutputs'].map((kind) => h.get(`/v1/addresses/${fresh}/${kind}`)));
      expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      expect(answers.map((r) => r.json())).toEqual([{ balance: 0 }, [], []]);
      expect(answers.map((r) => r.headers.link)).toEqual([undefined, undefined, undefined]);
    });
    it('paging parameters out of range or forged → 400', async () => {
      expectError(await h.get(`/v1/addresses/${A}/history?limit=0`), 'ERR_INVALID_PARAMETER');
      expectError(await h.get(`/v1/addresses/${A}/history?limit=10001`), 'ERR_INVALID_PARAMETER');
      expectError(await h.get(`/v1/addresses/${A}/history?limit=abc`), 'ERR_INVALID_PARAMETER');
      expectError(await h.get(`/v1/addresses/${A}/history?min_conf=-1`), 'ERR_INVALID_PARAMETER');
      expectError(await h.get(`/v1/addresses/${A}/history?bogus=1`), 'ERR_INVALID_PARAMETER');
      expectError(await h.get(`/v1/addresses/${A}/history?cursor=nope`), 'ERR_INVALID_CURSOR');
      const r = await h.get(`/v1/addresses/${B}/unspentoutputs?limit=1`);
      const cursor = /cursor=([^&>]+)/.exec(r.headers.link as string)![1]!;
      expectError(await h.get(`/v1/addresses/${B}/history?cursor=${cursor}`), 'ERR_INVALID_CURSOR');
    });
    it('unknown route → 404 ERR_ROUTE_NOT_FOUND', async () => {
      expectError(await h.get('/v1/nothing-here'), 'ERR_ROUTE_NOT_FOUND');
    });
    it('oversized body → 413; bad JSON → 400; wrong content type → 415; unknown field → 400', async () => {
      const post = (payload: string, type = 'application/json', url = '/v1/stamps') =>
        h.app.inject({ method: 'POST', url, headers: { apiKey: h.key, 'content-type': type }, payload });
      expectError(await post(JSON.stringify({ hash: 'a'.repeat(64), pad: 'x'.repeat(70_000) })), 'ERR_BODY_TOO_LARGE');
      expectError(await post(JSON.stringify({ tx: 'ab'.repeat(1_100_000) }), 'application/json', '/v1/transactions'), 'ERR_BODY_TOO_LARGE');
      expectError(await post('{"hash":'), 'ERR_INVALID_JSON');
      expectError(await post('hash=1', 'application/x-www-form-urlencoded'), 'ERR_UNSUPPORTED_MEDIA_TYPE');
      expectError(await post(JSON.stringify({ hash: 'a'.repeat(64), extra: 1 })), 'ERR_INVALID_BODY');
      expectError(await post(JSON.stringify({ hash: 'xyz' })), 'ERR_INVALID_BODY');
    });
    it('stamping without a service → 503; malformed stamp id → 400', async () => {
      expectError(
        await h.app.inject({ method: 'POST', url: '/v1/stamps', headers: { apiKey: h.key }, payload: { hash: 'a'.repeat(64) } }),
        'ERR_STAMPING_NOT_CONFIGURED',
      );
      expectError(await h.get('/v1/stamps/nope'), 'ERR_INVALID_STAMP_ID');
      expectError(await h.get(`/v1/stamps/${'a'.repeat(64)}-0`), 'ERR_STAMPING_NOT_CONFIGURED');
    });
    it('broadcast without a node → 503 ERR_NODE_UNAVAILABLE (retry); undecodable → 400 ERR_TX_DECODE', async () => {
      const r = await h.app.inject({
        method: 'POST',
        url: '/v1/transactions',
        headers: { apiKey: h.key },
        payload: { tx: m1.raw.toString('hex') },
      });
      expectError(r, 'ERR_NODE_UNAVAILABLE');
      expect(r.json()).toMatchObject({ retry: true });
      expectError(
        await h.app.inject({ method: 'POST', url: '/v1/transactions', headers: { apiKey: h.key }, payload: { tx: '00' } }),
        'ERR_TX_DECODE',
      );
    });
    it('a read-only key cannot broadcast or stamp (403), but can read', async () => {
      const readKey = await h.newKey({ scopes: ['read'] });
      expect((await h.get('/v1/blockchain', readKey)).statusCode).toBe(200);
      expectError(
        await h.app.inject({ method: 'POST', url: '/v1/transactions', headers: { apiKey: readKey }, payload: { tx: '00' } }),
        'ERR_SCOPE',
      );
      expectError(
        await h.app.inject({ method: 'POST', url: '/v1/stamps', headers: { apiKey: readKey }, payload: { hash: 'a'.repeat(64) } }),
        'ERR_SCOPE',
      );
    });
  });

  it('/openapi.json describes every route with its parameters and responses', async () => {
    const doc = (await h.get('/openapi.json', null)).json() as {
      openapi: string;
      paths: Record<string, Record<string, { parameters: { name: string }[]; responses: Record<string, unknown>; security: unknown[] }>>;
    };
    expect(doc.openapi).toBe('3.0.3');
    const expected = [
      ['get', '/blockchain'],
      ['get', '/blocks/{hash}'],
      ['get', '/addresses/{address}/balance'],
      ['get', '/addresses/{address}/history'],
      ['get', '/addresses/{address}/unspentoutputs'],
      ['get', '/transactions/{hash}'],
      ['post', '/transactions'],
      ['post', '/stamps'],
      ['get', '/stamps/{id}'],
    ];
    for (const [method, path] of expected) {
      const op = doc.paths[`/v1${path}`]?.[method!];
      expect(op, `${method} /v1${path}`).toBeDefined();
      expect(op!.responses['200']).toBeDefined();
      expect(op!.security).toEqual([{ apiKey: [] }]);
      // the bare paths speak Coinstack's dialect, described in docs/coinstack.md
      expect(doc.paths[path!], path).toBeUndefined();
    }
    expect(doc.paths['/v1/addresses/{address}/history']!.get!.parameters.map((p) => p.name).sort()).toEqual([
      'address',
      'cursor',
      'limit',
      'min_conf',
    ]);
    expect(doc.paths['/healthz']!.get!.security).toEqual([]);
  });

  it('/healthz reports the index tip; /readyz is 200 without a node to wait for', async () => {
    const r = await h.get('/healthz', null);
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ status: 'ok', index: { height: 1, hash: hex(blockHash[1]!) }, node: null, lag: null });
    expect((await h.get('/readyz', null)).statusCode).toBe(200);
  });
});

const A_PROGRAM = '9d128e23bbbf26cd547797fe22bda8073e3e5ced';
