/**
 * Requests without a key, where a dialect lets them in (Esplora's, with ESPLORA_ANONYMOUS_RATE_LIMIT
 * above 0: its clients cannot be given a key in a header): each client address (the connection's
 * peer; behind a proxy, the proxy's, as fastify's `request.ip` says) is a principal of its own,
 * counted by the same rate limiter as keys under an id no key has (keys' ids are positive).
 * @module
 */
import { createHash } from 'node:crypto';
import type { ApiKeyPrincipal } from '../src/auth/keys.js';

/** The principal of the client address `ip`: read and broadcast, `limit` requests per rate window. */
export function anonymousPrincipal(ip: string, limit: number): ApiKeyPrincipal {
  // (48 bits of the address's digest, negated: never a key's id, the same for an address in every process)
  const id = -BigInt(`0x${createHash('sha256').update(ip).digest('hex').slice(0, 12)}`) - 1n;
  return { id, name: 'anonymous', prefix: 'anonymous', scopes: ['read', 'write'], rateLimit: limit };
}
