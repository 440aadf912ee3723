/**
 * The HTTP server bitcoind runs: JSON-RPC on `/` and `/wallet/<name>` (POST only, basic auth,
 * JSON-RPC 1.0 and 2.0, batches) and REST under `/rest/` (no auth). Core's HTTP statuses: a 1.0
 * request that fails answers 500 (404 for -32601, 400 for -32600) with `{"result":null,
 * "error":{code,message},"id"}`; 2.0 answers 200 without the null member; batches are always 200.
 * It can go down and come back on the same port (fault injection) and answer as while warming up.
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import type { Logger } from '../src/log.js';
import { writeCoreJson } from './core-json.js';

/** Core's RPCErrorCode values used by the devnode. */
export const RPC_ERR = {
  MISC_ERROR: -1,
  TYPE_ERROR: -3,
  INVALID_ADDRESS_OR_KEY: -5,
  INVALID_PARAMETER: -8,
  DATABASE_ERROR: -20,
  DESERIALIZATION_ERROR: -22,
  VERIFY_ERROR: -25,
  VERIFY_REJECTED: -26,
  VERIFY_ALREADY_IN_UTXO_SET: -27,
  IN_WARMUP: -28,
  WALLET_ERROR: -4,
  WALLET_INSUFFICIENT_FUNDS: -6,
  WALLET_NOT_FOUND: -18,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  PARSE_ERROR: -32700,
} as const;

/** A JSON-RPC error with Core's code and message. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

/** The request a handler sees. */
export type RpcCall = { method: string; params: unknown[]; walletPath: string | null };

/** One RPC method: its argument names (for named parameters) and its handler. */
export type RpcMethod = { args: readonly string[]; run: (call: RpcCall) => unknown };

/** A REST handler: returns the status, content type and body. */
export type RestReply = { status: number; type: string; body: string | Uint8Array };
export type RestHandler = (pathAndQuery: string) => RestReply;

export type HttpServerDeps = {
  methods: ReadonlyMap<string, RpcMethod>;
  rest: RestHandler;
  user: string;
  password: string;
  /** `__cookie__:<hex>` credentials also accepted (Core's cookie file). */
  cookie?: string;
  log: Logger;
  /** While set, RPC answers -28 with this message and REST 503. */
  warmup: () => string | null;
  /** False: answer /rest/ with a bare 404, as a node started without -rest. */
  restEnabled?: boolean;
};

/** Request counters (the load a client put on the node). */
export type HttpStats = { requests: number; inFlight: number; peakInFlight: number; restRequests: number; restPeakInFlight: number };

type JsonRpcVersion = 'legacy' | 'v2';

type ParsedRequest = { id: unknown; hasId: boolean; version: JsonRpcVersion; method: string; params: unknown };

function parseRequest(req: unknown): ParsedRequest {
  if (req === null || typeof req !== 'object' || Array.isArray(req)) throw new RpcError(RPC_ERR.INVALID_REQUEST, 'Invalid Request object');
  const r = req as Record<string, unknown>;
  const hasId = 'id' in r;
  let version: JsonRpcVersion = 'legacy';
  if ('jsonrpc' in r) {
    if (typeof r.jsonrpc !== 'string')
      throw Object.assign(new RpcError(RPC_ERR.INVALID_REQUEST, 'jsonrpc field must be a string'), { id: r.id });
    if (r.jsonrpc === '2.0') version = 'v2';
    else if (r.jsonrpc !== '1.0')
      throw Object.assign(new RpcError(RPC_ERR.INVALID_REQUEST, 'JSON-RPC version not supported'), { id: r.id });
  }
  if (r.method === undefined || r.method === null)
    throw Object.assign(new RpcError(RPC_ERR.INVALID_REQUEST, 'Missing method'), { id: r.id, version });
  if (typeof r.method !== 'string')
    throw Object.assign(new RpcError(RPC_ERR.INVALID_REQUEST, 'Method must be a string'), { id: r.id, version });
  const p = r.params;
  if (p !== undefined && p !== null && typeof p !== 'object')
    throw Object.assign(new RpcError(RPC_ERR.INVALID_REQUEST, 'Params must be an array or object'), { id: r.id, version });
  return { id: r.id, hasId, version, method: r.method, params: p ?? [] };
}

