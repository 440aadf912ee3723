/**
 * Authentication, scopes and rate limits of the REST API:
 * every bad key gets the same 401, revocation takes effect on the next request, a read key
 * cannot use write routes, the per-key limit answers 429 with Retry-After, the database holds
 * digests only, and no key reaches a log line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { pino } from 'pino';
import { createApiHarness, type ApiHarness } from './harness.js';
import { revokeApiKey } from '../../../src/auth/keys.js';
import { digestApiKey } from '../../../src/auth/api-key.js';

const ZERO32 = Buffer.alloc(32, 7);

async function seedTip(h: ApiHarness) {
  await h.t.db
    .insertInto('blocks')
    .values({
      height: 0,
      hash: ZERO32,
      prev_hash: Buffer.alloc(32),
      header: Buffer.alloc(80),
      time: 1296688602,
      tx_count: 0,
      size: 285,
      weight: 1140,
    })
    .execute();
  await h.t.db.updateTable('chain_tip').set({ height: 0, hash: ZERO32 }).execute();
}

function flip(s: string, at: number): string {
  const c = s[at]!;
  return s.slice(0, at) + (c === 'A' ? 'B' : 'A') + s.slice(at + 1);
}

describe('api authentication', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await createApiHarness();
    await seedTip(h);
  });
  afterAll(async () => h?.close());

  it('answers with a valid key, at /v1 and at the bare path', async () => {
    for (const url of ['/v1/blockchain', '/blockchain']) {
      const r = await h.get(url);
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual({ best_block_hash: Buffer.from(ZERO32).reverse().toString('hex'), best_height: 0 });
    }
  });

  it('401 ERR_API_KEY_MISSING without the header', async () => {
    const r = await h.get('/v1/blockchain', null);
    expect(r.statusCode).toBe(401);
    expect(r.json()).toEqual({
      error_type: 'authentication',
      error_code: 'ERR_API_KEY_MISSING',
      error_message: 'missing apiKey header',
      retry: false,
      error_cause: null,
    });
  });

  it('one identical 401 for unknown, malformed, wrong-checksum, wrong-prefix, truncated and revoked keys', async () => {
    const revoked = await h.newKey({ name: 'to revoke' });
    expect(
      await revokeApiKey(
        h.t.db,
        (await h.t.db.selectFrom('api_keys').select('id').where('key_hash', '=', digestApiKey(revoked)).executeTakeFirstOrThrow()).id,
      ),
    ).toBe(1);
    const bad = [
      await h.newKey().then((k) => flip(k, k.length - 1)), // wrong last character
      flip(h.key, 10), // wrong character in the body (checksum fails)
      'bw_' + 'A'.repeat(49), // well-shaped, unknown
      'xx' + h.key.slice(2), // wrong prefix
      h.key.slice(0, -1), // truncated
      h.key + 'A', // too long
      'not a key at all',
      'x'.repeat(5000),
      revoked,
    ];
    const bodies = new Set<string>();
    for (const k of bad) {
      const r = await h.get('/v1/blockchain', k);
      expect(r.statusCode, k.slice(0, 20)).toBe(401);
      bodies.add(r.body);
    }
    expect([...bodies]).toEqual([
      JSON.stringify({
        error_type: 'authentication',
        error_code: 'ERR_API_KEY_INVALID',
        error_message: 'invalid API key',
        retry: false,
        error_cause: null,
      }),
    ]);
  });

  it('a revoked key is refused on the very next request', async () => {
    const k = await h.newKey({ name: 'short-lived' });
    expect((await h.get('/v1/blockchain', k)).statusCode).toBe(200);
    const row = await h.t.db.selectFrom('api_keys').select('prefix').where('key_hash', '=', digestApiKey(k)).executeTakeFirstOrThrow();
    expect(await revokeApiKey(h.t.db, row.prefix)).toBe(1);
    expect((await h.get('/v1/blockchain', k)).statusCode).toBe(401);
  });

  it('stores only digests: no column of api_keys contains a key', async () => {
    const keys = [h.key, await h.newKey({ name: 'dump me' })];
    const dump = await sql<{ t: string }>`SELECT api_keys::text AS t FROM api_keys`.execute(h.t.db);
    const text = dump.rows.map((r) => r.t).join('\n');
    expect(dump.rows.length).toBeGreaterThanOrEqual(2);
    for (const k of keys) {
      expect(text).not.toContain(k);
      expect(text).not.toContain(k.slice(12, 40));
      expect(text).toContain(`\\\\x${digestApiKey(k).toString('hex')}`);
    }
  });

  it('rate limit: 429 with Retry-After once the key has used its window, other keys unaffected', async () => {
    const limited = await h.newKey({ name: 'limited', rateLimit: 3 });
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 5; i++) {
      last = await h.get('/v1/blockchain', limited);
      statuses.push(last.statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(last!.json()).toMatchObject({ error_type: 'rate_limited', error_code: 'ERR_RATE_LIMITED', retry: true });
    const retryAfter = Number(last!.headers['retry-after']);
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    expect((await h.get('/v1/blockchain')).statusCode).toBe(200);
  });

  it('public routes need no key', async () => {
    expect((await h.get('/healthz', null)).statusCode).toBe(200);
    expect((await h.get('/openapi.json', null)).statusCode).toBe(200);
    expect((await h.get('/v1', null)).statusCode).toBe(200);
  });

  it('without a valid key, an unknown route or a wrong method gets only the 401 (no 404, no 405 with Allow)', async () => {
    for (const [method, url] of [
      ['PUT', '/v1/blockchain'],
      ['POST', '/v1/blockchain'],
      ['GET', '/v1/no-such-route'],
      ['DELETE', '/v1/addresses/x/balance/more'],
    ] as const) {
      for (const key of [undefined, 'bw_nonsense']) {
        const r = await h.app.inject({ method, url, headers: key ? { apiKey: key } : {} });
        expect(r.statusCode, `${method} ${url} ${key ?? 'no key'}`).toBe(401);
        expect(r.headers.allow, `${method} ${url}`).toBeUndefined();
        expect(r.json()).toMatchObject({ error_code: key ? 'ERR_API_KEY_INVALID' : 'ERR_API_KEY_MISSING' });
      }
    }
    // The Coinstack paths: its 401 too, instead of its plain 404.
    const bare = await h.app.inject({ method: 'GET', url: '/nothing/here' });
    expect(bare.statusCode).toBe(401);
    // With a key: 405 with Allow, and 404.
    const wrong = await h.app.inject({ method: 'PUT', url: '/v1/blockchain', headers: { apiKey: h.key } });
    expect([wrong.statusCode, wrong.headers.allow]).toEqual([405, 'GET, HEAD']);
    expect((await h.get('/v1/no-such-route')).statusCode).toBe(404);
  });
});

describe('keys never reach the logs', () => {
  it('no log line at trace level holds a presented key', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const log = pino({ level: 'trace' }, sink);
    const h = await createApiHarness({ log });
    try {
      await seedTip(h);
      const wrong = flip(h.key, h.key.length - 1);
      await h.get('/v1/blockchain');
      await h.get('/v1/blockchain', wrong);
      await h.get('/v1/blocks/zz');
      await h.app.inject({
        method: 'POST',
        url: '/v1/transactions',
        headers: { apiKey: h.key, 'content-type': 'application/json' },
        payload: '{"tx":',
      });
      expect(lines.length).toBeGreaterThan(0);
      const all = lines.join('');
      expect(all).not.toContain(h.key);
      expect(all).not.toContain(wrong);
      expect(all).not.toContain(h.key.slice(12, 40));
    } finally {
      await h.close();
    }
  });
});
