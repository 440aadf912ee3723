/**
 * The REST API as a fastify app: `buildApi(deps)` registers the route modules of each dialect
 * (api/dialect.ts: Blockwire's own under `/v1`, Coinstack's at the bare paths) in a scope of
 * its own with the dialect's authentication, error answers and parsing, installs rate limits
 * and /openapi.json, and never listens (tests call `app.inject`; api/main.ts listens).
 * @module
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import cors, { type FastifyCorsOptions } from '@fastify/cors';
import { installAuth } from './auth.js';
import { clientErrorHandler, frameworkErrorHandler } from './protocol-errors.js';
import { buildValidator, rejectNulCharacters } from './validation.js';
import { boundedJsonParser, installJsonBodies } from './json-body.js';
import { installErrorHandling } from './errors.js';
import { collectRoutes } from './route-map.js';
import type { DialectEdge, RouteModule } from './dialect.js';
import { v1Dialect } from './dialects/v1.js';
import { coinstackDialect } from './dialects/coinstack.js';
import { esploraDialect, movePathKey } from './dialects/esplora.js';
import { collectOpenApi, hideFromOpenApi } from './openapi.js';
import { routeModules } from './routes/index.js';
import { healthRoutes } from './routes/health.js';
import { consoleRoutes } from './console/serve.js';
import { defaultApiSettings, type ApiDeps, type ResolvedApiDeps } from './deps.js';
import { TIP_HASH_HEADER, TIP_HEIGHT_HEADER } from './tip.js';

/** A dialect with the route modules it serves. */
type Served<D extends DialectEdge> = { dialect: D; modules: readonly RouteModule<D>[] };
const served = <D extends DialectEdge>(dialect: D, modules: readonly RouteModule<D>[]): Served<DialectEdge> => ({
  dialect,
  modules: modules as readonly RouteModule<DialectEdge>[],
});

/** The dialects served, each under its prefix: Blockwire's own, Esplora's, and Coinstack's at the bare paths. */
const SERVED: readonly Served<DialectEdge>[] = [
  served(v1Dialect, routeModules.v1),
  served(esploraDialect, routeModules.esplora),
  served(coinstackDialect, routeModules.coinstack),
];
const DIALECTS: readonly DialectEdge[] = SERVED.map((s) => s.dialect);

const VERSION = '0.1.0';

/**
 * CORS for browser apps on other origins: the headers the API reads (apiKey, Idempotency-Key)
 * may be sent, the paging and rate-limit headers it answers with may be read. No credentials:
 * the API authenticates by its apiKey header, never by cookies.
 */
function corsOptions(origins: readonly string[]): FastifyCorsOptions {
  return {
    origin: origins.includes('*') ? '*' : [...origins],
    methods: ['GET', 'POST', 'DELETE'],
    allowedHeaders: ['apiKey', 'Content-Type', 'Idempotency-Key'],
    exposedHeaders: [
      'Link',
      'Retry-After',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
      TIP_HEIGHT_HEADER,
      TIP_HASH_HEADER,
    ],
    credentials: false,
    maxAge: 600,
    strictPreflight: true,
  };
}

/** Longest path segment routed (the longest any route takes is an address or a descriptor id). */
const MAX_PARAM_LENGTH = 1024;

/** The dialect whose prefix `path` is under (the bare paths' when none is). */
function dialectOf(path: string): DialectEdge {
  return (
    DIALECTS.find((d) => d.prefix !== '' && (path === d.prefix || path.startsWith(`${d.prefix}/`))) ??
    DIALECTS.find((d) => d.prefix === '')!
  );
}

