/**
 * Errors in the Coinstack dialect. coinstackd answers every error it produces with the JSON of
 * its `CoinStackError` (coinstack/client/errors.go): one of six kinds, each with a numeric
 * `error_code`, an `error_type` of the form `io.coinstack#…`, a fixed `error_message` and the
 * HTTP status of the kind; the detail goes to `error_cause`, left out when empty. Keys in the
 * order of the Go struct. Both Coinstack SDKs read all four of `error_type`, `error_code` (as an
 * int), `error_message` and `retry`. Authentication failures are not JSON: coinstackd's HMAC
 * middleware answers 401 with a line of text (go-hmacauth's messages).
 * @module
 */
import type { FastifyReply } from 'fastify';
import { ERROR_CODES, type ErrorCode, type ServiceError } from '../../src/errors.js';

/** The six kinds of coinstack/client/errors.go, with their code, status, fixed message and retry flag. */
export const COINSTACK_KINDS = {
  AccessDenied: { code: 3001, status: 400, type: 'io.coinstack#AccessDeniedError', message: 'Access Denied', retry: false },
  ThroughputExceeded: {
    code: 3002,
    status: 400,
    type: 'io.coinstack#ThroughputExceededError',
    message: 'Rate of requests exceeds the allowed throughput.',
    retry: true,
  },
  ResourceNotFound: {
    code: 3003,
    status: 404,
    type: 'io.coinstack#ResourceNotFoundError',
    message: 'Requested resource not found.',
    retry: false,
  },
  ValidationFailed: {
    code: 3004,
    status: 400,
    type: 'io.coinstack#ValidationFailed',
    message: 'The request could not be processed.',
    retry: false,
  },
  InternalServer: {
    code: 4001,
    status: 500,
    type: 'io.coinstack#InternalServerError',
    message: 'The server encountered an internal error trying to fulfill the request.',
    retry: true,
  },
  ServerUnavailable: {
    code: 4002,
    status: 503,
    type: 'io.coinstack#ServerUnavailableError',
    message: 'The service is currently unavailable or busy.',
    retry: true,
  },
} as const;

export type CoinstackKind = keyof typeof COINSTACK_KINDS;

/** The body of a Coinstack error, in the order of the Go struct. */
export type CoinstackErrorBody = { error_type: string; error_code: number; error_message: string; retry: boolean; error_cause?: string };

type Mapping = { kind: CoinstackKind; cause?: string } | { kind: 'unauthorized' };

const NOT_FOUND = (cause: string): Mapping => ({ kind: 'ResourceNotFound', cause });
const INVALID: Mapping = { kind: 'ValidationFailed' };
const UNAVAILABLE: Mapping = { kind: 'ServerUnavailable' };

/**
 * Each Blockwire error code as the Coinstack kind it is answered with. The causes of the
 * not-found kinds are coinstackd's own texts (restserver.go); elsewhere the cause is the
 * detail Blockwire has (the node's reject reason, or its message).
 */
