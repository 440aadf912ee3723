/**
 * API errors: one table of stable error codes (HTTP status, type, `retry`), the ApiError that
 * routes throw, and the fastify error handler that turns any error into the body
 * `{error_type, error_code, error_message, retry, error_cause}` (DESIGN.md "Errors").
 * Clients never see a stack trace: unknown errors become ERR_INTERNAL with a fixed message.
 * @module
 */
import { clearAnswerHeaders, keyCheckPassed } from './key-check.js';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

/** The error categories clients can switch on (`error_type`). */
export type ErrorType =
  | 'invalid_request'
  | 'authentication'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'unavailable'
  | 'internal';

type CodeInfo = { status: number; type: ErrorType; retry: boolean; message: string; doc: string };

const code = (status: number, type: ErrorType, retry: boolean, message: string, doc: string): CodeInfo => ({ status, type, retry, message, doc });

/**
 * Every error code the API answers, with its HTTP status, its `error_type`, whether resending
 * the same request can succeed (`retry`), the default message and a line for the docs.
 * Codes are stable: add new ones, never rename or reuse one.
 */
export const ERROR_CODES = {
  ERR_API_KEY_MISSING: code(401, 'authentication', false, 'missing apiKey header', 'The request carries no `apiKey` header.'),
  ERR_API_KEY_INVALID: code(401, 'authentication', false, 'invalid API key', 'The key is unknown, malformed or revoked (one answer for all three).'),
  ERR_SCOPE: code(403, 'forbidden', false, 'this API key may not use this route', 'The key lacks the scope the route needs (e.g. a `read` key calling a `write` route).'),
  ERR_RATE_LIMITED: code(429, 'rate_limited', true, 'rate limit exceeded', 'Too many requests for this key in the current window; see `Retry-After`.'),
  ERR_INVALID_HASH: code(400, 'invalid_request', false, 'hash must be 64 hex characters', 'A block or transaction hash in the path is not 64 hex characters.'),
  ERR_INVALID_ADDRESS: code(400, 'invalid_request', false, 'invalid address', 'The address in the path is not a valid address (encoding or checksum).'),
  ERR_WRONG_NETWORK: code(400, 'invalid_request', false, 'address is for another network', 'The address is valid but encodes another network than the node\'s.'),
  ERR_INVALID_PARAMETER: code(400, 'invalid_request', false, 'invalid parameter', 'A query or path parameter is out of range or malformed (`limit`, `min_conf`, …).'),
  ERR_INVALID_CURSOR: code(400, 'invalid_request', false, 'invalid cursor', 'The paging cursor is not one this API issued.'),
  ERR_INVALID_BODY: code(400, 'invalid_request', false, 'invalid request body', 'The JSON body does not match the route\'s schema.'),
  ERR_INVALID_JSON: code(400, 'invalid_request', false, 'request body is not valid JSON', 'The body could not be parsed as JSON.'),
  ERR_UNSUPPORTED_MEDIA_TYPE: code(415, 'unsupported_media_type', false, 'body must be application/json', 'A body was sent with another Content-Type than application/json.'),
  ERR_BODY_TOO_LARGE: code(413, 'payload_too_large', false, 'request body too large', 'The body exceeds the configured limit (API_BODY_LIMIT).'),
  ERR_ROUTE_NOT_FOUND: code(404, 'not_found', false, 'no such route', 'No route matches the method and path.'),
  ERR_BLOCK_NOT_FOUND: code(404, 'not_found', false, 'block not found', 'No block with this hash on the indexed main chain.'),
  ERR_TX_NOT_FOUND: code(404, 'not_found', false, 'transaction not found', 'No confirmed or mempool transaction with this hash.'),
  ERR_ADDRESS_NOT_FOUND: code(404, 'not_found', false, 'address has no transactions', 'The address is valid but appears in no indexed transaction (confirmed or mempool).'),
  ERR_INVALID_STAMP_ID: code(400, 'invalid_request', false, 'stamp id must be <txid>-<vout>', 'The stamp id is not `<64 hex>-<integer>`.'),
  ERR_STAMP_NOT_FOUND: code(404, 'not_found', false, 'stamp not found', 'No stamp with this id for this API key.'),
  ERR_STAMPING_NOT_CONFIGURED: code(503, 'unavailable', false, 'stamping not configured', 'This Blockwire has no stamping wallet configured.'),
  ERR_STAMP_WALLET_EMPTY: code(503, 'unavailable', false, 'stamping wallet cannot pay', 'The stamping wallet has no spendable coins (fund its address, shown in /healthz); the stamp was not accepted.'),
  ERR_STAMP_PENDING: code(503, 'unavailable', true, 'stamp accepted but not yet signed', 'The stamp is stored and queued, but no transaction carries it yet (coins busy); resend with the same Idempotency-Key to get its id.'),
  ERR_IDEMPOTENCY_CONFLICT: code(409, 'conflict', false, 'Idempotency-Key already used with another hash', 'This API key already sent this Idempotency-Key with a different hash.'),
  ERR_TX_DECODE: code(400, 'invalid_request', false, 'transaction decode failed', 'The `tx` hex is not a transaction (node code -22).'),
  ERR_TX_REJECTED: code(400, 'invalid_request', false, 'transaction rejected', 'The node refused the transaction for a reason resending cannot fix (policy or consensus, node code -26/-25); `error_cause` holds the node\'s reason.'),
  ERR_TX_FEE_TOO_HIGH: code(400, 'invalid_request', false, 'transaction fee exceeds the node\'s maximum', 'The fee rate is above the node\'s -maxtxfee/maxfeerate (node code -25).'),
  ERR_TX_CONFLICT: code(409, 'conflict', false, 'transaction conflicts with the chain or mempool', 'An input is already spent (in a block or by a mempool transaction that is not replaced).'),
  ERR_TX_INPUTS_MISSING: code(409, 'conflict', true, 'transaction inputs are unknown', 'An input spends an output the node does not know yet (its parent may still come): resend later.'),
  ERR_TX_NOT_FINAL: code(409, 'conflict', true, 'transaction is not final yet', 'Locktime or BIP68 sequence lock not reached: resend later.'),
  ERR_TX_MEMPOOL_LIMIT: code(503, 'unavailable', true, 'node mempool refused the transaction for now', 'Mempool full / minimum fee not met, or too long an unconfirmed chain: resend later.'),
  ERR_NODE_UNAVAILABLE: code(503, 'unavailable', true, 'bitcoin node unavailable', 'The bitcoind node cannot be reached or is warming up.'),
  ERR_INDEX_SYNCING: code(503, 'unavailable', true, 'index is still syncing', 'The index is behind the node (initial sync); answers would be incomplete.'),
  ERR_DATABASE_UNAVAILABLE: code(503, 'unavailable', true, 'database unavailable', 'PostgreSQL cannot be reached.'),
  ERR_REQUEST_TIMEOUT: code(503, 'unavailable', true, 'request timed out', 'The request took longer than API_REQUEST_TIMEOUT_MS.'),
  ERR_HOOK_NOT_FOUND: code(404, 'not_found', false, 'hook not found', 'No hook with this id for this API key (also the answer for another key\'s hook).'),
  ERR_HOOK_URL_REFUSED: code(400, 'invalid_request', false, 'webhook URL refused', 'The URL is malformed, not https on port 443/8443, or its host is (or resolves to) a private, loopback or link-local address; `error_message` says which.'),
  ERR_HOOK_IN_USE: code(409, 'conflict', false, 'hook is used by subscriptions', 'Subscriptions still push to this hook: delete them (or point them elsewhere) first.'),
  ERR_SUBSCRIPTION_NOT_FOUND: code(404, 'not_found', false, 'subscription not found', 'No subscription with this id for this API key.'),
  ERR_DELIVERY_NOT_FOUND: code(404, 'not_found', false, 'delivery not found', 'No delivery with this id in this hook\'s log.'),
  ERR_INTERNAL: code(500, 'internal', false, 'internal error', 'An unexpected failure; it is logged with the request id.'),
} as const satisfies Record<string, CodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The JSON body of every error response. */
export type ErrorBody = {
  error_type: ErrorType;
  error_code: ErrorCode;
  error_message: string;
  retry: boolean;
  error_cause: string | null;
};

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

