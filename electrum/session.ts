/**
 * One Electrum connection (TCP or TLS): newline-delimited JSON-RPC requests, single or batched,
 * answered as they complete (each reply carries its request's id; a batch is answered as one
 * array in request order), and notifications pushed by the tracker. Limits: a line longer than
 * `maxRequestBytes` closes the connection after an error; requests beyond `rateLimit` per
 * `rateWindowMs` are answered with an error; at most `maxInFlight` requests are worked on at
 * once (reading pauses meanwhile); a request not answered within `requestTimeoutMs` (PostgreSQL
 * or the node stalled) gets an error instead of no answer; a client that sends nothing for `idleTimeoutMs` is
 * disconnected; one whose unread replies pass `maxBufferedBytes` is dropped as too slow.
 * @module
 */
import type { Socket } from 'node:net';
import type { Logger } from '../src/log.js';
import { errorMessage, notificationMessage, resultMessage, RPC_ERROR, RpcError, toJson, type RequestId } from './protocol.js';
import type { SessionState } from './methods.js';

export type SessionLimits = {
  maxRequestBytes: number;
  rateLimit: number;
  rateWindowMs: number;
  idleTimeoutMs: number;
  /** Time limit of one request; past it the client gets error -32603 "request timed out" (the work itself is not cancelled). */
  requestTimeoutMs: number;
  maxInFlight: number;
  maxBufferedBytes: number;
};

export type SessionDeps = {
  socket: Socket;
  limits: SessionLimits;
  log: Logger;
  call(s: SessionState, method: string, params: unknown): Promise<unknown>;
  /** Called once when the connection is gone. */
  onClose(s: Session): void;
};

type Request = { id: RequestId; method: string; params: unknown; notification: boolean };

export class Session implements SessionState {
  readonly subscribed = new Set<string>();
  authenticated = false;
  version: string | undefined;
  closeAfterReply = false;
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private inFlight = 0;
  private tokens: number;
  private refilledAt = Date.now();
  private closed = false;
  private readonly socket: Socket;
  /** When the client last sent anything (the server's sweep closes idle connections). */
  lastHeardAt = Date.now();

  constructor(private readonly deps: SessionDeps) {
    this.socket = deps.socket;
    this.tokens = deps.limits.rateLimit;
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', () => {});
    this.socket.on('close', () => this.finish());
  }

  notify(method: string, params: unknown[]): void {
    this.send(notificationMessage(method, params));
  }

  /** Closes the connection. */
  close(reason: string): void {
    if (this.closed) return;
    this.deps.log.debug({ reason }, 'electrum connection closed');
    this.socket.end();
    this.socket.destroySoon();
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    this.deps.onClose(this);
  }

  /** Closes the connection when the client has sent nothing for the idle timeout. */
  closeIfIdle(now: number): void {
    if (now - this.lastHeardAt >= this.deps.limits.idleTimeoutMs) this.close('idle');
  }

