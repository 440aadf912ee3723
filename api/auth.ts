/**
 * The authentication hook of every API route: reads the credentials the request's dialect
 * presents (the `apiKey` header; in the Coinstack dialect also `?apikey=` or an HMAC-signed
 * request, or the session of an open socket), verifies them (src/auth/keys.ts, signed-request.ts), checks the route's scope and
 * counts the request against the key's rate limit. Failures are uniform: any bad key is 401
 * ERR_API_KEY_INVALID, whatever was wrong with it (a signed request's answer says which check failed).
 * Routes opt out with `config: { auth: false }` and declare `config: { scope: 'write' }`.
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { findSigningKey, verifyApiKey, type ApiKeyPrincipal, type Scope } from '../src/auth/keys.js';
import { socketSession } from './socket-sessions.js';
import { authenticate, presentedKey } from '../src/auth/authenticate.js';
import { createRateLimiter, type RateLimiter } from '../src/auth/rate-limit.js';
import { createFailureLimiter } from '../src/auth/failure-limit.js';
import { ServiceError } from '../src/errors.js';
import { authenticateSigned } from './signed-request.js';
import type { Credentials, DialectEdge } from './dialect.js';
import { startKeyCheck } from './key-check.js';
import { anonymousPrincipal } from './anonymous.js';
import type { ApiInstance, ResolvedApiDeps } from './deps.js';

/** What installAuth gives buildApi. */
export type Auth = {
  /** Installs the authentication hook (auth, scope, rate limit) on a dialect's scope. */
  install(scope: ApiInstance, dialect: DialectEdge): void;
  /** Verifies the credentials of a request no route took (answered before routing), or throws ServiceError 401. */
  check(request: FastifyRequest, dialect: DialectEdge): Promise<ApiKeyPrincipal>;
};

/** The rate limiter of the API's requests (none without Redis); the process's one when startApi made it. */
export function apiRateLimiter(deps: Pick<ResolvedApiDeps, 'redis' | 'settings' | 'rateClock' | 'log'>): RateLimiter | undefined {
  if (!deps.redis) return undefined;
  let lastWarn = 0;
  return createRateLimiter({
    redis: deps.redis,
    prefix: deps.settings.redisPrefix,
    windowMs: deps.settings.rateWindowMs,
    fallbackShare: deps.settings.rateFallbackShare,
    ...(deps.rateClock ? { now: deps.rateClock } : {}),
    onUnavailable: (err) => {
      if (Date.now() - lastWarn > 10_000) {
        lastWarn = Date.now();
        deps.log.warn({ err }, 'rate limiter: redis did not answer in time, keys limited by the local allowance');
      }
    },
  });
}

/**
 * Installs the `request.apiKey` decoration and returns the installer of the authentication
 * hook, called once per dialect on its scope: one rate limiter for all.
 */
