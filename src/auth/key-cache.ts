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
 * the full, uniform path of `verifyApiKey`. With `chainChanges` the same connection also LISTENs
 * for chain changes (src/db/chain-changes.ts) and lends them the same barrier (`chain`).
 * @module
 */
import type pg from 'pg';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Logger } from '../log.js';
import { digestApiKey } from './api-key.js';
import { verifyApiKey, type ApiKeyPrincipal } from './keys.js';
import { listenKeyEvents, type KeyEvents } from './key-events.js';
import type { ChainChanges } from '../db/chain-changes.js';

export { KEY_CHANNEL } from './key-events.js';

export type KeyVerifier = {
  verify(presented: string): Promise<ApiKeyPrincipal | null>;
  /** The remembered principal of a key, unchecked (never an authorization: use verify). */
  peek(presented: string): ApiKeyPrincipal | undefined;
  /** True while the LISTEN connection is up and verified keys are served from memory. */
  readonly caching: boolean;
  /** Chain changes seen on the same connection (with `chainChanges`), sharing the keys' read barrier. */
  readonly chain?: ChainChanges;
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
  /** Also listen for chain changes (`chain`). */
  chainChanges?: boolean;
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
  /** The barrier query in flight, and the one queued to start after it (shared by waiters). */
  let inflight: Promise<void> | null = null;
  let queued: Promise<void> | null = null;
  /** Chain notifications seen, moved too when the connection goes or comes (see ChainChanges). */
  let chainGeneration = 0;

  function runBarrier(c: pg.Client): Promise<void> {
    const p = c.query('SELECT 1').then(
      () => {
        if (inflight === p) inflight = null;
      },
      (err: unknown) => {
        if (inflight === p) inflight = null;
        throw err;
      },
    );
    return p;
  }

  /** Resolves once every notification committed before this call has been processed. */
  function barrier(c: pg.Client): Promise<void> {
    if (!inflight) return (inflight = runBarrier(c));
    // The query in flight may have started before this call: wait for the next one.
    queued ??= inflight
      .catch(() => {})
      .then(() => {
        queued = null;
        return (inflight = runBarrier(c));
      });
    return queued;
  }

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
      ...(opts.chainChanges ? { onChain: () => void chainGeneration++ } : {}),
      onUp: (c) => {
        client = c;
        cache.clear();
        generation++;
        chainGeneration++;
        listening = true;
        opts.onKeyChange?.();
      },
      onDown: () => {
        client = undefined;
        listening = false;
        chainGeneration++;
        cache.clear();
      },
    });
  }

  const chain: ChainChanges = {
    get generation() {
      return chainGeneration;
    },
    async settled() {
      const c = client;
      if (!listening || !c) return false;
      try {
        await barrier(c);
      } catch {
        return false;
      }
      return listening && client === c;
    },
    async unchangedSince(generation) {
      return (await chain.settled()) && chainGeneration === generation;
    },
  };

  return {
    get caching() {
      return listening;
    },
    ...(opts.chainChanges && opts.databaseUrl ? { chain } : {}),
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
