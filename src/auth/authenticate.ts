/**
 * Who is calling: the key presented in a request (header value, or the query form browsers use)
 * verified into its principal, with the route's scope checked. Failures throw ServiceError
 * (401 ERR_API_KEY_MISSING / ERR_API_KEY_INVALID, 403 ERR_SCOPE), uniform whatever was wrong
 * with the key. Used by both HTTP edges: the API's hook and the stream's WebSocket upgrade.
 * @module
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { verifyApiKey, type ApiKeyPrincipal, type Scope } from './keys.js';

/** Longest header value looked at; longer ones are cut (they are invalid anyway). */
const MAX_KEY_HEADER = 256;

/** The key in a header value (first value if repeated), or undefined when absent or empty. */
export function presentedKey(header: string | string[] | undefined): string | undefined {
  const v = Array.isArray(header) ? header[0] : header;
  if (v === undefined) return undefined;
  const t = v.trim();
  return t === '' ? undefined : t.slice(0, MAX_KEY_HEADER);
}

/**
 * Verifies a presented key and returns its principal, or throws ServiceError 401 (missing or
 * invalid) / 403 (scope).
 */
export async function authenticate(
  db: Kysely<Database>,
  header: string | string[] | undefined,
  scope: Scope = 'read',
  verify: (presented: string) => Promise<ApiKeyPrincipal | null> = (k) => verifyApiKey(db, k),
): Promise<ApiKeyPrincipal> {
  const key = presentedKey(header);
  if (key === undefined) throw new ServiceError('ERR_API_KEY_MISSING');
  const principal = await verify(key);
  if (!principal) throw new ServiceError('ERR_API_KEY_INVALID');
  if (!principal.scopes.includes(scope)) throw new ServiceError('ERR_SCOPE', { message: `this API key lacks the '${scope}' scope` });
  return principal;
}
