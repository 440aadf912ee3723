/**
 * The authentication hook of every API route: reads the `apiKey` header, verifies it
 * (src/auth/keys.ts), checks the route's scope and counts the request against the key's rate
 * limit. Failures are uniform: any bad key is 401 ERR_API_KEY_INVALID, whatever was wrong with it.
 * Routes opt out with `config: { auth: false }` and declare `config: { scope: 'write' }`.
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { verifyApiKey, type ApiKeyPrincipal } from '../src/auth/keys.js';
import { authenticate, presentedKey } from '../src/auth/authenticate.js';
import { createRateLimiter, type RateLimiter } from '../src/auth/rate-limit.js';
import { sendApiError } from './errors.js';
import { ServiceError } from '../src/errors.js';
import { startKeyCheck } from './key-check.js';
import type { ApiInstance, ResolvedApiDeps } from './deps.js';

/** Sets the RateLimit headers of a take; answers 429 when it was refused. */
function answerRateLimit(reply: FastifyReply, d: { allowed: boolean; limit: number; remaining: number; resetMs: number }): FastifyReply | undefined {
  const resetS = Math.max(1, Math.ceil(d.resetMs / 1000));
  reply.header('RateLimit-Limit', String(d.limit));
  reply.header('RateLimit-Remaining', String(d.remaining));
  reply.header('RateLimit-Reset', String(resetS));
  return d.allowed ? undefined : sendApiError(reply, new ServiceError('ERR_RATE_LIMITED', { headers: { 'Retry-After': String(resetS) } }));
}

/** Installs the onRequest hook (auth, scope, rate limit) and the `request.apiKey` decoration. */
export function installAuth(app: ApiInstance, deps: ResolvedApiDeps): void {
  const { settings } = deps;
  const verify = deps.verifyKey ?? ((k: string) => verifyApiKey(deps.db, k));
  let limiter: RateLimiter | undefined;
  if (deps.redis) {
    let lastWarn = 0;
    limiter = createRateLimiter({
      redis: deps.redis,
      prefix: settings.redisPrefix,
      windowMs: settings.rateWindowMs,
      onUnavailable: (err) => {
        if (Date.now() - lastWarn > 10_000) {
          lastWarn = Date.now();
          deps.log.warn({ err }, 'rate limiter: redis unavailable, requests are not limited');
        }
      },
    });
  }

  app.decorateRequest('apiKey', {
    getter(this: FastifyRequest & { _apiKey?: ApiKeyPrincipal }): ApiKeyPrincipal {
      if (!this._apiKey) throw new Error('request.apiKey read on a route without authentication');
      return this._apiKey;
    },
  });

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const cfg = request.routeOptions.config;
    if (cfg?.auth === false || request.is404) return;
    let principal: ApiKeyPrincipal;
    // A key already known (cache) is counted while its revocation check runs, not after it.
    const known = limiter && deps.peekKey ? deps.peekKey(presentedKey(request.headers['apikey']) ?? '') : undefined;
    const early = known && limiter ? limiter.take(known.id, known.rateLimit ?? settings.rateLimit) : undefined;
    const scope = cfg?.scope ?? 'read';
    if (cfg?.keyCheck === 'alongside' && known && early && known.scopes.includes(scope)) {
      // A key verified before: the route runs while its revocation check does; nothing is
      // answered before the check passes (api/key-check.ts).
      const check = authenticate(deps.db, request.headers['apikey'], scope, verify).then((p) => {
        if (p.id !== known.id) throw new ServiceError('ERR_API_KEY_INVALID');
      });
      startKeyCheck(request, check);
      (request as FastifyRequest & { _apiKey?: ApiKeyPrincipal })._apiKey = known;
      const d = await early;
      if (!d.allowed) {
        try {
          await check;
        } catch (err) {
          if (err instanceof ServiceError) return sendApiError(reply, err);
          throw err;
        }
      }
      return answerRateLimit(reply, d);
    }
    try {
      principal = await authenticate(deps.db, request.headers['apikey'], scope, verify);
    } catch (err) {
      await early;
      if (err instanceof ServiceError) return sendApiError(reply, err);
      throw err;
    }
    (request as FastifyRequest & { _apiKey?: ApiKeyPrincipal })._apiKey = principal;
    if (limiter) {
      const d = early && known!.id === principal.id ? await early : await limiter.take(principal.id, principal.rateLimit ?? settings.rateLimit);
      return answerRateLimit(reply, d);
    }
  });
}
