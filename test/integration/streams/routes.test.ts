/**
 * The hook and subscription routes through buildApi + inject: validation with the API's error
 * body, the SSRF guard at registration, the secret answered once,
 * ownership, the delivery log with paging
 * and manual redelivery.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { createApiHarness, type ApiHarness } from '../api/harness.js';
import { segwitAddress } from '../../../src/bitcoin/address.js';
import { upsertDeliveries } from '../../../src/db/queries/tenancy-deliveries.js';
import type { Resolver } from '../../../src/net/hook-url.js';

const dns: Record<string, string[]> = {
  'hooks.example.com': ['93.184.216.34'],
  'rebind.example.com': ['127.0.0.1'],
  'meta.example.com': ['169.254.169.254'],
};
const resolve: Resolver = async (h) => {
  const list = dns[h];
  if (!list) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return list.map((address) => ({ address, family: 4 as const }));
};

const address = () => segwitAddress(0, randomBytes(20), 'regtest');

describe('hook and subscription routes', () => {
  let h: ApiHarness;
  let other: string;
  const send = (method: 'POST' | 'GET' | 'DELETE', url: string, body?: unknown, key?: string) =>
    h.app.inject({ method, url, headers: { apiKey: key ?? h.key }, ...(body !== undefined ? { payload: body as object } : {}) });

  beforeAll(async () => {
    h = await createApiHarness({ hookUrls: { allowPrivate: false, resolve } });
    other = await h.newKey({ name: 'other' });
  });
  afterAll(async () => h.close());

  it('registers an http hook and answers its secret once', async () => {
    const r = await send('POST', '/v1/hooks', { type: 'http', url: 'https://hooks.example.com/in' });
    expect(r.statusCode).toBe(201);
    const body = r.json();
    expect(body).toMatchObject({ type: 'http', url: 'https://hooks.example.com/in', disabled: false, topic_arn: null });
    expect(body.id).toMatch(/^hook_[0-9a-f]{20}$/);
    expect(body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const listed = (await send('GET', '/v1/hooks')).json();
    expect(listed).toHaveLength(1);
    expect(listed[0]).not.toHaveProperty('secret');
    expect(JSON.stringify(listed)).not.toContain(body.secret);
  });

  it('keeps a secret the client gives and refuses a malformed one', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const r = await send('POST', '/v1/hooks', { type: 'http', url: 'https://hooks.example.com/own', secret });
    expect(r.statusCode).toBe(201);
    expect(r.json().secret).toBe(secret);
    const bad = await send('POST', '/v1/hooks', { type: 'http', url: 'https://hooks.example.com/own', secret: 'hunter2' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({
      error_code: 'ERR_INVALID_BODY',
      error_message: 'secret must be whsec_ followed by the base64 of 24 to 64 bytes',
      retry: false,
    });
  });

  it.each([
    'https://127.0.0.1/x',
    'https://localhost/x',
    'https://[::1]/x',
    'https://2130706433/x',
    'https://0x7f.1/x',
    'https://169.254.169.254/latest/meta-data/',
    'https://10.0.0.5/x',
    'https://[::ffff:127.0.0.1]/x',
    'https://rebind.example.com/x',
    'https://meta.example.com/x',
    'http://hooks.example.com/x',
    'https://hooks.example.com:8080/x',
    'https://nowhere.example.com/x',
  ])('refuses %s at registration', async (url) => {
    const r = await send('POST', '/v1/hooks', { type: 'http', url });
    expect(r.statusCode).toBe(400);
    expect(r.json()).toMatchObject({ error_type: 'invalid_request', error_code: 'ERR_HOOK_URL_REFUSED', retry: false, error_cause: null });
  });

  it('registers SNS hooks with a checked ARN and region', async () => {
    const arn = 'arn:aws:sns:eu-west-1:123456789012:payments';
    const ok = await send('POST', '/v1/hooks', { type: 'sns', topic_arn: arn });
    expect(ok.statusCode).toBe(201);
    expect(ok.json()).toMatchObject({ type: 'sns', topic_arn: arn, region: 'eu-west-1', url: null, secret: null });
    const cases: [unknown, string][] = [
      [
        { type: 'sns', topic_arn: 'arn:aws:sqs:eu-west-1:123456789012:q' },
        'topic_arn must be an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)',
      ],
      [{ type: 'sns', topic_arn: arn, region: 'us-east-1' }, "region us-east-1 differs from the topic's region eu-west-1"],
      [{ type: 'sns', topic_arn: arn, url: 'https://hooks.example.com/' }, 'url and secret belong to http hooks'],
      [{ type: 'sns' }, "body must have required property 'topic_arn'"],
      [{ type: 'http' }, "body must have required property 'url'"],
    ];
    for (const [body, message] of cases) {
      const r = await send('POST', '/v1/hooks', body);
      expect(r.statusCode, JSON.stringify(body)).toBe(400);
      expect(r.json()).toMatchObject({ error_code: 'ERR_INVALID_BODY', error_message: message });
    }
    const unknownField = await send('POST', '/v1/hooks', { type: 'sns', topic_arn: arn, color: 'red' });
    expect(unknownField.json().error_code).toBe('ERR_INVALID_BODY');
  });

  it('creates, lists and deletes subscriptions; the same one twice is one', async () => {
    const hook = (await send('POST', '/v1/hooks', { type: 'http', url: 'https://hooks.example.com/subs' })).json();
    const addr = address();
    const a = await send('POST', '/v1/subscriptions', { address: addr, action: hook.id });
    expect(a.statusCode).toBe(200);
    expect(a.json()).toEqual({ id: expect.stringMatching(/^sub_[0-9a-f]{20}$/) });
    const again = await send('POST', '/v1/subscriptions', { address: addr, action: hook.id });
    expect(again.json().id).toBe(a.json().id);
    const streamOnly = (await send('POST', '/v1/subscriptions', { address: addr, confirmations: 2 })).json();
    const chain = (await send('POST', '/v1/subscriptions', { type: 'chain' })).json();
    const list = (await send('GET', '/v1/subscriptions')).json();
    expect(list).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: a.json().id, type: 'address', address: addr, action: hook.id, confirmations: 6 }),
        expect.objectContaining({ id: streamOnly.id, type: 'address', action: null, confirmations: 2 }),
        expect.objectContaining({ id: chain.id, type: 'chain', address: null, action: null }),
      ]),
    );
    // The indexer sees the address through the view, with the largest target.
    const watched = await h.t.db.selectFrom('watched_addresses').selectAll().execute();
    expect(watched).toHaveLength(1);
    expect(watched[0]!.confirmations).toBe(6);

    const inUse = await send('DELETE', `/v1/hooks/${hook.id}`);
    expect(inUse.statusCode).toBe(409);
    expect(inUse.json()).toMatchObject({
      error_code: 'ERR_HOOK_IN_USE',
      error_message: 'hook is used by 1 subscription; delete them first',
    });
    expect((await send('DELETE', `/v1/subscriptions/${a.json().id}`)).statusCode).toBe(204);
    expect((await send('DELETE', `/v1/subscriptions/${a.json().id}`)).statusCode).toBe(404);
    expect((await send('DELETE', `/v1/hooks/${hook.id}`)).statusCode).toBe(204);
    expect((await send('GET', `/v1/hooks/${hook.id}`)).statusCode).toBe(404);
  });

  it('20 identical subscriptions sent at once make one (a unique index decides)', async () => {
    const addr = address();
    for (const body of [{ address: addr }, { type: 'chain', confirmations: 3 }]) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => send('POST', '/v1/subscriptions', body)));
      expect(answers.map((r) => r.statusCode)).toEqual(new Array(20).fill(200));
      const ids = new Set(answers.map((r) => r.json().id as string));
      expect(ids.size, JSON.stringify(body)).toBe(1);
      const live = (await send('GET', '/v1/subscriptions')).json() as { id: string }[];
      expect(live.filter((s) => ids.has(s.id))).toHaveLength(1);
    }
    const rows = await h.t.db
      .selectFrom('subscriptions')
      .select('id')
      .where('address', '=', addr)
      .where('deleted_at', 'is', null)
      .execute();
    expect(rows).toHaveLength(1);
  });

  it("validates subscription bodies with the API's error body", async () => {
    const cases: [unknown, number, string][] = [
      [{}, 400, 'ERR_INVALID_BODY'],
      [{ address: 'not-an-address' }, 400, 'ERR_INVALID_ADDRESS'],
      [{ address: segwitAddress(0, randomBytes(20), 'main') }, 400, 'ERR_WRONG_NETWORK'],
      [{ address: address(), confirmations: 0 }, 400, 'ERR_INVALID_BODY'],
      [{ address: address(), confirmations: 101 }, 400, 'ERR_INVALID_BODY'],
      [{ type: 'chain', address: address() }, 400, 'ERR_INVALID_BODY'],
      [{ address: address(), action: 'hook_00000000000000000000' }, 404, 'ERR_HOOK_NOT_FOUND'],
      [{ address: address(), extra: 1 }, 400, 'ERR_INVALID_BODY'],
    ];
    for (const [body, status, code] of cases) {
      const r = await send('POST', '/v1/subscriptions', body);
      expect(r.statusCode, JSON.stringify(body)).toBe(status);
      expect(r.json()).toMatchObject({ error_code: code, retry: false });
    }
  });

  it('takes body values as sent: no string for a number, no one-element array for a string (both dialects)', async () => {
    const a = address();
    const wrong: unknown[] = [
      { address: a, confirmations: '5' },
      { address: [a] },
      { type: ['chain'] },
      { address: a, confirmations: [5] },
      { address: a, confirmations: true },
      { address: a, action: 0 },
    ];
    for (const body of wrong) {
      const r = await send('POST', '/v1/subscriptions', body);
      expect(r.statusCode, JSON.stringify(body)).toBe(400);
      expect(r.json(), JSON.stringify(body)).toMatchObject({ error_code: 'ERR_INVALID_BODY', retry: false });
      const bare = await send('POST', '/subscriptions', body);
      expect(bare.statusCode, JSON.stringify(body)).toBe(400);
      expect(bare.json(), JSON.stringify(body)).toMatchObject({ error_code: 3004 });
    }
    for (const body of [
      { type: 'http', url: ['https://hooks.example.com/x'] },
      { type: 'http', url: 'https://hooks.example.com/x', secret: 12 },
    ]) {
      expect((await send('POST', '/v1/hooks', body)).json(), JSON.stringify(body)).toMatchObject({ error_code: 'ERR_INVALID_BODY' });
    }
    const tx = await send('POST', '/v1/transactions', { tx: ['00'] });
    expect(tx.json()).toMatchObject({ error_code: 'ERR_INVALID_BODY' });
    expect((await send('GET', '/v1/subscriptions')).json()).not.toContainEqual(expect.objectContaining({ address: a }));
    // Query strings are text: they are still read as the schema's types.
    const hook = (await send('POST', '/v1/hooks', { type: 'http', url: 'https://hooks.example.com/q' })).json();
    expect((await send('GET', `/v1/hooks/${hook.id}/deliveries?limit=5`)).statusCode).toBe(200);
    expect((await send('GET', `/v1/hooks/${hook.id}/deliveries?limit=five`)).json()).toMatchObject({ error_code: 'ERR_INVALID_PARAMETER' });
  });

  it("shows a key only its own hooks, subscriptions and deliveries (404 for the others')", async () => {
    const hook = (await send('POST', '/v1/hooks', { type: 'http', url: 'https://hooks.example.com/mine' })).json();
    const sub = (await send('POST', '/v1/subscriptions', { address: address(), action: hook.id })).json();
    expect((await send('GET', '/v1/hooks', undefined, other)).json()).toEqual([]);
    expect((await send('GET', '/v1/subscriptions', undefined, other)).json()).toEqual([]);
    for (const [method, url] of [
      ['GET', `/v1/hooks/${hook.id}`],
      ['DELETE', `/v1/hooks/${hook.id}`],
      ['GET', `/v1/hooks/${hook.id}/deliveries`],
      ['POST', `/v1/hooks/${hook.id}/rotate-secret`],
      ['POST', `/v1/hooks/${hook.id}/enable`],
      ['POST', `/v1/hooks/${hook.id}/deliveries/${sub.id}-1/redeliver`],
      ['DELETE', `/v1/subscriptions/${sub.id}`],
    ] as const) {
      const r = await send(method, url, undefined, other);
      expect(r.statusCode, `${method} ${url}`).toBe(404);
    }
    const stolen = await send('POST', '/v1/subscriptions', { address: address(), action: hook.id }, other);
    expect(stolen.statusCode).toBe(404);
    const readOnly = await h.newKey({ scopes: ['read'] });
    expect((await send('POST', '/v1/hooks', { type: 'http', url: 'https://hooks.example.com/x' }, readOnly)).json().error_code).toBe(
      'ERR_SCOPE',
    );
    expect((await send('POST', '/v1/subscriptions', { type: 'chain' }, readOnly)).statusCode).toBe(403);
  });

  it('rotates a secret once and re-enables a disabled hook', async () => {
    const hook = (await send('POST', '/v1/hooks', { type: 'http', url: 'https://hooks.example.com/rot' })).json();
    const r = (await send('POST', `/v1/hooks/${hook.id}/rotate-secret`)).json();
    expect(r.secret).toMatch(/^whsec_/);
    expect(r.secret).not.toBe(hook.secret);
    const row = await h.t.db.selectFrom('hooks').selectAll().where('id', '=', hook.id).executeTakeFirstOrThrow();
    expect(row.previous_secret).toBe(hook.secret);
    expect(row.previous_secret_until!.getTime()).toBeGreaterThan(Date.now() + 23 * 3600_000);
    await h.t.db
      .updateTable('hooks')
      .set({ disabled_at: new Date(), disabled_reason: 'receiver answered 410 Gone' })
      .where('id', '=', hook.id)
      .execute();
    expect((await send('GET', `/v1/hooks/${hook.id}`)).json()).toMatchObject({
      disabled: true,
      disabled_reason: 'receiver answered 410 Gone',
    });
    expect((await send('POST', `/v1/hooks/${hook.id}/enable`)).json()).toMatchObject({ disabled: false, disabled_reason: null });
  });

  it('pages the delivery log and starts a redelivery series', async () => {
    const hook = (await send('POST', '/v1/hooks', { type: 'http', url: 'https://hooks.example.com/log' })).json();
    const sub = (await send('POST', '/v1/subscriptions', { address: address(), action: hook.id })).json();
    const keyId = (await h.t.db.selectFrom('hooks').select('key_id').where('id', '=', hook.id).executeTakeFirstOrThrow()).key_id;
    const rows = Array.from({ length: 5 }, (_, i) => ({
      id: `${sub.id}-${i + 1}`,
      hookId: hook.id,
      keyId,
      subscriptionId: sub.id,
      eventId: BigInt(i + 1),
      eventType: 'tx.confirmed',
      payload: JSON.stringify({ id: i + 1, type: 'tx.confirmed' }),
      status: 'pending' as const,
    }));
    await upsertDeliveries(h.t.db, rows);
    await h.t.db
      .updateTable('deliveries')
      .set({ status: 'dead', dead_at: new Date(), attempts: 27, last_status: 500, last_error: 'receiver answered 500' })
      .where('id', '=', `${sub.id}-2`)
      .execute();

    const first = await send('GET', `/v1/hooks/${hook.id}/deliveries?limit=2`);
    expect(first.statusCode).toBe(200);
    expect(first.json().map((d: { event_id: number }) => d.event_id)).toEqual([5, 4]);
    const link = first.headers.link as string;
    expect(link).toMatch(/^<\/v1\/hooks\/hook_[0-9a-f]+\/deliveries\?limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
    const second = await send('GET', link.slice(1, link.indexOf('>')));
    expect(second.json().map((d: { event_id: number }) => d.event_id)).toEqual([3, 2]);
    expect((await send('GET', `/v1/hooks/${hook.id}/deliveries?cursor=bm9wZQ`)).json().error_code).toBe('ERR_INVALID_CURSOR');

    const dead = (await send('GET', `/v1/hooks/${hook.id}/deliveries?status=dead`)).json();
    expect(dead).toEqual([
      expect.objectContaining({
        id: `${sub.id}-2`,
        status: 'dead',
        attempts: 27,
        last_status: 500,
        payload: { id: 2, type: 'tx.confirmed' },
      }),
    ]);

    const re = await send('POST', `/v1/hooks/${hook.id}/deliveries/${sub.id}-2/redeliver`);
    expect(re.statusCode).toBe(202);
    expect(re.json()).toMatchObject({ status: 'pending', attempts: 0, redeliveries: 1 });
    const row = await h.t.db.selectFrom('deliveries').selectAll().where('id', '=', `${sub.id}-2`).executeTakeFirstOrThrow();
    expect(row.enqueued_at).toBeNull();
    expect((await send('POST', `/v1/hooks/${hook.id}/deliveries/${sub.id}-99/redeliver`)).json().error_code).toBe('ERR_DELIVERY_NOT_FOUND');
    expect((await send('GET', `/v1/hooks/${hook.id}/deliveries/${sub.id}-3`)).json()).toMatchObject({
      id: `${sub.id}-3`,
      status: 'pending',
    });
  });
});
