/**
 * An API under test: a migrated database of its own, the run's real Redis under a unique
 * prefix, `buildApi` (never listening; requests go through `app.inject`), and a read+write key.
 */
import { expect, inject } from 'vitest';
import { Redis } from 'ioredis';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';
import { buildApi } from '../../../api/app.js';
import type { ApiDeps } from '../../../api/deps.js';
import { createApiKey, type Scope } from '../../../src/auth/keys.js';
import { silentLogger } from '../../../src/log.js';

export type ApiHarness = {
  t: TestDatabase;
  redis: Redis;
  app: FastifyInstance;
  /** A read+write key. */
  key: string;
  newKey(opts?: { scopes?: Scope[]; rateLimit?: number | null; name?: string }): Promise<string>;
  get(url: string, key?: string | null): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
};

export async function createApiHarness(extra: Partial<ApiDeps> = {}, existing?: TestDatabase): Promise<ApiHarness> {
  const t = existing ?? (await createMigratedDatabase('api'));
  const redis = new Redis(inject('redisUrl'), { lazyConnect: false, maxRetriesPerRequest: 1 });
  // One rate-limit window for the harness's life: a count of requests cannot be cut by a window
  // ending mid-test, however slow the machine.
  const heldAt = Date.now();
  const app = await buildApi({
    db: t.db,
    log: silentLogger(),
    network: 'regtest',
    redis,
    rateClock: () => heldAt,
    ...extra,
    settings: { redisPrefix: uniqueRedisPrefix('api'), ...extra.settings },
  });
  await app.ready();
  const newKey = async (opts: { scopes?: Scope[]; rateLimit?: number | null; name?: string } = {}) =>
    (
      await createApiKey(t.db, {
        name: opts.name ?? 'test',
        ...(opts.scopes ? { scopes: opts.scopes } : {}),
        rateLimit: opts.rateLimit ?? null,
      })
    ).key;
  const key = await newKey();
  return {
    t,
    redis,
    app,
    key,
    newKey,
    get: (url, k = key) => app.inject({ method: 'GET', url, headers: k === null ? {} : { apiKey: k } }),
    async close() {
      await app.close();
      redis.disconnect();
      if (!existing) await t.drop();
    },
  };
}

/**
 * Follows the `Link: <…>; rel="next"` header from `first` to the last page (each answer 200):
 * every item in order, and every next-page URL. `between` runs once, after the first page.
 */
export async function walkPages(
  h: ApiHarness,
  first: string,
  between?: () => Promise<void>,
): Promise<{ items: unknown[]; links: string[] }> {
  const items: unknown[] = [];
  const links: string[] = [];
  let url: string | undefined = first;
  let pages = 0;
  while (url) {
    const r = await h.get(url);
    expect(r.statusCode, url).toBe(200);
    items.push(...(r.json() as unknown[]));
    const link = r.headers.link as string | undefined;
    url = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
    if (url) links.push(url);
    if (pages++ === 0 && between) await between();
  }
  return { items, links };
}
