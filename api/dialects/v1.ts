/**
 * Blockwire's own dialect, served under `/v1`: the error body `{error_type, error_code,
 * error_message, retry, error_cause}` with string codes (src/errors.ts ERROR_CODES), the key in
 * the `apiKey` header, JSON bodies with `Content-Type: application/json`, JSON 404s, 405 with
 * `Allow` for a path served with other methods.
 * @module
 */
import { notFoundAnswer } from '../route-map.js';
import { sendApiError } from '../errors.js';
import type { Dialect } from '../dialect.js';

export const v1Dialect: Dialect = {
  name: 'v1',
  prefix: '/v1',
  described: true,
  install(scope) {
    // A path served with other methods is 405 with Allow, not 404.
    scope.setNotFoundHandler((request, reply) => sendApiError(reply, notFoundAnswer(request)));
  },
  sendError: sendApiError,
  credentials: (request) => ({ kind: 'token', key: request.headers['apikey'] }),
};
