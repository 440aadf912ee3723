/**
 * A verifier of API keys that remembers verified keys in memory. A trigger on `api_keys`
 * (migration 0010) NOTIFYs `blockwire_api_keys` on every update or delete; this process LISTENs
 * on its own connection (key-events.ts) and drops the key. Revocation is exact — a key revoked before a request
 * arrived is refused — through a read barrier: a cache hit is answered only after a `SELECT 1`
 * on the LISTEN connection that started after the request arrived has returned, because Postgres
 * delivers every notification committed before that query ahead of its answer. Concurrent
 * requests share one barrier, so under load a key costs a fraction of a round trip and no pool
 * connection. While the LISTEN connection is down the cache is emptied and bypassed, and entries
 * expire after `ttlMs` anyway. Only successful verifications are cached; failures always take
 * the full, uniform path of `verifyApiKey`.
 * @module
 */
import type pg from 'pg';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Logger } from '../log.js';
import { digestApiKey } from './api-key.js';
import { verifyApiKey, type ApiKeyPrincipal } from './keys.js';
import { listenKeyEvents, type KeyEvents } from './key-events.js';
import { createReadBarrier } from '../db/listen.js';

export { KEY_CHANNEL } from './key-events.js';

export type KeyVerifier = {
  verify(presented: string): Promise<ApiKeyPrincipal | null>;
  /** The remembered principal of a key, unchecked (never an authorization: use verify). */
  peek(presented: string): ApiKeyPrincipal | undefined;
  /** True while the LISTEN connection is up and verified keys are served from memory. */
  readonly caching: boolean;
  close(): Promise<void>;
};

export type KeyVerifierOptions = {
  db: Kysely<Database>;
  /** The database URL for the LISTEN connection; without it nothing is cached. */
  databaseUrl?: string;
  log?: Logger;
  /** Upper bound of an entry's life even without a notification (default 60 s). */
  ttlMs?: number;
  /** Most keys remembered (default 10,000; the oldest go first). */
  maxEntries?: number;
  /** Called for each key notification (its id; every key, without one, after a reconnect): what the process holds for it is to be checked again. */
  onKeyChange?: (keyId?: bigint) => void;
};

/** Creates the verifier; resolves once the LISTEN connection is up (or failed: no cache). */
export async function createKeyVerifier(opts: KeyVerifierOptions): Promise<KeyVerifier> {
  const { db, log } = opts;
  const ttlMs = opts.ttlMs ?? 60_000;
  const maxEntries = opts.maxEntries ?? 10_000;
  const cache = new Map<string, { principal: ApiKeyPrincipal; at: number }>();
  let client: pg.Client | undefined;
  let listening = false;
  /** Bumped by every notification: a lookup that overlapped one is not cached. */
  let generation = 0;
  /** Resolves once every notification committed before this call has been processed. */
  const barrier = createReadBarrier();

  const dropKey = (id: string) => {
    for (const [digest, e] of cache) if (String(e.principal.id) === id) cache.delete(digest);
  };

  let events: KeyEvents | undefined;
  if (opts.databaseUrl) {
    events = await listenKeyEvents({
      databaseUrl: opts.databaseUrl,
      applicationName: 'blockwire-api-keys',
      ...(log ? { log } : {}),
      onChange: (id) => {
        generation++;
        dropKey(id);
        opts.onKeyChange?.(BigInt(id));
      },
      onUp: (c) => {
        client = c;
        cache.clear();
        generation++;
        listening = true;
        opts.onKeyChange?.();
      },
      onDown: () => {
        client = undefined;
        listening = false;
        cache.clear();
      },
    });
  }

  return {
    get caching() {
      return listening;
    },
    peek(presented) {
      return listening ? cache.get(digestApiKey(presented).toString('hex'))?.principal : undefined;
    },
    async verify(presented) {
      if (listening) {
        const digest = digestApiKey(presented).toString('hex');
        const hit = cache.get(digest);
        const c = client;
        if (hit && c && Date.now() - hit.at < ttlMs) {
          try {
            await barrier(c);
            if (cache.get(digest) === hit && listening) return hit.principal;
          } catch {
            // the LISTEN connection failed: fall through to the database
          }
          return verifyApiKey(db, presented);
        }
        const before = generation;
        const principal = await verifyApiKey(db, presented);
        // Cache only when no key changed while the row was read (it may have been this one).
        if (principal && listening && generation === before) {
          if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!);
          cache.set(digest, { principal, at: Date.now() });
        }
        return principal;
      }
      return verifyApiKey(db, presented);
    },
    async close() {
      listening = false;
      client = undefined;
      cache.clear();
      await events?.close();
    },
  };
}