  private onData(chunk: Buffer): void {
    this.lastHeardAt = Date.now();
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      const part = chunk.subarray(start, nl);
      const line = this.bufferedBytes > 0 ? Buffer.concat([...this.buffered, part]) : part;
      this.buffered = [];
      this.bufferedBytes = 0;
      start = nl + 1;
      if (line.length > this.deps.limits.maxRequestBytes) return this.tooLarge();
      const text = line.toString('utf8').trim();
      if (text !== '') void this.handleLine(text);
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.buffered.push(Buffer.from(rest));
      this.bufferedBytes += rest.length;
      if (this.bufferedBytes > this.deps.limits.maxRequestBytes) this.tooLarge();
    }
  }

  private tooLarge(): void {
    this.send(errorMessage(null, new RpcError(RPC_ERROR.INVALID_REQUEST, `request larger than ${this.deps.limits.maxRequestBytes} bytes`)));
    this.close('request too large');
  }

  private async handleLine(text: string): Promise<void> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      this.send(errorMessage(null, new RpcError(RPC_ERROR.PARSE_ERROR, 'parse error')));
      return;
    }
    this.track(1);
    try {
      if (Array.isArray(parsed)) {
        if (parsed.length === 0) {
          this.send(errorMessage(null, new RpcError(RPC_ERROR.INVALID_REQUEST, 'empty batch')));
          return;
        }
        const replies = await Promise.all(parsed.map((r) => this.answer(r)));
        const out = replies.filter((r) => r !== undefined);
        if (out.length > 0) this.send(out);
      } else {
        const reply = await this.answer(parsed);
        if (reply !== undefined) this.send(reply);
      }
      if (this.closeAfterReply) this.close('no common protocol version');
    } finally {
      this.track(-1);
    }
  }

  /** Pauses reading while too many requests are being worked on. */
  private track(delta: number): void {
    this.inFlight += delta;
    if (this.inFlight >= this.deps.limits.maxInFlight) this.socket.pause();
    else if (delta < 0 && this.socket.isPaused() && !this.closed) this.socket.resume();
  }

  private async answer(raw: unknown): Promise<object | undefined> {
    const req = this.request(raw);
    if (req instanceof RpcError) return errorMessage(idOf(raw), req);
    if (!this.take()) {
      const retry = Math.ceil(this.deps.limits.rateWindowMs / this.deps.limits.rateLimit);
      return req.notification
        ? undefined
        : errorMessage(
            req.id,
            new RpcError(
              RPC_ERROR.RATE_LIMITED,
              `rate limit exceeded: ${this.deps.limits.rateLimit} requests per ${this.deps.limits.rateWindowMs / 1000} s; retry in ${retry} ms`,
            ),
          );
    }
    try {
      const result = await this.withinTimeLimit(this.deps.call(this, req.method, req.params), req.method);
      return req.notification ? undefined : resultMessage(req.id, result);
    } catch (err) {
      if (err instanceof RpcError) return req.notification ? undefined : errorMessage(req.id, err);
      this.deps.log.error({ err, method: req.method }, 'electrum request failed');
      return req.notification ? undefined : errorMessage(req.id, new RpcError(RPC_ERROR.INTERNAL, 'internal error'));
    }
  }

  /** `work`, or an RpcError once the request's time limit has passed (a stalled dependency must not leave the client waiting for good). */
  private withinTimeLimit<T>(work: Promise<T>, method: string): Promise<T> {
    const limitMs = this.deps.limits.requestTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.deps.log.warn({ method, limitMs }, 'electrum request timed out');
        reject(new RpcError(RPC_ERROR.INTERNAL, `request timed out after ${limitMs} ms`));
      }, limitMs);
    });
    work.catch(() => {});
    return Promise.race([work, late]).finally(() => clearTimeout(timer));
  }

  private request(raw: unknown): Request | RpcError {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      return new RpcError(RPC_ERROR.INVALID_REQUEST, 'a request is a JSON object');
    const r = raw as Record<string, unknown>;
    if (typeof r.method !== 'string') return new RpcError(RPC_ERROR.INVALID_REQUEST, 'method must be a string');
    const id = r.id;
    if (id !== undefined && id !== null && typeof id !== 'string' && typeof id !== 'number')
      return new RpcError(RPC_ERROR.INVALID_REQUEST, 'id must be a string, a number or null');
    return { id: (id ?? null) as RequestId, method: r.method, params: r.params, notification: !('id' in r) };
  }

  /** Token bucket: `rateLimit` requests per `rateWindowMs`, refilled continuously. */
  private take(): boolean {
    const { rateLimit, rateWindowMs } = this.deps.limits;
    const now = Date.now();
    this.tokens = Math.min(rateLimit, this.tokens + ((now - this.refilledAt) * rateLimit) / rateWindowMs);
    this.refilledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  private send(message: unknown): void {
    if (this.closed) return;
    this.socket.write(`${toJson(message)}\n`);
    if (this.socket.writableLength > this.deps.limits.maxBufferedBytes) this.close('slow consumer');
  }
}

function idOf(raw: unknown): RequestId {
  const id = (raw as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}
