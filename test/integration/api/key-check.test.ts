/**
 * Key checks alongside a read route (api/key-check.ts): for a key the process verified
 * before, the address routes, a wallet's balance and a transaction lookup run while its revocation check does, and nothing — data, 404, 400
 * or 429 — leaves before that check has passed; a refused key gets the ordinary 401 with no
 * rate-limit or Link header. Routes with side effects still check first. Then the real thing:
 * startApi's cached verifier, a key revoked through the keys command, refused on the very next
 * history request.
 */
import { HDKey } from '@scure/bip32';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createApiHarness, type ApiHarness } from './harness.js';
import { addressToScript } from '../../../src/bitcoin/address.js';
import { addressKey } from '../../../src/db/address-key.js';
import { seedHistory } from '../../support/history-rows.js';
import { txNum } from '../../../src/db/tx-num.js';
import { revokeApiKey, verifyApiKey, type ApiKeyPrincipal } from '../../../src/auth/keys.js';
import { startApi, type ApiHandle } from '../../../api/main.js';
import { testConfig } from '../../../src/config.js';
import { silentLogger } from '../../../src/log.js';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { createHash } from 'node:crypto';

const A = 'bcrt1qa5pzh3yzt94etaygkd4zlxkru7kkl6ssecgx6n';
const DESC = `wpkh(${HDKey.fromMasterSeed(new Uint8Array(32).fill(5), bip32Versions('regtest')).derive("m/84'/1'/0'").publicExtendedKey}/<0;1>/*)`;

/** Display hex of the txid `seed` gives tx_num `n` (sha256 of its 8 big-endian bytes). */
const txidOf = (n: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(n);
  return hashToHex(createHash('sha256').update(b).digest());
};
const TX = txidOf(txNum(2, 1));

/** A history of three confirmed transactions (with their txs rows and blocks) for address A. */
async function seed(h: ApiHarness): Promise<void> {
  const script = addressToScript(A, 'regtest');
  const nums = [txNum(1, 1), txNum(2, 1), txNum(3, 1)];
  await sql`INSERT INTO blocks (height, hash, prev_hash, header, time, tx_count, size, weight)
    SELECT h, sha256(('block' || h)::bytea), sha256(('block' || (h - 1))::bytea), '\\x00'::bytea, 1700000000 + h * 600, 2, 1000, 4000 FROM generate_series(1, 3) h`.execute(
    h.t.db,
  );
  await seedHistory(h.t.db, addressKey(script), nums);
  await sql`INSERT INTO txs (tx_num, txid, outs, ins) SELECT n, sha256(int8send(n)), '\\x'::bytea, '\\x'::bytea FROM unnest(${nums.map(String)}::int8[]) n`.execute(
    h.t.db,
  );
  await h.t.db
    .insertInto('balances')
    .values({ addr_key: addressKey(script), balance: 1000n, utxo_count: 1 })
    .execute();
  await h.t.db
    .updateTable('chain_tip')
    .set({ height: 3, hash: Buffer.alloc(32, 1) })
    .execute();
}

