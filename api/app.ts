/**
 * The REST API as a fastify app: `buildApi(deps)` registers every route module under `/v1`
 * and at the bare paths (existing clients), installs authentication, rate limits, the error
 * handler and /openapi.json, and never listens (tests call `app.inject`; api/main.ts listens).
 * @module
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import cors, { type FastifyCorsOptions } from '@fastify/cors';
import { installAuth } from './auth.js';
import { installErrorHandling } from './errors.js';
import { collectOpenApi } from './openapi.js';
import { routeModules } from './routes/index.js';
import { healthRoutes } from './routes/health.js';
import { defaultApiSettings, type ApiDeps, type ResolvedApiDeps } from './deps.js';

/** Where the routes are served: versioned, and bare for clients of the original service. */
export const API_PREFIXES = ['/v1', ''] as const;

const VERSION = '0.1.0';

/**
 * CORS for browser apps on other origins: the headers the API reads (apiKey, Idempotency-Key)
 * may be sent, the paging and rate-limit headers it answers with may be read. No credentials:
 * the API authenticates by its apiKey header, never by cookies.
 */
export function corsOptions(origins: readonly string[]): FastifyCorsOptions {
  return {
    origin: origins.includes('*') ? '*' : [...origins],
    methods: ['GET', 'POST', 'DELETE'],
    allowedHeaders: ['apiKey', 'Content-Type', 'Idempotency-Key'],
    exposedHeaders: ['Link', 'Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'],
    credentials: false,
    maxAge: 600,
    strictPreflight: true,
  };
}

/** Builds the app (not listening). Await `app.ready()` or `inject` before use. */
export async function buildApi(deps: ApiDeps): Promise<FastifyInstance> {
  const resolved: ResolvedApiDeps = { ...deps, settings: { ...defaultApiSettings, ...deps.settings } };
  const { settings } = resolved;
  const app = Fastify({
    loggerInstance: deps.log.child({ component: 'api' }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: settings.bodyLimit,
    handlerTimeout: settings.requestTimeoutMs,
    requestTimeout: settings.requestTimeoutMs,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false } },
  });
  const openApiDocument = collectOpenApi(app, {
    title: 'Blockwire',
    version: VERSION,
    description: 'Address index, transactions, broadcast, stamps and subscriptions beside a Bitcoin Core node. Every route is served under /v1 and at the bare path.',
  });
  installErrorHandling(app);
  // Before authentication: a preflight carries no apiKey and is answered by the CORS hook.
  if (settings.corsOrigins.length > 0) await app.register(cors, corsOptions(settings.corsOrigins));
  installAuth(app, resolved);

  app.addHook('onResponse', async (request, reply) => {
    request.log.debug({ method: request.method, route: request.routeOptions.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 }, 'request');
  });
  healthRoutes(app, resolved);
  if (deps.metrics) {
    const metrics = deps.metrics;
    app.addHook('onResponse', async (request, reply) => {
      metrics.observeRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    });
    app.get('/metrics', { config: { auth: false }, schema: { hide: true } }, async (_req, reply) => reply.type(metrics.contentType).send(await metrics.render()));
  }
  app.get('/openapi.json', { config: { auth: false }, schema: { hide: true } }, async () => openApiDocument());

  for (const prefix of API_PREFIXES) {
    await app.register(
      async (scope) => {
        for (const mod of routeModules) await mod(scope, resolved);
      },
      { prefix },
    );
  }
  return app;
}
