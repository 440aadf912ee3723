/**
 * Per-key caps on what a key holds: subscriptions (API_MAX_SUBSCRIPTIONS_PER_KEY), hooks
 * (API_MAX_HOOKS_PER_KEY) and wallets (API_MAX_WALLETS_PER_KEY), exact under concurrent creations (one key's creations run one at a
 * time), 409 ERR_LIMIT_REACHED above in /v1 and the Coinstack dialect's ValidationFailed; the same
 * subscription again at the cap is still its id; another key is not affected; deleting frees a
 * place. GET /subscriptions is paged (`limit`, `cursor`, `Link: rel="next"`), the cursor exact
 * where creation times share a millisecond.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { createApiHarness, type ApiHarness } from './harness.js';
import { segwitAddress } from '../../../src/bitcoin/address.js';
import { verifyApiKey } from '../../../src/auth/keys.js';
import { HDKey } from '@scure/bip32';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { insertMiniChain } from './mini-chain.js';

const address = () => segwitAddress(0, randomBytes(20), 'regtest');
const arn = (i: number) => `arn:aws:sns:eu-west-1:123456789012:topic-${i}`;

describe('per-key caps and paged subscriptions', () => {
  let h: ApiHarness;
  const send = (method: 'POST' | 'GET' | 'DELETE', url: string, key: string, body?: unknown) =>
    h.app.inject({ method, url, headers: { apiKey: key }, ...(body !== undefined ? { payload: body as object } : {}) });

  beforeAll(async () => {
    h = await createApiHarness({ settings: { maxSubscriptionsPerKey: 5, maxHooksPerKey: 3, maxWalletsPerKey: 2, rateLimit: 1_000_000 } });
    await insertMiniChain(h.t.db);
  });
  afterAll(async () => h?.close());

  it('12 different subscriptions sent at once: exactly 5 made, the others 409 ERR_LIMIT_REACHED', async () => {
    const key = await h.newKey({ name: 'subs' });
    const answers = await Promise.all(Array.from({ length: 12 }, () => send('POST', '/v1/subscriptions', key, { address: address() })));
    const made = answers.filter((r) => r.statusCode === 200);
    expect(made).toHaveLength(5);
    for (const r of answers.filter((x) => x.statusCode !== 200)) {
      expect(r.statusCode).toBe(409);
      expect(r.json()).toEqual({
        error_type: 'conflict',
        error_code: 'ERR_LIMIT_REACHED',
        error_message: 'this key already has 5 subscriptions (API_MAX_SUBSCRIPTIONS_PER_KEY): delete some first',
        retry: false,
        error_cause: null,
      });
    }
    const listed = (await send('GET', '/v1/subscriptions', key)).json() as { id: string; address: string }[];
    expect(listed.map((s) => s.id).sort()).toEqual(made.map((r) => r.json().id as string).sort());

    // The same subscription again at the cap is the existing one; the Coinstack dialect refuses a new one its way.
    const again = await send('POST', '/v1/subscriptions', key, { address: listed[0]!.address });
    expect(again.statusCode).toBe(200);
    expect(again.json().id).toBe(listed[0]!.id);
    const bare = await send('POST', '/subscriptions', key, { address: address() });
    expect(bare.statusCode).toBe(400);
    expect(bare.json()).toMatchObject({ error_code: 3004, error_type: 'io.coinstack#ValidationFailed' });

    // Another key is not affected; deleting one frees a place.
    const other = await h.newKey({ name: 'subs-other' });
    expect((await send('POST', '/v1/subscriptions', other, { type: 'chain' })).statusCode).toBe(200);
    expect((await send('DELETE', `/v1/subscriptions/${listed[1]!.id}`, key)).statusCode).toBe(204);
    expect((await send('POST', '/v1/subscriptions', key, { type: 'chain' })).statusCode).toBe(200);
    expect((await send('POST', '/v1/subscriptions', key, { type: 'chain', confirmations: 2 })).statusCode).toBe(409);
  });

  it('6 hooks sent at once: exactly 3 made, the others 409', async () => {
    const key = await h.newKey({ name: 'hooks' });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => send('POST', '/v1/hooks', key, { type: 'sns', topic_arn: arn(i) })),
    );
    expect(answers.filter((r) => r.statusCode === 201)).toHaveLength(3);
    for (const r of answers.filter((x) => x.statusCode !== 201)) {
      expect(r.statusCode).toBe(409);
      expect(r.json()).toMatchObject({
        error_code: 'ERR_LIMIT_REACHED',
        error_message: 'this key already has 3 hooks (API_MAX_HOOKS_PER_KEY): delete some first',
      });
    }
    const hooks = (await send('GET', '/v1/hooks', key)).json() as { id: string }[];
    expect(hooks).toHaveLength(3);
    expect((await send('DELETE', `/v1/hooks/${hooks[0]!.id}`, key)).statusCode).toBe(204);
    expect((await send('POST', '/v1/hooks', key, { type: 'sns', topic_arn: arn(9) })).statusCode).toBe(201);
  });

  it('5 wallets sent at once: exactly 2 made, the others 409', async () => {
    const key = await h.newKey({ name: 'wallets' });
    const xpub = (seed: number) =>
      HDKey.fromMasterSeed(new Uint8Array(32).fill(seed), bip32Versions('regtest')).derive("m/84'/1'/0'").publicExtendedKey;
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) => send('POST', '/v1/wallets', key, { xpub: xpub(i + 1), gap_limit: 2 })),
    );
    expect(
      answers.filter((r) => r.statusCode === 201),
      answers.map((r) => r.body).join(),
    ).toHaveLength(2);
    for (const r of answers.filter((x) => x.statusCode !== 201)) {
      expect(r.statusCode).toBe(409);
      expect(r.json()).toMatchObject({
        error_code: 'ERR_LIMIT_REACHED',
        error_message: 'this key already has 2 wallets (API_MAX_WALLETS_PER_KEY): delete some first',
      });
    }
  });

  it('GET /subscriptions pages by limit and cursor, exact where creation times share a millisecond', async () => {
    const key = await h.newKey({ name: 'paging' });
    const keyId = (await verifyApiKey(h.t.db, key))!.id;
    // Seven rows: four created in the same millisecond (microseconds apart), the others later.
    const times = [
      '2026-01-01T00:00:00.123456Z',
      '2026-01-01T00:00:00.123457Z',
      '2026-01-01T00:00:00.123999Z',
      '2026-01-01T00:00:00.123001Z',
      '2026-01-01T00:00:00.124Z',
      '2026-01-02T00:00:00Z',
      '2026-01-03T00:00:00Z',
    ];
    for (const [i, at] of times.entries()) {
      await sql`INSERT INTO subscriptions (id, key_id, kind, confirmations, created_at, start_seq)
                VALUES (${`sub_${String(i).padStart(20, '0')}`}, ${keyId}, 'chain', ${i + 1}, ${at}::timestamptz, 0)`.execute(h.t.db);
    }
    const whole = (await send('GET', '/v1/subscriptions', key)).json() as { id: string }[];
    expect(whole).toHaveLength(7);
    for (const limit of [1, 2, 3]) {
      const seen: string[] = [];
      let url: string | null = `/v1/subscriptions?limit=${limit}`;
      while (url !== null) {
        const r = await send('GET', url, key);
        expect(r.statusCode).toBe(200);
        const page = r.json() as { id: string }[];
        expect(page.length).toBeLessThanOrEqual(limit);
        seen.push(...page.map((s) => s.id));
        const link = r.headers.link as string | undefined;
        url = link === undefined ? null : /^<([^>]+)>; rel="next"$/.exec(link)![1]!;
      }
      expect(seen, `limit ${limit}`).toEqual(whole.map((s) => s.id));
    }
    const bad = await send('GET', '/v1/subscriptions?cursor=bm90LWEtY3Vyc29y', key);
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error_code: 'ERR_INVALID_CURSOR' });
    expect((await send('GET', '/v1/subscriptions?limit=1001', key)).statusCode).toBe(400);
  });
});
