/**
 * The Coinstack dialect, served at the bare paths: answers as coinstackd does (restserver.go),
 * so that Coinstack's SDKs work unmodified. Errors as `CoinStackError` JSON with numeric codes
 * (coinstack-errors.ts); the key as an `APIKey` header (any case) or `?apikey=`; request bodies
 * read as JSON whatever their Content-Type (coinstackd binds JSON without looking at it, and the
 * Java SDK sends none); a path no route serves is gin's plain-text 404.
 * @module
 */
import type { FastifyRequest } from 'fastify';
import type { Credentials, Dialect } from '../dialect.js';
import { sendCoinstackError } from './coinstack-errors.js';
import { checkBodyDigest } from '../signed-request.js';

/** Query parameters coinstackd turns into headers before authenticating (browser SDK). */
const AUTH_QUERY = ['apikey', 'auth', 'md5', 'content-type'] as const;

/** The key or signature a request presents, in coinstackd's order: `APIKey` first, then HMAC. */
function coinstackCredentials(request: FastifyRequest): Credentials {
  const q = request.query as Record<string, unknown> | undefined;
  const fromQuery = (name: string) => (typeof q?.[name] === 'string' ? (q[name] as string) : undefined);
  const token = fromQuery('apikey') ?? request.headers['apikey'];
  if (token !== undefined && token !== '') return { kind: 'token', key: token };
  const authorization = fromQuery('auth') ?? request.headers.authorization;
  if (authorization) return { kind: 'hmac', authorization };
  return { kind: 'none' };
}

export const coinstackDialect: Dialect = {
  name: 'coinstack',
  prefix: '',
  described: false,
  install(scope) {
    // Any Content-Type (or none) is read as JSON, with fastify's own JSON parser, once a signed
    // request's body matched its Content-MD5.
    const json = scope.getDefaultJsonParser('error', 'error');
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
      try {
        checkBodyDigest(request, body as Buffer);
      } catch (err) {
        done(err as Error, undefined);
        return;
      }
      json(request, (body as Buffer).toString('utf8'), done);
    });
    // The credentials in the query are the request's headers, not parameters of the route.
    scope.addHook('preValidation', async (request) => {
      const q = request.query as Record<string, unknown> | undefined;
      if (q) for (const name of AUTH_QUERY) delete q[name];
    });
    scope.setNotFoundHandler((_request, reply) => reply.code(404).type('text/plain').send('404 page not found'));
  },
  sendError: sendCoinstackError,
  credentials: coinstackCredentials,
};
