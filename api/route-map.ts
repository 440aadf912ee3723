/**
 * What the API serves, collected as routes register: a request whose path exists with other
 * methods is answered 405 with `Allow` (not 404), and `GET /v1/` answers an index of the routes
 * (method, path, summary) with links to /openapi.json, /healthz and /v1/stream.
 * @module
 */
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { ServiceError } from '../src/errors.js';

/** Where the app keeps its map: child scopes see the root's properties. */
const ROUTES = Symbol('blockwire.routes');

type Known = { pattern: RegExp; path: string; method: string; summary: string | undefined; hidden: boolean };

export type RouteMap = {
  /** The methods served at this concrete path (HEAD with GET), or [] when the path is unknown. */
  methodsFor(path: string): string[];
  /** The public routes under `prefix`, for the index. */
  index(prefix: string): { method: string; path: string; summary?: string }[];
};

/** A fastify path (`/v1/addresses/:address/balance`) as a regular expression on concrete paths. */
function patternOf(url: string): RegExp {
  const body = url
    .replace(/\/+$/, '')
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${body}/?$`);
}

/** Starts collecting; call before any route is registered. */
export function collectRoutes(app: FastifyInstance): RouteMap {
  const known: Known[] = [];
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const schema = route.schema as { summary?: string; hide?: boolean } | undefined;
    for (const method of methods)
      known.push({ pattern: patternOf(route.url), path: route.url, method, summary: schema?.summary, hidden: schema?.hide === true });
  });
  const map: RouteMap = {
    methodsFor(path) {
      const bare = path.split('?')[0]!;
      const set = new Set(known.filter((k) => k.pattern.test(bare)).map((k) => k.method));
      return ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) => set.has(m));
    },
    index(prefix) {
      return known
        .filter((k) => k.path.startsWith(`${prefix}/`) && k.method !== 'HEAD' && !k.hidden)
        .map((k) => ({ method: k.method, path: k.path, ...(k.summary ? { summary: k.summary } : {}) }));
    },
  };
  (app as unknown as Record<symbol, RouteMap>)[ROUTES] = map;
  return map;
}

/** What a request no route matched gets: 405 with `Allow` when its path has other methods, else 404. */
export function notFoundAnswer(request: FastifyRequest): ServiceError {
  const map = (request.server as unknown as Record<symbol, RouteMap | undefined>)[ROUTES];
  const allowed = map?.methodsFor(request.url) ?? [];
  if (allowed.length === 0) return new ServiceError('ERR_ROUTE_NOT_FOUND');
  return new ServiceError('ERR_METHOD_NOT_ALLOWED', {
    message: `${request.method} is not served here; use ${allowed.join(', ')}`,
    headers: { Allow: allowed.join(', ') },
  });
}
