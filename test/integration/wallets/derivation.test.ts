/**
 * Wallet derivation off the event loop (docs/wallets.md "Derivation threads"), on a real API
 * listening on 127.0.0.1: while a large wallet is created, the process's event loop keeps
 * turning (perf_hooks' event-loop delay stays a small part of the creation's own time) and
 * another key's requests are answered meanwhile; a creation over API_WALLET_MAX_DERIVATIONS is
 * refused before any work (422 ERR_WALLET_TOO_LARGE in the dialect's body); a creation that
 * times out (API_REQUEST_TIMEOUT_MS) or whose client goes away has its derivation thread
 * terminated and stores nothing.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { HDKey } from '@scure/bip32';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { walletDerivePool } from '../../../src/db/wallet-derive-pool.js';
import { createApiHarness, type ApiHarness } from '../api/harness.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';

const versions = bip32Versions('regtest');
const tpubs = Array.from(
  { length: 16 },
  (_, i) => HDKey.fromMasterSeed(new Uint8Array(32).fill(i + 1), versions).derive("m/48'/1'/0'/2'").publicExtendedKey,
);
/** A multipath `wsh(sortedmulti(1, n keys))`: each address costs n child keys, on two chains. */
const multisig = (n: number, offset = 0) =>
  `wsh(sortedmulti(1,${tpubs
    .slice(offset, offset + n)
    .map((k) => `${k}/<0;1>/*`)
    .join(',')}))`;

type Json = Record<string, unknown>;

describe('wallet derivation runs in worker threads, bounded per request', () => {
  let t: TestDatabase;
  let h: ApiHarness;
  let slow: ApiHarness;
  let url: string;
  let slowUrl: string;

  beforeAll(async () => {
    t = await createMigratedDatabase('derive');
    // Generous: the first derivation starts the threads, seconds on a loaded machine.
    h = await createApiHarness({ settings: { requestTimeoutMs: 300_000 } }, t);
    // Same database, a second API whose requests time out after 1 s.
    slow = await createApiHarness({ settings: { requestTimeoutMs: 1000 } }, t);
    url = await h.app.listen({ host: '127.0.0.1', port: 0 });
    slowUrl = await slow.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await slow?.close();
    await h?.close();
    await t?.drop();
  });

  const post = (base: string, key: string, path: string, body: unknown, signal?: AbortSignal) =>
    fetch(`${base}/v1${path}`, {
      method: 'POST',
      headers: { apiKey: key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
  const walletCount = async (key: string) =>
    ((await (await fetch(`${url}/v1/wallets`, { headers: { apiKey: key } })).json()) as unknown[]).length;

  it('a large creation leaves the event loop free: another key is answered meanwhile', async () => {
    const a = await h.newKey({ name: 'a' });
    const b = await h.newKey({ name: 'b' });
    const histogram = monitorEventLoopDelay({ resolution: 10 });
    histogram.enable();
    const started = performance.now();
    let finished = 0;
    // 8 keys × 2 chains × 250 = 4,000 child keys: seconds of CPU.
    const creation = post(url, a, '/wallets', { descriptors: [multisig(8)], gap_limit: 250 }).then(async (r) => {
      finished = performance.now();
      return { status: r.status, body: (await r.json()) as Json };
    });
    const during: number[] = [];
    while (finished === 0) {
      const r = await fetch(`${url}/v1/blockchain`, { headers: { apiKey: b } });
      await r.text();
      if (finished === 0) during.push(r.status);
    }
    const created = await creation;
    histogram.disable();
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((created.body.chains as Json[]).map((c) => c.addresses)).toEqual([250, 250]);
    // Key B's requests were answered (503 ERR_INDEX_SYNCING: nothing is indexed here) while A's
    // creation ran, and no stall of the loop came near the creation's time: before derivation
    // moved to threads, one stall was the whole derivation.
    expect(during.length).toBeGreaterThanOrEqual(5);
    expect(new Set(during)).toEqual(new Set([503]));
    const took = finished - started;
    expect(histogram.max / 1e6, `longest event-loop stall vs creation of ${Math.round(took)} ms`).toBeLessThan(took / 4);
  });

  it('a creation over API_WALLET_MAX_DERIVATIONS is refused before any work: 422 ERR_WALLET_TOO_LARGE', async () => {
    const a = await h.newKey({ name: 'cap' });
    const before = walletDerivePool().status();
    // 20 descriptors × 16 keys × 2 chains × 1,000 = 640,000 child keys (the probe's 11-minute freeze).
    const descriptors = Array.from(
      { length: 20 },
      (_, i) =>
        `wsh(${i < 16 ? 'multi' : 'sortedmulti'}(1,${[...tpubs.slice(i % 16), ...tpubs.slice(0, i % 16)].map((k) => `${k}/<0;1>/*`).join(',')}))`,
    );
    const r = await post(url, a, '/wallets', { descriptors, gap_limit: 1000 });
    const body = (await r.json()) as Json;
    expect(r.status, JSON.stringify(body)).toBe(422);
    expect(body).toMatchObject({ error_type: 'invalid_request', error_code: 'ERR_WALLET_TOO_LARGE', retry: false });
    expect(body.error_message).toMatch(/640000 child keys .* limit of 20000 \(API_WALLET_MAX_DERIVATIONS\)/);
    // A bare xpub at the largest gap limit (2 × 1,000) is within it.
    const xpub = await post(url, a, '/wallets', { xpub: tpubs[0], gap_limit: 1000 });
    expect(xpub.status).toBe(201);
    expect(walletDerivePool().status().terminated).toBe(before.terminated);
    expect(await walletCount(a)).toBe(1);
  });

  it('a creation past API_REQUEST_TIMEOUT_MS answers 503 and its derivation thread is terminated', async () => {
    const a = await slow.newKey({ name: 'timeout' });
    const before = walletDerivePool().status().terminated;
    // 16 keys × 2 × 600 = 19,200 child keys: far more than 1 s of a thread.
    const r = await post(slowUrl, a, '/wallets', { descriptors: [multisig(16)], gap_limit: 600 });
    expect(r.status).toBe(503);
    expect(((await r.json()) as Json).error_code).toBe('ERR_REQUEST_TIMEOUT');
    await waitFor('the derivation thread terminated', () => walletDerivePool().status().terminated > before);
    await waitFor('no derivation running', () => walletDerivePool().status().busy === 0 && walletDerivePool().status().waiting === 0);
    expect(await walletCount(a)).toBe(0);
  });

  it('a client that goes away has its derivation thread terminated', async () => {
    const a = await h.newKey({ name: 'gone' });
    const before = walletDerivePool().status().terminated;
    const ac = new AbortController();
    const creation = post(url, a, '/wallets', { descriptors: [multisig(16)], gap_limit: 600 }, ac.signal).catch((err: Error) => err);
    await waitFor('the derivation running', () => walletDerivePool().status().busy > 0);
    ac.abort();
    expect(await creation).toBeInstanceOf(Error);
    await waitFor('the derivation thread terminated', () => walletDerivePool().status().terminated > before);
    await waitFor('no derivation running', () => walletDerivePool().status().busy === 0 && walletDerivePool().status().waiting === 0);
    expect(await walletCount(a)).toBe(0);
  });
});
