/**
 * /v1/wallets through a whole stack on the devnode: creation from descriptors and a bare key,
 * the gap limit moving as addresses get used (mempool and blocks) — a payment to an address
 * the extension brings in is seen — balance, history with the wallet's amounts, unspent outputs
 * with paths, the address list, next-address with reservation (two checkouts never get the
 * same), a wallet created after its payments answers at once, tenancy and refusals.
 */
import { HDKey } from '@scure/bip32';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { waitFor } from '../../support/wait.js';
import { startStack, type Stack } from '../../support/stack.js';

const account = HDKey.fromMasterSeed(new Uint8Array(32).fill(7), bip32Versions('regtest')).derive("m/84'/1'/0'");
const DESC = `wpkh([${HDKey.fromMasterSeed(new Uint8Array(32).fill(7), bip32Versions('regtest')).fingerprint.toString(16).padStart(8, '0')}/84h/1h/0h]${account.publicExtendedKey}/<0;1>/*)`;

type Json = Record<string, unknown>;

describe('wallets API', () => {
  let s: Stack;
  const call = async (method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, key?: string) => {
    const res = await fetch(`${s.url}/v1${path}`, {
      method,
      headers: { apiKey: key ?? s.apiKey, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, link: res.headers.get('link') };
  };
  let wallet: Json;
  const addressAt = async (id: string, change: boolean, index: number) => {
    const r = await call('GET', `/wallets/${id}/addresses?change=${change}&limit=10000`);
    const a = (r.body as Json[]).find((x) => x.index === index);
    if (!a) throw new Error(`no address ${index} derived on ${change ? 'change' : 'receive'}`);
    return a.address as string;
  };

  beforeAll(async () => {
    s = await startStack({ stamping: false, worker: false });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('creates a wallet from a multipath descriptor: checksummed, two chains of gap_limit addresses', async () => {
    const r = await call('POST', '/wallets', { descriptors: [DESC], gap_limit: 5 });
    expect(r.status).toBe(201);
    wallet = r.body;
    expect(wallet.id).toMatch(/^wal_[0-9a-f]{20}$/);
    expect(wallet.descriptors).toEqual([expect.stringMatching(/^wpkh\(\[[0-9a-f]{8}\/84h\/1h\/0h\]tpub[^)]+\/<0;1>\/\*\)#[a-z0-9]{8}$/)]);
    expect(wallet.chains).toEqual([
      expect.objectContaining({ change: false, addresses: 5, last_used_index: null }),
      expect.objectContaining({ change: true, addresses: 5, last_used_index: null }),
    ]);
    const list = await call('GET', `/wallets/${wallet.id}/addresses`);
    expect((list.body as Json[]).map((a) => [a.change, a.index, a.path, a.used])).toEqual([
      ...[0, 1, 2, 3, 4].map((i) => [false, i, `m/84h/1h/0h/0/${i}`, false]),
      ...[0, 1, 2, 3, 4].map((i) => [true, i, `m/84h/1h/0h/1/${i}`, false]),
    ]);
  });

  it('a payment to the last address of the gap extends it at once (mempool), and the next one is seen', async () => {
    const id = wallet.id as string;
    const a4 = await addressAt(id, false, 4);
    const tx1 = await s.devnode.wallet.send(a4, 50_000n);
    await waitFor(
      'the receive chain extended to 10',
      async () => ((await call('GET', `/wallets/${id}`)).body.chains[0].addresses as number) === 10,
    );
    // The 6th receive address (index 5) exists only because index 4 was used; pay it.
    const a5 = await addressAt(id, false, 5);
    const tx2 = await s.devnode.wallet.send(a5, 70_000n);
    await waitFor(
      'both payments in the unconfirmed balance',
      async () => (await call('GET', `/wallets/${id}/balance`)).body.unconfirmed === 120_000,
    );
    expect((await call('GET', `/wallets/${id}/balance`)).body).toEqual({ confirmed: 0, unconfirmed: 120_000 });
    const h = await call('GET', `/wallets/${id}/history`);
    expect(new Set((h.body as Json[]).map((e) => e.transaction_hash))).toEqual(new Set([tx1, tx2]));
    expect((h.body as Json[]).every((e) => e.height === null && e.confirmations === 0 && e.sent === 0 && e.net === e.received)).toBe(true);

    await s.mine(1);
    expect((await call('GET', `/wallets/${id}/balance`)).body).toEqual({ confirmed: 120_000, unconfirmed: 0 });
    const hist = (await call('GET', `/wallets/${id}/history`)).body as Json[];
    expect(hist.map((e) => [e.transaction_hash, e.confirmations, e.net]).sort()).toEqual(
      [
        [tx1, 1, 50_000],
        [tx2, 1, 70_000],
      ].sort(),
    );
    const utxos = (await call('GET', `/wallets/${id}/unspentoutputs`)).body as Json[];
    expect(utxos.map((u) => [u.transaction_hash, u.value, u.address, u.path, u.change, u.address_index]).sort()).toEqual(
      [
        [tx1, 50_000, a4, 'm/84h/1h/0h/0/4', false, 4],
        [tx2, 70_000, a5, 'm/84h/1h/0h/0/5', false, 5],
      ].sort(),
    );
    expect((await call('GET', `/wallets/${id}`)).body.chains[0]).toMatchObject({ addresses: 11, last_used_index: 5 });
    const used = (await call('GET', `/wallets/${id}/addresses?used=true`)).body as Json[];
    expect(used.map((a) => a.index)).toEqual([4, 5]);
  });

  it('next-address: the lowest unused; reservations never hand the same address twice, even at once', async () => {
    const id = wallet.id as string;
    expect((await call('POST', `/wallets/${id}/next-address`, {})).body).toMatchObject({
      index: 0,
      change: false,
      path: 'm/84h/1h/0h/0/0',
    });
    const many = await Promise.all(Array.from({ length: 12 }, () => call('POST', `/wallets/${id}/next-address`, { reserve: true })));
    const got = many.map((r) => r.body.index as number).sort((a, b) => a - b);
    expect(got).toEqual([0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13]);
    // Reserving counts as use: the chain stays gap_limit past the last reservation.
    expect((await call('GET', `/wallets/${id}`)).body.chains[0]).toMatchObject({ last_used_index: 13, addresses: 19 });
    expect((await call('POST', `/wallets/${id}/next-address`, { change: true })).body).toMatchObject({
      index: 0,
      change: true,
      path: 'm/84h/1h/0h/1/0',
    });
  });

  it('next-address racing the wallet deletion answers 200 or 404 ERR_WALLET_NOT_FOUND, never 500', async () => {
    // The console asks each listed wallet's next address every few seconds: one deleted
    // meanwhile must answer as a missing wallet (a request that found the wallet before the
    // deletion took the wallet lock used to read no chain and fail with 500).
    const r = await call('POST', '/wallets', { descriptors: [DESC], gap_limit: 5 });
    const id = r.body.id as string;
    const asks = Array.from({ length: 16 }, () => call('POST', `/wallets/${id}/next-address`, { reserve: true }));
    const deleted = call('DELETE', `/wallets/${id}`);
    const later = Array.from({ length: 16 }, () => call('POST', `/wallets/${id}/next-address`, { reserve: true }));
    const answers = await Promise.all([...asks, ...later]);
    expect((await deleted).status).toBe(204);
    const outcomes = answers.map((a) => (a.status === 200 ? 200 : `${a.status} ${a.body.error_code as string}`));
    expect(outcomes.filter((o) => o !== 200 && o !== '404 ERR_WALLET_NOT_FOUND')).toEqual([]);
    expect(outcomes).toContain('404 ERR_WALLET_NOT_FOUND');
  });

  it('history and unspent outputs page by Link: one item a page gives the whole list, in order', async () => {
    const id = wallet.id as string;
    // one more payment, left in the mempool, so that pages cross from the mempool part to the chain part
    const a6 = await addressAt(id, false, 6);
    const tx3 = await s.devnode.wallet.send(a6, 20_000n);
    await waitFor('the mempool payment in the history', async () =>
      ((await call('GET', `/wallets/${id}/history`)).body as Json[]).some((e) => e.transaction_hash === tx3),
    );
    for (const list of ['history', 'unspentoutputs']) {
      const whole = (await call('GET', `/wallets/${id}/${list}?limit=1000`)).body as Json[];
      const paged: Json[] = [];
      let url: string | null = `/wallets/${id}/${list}?limit=1`;
      while (url) {
        const r = await call('GET', url);
        paged.push(...(r.body as Json[]));
        url = r.link ? /^<\/v1([^>]+)>; rel="next"$/.exec(r.link)![1]! : null;
      }
      expect(paged, list).toEqual(whole);
      expect(whole.length, list).toBe(list === 'history' ? 3 : 3);
    }
    await s.mine(1);
  });

  it('a wallet created after its payments answers at once, its gap extended past used addresses', async () => {
    const key = HDKey.fromMasterSeed(new Uint8Array(32).fill(9), bip32Versions('regtest')).derive("m/49'/1'/0'");
    // Pay indexes 3 and 7 of a key no wallet tracks yet (gap 4: 3 is inside the first gap, 7 only after it moved).
    const probe = await call('POST', '/wallets', { descriptors: [`sh(wpkh(${key.publicExtendedKey}/0/*))`], gap_limit: 20 });
    const a3 = await addressAt(probe.body.id, false, 3);
    const a7 = await addressAt(probe.body.id, false, 7);
    expect((await call('DELETE', `/wallets/${probe.body.id}`)).status).toBe(204);
    await s.devnode.wallet.send(a3, 30_000n);
    await s.devnode.wallet.send(a7, 40_000n);
    await s.mine(1);
    const r = await call('POST', '/wallets', { descriptors: [`sh(wpkh(${key.publicExtendedKey}/0/*))`], gap_limit: 4 });
    expect(r.status).toBe(201);
    expect(r.body.chains).toEqual([expect.objectContaining({ change: false, last_used_index: 7, addresses: 12 })]);
    expect((await call('GET', `/wallets/${r.body.id}/balance`)).body).toEqual({ confirmed: 70_000, unconfirmed: 0 });
  });

  it('a bare key maps to the descriptor its prefix implies (tpub → pkh); refusals; another key sees nothing', async () => {
    const vpubKey = HDKey.fromMasterSeed(new Uint8Array(32).fill(3), bip32Versions('regtest')).derive("m/84'/1'/0'");
    const r = await call('POST', '/wallets', { xpub: vpubKey.publicExtendedKey });
    expect(r.status).toBe(201);
    expect(r.body.descriptors[0]).toMatch(/^pkh\(tpub[^)]+\/<0;1>\/\*\)#/);
    expect(r.body.gap_limit).toBe(20);

    const bad = await call('POST', '/wallets', { descriptors: [`${DESC}#qqqqqqqq`] });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      error_code: 'ERR_INVALID_DESCRIPTOR',
      error_message: expect.stringMatching(/^Provided checksum 'qqqqqqqq' does not match computed checksum '[a-z0-9]{8}'$/),
    });
    expect((await call('POST', '/wallets', { descriptors: [DESC], gap_limit: 1001 })).body.error_code).toBe('ERR_INVALID_BODY');
    expect((await call('POST', '/wallets', {})).body.error_code).toBe('ERR_INVALID_BODY');

    const other = await s.newApiKey('other');
    for (const path of ['', '/balance', '/history', '/unspentoutputs', '/addresses']) {
      const x = await call('GET', `/wallets/${wallet.id}${path}`, undefined, other);
      expect([x.status, x.body.error_code]).toEqual([404, 'ERR_WALLET_NOT_FOUND']);
    }
    expect((await call('POST', `/wallets/${wallet.id}/next-address`, {}, other)).status).toBe(404);
    expect((await call('DELETE', `/wallets/${wallet.id}`, undefined, other)).status).toBe(404);
    expect((await call('GET', '/wallets', undefined, other)).body).toEqual([]);
  });
});