function replyObject(
  result: unknown,
  error: { code: number; message: string } | null,
  id: unknown,
  version: JsonRpcVersion,
): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  if (version === 'v2') o.jsonrpc = '2.0';
  if (error === null) {
    o.result = result ?? null;
    if (version === 'legacy') o.error = null;
  } else {
    if (version === 'legacy') o.result = null;
    o.error = error;
  }
  o.id = id === undefined ? null : id;
  return o;
}

/** Converts named parameters to positional ones (Core's transformNamedArguments). */
function positional(method: RpcMethod, params: unknown): unknown[] {
  if (Array.isArray(params)) return params;
  const named = params as Record<string, unknown>;
  const out: unknown[] = [];
  for (const k of Object.keys(named)) {
    if (!method.args.includes(k)) throw new RpcError(RPC_ERR.INVALID_PARAMETER, `Unknown named parameter ${k}`);
  }
  method.args.forEach((a, i) => {
    if (a in named) out[i] = named[a];
  });
  while (out.length && out[out.length - 1] === undefined) out.pop();
  for (let i = 0; i < out.length; i++) if (out[i] === undefined) out[i] = null;
  return out;
}

function errorOf(err: unknown): { code: number; message: string } {
  if (err instanceof RpcError) return { code: err.code, message: err.message };
  return { code: RPC_ERR.MISC_ERROR, message: err instanceof Error ? err.message : String(err) };
}

function httpStatusFor(code: number): number {
  if (code === RPC_ERR.INVALID_REQUEST) return 400;
  if (code === RPC_ERR.METHOD_NOT_FOUND) return 404;
  return 500;
}

/** The HTTP server with start/stop on a fixed port. */
export class DevnodeHttpServer {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;
  host = '127.0.0.1';
  readonly stats: HttpStats = { requests: 0, inFlight: 0, peakInFlight: 0, restRequests: 0, restPeakInFlight: 0 };
  private restInFlight = 0;

  constructor(private readonly deps: HttpServerDeps) {}

