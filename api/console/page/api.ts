/**
 * The console's one way to the API: `/v1` requests with the key in the `apiKey` header (never
 * in a URL), JSON in and out, and the API's error body turned into an ApiError whose message is
 * the server's own.
 * @module
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export type Api = {
  get<T>(path: string): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
  del(path: string): Promise<void>;
};

/** An API client for `key` on the page's own origin. */
export function createApi(key: string): Api {
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { apiKey: key, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(path, { method, headers, cache: 'no-store', ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    let json: unknown = null;
    try {
      json = text === '' ? null : JSON.parse(text);
    } catch {
      // not JSON: the status says what happened
    }
    if (!res.ok) {
      const e = (json ?? {}) as { error_code?: string; error_message?: string };
      throw new ApiError(res.status, e.error_code ?? `HTTP_${res.status}`, e.error_message ?? `${res.status} ${res.statusText}`);
    }
    return json as T;
  }
  return {
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body ?? {}),
    del: async (path) => {
      await call('DELETE', path);
    },
  };
}