export function installAuth(app: ApiInstance, deps: ResolvedApiDeps): Auth {
  const { settings } = deps;
  const verify = deps.verifyKey ?? ((k: string) => verifyApiKey(deps.db, k));
  const limiter = deps.limiter ?? apiRateLimiter(deps);

  app.decorateRequest('apiKey', {
    getter(this: FastifyRequest & { _apiKey?: ApiKeyPrincipal }): ApiKeyPrincipal {
      if (!this._apiKey) throw new Error('request.apiKey read on a route without authentication');
      return this._apiKey;
    },
  });

  const failures = createFailureLimiter({
    limit: settings.authFailureLimit,
    windowMs: settings.rateWindowMs,
    ...(deps.rateClock ? { now: deps.rateClock } : {}),
  });

  /** The principal behind an open socket's session, its key checked again (api/socket-sessions.ts). */
  const sessionPrincipal = async (token: string, scope: Scope): Promise<ApiKeyPrincipal> => {
    const s = socketSession(token);
    if (!s) throw new ServiceError('ERR_API_KEY_INVALID');
    if (s.kind === 'token') return authenticate(deps.db, s.key, scope, verify);
    const found = await findSigningKey(deps.db, deps.keyring?.(), s.accessKey);
    if (!found) throw new ServiceError('ERR_API_KEY_INVALID');
    if (!found.principal.scopes.includes(scope))
      throw new ServiceError('ERR_SCOPE', { message: `this API key lacks the '${scope}' scope` });
    return found.principal;
  };

  /** The principal of the request's credentials, or a ServiceError (401/403; 429 for an address sending wrong keys). */
  const principalOf = async (request: FastifyRequest, creds: Credentials, scope: Scope): Promise<ApiKeyPrincipal> => {
    if (creds.kind === 'none') throw new ServiceError('ERR_API_KEY_MISSING');
    // (a socket's command: its key proved itself on the upgrade, and is only looked up again)
    if (creds.kind === 'session') return sessionPrincipal(creds.token, scope);
    const token = creds.kind === 'token' ? presentedKey(creds.key) : undefined;
    // No key costs no lookup (401 below); a key this process verified before is not held back.
    const exempt = creds.kind === 'token' && (token === undefined || (deps.peekKey?.(token) ?? false));
    const wait = exempt ? undefined : failures.blocked(request.ip);
    if (wait !== undefined) {
      throw new ServiceError('ERR_RATE_LIMITED', {
        message: 'too many requests with invalid API keys from this address',
        headers: { 'Retry-After': String(Math.max(1, Math.ceil(wait / 1000))) },
      });
    }
    try {
      return creds.kind === 'token'
        ? await authenticate(deps.db, creds.key, scope, verify)
        : await authenticateSigned(deps, request, creds.authorization, scope);
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'ERR_API_KEY_INVALID') failures.note(request.ip);
      throw err;
    }
  };

  /**
   * The principal of a request: its credentials', or, when it presents none and its dialect lets
   * client addresses in without a key, the client address's own (api/anonymous.ts).
   */
  const principalIn = (request: FastifyRequest, dialect: DialectEdge, creds: Credentials, scope: Scope): Promise<ApiKeyPrincipal> => {
    const anonymous = creds.kind === 'none' ? (dialect.anonymousRateLimit?.(deps) ?? 0) : 0;
    return anonymous > 0 ? Promise.resolve(anonymousPrincipal(request.ip, anonymous)) : principalOf(request, creds, scope);
  };

  const install = (scope: ApiInstance, dialect: DialectEdge): void => {
    const answerRateLimit = (
      reply: FastifyReply,
      d: { allowed: boolean; limit: number; remaining: number; resetMs: number },
    ): FastifyReply | undefined => {
      const resetS = Math.max(1, Math.ceil(d.resetMs / 1000));
      reply.header('RateLimit-Limit', String(d.limit));
      reply.header('RateLimit-Remaining', String(d.remaining));
      reply.header('RateLimit-Reset', String(resetS));
      return d.allowed
        ? undefined
        : dialect.sendError(reply, new ServiceError('ERR_RATE_LIMITED', { headers: { 'Retry-After': String(resetS) } }));
    };

    scope.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      const cfg = request.routeOptions.config;
      // A path no route takes is authenticated too: a caller without a valid key gets its 401,
      // never the 404 or 405 (with Allow) that would draw it the route map.
      if (cfg?.auth === false) return;
      const creds = dialect.credentials(request);
      let principal: ApiKeyPrincipal;
      // A key already known (cache) is counted while its revocation check runs, not after it.
      const token = creds.kind === 'token' ? presentedKey(creds.key) : undefined;
      const known = limiter && deps.peekKey && token !== undefined ? deps.peekKey(token) : undefined;
      const early = known && limiter ? limiter.take(known.id, known.rateLimit ?? settings.rateLimit) : undefined;
      const scopeNeeded = cfg?.scope ?? 'read';
      if (cfg?.keyCheck === 'alongside' && creds.kind === 'token' && known && early && known.scopes.includes(scopeNeeded)) {
        // A key verified before: the route runs while its revocation check does; nothing is
        // answered before the check passes (api/key-check.ts).
        const check = authenticate(deps.db, creds.key, scopeNeeded, verify).then((p) => {
          if (p.id !== known.id) throw new ServiceError('ERR_API_KEY_INVALID');
        });
        startKeyCheck(request, check);
        (request as FastifyRequest & { _apiKey?: ApiKeyPrincipal })._apiKey = known;
        const d = await early;
        if (!d.allowed) {
          try {
            await check;
          } catch (err) {
            if (err instanceof ServiceError) return dialect.sendError(reply, err);
            throw err;
          }
        }
        return answerRateLimit(reply, d);
      }
      try {
        principal = await principalIn(request, dialect, creds, scopeNeeded);
      } catch (err) {
        await early;
        if (err instanceof ServiceError) return dialect.sendError(reply, err);
        throw err;
      }
      (request as FastifyRequest & { _apiKey?: ApiKeyPrincipal })._apiKey = principal;
      if (limiter) {
        const d =
          early && known!.id === principal.id ? await early : await limiter.take(principal.id, principal.rateLimit ?? settings.rateLimit);
        return answerRateLimit(reply, d);
      }
    });
  };
  return { install, check: (request, dialect) => principalIn(request, dialect, dialect.credentials(request), 'read') };
}
