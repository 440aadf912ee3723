/**
 * Application errors with stable codes. Only two kinds change behaviour: a RetryableError is
 * retried with backoff by the loop that met it; a FatalError stops the process with a non-zero
 * exit (a restart beats a wedged index). Pure code throws TypeError/RangeError instead.
 * ServiceError carries a code of ERROR_CODES, the one table of every error a client can be
 * answered: its HTTP status, category, whether resending can succeed, message and doc line.
 * @module
 */

/** An error with a stable, documented code such as `ERR_RPC_UNAVAILABLE`. */
export class AppError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AppError';
    this.code = code;
  }
}

/** A failure that can succeed when tried again later (node down, Redis restarting…). */
export class RetryableError extends AppError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'RetryableError';
  }
}

/** A failure that no retry can fix (corrupt state, misconfiguration, reorg too deep). */
export class FatalError extends AppError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'FatalError';
  }
}

/** True when `err` (or an error it wraps) is marked retryable. */
export function isRetryable(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof RetryableError) return true;
    if (e instanceof FatalError) return false;
  }
  return false;
}

/**
 * True when `err` (or an error it wraps) is a connection-level failure that goes away by itself:
 * PostgreSQL gone, restarting, out of connections or resources, a serialization failure
 * (SQLSTATE classes 08, 57, 53, 40), a socket refused, reset, timed out or unreachable, a
 * pool that could not connect. A FatalError on the chain is never transient. The one home of
 * this rule: the indexer retries such failures, the API answers them 503 with `retry: true`.
 */
export function isTransient(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof FatalError) return false;
    const code = (e as { code?: unknown }).code;
    if (
      typeof code === 'string' &&
      (/^(08|57|53|40)[0-9A-Z]{3}$/.test(code) || /^E(CONN|PIPE|TIMEDOUT|HOSTUNREACH|NETUNREACH|AI_AGAIN)/.test(code))
    )
      return true;
    if (
      /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|socket hang up/i.test(
        e.message,
      )
    )
      return true;
  }
  return false;
}

/** The error categories clients can switch on (`error_type`). */
export type ErrorType =
  | 'invalid_request'
  | 'authentication'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'unavailable'
  | 'internal';

type CodeInfo = { status: number; type: ErrorType; retry: boolean; message: string; doc: string };

const code = (status: number, type: ErrorType, retry: boolean, message: string, doc: string): CodeInfo => ({
  status,
  type,
  retry,
  message,
  doc,
});

/**
 * Every error code the API answers, with its HTTP status, its `error_type`, whether resending
 * the same request can succeed (`retry`), the default message and a line for the docs.
 * Codes are stable: add new ones, never rename or reuse one.
 */