  /** Listens on host:port (0 = a free port, remembered for later restarts). */
  async listen(host: string, port: number): Promise<number> {
    this.host = host;
    const server = createServer((req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 30_000;
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const addr = server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : port;
    this.server = server;
    return this.port;
  }

  /** Stops listening and drops every connection (clients see connection refused/reset). */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get listening(): boolean {
    return this.server !== null;
  }

  private authorized(req: IncomingMessage): boolean {
    const h = req.headers.authorization;
    if (!h || !h.startsWith('Basic ')) return false;
    const given = Buffer.from(h.slice(6).trim(), 'base64');
    for (const cred of [`${this.deps.user}:${this.deps.password}`, this.deps.cookie]) {
      if (!cred) continue;
      const want = Buffer.from(cred);
      if (want.length === given.length && timingSafeEqual(want, given)) return true;
    }
    return false;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const st = this.stats;
    st.requests++;
    st.inFlight++;
    st.peakInFlight = Math.max(st.peakInFlight, st.inFlight);
    res.on('close', () => st.inFlight--);
    const url = req.url ?? '/';
    try {
      if (url.startsWith('/rest/')) {
        st.restRequests++;
        this.restInFlight++;
        st.restPeakInFlight = Math.max(st.restPeakInFlight, this.restInFlight);
        res.on('close', () => this.restInFlight--);
        if (this.deps.restEnabled === false) {
          for await (const _ of req) void _;
          res.writeHead(404).end();
          return;
        }
        const warm = this.deps.warmup();
        const reply = warm
          ? { status: 503, type: 'text/plain', body: `Service temporarily unavailable: ${warm}\r\n` }
          : this.deps.rest(url);
        // Drain the body (getutxos may post one) before answering.
        for await (const _ of req) void _;
        res.writeHead(reply.status, { 'Content-Type': reply.type });
        res.end(typeof reply.body === 'string' ? reply.body : Buffer.from(reply.body));
        return;
      }
      const path = url.split('?')[0]!;
      const walletMatch = /^\/wallet\/(.*)$/.exec(path);
      if (path !== '/' && !walletMatch) {
        res.writeHead(404).end();
        return;
      }
      if (req.method !== 'POST') {
        res.writeHead(405, { 'Content-Type': 'text/html; charset=ISO-8859-1' }).end('JSONRPC server handles only POST requests');
        return;
      }
      if (!this.authorized(req)) {
        for await (const _ of req) void _;
        res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="jsonrpc"' }).end();
        return;
      }
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      const walletPath = walletMatch ? decodeURIComponent(walletMatch[1]!) : null;
      const { status, body } = await this.dispatch(text, walletPath);
      if (status === 204) {
        res.writeHead(204).end();
        return;
      }
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(`${body}\n`);
    } catch (err) {
      this.deps.log.error({ err }, 'devnode: http handler failed');
      if (!res.headersSent) res.writeHead(500).end();
    }
  }

  /** Runs one HTTP body of JSON-RPC: a single request or a batch. */
  async dispatch(text: string, walletPath: string | null): Promise<{ status: number; body: string }> {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { status: 500, body: writeCoreJson(replyObject(null, { code: RPC_ERR.PARSE_ERROR, message: 'Parse error' }, null, 'legacy')) };
    }
    if (Array.isArray(value)) {
      const replies: unknown[] = [];
      for (const item of value) {
        let parsed: ParsedRequest;
        try {
          parsed = parseRequest(item);
        } catch (err) {
          const e = err as RpcError & { id?: unknown; version?: JsonRpcVersion };
          replies.push(replyObject(null, errorOf(e), e.id, e.version ?? 'legacy'));
          continue;
        }
        const reply = await this.execute(parsed, walletPath);
        if (parsed.version === 'v2' && !parsed.hasId) continue;
        replies.push(reply.object);
      }
      return { status: 200, body: writeCoreJson(replies) };
    }
    if (value === null || typeof value !== 'object') {
      return {
        status: 500,
        body: writeCoreJson(replyObject(null, { code: RPC_ERR.PARSE_ERROR, message: 'Top-level object parse error' }, null, 'legacy')),
      };
    }
    let parsed: ParsedRequest;
    try {
      parsed = parseRequest(value);
    } catch (err) {
      const e = err as RpcError & { id?: unknown; version?: JsonRpcVersion };
      const error = errorOf(e);
      return { status: httpStatusFor(error.code), body: writeCoreJson(replyObject(null, error, e.id, e.version ?? 'legacy')) };
    }
    const reply = await this.execute(parsed, walletPath);
    if (parsed.version === 'v2' && !parsed.hasId) return { status: 204, body: '' };
    const status = reply.error && parsed.version === 'legacy' ? httpStatusFor(reply.error.code) : 200;
    return { status, body: writeCoreJson(reply.object) };
  }

  private async execute(
    p: ParsedRequest,
    walletPath: string | null,
  ): Promise<{ object: Record<string, unknown>; error: { code: number; message: string } | null }> {
    const warm = this.deps.warmup();
    let error: { code: number; message: string } | null = null;
    let result: unknown = null;
    if (warm) error = { code: RPC_ERR.IN_WARMUP, message: warm };
    else {
      const method = this.deps.methods.get(p.method);
      if (!method) error = { code: RPC_ERR.METHOD_NOT_FOUND, message: 'Method not found' };
      else {
        try {
          result = await method.run({ method: p.method, params: positional(method, p.params), walletPath });
        } catch (err) {
          error = errorOf(err);
          if (!(err instanceof RpcError)) this.deps.log.debug({ err, method: p.method }, 'devnode: rpc method threw');
        }
      }
    }
    return { object: replyObject(result, error, p.id, p.version), error };
  }
}