/** An error answered to the client as-is: status, type and retry come from its code. */
export class ApiError extends AppError {
  declare readonly code: ErrorCode;
  readonly status: number;
  readonly type: ErrorType;
  readonly retry: boolean;
  /** A detail safe to show the client (e.g. the node's reject reason), or null. */
  readonly errorCause: string | null;
  /** Extra response headers (e.g. Retry-After). */
  readonly headers: Record<string, string>;

  constructor(errCode: ErrorCode, opts: { message?: string; errorCause?: string | null; retry?: boolean; headers?: Record<string, string>; cause?: unknown } = {}) {
    const info = ERROR_CODES[errCode];
    super(errCode, opts.message ?? info.message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ApiError';
    this.status = info.status;
    this.type = info.type;
    this.retry = opts.retry ?? info.retry;
    this.errorCause = opts.errorCause ?? null;
    this.headers = opts.headers ?? {};
  }

  toBody(): ErrorBody {
    return { error_type: this.type, error_code: this.code, error_message: this.message, retry: this.retry, error_cause: this.errorCause };
  }
}

/** Shorthand: `throw apiError('ERR_TX_NOT_FOUND')`. */
export function apiError(errCode: ErrorCode, message?: string, errorCause?: string | null): ApiError {
  return new ApiError(errCode, { ...(message !== undefined ? { message } : {}), ...(errorCause !== undefined ? { errorCause } : {}) });
}

/** Sends an ApiError (for hooks that answer without throwing). */
export function sendApiError(reply: FastifyReply, err: ApiError): FastifyReply {
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.code(err.status).type('application/json; charset=utf-8').send(err.toBody());
}

const PG_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '53300', '08000', '08003', '08006', '08001', '08004']);