export const ERROR_CODES = {
  ERR_API_KEY_MISSING: code(401, 'authentication', false, 'missing apiKey header', 'The request carries no `apiKey` header.'),
  ERR_API_KEY_INVALID: code(
    401,
    'authentication',
    false,
    'invalid API key',
    'The key is unknown, malformed or revoked (one answer for all three).',
  ),
  ERR_SCOPE: code(
    403,
    'forbidden',
    false,
    'this API key may not use this route',
    'The key lacks the scope the route needs (e.g. a `read` key calling a `write` route).',
  ),
  ERR_RATE_LIMITED: code(
    429,
    'rate_limited',
    true,
    'rate limit exceeded',
    'Too many requests for this key in the current window; see `Retry-After`.',
  ),
  ERR_INVALID_HASH: code(
    400,
    'invalid_request',
    false,
    'hash must be 64 hex characters',
    'A block or transaction hash in the path is not 64 hex characters.',
  ),
  ERR_INVALID_ADDRESS: code(
    400,
    'invalid_request',
    false,
    'invalid address',
    'The address in the path is not a valid address (encoding or checksum).',
  ),
  ERR_WRONG_NETWORK: code(
    400,
    'invalid_request',
    false,
    'address is for another network',
    "The address is valid but encodes another network than the node's.",
  ),
  ERR_INVALID_PARAMETER: code(
    400,
    'invalid_request',
    false,
    'invalid parameter',
    'A query or path parameter is out of range or malformed (`limit`, `min_conf`, …).',
  ),
  ERR_INVALID_CURSOR: code(
    400,
    'invalid_request',
    false,
    'invalid cursor',
    "The paging cursor is not one this API issued, or a stream's `after` is beyond the newest event (`error_cause` holds the newest event id).",
  ),
  ERR_INVALID_BODY: code(400, 'invalid_request', false, 'invalid request body', "The JSON body does not match the route's schema."),
  ERR_INVALID_JSON: code(400, 'invalid_request', false, 'request body is not valid JSON', 'The body could not be parsed as JSON.'),
  ERR_UNSUPPORTED_MEDIA_TYPE: code(
    415,
    'unsupported_media_type',
    false,
    'body must be application/json',
    'A body was sent with another Content-Type than application/json.',
  ),
  ERR_BODY_TOO_LARGE: code(
    413,
    'payload_too_large',
    false,
    'request body too large',
    'The body exceeds the configured limit (API_BODY_LIMIT).',
  ),
  ERR_ROUTE_NOT_FOUND: code(404, 'not_found', false, 'no such route', 'No route matches the path.'),
  ERR_METHOD_NOT_ALLOWED: code(
    405,
    'method_not_allowed',
    false,
    'method not allowed on this route',
    'The path exists but not with this method; `Allow` lists the methods it takes.',
  ),
  ERR_BLOCK_NOT_FOUND: code(404, 'not_found', false, 'block not found', 'No block with this hash on the indexed main chain.'),
  ERR_TX_NOT_FOUND: code(404, 'not_found', false, 'transaction not found', 'No confirmed or mempool transaction with this hash.'),
  ERR_OUTPUT_NOT_FOUND: code(404, 'not_found', false, 'output not found', 'The transaction exists but has no output with this index.'),
  ERR_ADDRESS_NOT_FOUND: code(
    404,
    'not_found',
    false,
    'address has no transactions',
    'No longer answered (kept so the code is never reused): a valid address no transaction touches has balance 0 and empty lists.',
  ),
  ERR_INVALID_STAMP_ID: code(400, 'invalid_request', false, 'stamp id must be <txid>-<vout>', 'The stamp id is not `<64 hex>-<integer>`.'),
  ERR_STAMP_NOT_FOUND: code(404, 'not_found', false, 'stamp not found', 'No stamp with this id for this API key.'),
  ERR_STAMPING_NOT_CONFIGURED: code(
    503,
    'unavailable',
    false,
    'stamping not configured',
    'This Blockwire has no stamping wallet configured.',
  ),
  ERR_STAMP_WALLET_EMPTY: code(
    503,
    'unavailable',
    false,
    'stamping wallet cannot pay',
    'The stamping wallet has no spendable coins (fund its address, shown in /healthz); the stamp was not accepted.',
  ),
  ERR_STAMP_PENDING: code(
    503,
    'unavailable',
    true,
    'stamp accepted but not yet signed',
    'The stamp is stored and queued, but no transaction carries it yet (coins busy); resend with the same Idempotency-Key to get its id.',
  ),
  ERR_IDEMPOTENCY_CONFLICT: code(
    409,
    'conflict',
    false,
    'Idempotency-Key already used with another hash',
    'This API key already sent this Idempotency-Key with a different hash.',
  ),
  ERR_TX_DECODE: code(400, 'invalid_request', false, 'transaction decode failed', 'The `tx` hex is not a transaction (node code -22).'),
  ERR_TX_REJECTED: code(
    400,
    'invalid_request',
    false,
    'transaction rejected',
    "The node refused the transaction for a reason resending cannot fix (policy or consensus, node code -26/-25); `error_cause` holds the node's reason.",
  ),
  ERR_TX_FEE_TOO_HIGH: code(
    400,
    'invalid_request',
    false,
    "transaction fee exceeds the node's maximum",
    "The fee rate is above the node's -maxtxfee/maxfeerate (node code -25).",
  ),
  ERR_TX_CONFLICT: code(
    409,
    'conflict',
    false,
    'transaction conflicts with the chain or mempool',
    'An input is already spent (in a block or by a mempool transaction that is not replaced).',
  ),
  ERR_TX_INPUTS_MISSING: code(
    409,
    'conflict',
    true,
    'transaction inputs are unknown',
    'An input spends an output neither the node nor the index holds, whose transaction can still appear (being broadcast now, taken out of the chain by a reorg, or the node is in its initial download): resend later.',
  ),
  ERR_TX_INPUTS_UNKNOWN: code(
    400,
    'invalid_request',
    false,
    'transaction spends outputs that do not exist',
    'An input spends an output neither the node nor the index holds, and nothing says its transaction will appear: resending cannot help.',
  ),
  ERR_TX_NOT_FINAL: code(
    409,
    'conflict',
    true,
    'transaction is not final yet',
    'Locktime or BIP68 sequence lock not reached: resend later.',
  ),
  ERR_TX_MEMPOOL_LIMIT: code(
    503,
    'unavailable',
    true,
    'node mempool refused the transaction for now',
    'Mempool full / minimum fee not met, or too long an unconfirmed chain: resend later.',
  ),
  ERR_NODE_UNAVAILABLE: code(503, 'unavailable', true, 'bitcoin node unavailable', 'The bitcoind node cannot be reached or is warming up.'),
  ERR_INDEX_SYNCING: code(
    503,
    'unavailable',
    true,
    'index is still syncing',
    'The index is behind the node (initial sync); answers would be incomplete.',
  ),
  ERR_STARTING: code(
    503,
    'unavailable',
    true,
    'starting',
    'The endpoint is starting (or stopping) in this process: retry after `Retry-After` (the stream, right after a restart).',
  ),
  ERR_DATABASE_UNAVAILABLE: code(503, 'unavailable', true, 'database unavailable', 'PostgreSQL cannot be reached.'),
  ERR_REQUEST_TIMEOUT: code(503, 'unavailable', true, 'request timed out', 'The request took longer than API_REQUEST_TIMEOUT_MS.'),
  ERR_HOOK_NOT_FOUND: code(
    404,
    'not_found',
    false,
    'hook not found',
    "No hook with this id for this API key (also the answer for another key's hook).",
  ),
  ERR_HOOK_URL_REFUSED: code(
    400,
    'invalid_request',
    false,
    'webhook URL refused',
    'The URL is malformed, not https on port 443/8443, or its host is (or resolves to) a private, loopback or link-local address; `error_message` says which.',
  ),
  ERR_HOOK_IN_USE: code(
    409,
    'conflict',
    false,
    'hook is used by subscriptions',
    'Subscriptions still push to this hook: delete them (or point them elsewhere) first.',
  ),
  ERR_LIMIT_REACHED: code(
    409,
    'conflict',
    false,
    'per-key limit reached',
    'The key already holds as many subscriptions (API_MAX_SUBSCRIPTIONS_PER_KEY), hooks (API_MAX_HOOKS_PER_KEY) or wallets (API_MAX_WALLETS_PER_KEY) as allowed; `error_message` says which. Delete some first.',
  ),
  ERR_UPGRADE_REQUIRED: code(
    426,
    'invalid_request',
    false,
    'connect with a WebSocket client to /v1/stream',
    'A plain HTTP request reached the stream port, which serves only WebSocket upgrades.',
  ),
  ERR_TOO_MANY_STREAMS: code(
    429,
    'rate_limited',
    true,
    'too many open streams',
    'The key already has BLOCKWIRE_WS_MAX_CONNECTIONS_PER_KEY streams open on this stream process: close one, then connect again.',
  ),
  ERR_SUBSCRIPTION_NOT_FOUND: code(404, 'not_found', false, 'subscription not found', 'No subscription with this id for this API key.'),
  ERR_DELIVERY_NOT_FOUND: code(404, 'not_found', false, 'delivery not found', "No delivery with this id in this hook's log."),
  ERR_WALLET_NOT_FOUND: code(
    404,
    'not_found',
    false,
    'wallet not found',
    "No wallet with this id for this API key (also the answer for another key's wallet).",
  ),
  ERR_INVALID_DESCRIPTOR: code(
    400,
    'invalid_request',
    false,
    'invalid descriptor',
    "A descriptor or extended key of POST /wallets cannot be tracked: bad checksum (Core's message), another network's key, a private key, no `/*` range, or an unsupported form; `error_message` says which.",
  ),
  ERR_WALLET_TOO_LARGE: code(
    422,
    'invalid_request',
    false,
    'wallet request derives too many keys',
    'POST /wallets (or a next-address call) would derive more BIP32 child keys than API_WALLET_MAX_DERIVATIONS allows (addresses × keys per address, the gap extension past used addresses included); `error_message` gives the count. Use fewer descriptors or a smaller `gap_limit`.',
  ),
  ERR_URI_TOO_LONG: code(
    414,
    'invalid_request',
    false,
    'a path parameter is too long',
    'A path segment is longer than any this API takes (answered after authentication; the path is not repeated in the answer).',
  ),
  ERR_HEADERS_TOO_LARGE: code(
    431,
    'invalid_request',
    false,
    'request headers too large',
    "The request line and headers exceed 16 KB together (Node's limit); the connection is closed.",
  ),
  ERR_BAD_REQUEST: code(
    400,
    'invalid_request',
    false,
    'malformed HTTP request',
    'The request is not valid HTTP/1.1 (request line, header syntax, framing); the connection is closed.',
  ),
  ERR_CLIENT_TIMEOUT: code(
    408,
    'invalid_request',
    true,
    'request not received in time',
    'The request (headers and body) did not arrive within API_REQUEST_TIMEOUT_MS; the connection is closed.',
  ),
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

/**
 * An error the service answers its clients as-is: status, type and retry come from its code.
 * Domain code (auth, stamping) throws it with a code of ERROR_CODES; the HTTP edges (the API,
 * the stream's upgrade) render it, each in its dialect.
 */
export class ServiceError extends AppError {
  declare readonly code: ErrorCode;
  readonly status: number;
  readonly type: ErrorType;
  readonly retry: boolean;
  /** A detail safe to show the client (e.g. the node's reject reason), or null. */
  readonly errorCause: string | null;
  /** Extra response headers (e.g. Retry-After). */
  readonly headers: Record<string, string>;

  constructor(
    errCode: ErrorCode,
    opts: { message?: string; errorCause?: string | null; retry?: boolean; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    const info = ERROR_CODES[errCode];
    super(errCode, opts.message ?? info.message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ServiceError';
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