const COINSTACK_ERRORS: Record<ErrorCode, Mapping> = {
  ERR_API_KEY_MISSING: { kind: 'unauthorized' },
  ERR_API_KEY_INVALID: { kind: 'unauthorized' },
  ERR_SCOPE: { kind: 'AccessDenied' },
  ERR_RATE_LIMITED: { kind: 'ThroughputExceeded' },
  ERR_INVALID_HASH: INVALID,
  ERR_INVALID_ADDRESS: INVALID,
  ERR_WRONG_NETWORK: INVALID,
  ERR_INVALID_PARAMETER: INVALID,
  ERR_INVALID_CURSOR: INVALID,
  ERR_INVALID_BODY: INVALID,
  ERR_INVALID_JSON: INVALID,
  ERR_UNSUPPORTED_MEDIA_TYPE: INVALID,
  ERR_BODY_TOO_LARGE: INVALID,
  ERR_ROUTE_NOT_FOUND: NOT_FOUND('not found'),
  ERR_METHOD_NOT_ALLOWED: NOT_FOUND('not found'),
  ERR_BLOCK_NOT_FOUND: NOT_FOUND('Requested block not found.'),
  ERR_TX_NOT_FOUND: NOT_FOUND('Requested transaction not found.'),
  ERR_OUTPUT_NOT_FOUND: NOT_FOUND('Requested output not found.'),
  ERR_ADDRESS_NOT_FOUND: NOT_FOUND('Requested address not found.'),
  ERR_INVALID_STAMP_ID: INVALID,
  ERR_STAMP_NOT_FOUND: NOT_FOUND('Requested stamp not found.'),
  ERR_STAMPING_NOT_CONFIGURED: UNAVAILABLE,
  ERR_STAMP_WALLET_EMPTY: UNAVAILABLE,
  ERR_STAMP_PENDING: UNAVAILABLE,
  ERR_IDEMPOTENCY_CONFLICT: INVALID,
  ERR_TX_DECODE: INVALID,
  ERR_TX_REJECTED: INVALID,
  ERR_TX_FEE_TOO_HIGH: INVALID,
  ERR_TX_CONFLICT: INVALID,
  ERR_TX_INPUTS_MISSING: INVALID,
  ERR_TX_INPUTS_UNKNOWN: INVALID,
  ERR_TX_NOT_FINAL: INVALID,
  ERR_TX_MEMPOOL_LIMIT: INVALID,
  ERR_NODE_UNAVAILABLE: UNAVAILABLE,
  ERR_INDEX_SYNCING: UNAVAILABLE,
  ERR_DATABASE_UNAVAILABLE: UNAVAILABLE,
  ERR_STARTING: UNAVAILABLE,
  ERR_REQUEST_TIMEOUT: UNAVAILABLE,
  ERR_HOOK_NOT_FOUND: NOT_FOUND('Requested action not found.'),
  ERR_HOOK_URL_REFUSED: INVALID,
  ERR_HOOK_IN_USE: INVALID,
  ERR_LIMIT_REACHED: INVALID,
  ERR_UPGRADE_REQUIRED: INVALID,
  ERR_TOO_MANY_STREAMS: { kind: 'ThroughputExceeded' },
  ERR_SUBSCRIPTION_NOT_FOUND: NOT_FOUND('Requested subscription not found.'),
  ERR_DELIVERY_NOT_FOUND: NOT_FOUND('not found'),
  // (wallets are served under /v1 only; a subscription naming one may come through either dialect)
  ERR_WALLET_NOT_FOUND: NOT_FOUND('Requested wallet not found.'),
  ERR_INVALID_DESCRIPTOR: INVALID,
  ERR_WALLET_TOO_LARGE: INVALID,
  ERR_URI_TOO_LONG: INVALID,
  ERR_HEADERS_TOO_LARGE: INVALID,
  ERR_BAD_REQUEST: INVALID,
  ERR_CLIENT_TIMEOUT: INVALID,
  ERR_INTERNAL: { kind: 'InternalServer' },
};

/** A Coinstack error body of `kind` (cause left out when empty). */
export function coinstackErrorBody(kind: CoinstackKind, retry: boolean, cause?: string | null): CoinstackErrorBody {
  const k = COINSTACK_KINDS[kind];
  const body: CoinstackErrorBody = { error_type: k.type, error_code: k.code, error_message: k.message, retry };
  if (cause) body.error_cause = cause;
  return body;
}

/** The cause shown for `err`: the fixed text of its mapping, else the node's reason, else its message. */
function causeOf(err: ServiceError, fixed: string | undefined): string {
  return fixed ?? err.errorCause ?? err.message;
}

/**
 * The text of a 401: go-hmacauth's message when the HMAC check set one, its message for a
 * request with no credentials, and `Invalid APIKey` for a key that is not one (coinstackd
 * answers a bad token with an empty 401; the text says what failed without telling more).
 */
function unauthorizedText(err: ServiceError): string {
  if (err.code === 'ERR_API_KEY_MISSING') return 'Missing required header: "Authorization"';
  return err.message === ERROR_CODES.ERR_API_KEY_INVALID.message ? 'Invalid APIKey' : err.message;
}

/** The status and body `err` is answered with in the Coinstack dialect. */
function toCoinstackError(err: ServiceError): { status: number; body: CoinstackErrorBody } | { status: 401; text: string } {
  const m = COINSTACK_ERRORS[err.code] ?? { kind: 'InternalServer' };
  if (m.kind === 'unauthorized') return { status: 401, text: unauthorizedText(err) };
  // Internal errors keep their detail in the log, never in the answer.
  const cause = m.kind === 'InternalServer' ? undefined : causeOf(err, m.cause);
  return { status: COINSTACK_KINDS[m.kind].status, body: coinstackErrorBody(m.kind, err.retry, cause) };
}

/** The status, headers and body `err` is answered with in the Coinstack dialect (also outside Fastify: a refused socket upgrade). */
export function coinstackErrorAnswer(err: ServiceError): { status: number; headers: Record<string, string>; body: string } {
  const out = toCoinstackError(err);
  if ('text' in out) {
    // go-hmacauth answers with http.Error: the message and a newline, as text.
    return {
      status: 401,
      headers: { ...err.headers, 'X-Content-Type-Options': 'nosniff', 'Content-Type': 'text/plain; charset=utf-8' },
      body: out.text === '' ? '' : `${out.text}\n`,
    };
  }
  return {
    status: out.status,
    headers: { ...err.headers, 'Content-Type': 'application/json; charset=utf-8' },
    body: JSON.stringify(out.body),
  };
}

/** Sends `err` in the Coinstack dialect. */
export function sendCoinstackError(reply: FastifyReply, err: ServiceError): FastifyReply {
  const a = coinstackErrorAnswer(err);
  return reply.code(a.status).headers(a.headers).send(a.body);
}
