/**
 * The HTTP core of the API client: the platform's `fetch` with the `apiKey` header, a timeout,
 * JSON bodies, typed errors from the server's error body, and the `Link: <…>; rel="next"` header
 * of paged lists. Works unchanged in Node ≥ 20 and browsers.
 * @module
 */
import { ApiError, ConnectionError, type ApiErrorBody } from './errors.js';

/** A `fetch`-compatible function (the global one by default). */
export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

/** Options of the HTTP core. */
export type HttpOptions = {
  /** Blockwire's base URL, e.g. `http://127.0.0.1:3000` (a trailing `/v1` is accepted). */
  url: string;
  /** The API key sent in the `apiKey` header of every request. */
  apiKey: string;
  /** Path prefix of the versioned API (default `/v1`). */
  basePath?: string;
  /** Per-request timeout in milliseconds (default 30 000). */
  timeoutMs?: number;
  /** A fetch implementation (default `globalThis.fetch`). */
  fetch?: FetchLike;
};

/** A decoded response. */
export type HttpResponse<T> = { status: number; data: T; headers: Headers; url: string };

/** A request: query parameters (undefined values are left out) and a JSON body. */
export type HttpRequest = {
  query?: Record<string, string | number | bigint | undefined>;
  body?: unknown;
  /** Extra headers (e.g. `Idempotency-Key`). */
  headers?: Record<string, string>;
  /** The answer is text (e.g. a transaction's hex), not JSON: `data` is the body as is. */
  text?: boolean;
  /** The answer is bytes (e.g. a raw transaction): `data` is the body as a Uint8Array. */
  bytes?: boolean;
  /** This request's time limit in ms (default: the client's), e.g. a long poll's. */
  timeoutMs?: number;
};

/** The HTTP core used by the client. */
export type Http = {
  /** The versioned API root, e.g. `http://127.0.0.1:3000/v1`. */
  readonly root: string;
  /** Sends a request to `path` (below the root) or to an absolute URL of the same origin. */
  request<T>(method: string, pathOrUrl: string, req?: HttpRequest): Promise<HttpResponse<T>>;
};

/** Creates the HTTP core. */
export function createHttp(opts: HttpOptions): Http {
  if (typeof opts.apiKey !== 'string' || opts.apiKey === '') throw new TypeError('apiKey is required');
  const base = new URL(opts.url);
  const basePath = opts.basePath ?? '/v1';
  const path = base.pathname.replace(/\/+$/, '');
  const root = `${base.origin}${path.endsWith(basePath) ? path : `${path}${basePath}`}`;
  const fetchImpl: FetchLike | undefined = opts.fetch ?? (globalThis.fetch?.bind(globalThis) as FetchLike | undefined);
  if (!fetchImpl) throw new TypeError('No fetch implementation: pass { fetch } to the client');
  const timeoutMs = opts.timeoutMs ?? 30_000;

  async function request<T>(method: string, pathOrUrl: string, req: HttpRequest = {}): Promise<HttpResponse<T>> {
    const url = resolveUrl(root, base.origin, pathOrUrl, req.query);
    const label = `${method} ${new URL(url).pathname}`;
    const headers: Record<string, string> = {
      ...req.headers,
      apiKey: opts.apiKey,
      accept: req.bytes ? 'application/octet-stream' : req.text ? 'text/plain' : 'application/json',
    };
    let body: string | undefined;
    if (req.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(req.body, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    }
    let res: Response;
    try {
      res = await fetchImpl!(url, { method, headers, body, signal: AbortSignal.timeout(req.timeoutMs ?? timeoutMs), redirect: 'error' });
    } catch (err) {
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      throw new ConnectionError(timedOut ? `${label}: no answer within ${req.timeoutMs ?? timeoutMs} ms` : `${label}: ${describe(err)}`, {
        cause: err,
      });
    }
    const raw = await (req.bytes && res.ok ? res.arrayBuffer() : res.text()).catch((err: unknown) => {
      throw new ConnectionError(`${label}: the response body could not be read: ${describe(err)}`, { cause: err });
    });
    if (typeof raw !== 'string') return { status: res.status, data: new Uint8Array(raw) as T, headers: res.headers, url };
    const text = raw;
    if (!res.ok) throw new ApiError(res.status, errorBody(res.status, text), label, retryAfterMs(res.headers.get('retry-after')));
    let data: unknown = undefined;
    if (req.text) data = text;
    else if (text !== '') {
      try {
        data = JSON.parse(text);
      } catch {
        throw new ApiError(
          res.status,
          synthesized(res.status, 'ERR_BAD_RESPONSE', `the response is not JSON: ${text.slice(0, 120)}`),
          label,
        );
      }
    }
    return { status: res.status, data: data as T, headers: res.headers, url };
  }

  return { root, request };
}

function resolveUrl(root: string, origin: string, pathOrUrl: string, query?: HttpRequest['query']): string {
  const u = /^https?:\/\//.test(pathOrUrl) ? new URL(pathOrUrl) : new URL(`${root}${pathOrUrl}`);
  // A next-page link must stay on the server the key belongs to.
  if (u.origin !== origin) throw new TypeError(`Refusing to send the API key to another origin: ${u.origin}`);
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
  return u.toString();
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}

function synthesized(status: number, code: string, message: string): ApiErrorBody {
  return { error_type: 'http', error_code: code, error_message: message, retry: status === 429 || status === 503, error_cause: null };
}

function errorBody(status: number, text: string): ApiErrorBody {
  try {
    const b = JSON.parse(text) as Partial<ApiErrorBody>;
    if (b && typeof b === 'object' && typeof b.error_code === 'string') {
      return {
        error_type: String(b.error_type ?? 'http'),
        error_code: b.error_code,
        error_message: String(b.error_message ?? ''),
        retry: b.retry === true,
        error_cause: b.error_cause ?? null,
      };
    }
  } catch {
    // not JSON: synthesize below
  }
  return synthesized(status, `HTTP_${status}`, text.slice(0, 200) || `HTTP ${status}`);
}

/** Milliseconds from a `Retry-After` header (seconds or an HTTP date). */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const secs = Number(header);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The `rel="next"` target of a `Link` header (RFC 8288), or null. */
export function nextLink(header: string | null): string | null {
  if (!header) return null;
  for (const part of header.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (!m) continue;
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;]+))/i.exec(m[2]!);
    const rels = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
    if (rels.includes('next')) return m[1]!;
  }
  return null;
}
