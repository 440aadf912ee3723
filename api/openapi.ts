/**
 * /openapi.json built from the routes actually registered: an `onRoute` hook collects each
 * route's method, path and JSON schemas (params, querystring, body, response), so routes added
 * by other modules (hooks, subscriptions, stamps) are described without editing this file.
 * Fastify's `:param` paths become OpenAPI `{param}`; every route also answers the Error body.
 * @module
 */
import type { RouteOptions } from 'fastify';
import { errorBodySchema } from './errors.js';
import type { ApiInstance } from './deps.js';

type JsonSchema = Record<string, unknown>;
type Collected = { method: string; url: string; schema: JsonSchema; auth: boolean; scope: string };

/** Marks every route registered on `scope` from now on as left out of /openapi.json. */
export function hideFromOpenApi(scope: ApiInstance): void {
  scope.addHook('onRoute', (opts: RouteOptions) => {
    opts.schema = { ...(opts.schema ?? {}), hide: true };
  });
}

const { $id: _id, ...errorSchema } = errorBodySchema;

/** Starts collecting routes; call before any route is registered. Returns the document builder. */
export function collectOpenApi(app: ApiInstance, info: { title: string; version: string; description?: string }): () => JsonSchema {
  // (read when the document is first built: hooks of a route's own scope may still change it)
  const registered: RouteOptions[] = [];
  app.addHook('onRoute', (opts: RouteOptions) => {
    registered.push(opts);
  });
  const collect = (): Collected[] => {
    const routes: Collected[] = [];
    for (const opts of registered) {
      const methods = (Array.isArray(opts.method) ? opts.method : [opts.method]).map((m) => m.toLowerCase());
      const schema = (opts.schema ?? {}) as JsonSchema;
      if (schema.hide === true) continue;
      const cfg = (opts.config ?? {}) as { auth?: boolean; scope?: string };
      for (const method of methods) {
        if (method === 'head' || method === 'options') continue;
        routes.push({ method, url: opts.url, schema, auth: cfg.auth !== false, scope: cfg.scope ?? 'read' });
      }
    }
    return routes;
  };

  let doc: JsonSchema | undefined;
  return () => (doc ??= buildDocument(collect(), info));
}

function toOpenApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function parameters(where: 'path' | 'query', schema: unknown): JsonSchema[] {
  const s = schema as { properties?: Record<string, JsonSchema>; required?: string[] } | undefined;
  if (!s?.properties) return [];
  return Object.entries(s.properties).map(([name, p]) => {
    const { description, ...rest } = p as { description?: string } & JsonSchema;
    return {
      name,
      in: where,
      required: where === 'path' ? true : (s.required ?? []).includes(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

function buildDocument(routes: Collected[], info: { title: string; version: string; description?: string }): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const r of routes) {
    const path = toOpenApiPath(r.url);
    const s = r.schema;
    const responses: Record<string, JsonSchema> = {};
    const resp = (s.response ?? {}) as Record<string, JsonSchema>;
    for (const [status, body] of Object.entries(resp)) {
      // (`contentMediaType`: what a route sends other than JSON, e.g. text/plain hex or bytes)
      const { description, headers, contentMediaType, ...schema } = body as {
        description?: string;
        headers?: JsonSchema;
        contentMediaType?: string;
      } & JsonSchema;
      responses[status] = {
        description: description ?? 'success',
        ...(headers ? { headers } : {}),
        content: { [contentMediaType ?? 'application/json']: { schema } },
      };
    }
    responses.default = { description: 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    const op: JsonSchema = {
      ...(s.summary ? { summary: s.summary } : {}),
      ...(s.description ? { description: s.description } : {}),
      ...(s.tags ? { tags: s.tags } : {}),
      operationId: `${r.method}${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      parameters: [...parameters('path', s.params), ...parameters('query', s.querystring)],
      ...(s.body ? { requestBody: { required: true, content: { 'application/json': { schema: s.body } } } } : {}),
      responses,
      ...(r.auth ? { security: [{ apiKey: [] }], 'x-scope': r.scope } : { security: [] }),
    };
    (paths[path] ??= {})[r.method] = op;
  }
  return {
    openapi: '3.0.3',
    info,
    paths,
    components: {
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'apiKey' } },
      schemas: { Error: errorSchema },
    },
  };
}