/** Builds the app (not listening). Await `app.ready()` or `inject` before use. */
export async function buildApi(deps: ApiDeps): Promise<FastifyInstance> {
  const resolved: ResolvedApiDeps = { ...deps, readDb: deps.readDb ?? deps.db, settings: { ...defaultApiSettings, ...deps.settings } };
  const { settings } = resolved;
  const app = Fastify({
    loggerInstance: deps.log.child({ component: 'api' }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: settings.bodyLimit,
    handlerTimeout: settings.requestTimeoutMs,
    requestTimeout: settings.requestTimeoutMs,
    return503OnClosing: true,
    // Long enough that an overlong hash, address or id reaches its route and is refused by its
    // schema (400, after authentication); past it, 414 (after authentication too).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // An Esplora base URL may carry the key (`/esplora/{key}/…`): taken off the path before routing.
    rewriteUrl: movePathKey,
    schemaController: { compilersFactory: { buildValidator } },
    frameworkErrors: frameworkErrorHandler(() => auth, dialectOf),
    clientErrorHandler: clientErrorHandler(deps.log.child({ component: 'api' })),
    // How often Node checks for requests slower than requestTimeout (408): its default is 30 s.
    http: { connectionsCheckingInterval: Math.min(30_000, Math.max(500, Math.floor(settings.requestTimeoutMs / 4))) },
  });
  const openApiDocument = collectOpenApi(app, {
    title: 'Blockwire',
    version: VERSION,
    description:
      'Address index, transactions, broadcast, stamps and subscriptions beside a Bitcoin Core node, under /v1. The bare paths speak the Coinstack dialect (docs/coinstack.md) and are not described here.',
  });
  installErrorHandling(app, v1Dialect);
  const parseJson = boundedJsonParser(app, { maxDepth: settings.bodyMaxDepth, maxItems: settings.bodyMaxItems });
  installJsonBodies(app, parseJson);
  const routes = collectRoutes(app);
  // A DELETE sent with `Content-Type: application/json` and no body (what many HTTP clients do)
  // has nothing to parse: it is taken as a bodiless DELETE, not refused as empty JSON.
  app.addHook('onRequest', async (request) => {
    if (
      request.method === 'DELETE' &&
      request.headers['transfer-encoding'] === undefined &&
      (request.headers['content-length'] ?? '0') === '0'
    ) {
      delete request.headers['content-type'];
    }
  });
  // After authentication (onRequest), before any schema or route sees the input.
  app.addHook('preValidation', rejectNulCharacters);
  // Before authentication: a preflight carries no apiKey and is answered by the CORS hook.
  if (settings.corsOrigins.length > 0) await app.register(cors, corsOptions(settings.corsOrigins));
  const auth = installAuth(app, resolved);

  app.addHook('onResponse', async (request, reply) => {
    request.log.debug(
      { method: request.method, route: request.routeOptions.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
      'request',
    );
  });
  healthRoutes(app, resolved);
  consoleRoutes(app);
  if (deps.metrics) {
    const metrics = deps.metrics;
    app.addHook('onResponse', async (request, reply) => {
      metrics.observeRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    });
    app.get('/metrics', { config: { auth: false }, schema: { hide: true } }, async (_req, reply) =>
      reply.type(metrics.contentType).send(await metrics.render()),
    );
  }
  app.get('/openapi.json', { config: { auth: false }, schema: { hide: true } }, async () => openApiDocument());
  // The versioned root: where to go from here (no data, so no key needed).
  app.get('/v1', { config: { auth: false }, schema: { hide: true } }, async () => ({
    name: 'Blockwire',
    version: VERSION,
    links: { openapi: '/openapi.json', health: '/healthz', stream: '/v1/stream' },
    authentication: 'send your API key in the apiKey header (blockwire keys create --name NAME)',
    routes: routes.index('/v1'),
  }));

  for (const { dialect, modules } of SERVED) {
    await app.register(
      async (scope) => {
        if (!dialect.described) hideFromOpenApi(scope);
        dialect.install(scope, parseJson);
        installErrorHandling(scope, dialect);
        auth.install(scope, dialect);
        for (const mod of modules) await mod(scope, resolved, dialect);
      },
      { prefix: dialect.prefix },
    );
  }
  return app;
}
