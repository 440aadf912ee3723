/**
 * API keys: create (the key is returned once and only its SHA-256 digest is stored), verify,
 * list and revoke. Verification does the same work for every input — digest, one indexed
 * lookup, a constant-time comparison, the format check — so an unknown key and a key with a
 * wrong last character cannot be told apart by timing, and every failure is the same `null`.
 * Keys never reach a log line (src/log.ts redacts the `apikey` header too).
 * @module
 */
import { timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { findApiKeyByHash, insertApiKey, listApiKeyRows, revokeApiKeyRows, type ApiKeyRow } from '../db/queries/api-keys.js';
import { digestApiKey, displayPrefix, generateApiKey, isWellFormedApiKey } from './api-key.js';

/** What a key may do: `read` the chain, `write` (broadcast, stamp, manage hooks/subscriptions). */
export const SCOPES = ['read', 'write'] as const;
export type Scope = (typeof SCOPES)[number];

/** The authenticated caller, as routes see it in `request.apiKey`. */
export type ApiKeyPrincipal = {
  id: bigint;
  name: string;
  /** Displayable prefix (`bw_` + 8 characters), safe to log. */
  prefix: string;
  scopes: readonly Scope[];
  /** Requests per rate window for this key; null = the configured default. */
  rateLimit: number | null;
};

export type CreatedApiKey = { id: bigint; key: string; prefix: string; scopes: Scope[] };

function toScopes(raw: readonly string[]): Scope[] {
  return raw.filter((s): s is Scope => (SCOPES as readonly string[]).includes(s));
}

/** Creates a key and returns it; this is the only time the key itself exists outside its owner. */
export async function createApiKey(
  db: Kysely<Database>,
  opts: { name: string; scopes?: readonly Scope[]; rateLimit?: number | null },
): Promise<CreatedApiKey> {
  const name = opts.name.trim();
  if (name === '' || name.length > 200) throw new RangeError('key name must be 1 to 200 characters');
  const scopes = [...new Set(opts.scopes ?? SCOPES)];
  if (scopes.length === 0 || scopes.some((s) => !(SCOPES as readonly string[]).includes(s))) {
    throw new RangeError(`scopes must be a non-empty subset of ${SCOPES.join(', ')}`);
  }
  if (opts.rateLimit != null && (!Number.isInteger(opts.rateLimit) || opts.rateLimit < 1)) throw new RangeError('rate limit must be a positive integer');
  const key = generateApiKey();
  const prefix = displayPrefix(key);
  const id = await insertApiKey(db, { name, keyHash: digestApiKey(key), prefix, scopes, rateLimit: opts.rateLimit ?? null });
  return { id, key, prefix, scopes };
}

const EMPTY_DIGEST = Buffer.alloc(32);

/**
 * The principal of a presented key, or null when it is unknown, malformed or revoked. Constant
 * work whatever the input: the lookup runs even for a malformed key.
 */
export async function verifyApiKey(db: Kysely<Database>, presented: string): Promise<ApiKeyPrincipal | null> {
  const digest = digestApiKey(presented);
  const row = await findApiKeyByHash(db, digest);
  const same = timingSafeEqual(row?.key_hash.length === 32 ? row.key_hash : EMPTY_DIGEST, digest);
  const wellFormed = isWellFormedApiKey(presented);
  if (!row || !same || !wellFormed || row.revoked_at !== null) return null;
  return { id: row.id, name: row.name, prefix: row.prefix, scopes: toScopes(row.scopes), rateLimit: row.rate_limit };
}

export type ApiKeyInfo = Omit<ApiKeyRow, 'scopes'> & { scopes: Scope[] };

/** Every key (never the key itself nor its digest). */
export async function listApiKeys(db: Kysely<Database>): Promise<ApiKeyInfo[]> {
  return (await listApiKeyRows(db)).map((r) => ({ ...r, scopes: toScopes(r.scopes) }));
}

/**
 * Revokes a key by numeric id or by its display prefix (`bw_…`); returns how many keys were
 * revoked now (0 when none matched or it was already revoked). Takes effect on the next request.
 */
export async function revokeApiKey(db: Kysely<Database>, idOrPrefix: string | bigint): Promise<number> {
  const by = typeof idOrPrefix === 'bigint' || /^\d+$/.test(idOrPrefix) ? { id: BigInt(idOrPrefix) } : { prefix: idOrPrefix };
  return (await revokeApiKeyRows(db, by)).length;
}
