/**
 * Errors answered before any route runs, in the error body instead of Node's or fastify's
 * defaults (which echoed the URL, with any `?apikey=` in it):
 * - a path segment longer than the router takes (414 ERR_URI_TOO_LONG) or a path that is not a
 *   valid URL component (400 ERR_INVALID_PARAMETER): the request's credentials are checked first,
 *   as for any parameter error, so a request without a valid key learns nothing but its 401; then
 *   the answer is in the dialect of the path;
 * - what Node's HTTP parser refuses before there is a request (headers over 16 KB: 431
 *   ERR_HEADERS_TOO_LARGE; malformed HTTP: 400 ERR_BAD_REQUEST; a request not received within
 *   API_REQUEST_TIMEOUT_MS: 408 ERR_CLIENT_TIMEOUT): no path is known, so Blockwire's own error
 *   body, then the connection is closed.
 * @module
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../src/errors.js';
import type { Logger } from '../src/log.js';
import type { DialectEdge } from './dialect.js';
import type { Auth } from './auth.js';

/** fastify's `frameworkErrors`: routing failures, answered after the credentials are checked. */
export function frameworkErrorHandler(auth: () => Auth, dialectOf: (path: string) => DialectEdge) {
  return async (err: FastifyError, request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const raw = request.raw.url ?? '/';
    const q = raw.indexOf('?');
    const dialect = dialectOf(q < 0 ? raw : raw.slice(0, q));
    // No route parsed the query string: the dialect may read credentials from it.
    (request as { query: unknown }).query = Object.fromEntries(new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)));
    try {
      await auth().check(request, dialect);
    } catch (refusal) {
      if (refusal instanceof ServiceError) {
        dialect.sendError(reply, refusal);
        return;
      }
      request.log.warn({ err: refusal }, 'credentials could not be checked');
      dialect.sendError(reply, new ServiceError('ERR_DATABASE_UNAVAILABLE'));
      return;
    }
    const answer =
      err.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new ServiceError('ERR_URI_TOO_LONG')
        : new ServiceError('ERR_INVALID_PARAMETER', { message: 'the path is not a valid URL' });
    dialect.sendError(reply, answer);
  };
}

/** The error Node's HTTP parser met, as the ServiceError answered for it. */
function clientErrorOf(err: NodeJS.ErrnoException): ServiceError {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return new ServiceError('ERR_CLIENT_TIMEOUT');
  if (err.code === 'HPE_HEADER_OVERFLOW') return new ServiceError('ERR_HEADERS_TOO_LARGE');
  return new ServiceError('ERR_BAD_REQUEST');
}

/** fastify's `clientErrorHandler`: the error body on the raw socket, then close. */
export function clientErrorHandler(log: Logger) {
  return (err: NodeJS.ErrnoException, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const e = clientErrorOf(err);
    log.debug({ code: err.code, answer: e.code }, 'client error');
    if (socket.writable) {
      const body = JSON.stringify(e.toBody());
      socket.write(
        `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? 'Error'}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}