describe('key checks alongside the address routes', () => {
  let h: ApiHarness;
  let principal: ApiKeyPrincipal;
  // The check of each request, answered by the test: verify(key) waits for `answer`.
  let answer: (p: ApiKeyPrincipal | null) => void = () => {};
  let checks = 0;
  let wallet = '';
  beforeAll(async () => {
    h = await createApiHarness({
      peekKey: () => principal,
      verifyKey: () => {
        checks++;
        return new Promise((resolve) => (answer = resolve));
      },
    });
    principal = (await verifyApiKey(h.t.db, h.key))!;
    await seed(h);
    // (a write: its check comes first, answered here)
    const created = h.app.inject({
      method: 'POST',
      url: '/v1/wallets',
      headers: { apiKey: h.key },
      payload: { descriptors: [DESC], gap_limit: 2 },
    });
    await new Promise((r) => setTimeout(r, 150));
    answer(principal);
    wallet = ((await created).json() as { id: string }).id;
  });
  afterAll(async () => h?.close());

  /** Starts a request and reports whether it has been answered. */
  const start = (method: 'GET' | 'POST', url: string, payload?: unknown) => {
    const state = { done: false };
    const response = h.app.inject({ method, url, headers: { apiKey: h.key }, ...(payload ? { payload } : {}) }).then((r) => {
      state.done = true;
      return r;
    });
    return { state, response };
  };
  const settle = () => new Promise((r) => setTimeout(r, 150));
  /** A GET that must still be unanswered while its check is, then the answer after `verdict`. */
  const held = async (url: string, verdict: ApiKeyPrincipal | null) => {
    const r = start('GET', url);
    await settle();
    expect(r.state.done, url).toBe(false);
    answer(verdict);
    return r.response;
  };

  it('a read waits for the check, then answers', async () => {
    for (const url of [
      `/v1/addresses/${A}/history?limit=1`,
      `/v1/addresses/${A}/balance`,
      `/v1/addresses/${A}/unspentoutputs`,
      `/v1/wallets/${wallet}/balance`,
      `/v1/transactions/${TX}`,
      `/v1/transactions/${TX}`,
    ]) {
      const res = await held(url, principal);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['ratelimit-limit'], url).toBeDefined();
    }
    expect((await held(`/v1/addresses/${A}/history?limit=1`, principal)).headers.link).toMatch(/rel="next"/);
  });

  it('a key refused by the check gets the ordinary 401 instead of the data, the 400 or the Link', async () => {
    const urls = [
      `/v1/addresses/${A}/history?limit=1`, // data and a Link header
      `/v1/addresses/${A}/balance`,
      '/v1/addresses/bcrt1q6rhpng9evdsfnn833a4f4vej0asu6dk5srld6x/history', // unknown address: empty list
      `/v1/addresses/${A}/history?cursor=!!`, // bad cursor: 400
      `/v1/wallets/${wallet}/balance`,
      '/v1/wallets/wal_00000000000000000000/balance', // no such wallet: 404
      `/v1/transactions/${TX}`, // (answered before, so its answer is held)
      `/v1/transactions/${'ab'.repeat(32)}`, // no such transaction: 404
    ];
    for (const url of urls) {
      const res = await held(url, null);
      expect(res.statusCode, url).toBe(401);
      expect((res.json() as { error_code: string }).error_code, url).toBe('ERR_API_KEY_INVALID');
      expect(res.headers.link, url).toBeUndefined();
      expect(res.headers['ratelimit-limit'], url).toBeUndefined();
    }
  });

  it('a route with side effects checks the key before it runs', async () => {
    const before = checks;
    const r = start('POST', '/v1/subscriptions', { address: A });
    await settle();
    expect(checks).toBe(before + 1);
    expect(r.state.done).toBe(false);
    const rows = await h.t.db.selectFrom('subscriptions').select('id').execute();
    expect(rows).toHaveLength(0);
    answer(null);
    expect((await r.response).statusCode).toBe(401);
    expect(await h.t.db.selectFrom('subscriptions').select('id').execute()).toHaveLength(0);
  });
});

describe('with the cached verifier of startApi', () => {
  let h: ApiHarness;
  let api: ApiHandle;
  beforeAll(async () => {
    h = await createApiHarness();
    await seed(h);
    api = await startApi({
      config: testConfig({ host: '127.0.0.1', port: 0, network: 'regtest' }),
      log: silentLogger(),
      db: h.t.db,
      redis: h.redis,
      databaseUrl: h.t.url,
    });
  });
  afterAll(async () => {
    await api?.close();
    await h?.close();
  });

  it('a key revoked through the keys command is refused on the very next history request', async () => {
    const key = await h.newKey({ name: 'revoked-next' });
    const get = (url: string) => fetch(`${api.url}${url}`, { headers: { apiKey: key } });
    for (let i = 0; i < 3; i++) expect((await get(`/v1/addresses/${A}/history`)).status).toBe(200);
    expect(await revokeApiKey(h.t.db, key.slice(0, 11))).toBe(1);
    const refused = await get(`/v1/addresses/${A}/history`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('ratelimit-limit')).toBeNull();
    expect((await get(`/v1/addresses/${A}/balance`)).status).toBe(401);
    expect((await get(`/v1/addresses/${A}/history?cursor=!!`)).status).toBe(401);
  });
});
