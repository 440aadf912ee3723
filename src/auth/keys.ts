/**
 * API keys: create (the key is returned once and only its SHA-256 digest is stored), verify,
 * list and revoke. A signing key also has a secret (shown once with its access key, stored
 * sealed with a server key: secret-box.ts) for requests signed with HMAC. Verification does the same work for every input — digest, one indexed
 * lookup, a constant-time comparison, the format check — so an unknown key and a key with a
 * wrong last character cannot be told apart by timing, and every failure is the same `null`.
 * Keys never reach a log line (src/log.ts redacts the `apikey` header too).
 * @module
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import {
  findApiKeyByHash,
  insertApiKey,
  listApiKeyRows,
  listSecretBoxes,
  revokeApiKeyRows,
  updateSecretBox,
  type ApiKeyRow,
} from '../db/queries/api-keys.js';
import { boxKeyId, openSecret, sealSecret, type Keyring } from './secret-box.js';
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

/** A new key; `secret` only for a signing key (then `key` is its access key). */
export type CreatedApiKey = { id: bigint; key: string; prefix: string; scopes: Scope[]; secret?: string };

function toScopes(raw: readonly string[]): Scope[] {
  return raw.filter((s): s is Scope => (SCOPES as readonly string[]).includes(s));
}

/** Creates a key and returns it; this is the only time the key itself exists outside its owner. */
export async function createApiKey(
  db: Kysely<Database>,
  opts: { name: string; scopes?: readonly Scope[]; rateLimit?: number | null; secret?: { keyring: Keyring } },
): Promise<CreatedApiKey> {
  const name = opts.name.trim();
  if (name === '' || name.length > 200) throw new RangeError('key name must be 1 to 200 characters');
  const scopes = [...new Set(opts.scopes ?? SCOPES)];
  if (scopes.length === 0 || scopes.some((s) => !(SCOPES as readonly string[]).includes(s))) {
    throw new RangeError(`scopes must be a non-empty subset of ${SCOPES.join(', ')}`);
  }
  if (opts.rateLimit != null && (!Number.isInteger(opts.rateLimit) || opts.rateLimit < 1))
    throw new RangeError('rate limit must be a positive integer');
  const key = generateApiKey();
  const prefix = displayPrefix(key);
  const keyHash = digestApiKey(key);
  const secret = opts.secret ? generateSecretKey() : undefined;
  const secretBox = opts.secret && secret ? sealSecret(opts.secret.keyring, secret, keyHash) : null;
  const id = await insertApiKey(db, { name, keyHash, prefix, scopes, rateLimit: opts.rateLimit ?? null, secretBox });
  return { id, key, prefix, scopes, ...(secret ? { secret } : {}) };
}

/** A signing key's secret: 32 random bytes as base64url (43 characters). */
function generateSecretKey(): string {
  return randomBytes(32).toString('base64url');
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
  // A signing key's access key travels in clear in every signed request: it is no bearer token.
  if (!row || !same || !wellFormed || row.revoked_at !== null || row.secret_box !== null) return null;
  return { id: row.id, name: row.name, prefix: row.prefix, scopes: toScopes(row.scopes), rateLimit: row.rate_limit };
}

/**
 * The principal and secret of a signing key named by its access key, or null when the access
 * key is unknown, malformed, revoked, a bearer key, or its secret does not open with `keyring`.
 */
export async function findSigningKey(
  db: Kysely<Database>,
  keyring: Keyring | undefined,
  accessKey: string,
): Promise<{ principal: ApiKeyPrincipal; secret: string } | null> {
  const digest = digestApiKey(accessKey);
  const row = await findApiKeyByHash(db, digest);
  const same = timingSafeEqual(row?.key_hash.length === 32 ? row.key_hash : EMPTY_DIGEST, digest);
  if (!row || !same || !isWellFormedApiKey(accessKey) || row.revoked_at !== null || row.secret_box === null || !keyring) return null;
  const secret = openSecret(keyring, row.secret_box, row.key_hash);
  if (secret === undefined) return null;
  return { principal: { id: row.id, name: row.name, prefix: row.prefix, scopes: toScopes(row.scopes), rateLimit: row.rate_limit }, secret };
}

/**
 * Seals every stored secret again under the keyring's current server key (after a new key was
 * put first in the keyring); returns how many were resealed and the ids that did not open.
 */
export async function resealSecrets(db: Kysely<Database>, keyring: Keyring): Promise<{ resealed: number; unopened: bigint[] }> {
  let resealed = 0;
  const unopened: bigint[] = [];
  for (const row of await listSecretBoxes(db)) {
    if (boxKeyId(row.secret_box) === keyring.current.id) continue;
    const secret = openSecret(keyring, row.secret_box, row.key_hash);
    if (secret === undefined) {
      unopened.push(row.id);
      continue;
    }
    await updateSecretBox(db, row.id, sealSecret(keyring, secret, row.key_hash));
    resealed++;
  }
  return { resealed, unopened };
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
