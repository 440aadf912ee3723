/**
 * The SDK's errors. `ApiError` carries the server's error body `{error_type, error_code,
 * error_message, retry, error_cause}` and the HTTP status; `ConnectionError` means no answer at
 * all. Builder errors (`DustError`, `InsufficientFundsError`) are raised before anything is sent.
 * Every error has a stable `code`.
 * @module
 */

/** The error body every Blockwire error response carries. */
export type ApiErrorBody = {
  error_type: string;
  error_code: string;
  error_message: string;
  /** True only when sending the same request again can succeed. */
  retry: boolean;
  error_cause: unknown;
};

/** Base class of every error the SDK throws on purpose. */
export class BlockwireError extends Error {
  /** A stable code such as `ERR_DUST_OUTPUT` or the server's `error_code`. */
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BlockwireError';
    this.code = code;
  }
}

/** The server answered with an error status. */
export class ApiError extends BlockwireError {
  /** The HTTP status (400, 401, 404, 409, 413, 429, 503…). */
  readonly status: number;
  /** The server's error body (synthesized from the status when the server sent none). */
  readonly body: ApiErrorBody;
  /** Whether the same request can succeed when sent again (the body's `retry`). */
  readonly retry: boolean;
  /** How long the server asked to wait (`Retry-After`), in milliseconds. */
  readonly retryAfterMs: number | undefined;
  /** The request method and path (without the host or the key). */
  readonly request: string;

  constructor(status: number, body: ApiErrorBody, request: string, retryAfterMs?: number) {
    super(body.error_code, `${request} failed with HTTP ${status} ${body.error_code}: ${body.error_message}`);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
    this.retry = body.retry === true;
    this.retryAfterMs = retryAfterMs;
    this.request = request;
  }

  /** The body's `error_type`. */
  get errorType(): string {
    return this.body.error_type;
  }
}

/** No HTTP answer: connection refused or reset, DNS failure, or the request timed out. */
export class ConnectionError extends BlockwireError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_CONNECTION', message, options);
    this.name = 'ConnectionError';
  }
}

/** An output below the dust threshold, refused unless `allowDustyOutputs` is set. */
export class DustError extends BlockwireError {
  constructor(
    readonly outputIndex: number,
    readonly amount: bigint,
    readonly threshold: bigint,
  ) {
    super(
      'ERR_DUST_OUTPUT',
      `Output ${outputIndex} pays ${amount} sat, below the dust threshold of ${threshold} sat (set allowDustyOutputs to send it anyway)`,
    );
    this.name = 'DustError';
  }
}

/** The spendable, unreserved outputs cannot pay the outputs plus the fee. */
export class InsufficientFundsError extends BlockwireError {
  constructor(
    readonly required: bigint,
    readonly available: bigint,
    detail = '',
  ) {
    super(
      'ERR_INSUFFICIENT_FUNDS',
      `Insufficient funds: outputs need ${required} sat plus the fee, ${available} sat is spendable${detail ? ` (${detail})` : ''}`,
    );
    this.name = 'InsufficientFundsError';
  }
}
