/**
 * The API's edge for errors (the table of codes and ServiceError live in src/errors.ts): the
 * fastify error handler that turns any error into a ServiceError and has the request's dialect
 * answer it (in /v1 the body `{error_type, error_code, error_message, retry, error_cause}`).
 * Clients never see a stack trace: unknown errors become ERR_INTERNAL with a fixed message.
 * @module
 */
import { clearAnswerHeaders, keyCheckPassed, keyRefusedSoFar } from './key-check.js';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DialectEdge } from './dialect.js';
import { isTransient, ServiceError, ERROR_CODES, type ErrorCode } from '../src/errors.js';

/** JSON schema of ErrorBody, for route `response` schemas and /openapi.json. */
export const errorBodySchema = {
  $id: 'Error',
  type: 'object',
  required: ['error_type', 'error_code', 'error_message', 'retry', 'error_cause'],
  properties: {
    error_type: { type: 'string' },
    error_code: { type: 'string', enum: Object.keys(ERROR_CODES) },
    error_message: { type: 'string' },
    retry: { type: 'boolean' },
    error_cause: { type: ['string', 'null'] },
  },
} as const;

/** Sends an ServiceError (for hooks that answer without throwing). */
export function sendApiError(reply: FastifyReply, err: ServiceError): FastifyReply {
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.code(err.status).type('application/json; charset=utf-8').send(err.toBody());
}

/** Path parameters whose schema failure has its own code (the schema carries the pattern). */
const PARAM_ERRORS: Record<string, ErrorCode> = { hash: 'ERR_INVALID_HASH', address: 'ERR_INVALID_ADDRESS' };

/** Maps any thrown value to the ServiceError the client sees. */
function toApiError(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  const fe = err as Partial<FastifyError> & { validationContext?: string };
  switch (fe.code) {
    case 'FST_ERR_VALIDATION': {
      const where = fe.validationContext;
      const msg = (fe.message ?? 'invalid request').slice(0, 300);
      if (where === 'body') return new ServiceError('ERR_INVALID_BODY', { message: msg });
      const first = (fe as { validation?: { instancePath?: string }[] }).validation?.[0]?.instancePath ?? '';
      const byParam = where === 'params' ? PARAM_ERRORS[first.replace(/^\//, '')] : undefined;
      if (byParam) return new ServiceError(byParam);
      return new ServiceError('ERR_INVALID_PARAMETER', { message: msg });
    }
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ServiceError('ERR_BODY_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new ServiceError('ERR_UNSUPPORTED_MEDIA_TYPE');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ServiceError('ERR_INVALID_JSON', { message: 'request body is empty' });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ServiceError('ERR_INVALID_JSON');
    case 'FST_ERR_HANDLER_TIMEOUT':
      return new ServiceError('ERR_REQUEST_TIMEOUT');
  }
  // Body-parser failures (secure-json-parse, prototype poisoning) carry a 400 status.
  if (err instanceof SyntaxError || (fe.statusCode === 400 && typeof fe.code !== 'string')) return new ServiceError('ERR_INVALID_JSON');
  if (fe.statusCode === 400 && typeof fe.code === 'string' && fe.code.startsWith('FST_ERR_CTP'))
    return new ServiceError('ERR_INVALID_JSON');
  if (isTransient(err)) return new ServiceError('ERR_DATABASE_UNAVAILABLE', { cause: err });
  return new ServiceError('ERR_INTERNAL', { cause: err });
}

/**
 * Installs the error handler of a scope: every failure leaves as the dialect's error answer; 5xx
 * other than known unavailability is logged with the request id and hidden from the client.
 */
export function installErrorHandling(app: FastifyInstance, dialect: DialectEdge): void {
  app.setErrorHandler(async (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    // A key still being checked alongside the route: its refusal comes first (api/key-check.ts).
    // Past the request's time limit only a refusal already known counts: the check may be what
    // hangs (a stalled database), and the time-out answer carries nothing.
    const timedOut = (err as { code?: unknown }).code === 'FST_ERR_HANDLER_TIMEOUT';
    try {
      if (timedOut) {
        const refusal = keyRefusedSoFar(request);
        if (refusal !== undefined) throw refusal;
      } else {
        await keyCheckPassed(request);
      }
    } catch (refusal) {
      clearAnswerHeaders(reply);
      return dialect.sendError(reply, toApiError(refusal));
    }
    // Timed out while the body is still arriving (a slow sender): the client's fault, answered
    // as Node answers a request that does not arrive in time (408 ERR_CLIENT_TIMEOUT), and the
    // connection closed once answered instead of kept reading the rest.
    // (a parsed body, even under inject() where `complete` stays false, has arrived)
    const bodyArriving =
      request.body === undefined &&
      !request.raw.complete &&
      (Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined);
    if (timedOut && bodyArriving) {
      reply.header('Connection', 'close');
      reply.raw.once('finish', () => request.raw.socket?.destroy());
      return dialect.sendError(reply, new ServiceError('ERR_CLIENT_TIMEOUT'));
    }
    const apiErr = toApiError(err);
    if (apiErr.code === 'ERR_INTERNAL') {
      request.log.error({ err }, 'request failed');
    } else if (apiErr.status >= 500) {
      request.log.warn({ code: apiErr.code, err: err instanceof ServiceError ? err.cause : err }, 'request unavailable');
    }
    return dialect.sendError(reply, apiErr);
  });
}
