/**
 * Who may call the Esplora dialect, and what its logs hold: the key in the base URL
 * (`/esplora/{key}/…`) or in the apiKey header; without a key 401, unless
 * ESPLORA_ANONYMOUS_RATE_LIMIT lets client addresses in, each counted on its own (429 past the
 * limit, Retry-After) in the rate limiter keys use (real Redis). A key in the path reaches no log
 * line, whatever the request's fate (answered, refused, unknown path), with every line the app
 * writes at debug level captured, fastify's request serializer included.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApi } from '../../../api/app.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { createLogger } from '../../../src/log.js';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';

describe('Esplora base URLs, anonymous access and the request log', () => {
  let t: TestDatabase;
  let redis: Redis;
  let key: string;
  const lines: string[] = [];
  let open: FastifyInstance;
  let anonymous: FastifyInstance;

  const build = async (settings: Record<string, unknown>) => {
    const log = createLogger({
      level: 'debug',
      format: 'json',
      destination: new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    });
    const heldAt = Date.now();
    const app = await buildApi({
      db: t.db,
      log,
      network: 'regtest',
      redis,
      rateClock: () => heldAt,
      settings: { redisPrefix: uniqueRedisPrefix('esplora'), ...settings },
    });
    // (every answered request also logged with fastify's request serializer: method, url, host…)
    app.addHook('onResponse', async (request) => request.log.info({ req: request }, 'answered'));
    await app.ready();
    return app;
  };

  beforeAll(async () => {
    t = await createMigratedDatabase('esplora_access');
    redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
    key = (await createApiKey(t.db, { name: 'esplora' })).key;
    open = await build({});
    anonymous = await build({ esploraAnonymousRateLimit: 3 });
  });
  afterAll(async () => {
    await open?.close();
    await anonymous?.close();
    redis?.disconnect();
    await t?.drop();
  });

  it('the key in the path or the apiKey header; none or a wrong one: 401 in plain text', async () => {
    const inPath = await open.inject({ url: `/esplora/${key}/mempool/txids` });
    expect([inPath.statusCode, inPath.json()]).toEqual([200, []]);
    const inHeader = await open.inject({ url: '/esplora/mempool/txids', headers: { apiKey: key } });
    expect([inHeader.statusCode, inHeader.json()]).toEqual([200, []]);
    const none = await open.inject({ url: '/esplora/mempool/txids' });
    expect([none.statusCode, none.headers['content-type'], none.body]).toEqual([
      401,
      'text/plain',
      'missing API key: give it in the base URL (/esplora/{key}/) or the apiKey header',
    ]);
    const wrong = await open.inject({ url: `/esplora/${key.slice(0, -2)}xx/mempool/txids` });
    expect(wrong.statusCode).toBe(401);
    // (a segment that is no valid percent-encoding is taken as sent: a wrong key, not a failure)
    const malformed = await open.inject({ url: '/esplora/bw_%zz/mempool/txids' });
    expect([malformed.statusCode, malformed.body]).toEqual([401, 'invalid API key']);
    // A read key cannot broadcast.
    const reader = (await createApiKey(t.db, { name: 'reader', scopes: ['read'] })).key;
    expect((await open.inject({ method: 'POST', url: `/esplora/${reader}/tx`, payload: '00' })).statusCode).toBe(403);
  });

  it('anonymous access when set: each client address limited on its own; keys unaffected', async () => {
    const from = (remoteAddress: string) => anonymous.inject({ url: '/esplora/mempool/txids', remoteAddress });
    for (let i = 0; i < 3; i++) expect((await from('192.0.2.1')).statusCode).toBe(200);
    const over = await from('192.0.2.1');
    expect([over.statusCode, over.headers['content-type']]).toEqual([429, 'text/plain']);
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    expect((await from('192.0.2.2')).statusCode).toBe(200);
    // A key is counted as itself, not as its address.
    const keyed = await anonymous.inject({ url: `/esplora/${key}/mempool/txids`, remoteAddress: '192.0.2.1' });
    expect(keyed.statusCode).toBe(200);
    // Only the Esplora dialect lets anyone in.
    expect((await anonymous.inject({ url: '/v1/mempool', remoteAddress: '192.0.2.3' })).statusCode).toBe(401);
  });

  it('a key in the path reaches no log line', async () => {
    lines.length = 0;
    const answered = await open.inject({ url: `/esplora/${key}/mempool/txids` });
    const unknown = await open.inject({ url: `/esplora/${key}/nothing/here?x=1` });
    const refused = await open.inject({ url: `/esplora/${key}/tx/${'ab'.repeat(32)}` });
    expect([answered.statusCode, unknown.statusCode, refused.statusCode]).toEqual([200, 404, 404]);
    expect(unknown.body).toBe('endpoint does not exist "/nothing/here"');
    const logged = lines.join('');
    // (the lines are there: the request log names the route, the serializer the path without the key)
    expect(logged).toContain('"route":"/esplora/mempool/txids"');
    expect(logged).toContain('"url":"/esplora/nothing/here?x=1"');
    expect(logged).not.toContain(key);
    expect(logged).not.toContain(key.slice(3, 20));
  });
});
