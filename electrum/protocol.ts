/**
 * The Electrum protocol's JSON-RPC layer: error codes (JSON-RPC's own, and ElectrumX's 1 "bad
 * request" / 2 "daemon error", which wallets show as the message), parameter checks with exact
 * messages (a malformed parameter is a bad request, code 1, as ElectrumX answers it), and the
 * encoding of replies and notifications (one JSON object per line).
 * @module
 */

/** JSON-RPC error codes, and the Electrum servers' own. */
export const RPC_ERROR = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL: -32603,
  /** A request the server refuses (ElectrumX's BAD_REQUEST): a malformed parameter, unknown height, history too large, a broadcast the node rejected… */
  BAD_REQUEST: 1,
  /** The node failed to answer (ElectrumX's DAEMON_ERROR). */
  DAEMON_ERROR: 2,
  /** Too many requests in the rate window (this server). */
  RATE_LIMITED: -32000,
  /** The server requires an API key first (blockwire.authenticate). */
  UNAUTHORIZED: -32001,
} as const;

/** An error answer: `{code, message}` goes back to the client. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

export const badRequest = (message: string) => new RpcError(RPC_ERROR.BAD_REQUEST, message);

/** Positional parameters (named ones are mapped through `names`, as the protocol's method signatures name them). */
export function positional(params: unknown, names: readonly string[]): unknown[] {
  if (params === undefined || params === null) return [];
  if (Array.isArray(params)) return params;
  if (typeof params === 'object') return names.map((n) => (params as Record<string, unknown>)[n]);
  throw new RpcError(RPC_ERROR.INVALID_PARAMS, 'params must be an array or an object');
}

/** A non-negative integer parameter (`fallback` when absent). */
export function uintParam(value: unknown, name: string, fallback?: number): number {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw badRequest(`${name} must be a non-negative integer`);
  return value;
}

/** Highest height a block can have in the index (PostgreSQL int4). */
const MAX_HEIGHT = 2 ** 31 - 1;

/** A block height parameter: a non-negative integer; one no chain can reach is out of range (ElectrumX's message). */
export function heightParam(value: unknown, name: string, fallback?: number): number {
  const h = uintParam(value, name, fallback);
  if (h > MAX_HEIGHT) throw badRequest(`${name} ${h.toLocaleString('en-US')} out of range`);
  return h;
}

const HASH_HEX = /^[0-9a-fA-F]{64}$/;

/** A 32-byte hash given as 64 hex digits (display order); returned as given, lower-cased. */
export function hashParam(value: unknown, name: string): string {
  if (typeof value !== 'string' || !HASH_HEX.test(value)) throw badRequest(`${name} must be 64 hexadecimal characters`);
  return value.toLowerCase();
}

export function boolParam(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean') throw badRequest(`${name} must be true or false`);
  return value;
}

/** JSON with bigints written as numbers (amounts in satoshis fit in 2^53). */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v));
}

export type RequestId = string | number | null;

export const resultMessage = (id: RequestId, result: unknown) => ({ jsonrpc: '2.0', id, result });
export const errorMessage = (id: RequestId, err: RpcError) => ({ jsonrpc: '2.0', id, error: { code: err.code, message: err.message } });
export const notificationMessage = (method: string, params: unknown[]) => ({ jsonrpc: '2.0', method, params });