function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    const c = (e as { code?: unknown }).code;
    if (typeof c === 'string' && PG_UNAVAILABLE.has(c)) return true;
    if (/Connection terminated|timeout exceeded when trying to connect/.test(e.message)) return true;
  }
  return false;
}

/** Path parameters whose schema failure has its own code (the schema carries the pattern). */
const PARAM_ERRORS: Record<string, ErrorCode> = { hash: 'ERR_INVALID_HASH', address: 'ERR_INVALID_ADDRESS' };

/** Maps any thrown value to the ApiError the client sees. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const fe = err as Partial<FastifyError> & { validationContext?: string };
  switch (fe.code) {
    case 'FST_ERR_VALIDATION': {
      const where = fe.validationContext;
      const msg = (fe.message ?? 'invalid request').slice(0, 300);
      if (where === 'body') return new ApiError('ERR_INVALID_BODY', { message: msg });
      const first = (fe as { validation?: { instancePath?: string }[] }).validation?.[0]?.instancePath ?? '';
      const byParam = where === 'params' ? PARAM_ERRORS[first.replace(/^\//, '')] : undefined;
      if (byParam) return new ApiError(byParam);
      return new ApiError('ERR_INVALID_PARAMETER', { message: msg });
    }
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('ERR_BODY_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new ApiError('ERR_UNSUPPORTED_MEDIA_TYPE');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('ERR_INVALID_JSON', { message: 'request body is empty' });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('ERR_INVALID_JSON');
    case 'FST_ERR_HANDLER_TIMEOUT':
      return new ApiError('ERR_REQUEST_TIMEOUT');
  }
  // Body-parser failures (secure-json-parse, prototype poisoning) carry a 400 status.
  if (err instanceof SyntaxError || (fe.statusCode === 400 && typeof fe.code !== 'string')) return new ApiError('ERR_INVALID_JSON');
  if (fe.statusCode === 400 && typeof fe.code === 'string' && fe.code.startsWith('FST_ERR_CTP')) return new ApiError('ERR_INVALID_JSON');
  if (isDatabaseUnavailable(err)) return new ApiError('ERR_DATABASE_UNAVAILABLE', { cause: err });
  return new ApiError('ERR_INTERNAL', { cause: err });
}

/**
 * Installs the error and not-found handlers: every failure leaves as an ErrorBody; 5xx other
 * than known unavailability is logged with the request id and hidden from the client.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(async (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    // A key still being checked alongside the route: its refusal comes first (src/api/key-check.ts).
    try {
      await keyCheckPassed(request);
    } catch (refusal) {
      clearAnswerHeaders(reply);
      return sendApiError(reply, toApiError(refusal));
    }
    const apiErr = toApiError(err);
    if (apiErr.code === 'ERR_INTERNAL') {
      request.log.error({ err }, 'request failed');
    } else if (apiErr.status >= 500) {
      request.log.warn({ code: apiErr.code, err: err instanceof ApiError ? err.cause : err }, 'request unavailable');
    }
    return sendApiError(reply, apiErr);
  });
  app.setNotFoundHandler((_request, reply) => sendApiError(reply, new ApiError('ERR_ROUTE_NOT_FOUND')));
}

/** The error codes as a Markdown table (src/api/README.md, docs). */
export function errorCodesMarkdown(): string {
  const rows = Object.entries(ERROR_CODES).map(([c, i]) => `| \`${c}\` | ${i.status} | ${i.type} | ${i.retry} | ${i.doc} |`);
  return ['| error_code | status | error_type | retry | meaning |', '|---|---|---|---|---|', ...rows, ''].join('\n');
}
