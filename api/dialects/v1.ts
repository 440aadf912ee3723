/**
 * Blockwire's own dialect, served under `/v1`: the error body `{error_type, error_code,
 * error_message, retry, error_cause}` with string codes (src/errors.ts ERROR_CODES), the key in
 * the `apiKey` header, JSON bodies with `Content-Type: application/json`, JSON 404s.
 * @module
 */
import { ServiceError } from '../../src/errors.js';
import { sendApiError } from '../errors.js';
import type { Dialect } from '../dialect.js';

export const v1Dialect: Dialect = {
  name: 'v1',
  prefix: '/v1',
  described: true,
  install(scope) {
    scope.setNotFoundHandler((_request, reply) => sendApiError(reply, new ServiceError('ERR_ROUTE_NOT_FOUND')));
  },
  sendError: sendApiError,
  credentials: (request) => ({ kind: 'token', key: request.headers['apikey'] }),
};
