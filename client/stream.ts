/**
 * The event stream client: a WebSocket to `/v1/stream?after=<event id>` that reconnects with
 * backoff and resumes after the last event id it delivered, so the caller never sees an event
 * twice (ids increase; anything below the last delivered id, or equal to it for a subscription
 * already served, is dropped). Flow control: when the caller's queue passes a high-water mark
 * the socket is closed and reopened from the last queued id once the queue has drained, so
 * nothing is lost and memory stays bounded. Uses the platform WebSocket, or an injected
 * constructor (the `ws` package in Node 20).
 * @module
 */
import { backoffDelay, type BackoffOptions } from './backoff.js';
import { BlockwireError } from './errors.js';
import type { StreamEvent } from './types.js';

/** The part of the WebSocket interface the client uses (browser, undici and `ws` all have it). */
export type WebSocketLike = {
  readonly readyState: number;
  // Handlers take `never` so that every implementation's own event types are accepted.
  onopen: ((ev: never) => void) | null;
  onmessage: ((ev: never) => void) | null;
  onclose: ((ev: never) => void) | null;
  onerror: ((ev: never) => void) | null;
  close(code?: number, reason?: string): void;
};

/** A WebSocket constructor; `ws` also takes `{ headers }` as third argument. */
export type WebSocketConstructor = new (
  url: string,
  protocols?: string | string[],
  options?: { headers?: Record<string, string> },
) => WebSocketLike;

/** Connection state of a stream. */
export type StreamState = 'connecting' | 'open' | 'reconnecting' | 'paused' | 'closed';

/** Options of `EventStream`. */
export type StreamOptions = {
  /** `ws://…/v1/stream`. */
  url: string;
  apiKey: string;
  /** Resume after this event id (events with a greater id are delivered). */
  after?: string | number | bigint;
  /** WebSocket constructor (default `globalThis.WebSocket`). */
  WebSocket?: WebSocketConstructor;
  /**
   * How the key travels: the `apiKey` header (only injected constructors such as `ws` can set
   * headers) or an `apiKey` query parameter (browsers). Default: header with an injected
   * constructor, query with the global one.
   */
  auth?: 'header' | 'query';
  /** Reconnect backoff (default 250 ms doubling to 15 s) and attempt limit (default unlimited). */
  reconnect?: BackoffOptions & { maxAttempts?: number };
  /** Reconnect when no message has arrived for this long (default 0: off; the server pings at the protocol level). */
  idleTimeoutMs?: number;
  /** Called for each new event, in id order. Without it, iterate the stream (`for await`). */
  onEvent?: (event: StreamEvent) => void;
  /** Called on each state change. */
  onStateChange?: (state: StreamState) => void;
  /** Called on connection errors (the stream keeps reconnecting unless the error is fatal). */
  onError?: (err: Error) => void;
  /** Queue length at which an iterated stream pauses its socket (default 10 000). */
  highWaterMark?: number;
};

const FATAL_HTTP = /Unexpected server response: (401|403|404)/;

/** A resumable, de-duplicated stream of events. */
export class EventStream implements AsyncIterable<StreamEvent> {
  private ws: WebSocketLike | undefined;
  private last: bigint | undefined;
  private lastRaw: string | undefined;
  /** Subscriptions already delivered with the last id (null: all of them, a resume point). */
  private lastSubs: Set<string> | null = null;
  private attempts = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private idleTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly queue: StreamEvent[] = [];
  private readonly waiters: { resolve: (r: IteratorResult<StreamEvent>) => void; reject: (e: unknown) => void }[] = [];
  private failure: Error | undefined;
  private current: StreamState = 'connecting';
  private readonly Ctor: WebSocketConstructor;
  private readonly auth: 'header' | 'query';
  private resolveClosed!: () => void;
  /** Resolves when the stream is closed for good (by `close()` or a fatal error). */
  readonly closed: Promise<void> = new Promise((r) => (this.resolveClosed = r));
  private settleReady!: (err?: Error) => void;
  /**
   * Resolves when the first connection is open (the server then delivers every later event);
   * rejects if the stream fails for good before that.
   */
  readonly ready: Promise<void> = new Promise<void>((resolve, reject) => {
    this.settleReady = (err) => (err ? reject(err) : resolve());
  });

  constructor(private readonly opts: StreamOptions) {
    const injected = opts.WebSocket;
    const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    const Ctor = injected ?? global;
    if (!Ctor) {
      throw new TypeError('No WebSocket implementation: pass { WebSocket } (e.g. the "ws" package) — Node 20 has no global WebSocket');
    }
    this.Ctor = Ctor;
    this.auth = opts.auth ?? (injected && injected !== global ? 'header' : 'query');
    if (opts.after !== undefined) this.advance(String(opts.after));
    this.connect();
  }

  /** The id of the last event delivered (or queued for iteration), as a decimal string. */
  get lastEventId(): string | undefined {
    return this.lastRaw;
  }

  /** The connection state. */
  get state(): StreamState {
    return this.current;
  }

  /** Closes the socket and ends iteration. */
  close(): void {
    if (this.current === 'closed') return;
    this.setState('closed');
    clearTimeout(this.timer);
    clearTimeout(this.idleTimer);
    this.ws?.close(1000, 'client closed');
    this.ws = undefined;
    this.settleWaiters();
    this.ready.catch(() => undefined);
    this.settleReady(new BlockwireError('ERR_STREAM_CLOSED', 'The stream was closed before it opened'));
    this.resolveClosed();
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    return {
      next: () => {
        const ev = this.queue.shift();
        if (ev) {
          this.maybeResume();
          return Promise.resolve({ value: ev, done: false });
        }
        if (this.failure) return Promise.reject(this.failure);
        if (this.current === 'closed') return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
      },
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  private setState(s: StreamState): void {
    if (this.current === s) return;
    this.current = s;
    this.opts.onStateChange?.(s);
  }

  private url(): string {
    const u = new URL(this.opts.url);
    if (this.lastRaw !== undefined) u.searchParams.set('after', this.lastRaw);
    if (this.auth === 'query') u.searchParams.set('apiKey', this.opts.apiKey);
    return u.toString();
  }

  private connect(): void {
    if (this.current === 'closed') return;
    this.setState(this.attempts === 0 ? 'connecting' : 'reconnecting');
    let ws: WebSocketLike;
    try {
      ws = this.auth === 'header' ? new this.Ctor(this.url(), [], { headers: { apiKey: this.opts.apiKey } }) : new this.Ctor(this.url());
    } catch (err) {
      this.fail(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    this.ws = ws;
    let lastError: Error | undefined;
    ws.onopen = () => {
      if (this.ws !== ws) return;
      this.settleReady();
      this.setState('open');
      this.touch();
    };
    ws.onmessage = (ev: { data: unknown }) => {
      if (this.ws !== ws) return;
      this.attempts = 0;
      this.touch();
      this.onMessage(ev.data);
    };
    ws.onerror = (ev: { error?: unknown; message?: string }) => {
      const err = ev.error;
      const message = err instanceof Error ? err.message : (ev.message ?? 'WebSocket error');
      lastError = err instanceof Error ? err : new Error(message);
    };
    ws.onclose = (ev: { code: number; reason: string }) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      clearTimeout(this.idleTimer);
      if (this.current === 'closed' || this.current === 'paused') return;
      if (lastError && FATAL_HTTP.test(lastError.message)) {
        return this.fail(
          new BlockwireError('ERR_STREAM_REFUSED', `The stream refused the connection: ${lastError.message}`, { cause: lastError }),
        );
      }
      if (ev.code === 1008 || (ev.code >= 4400 && ev.code < 4500)) {
        return this.fail(new BlockwireError('ERR_STREAM_REFUSED', `The stream closed the connection: ${ev.code} ${ev.reason}`));
      }
      const why = lastError ?? new Error(`WebSocket closed: ${ev.code} ${ev.reason}`);
      this.opts.onError?.(why);
      this.scheduleReconnect();
    };
  }

  private scheduleReconnect(): void {
    this.attempts++;
    const max = this.opts.reconnect?.maxAttempts ?? Number.POSITIVE_INFINITY;
    if (this.attempts > max) {
      return this.fail(new BlockwireError('ERR_STREAM_GAVE_UP', `The stream could not reconnect after ${max} attempts`));
    }
    this.setState('reconnecting');
    const delay = backoffDelay(this.attempts, { initialDelayMs: 250, maxDelayMs: 15_000, ...this.opts.reconnect });
    this.timer = setTimeout(() => this.connect(), delay);
  }

  private touch(): void {
    const ms = this.opts.idleTimeoutMs ?? 0;
    if (ms <= 0) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      // Silence past the limit: drop this socket and resume on a new one.
      this.opts.onError?.(new Error(`No message for ${ms} ms; reconnecting`));
      this.ws?.close(4000, 'idle');
    }, ms);
  }

  private onMessage(data: unknown): void {
    let text: string;
    if (typeof data === 'string') text = data;
    else if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) text = new TextDecoder().decode(data as ArrayBuffer);
    else return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      this.opts.onError?.(new Error(`Ignoring a stream message that is not JSON: ${text.slice(0, 80)}`));
      return;
    }
    for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
      if (m && typeof m === 'object' && 'id' in m && 'type' in m) this.deliver(m as StreamEvent);
    }
  }

  /**
   * Records a delivery as seen; false for a duplicate. Ids increase; one id may come once per
   * subscription (`sub`), so an id equal to the last is new only for a subscription not yet seen
   * with it. `sub` undefined marks a resume point: everything up to `id` counts as seen.
   */
  private advance(id: string, sub?: string): boolean {
    let n: bigint | undefined;
    try {
      n = BigInt(id);
    } catch {
      n = undefined;
    }
    const same = n !== undefined && this.last !== undefined ? n === this.last : id === this.lastRaw;
    if (n !== undefined && this.last !== undefined && n < this.last) return false;
    if (same) {
      if (this.lastSubs === null || sub === undefined || this.lastSubs.has(sub)) return false;
      this.lastSubs.add(sub);
      return true;
    }
    this.last = n;
    this.lastRaw = id;
    this.lastSubs = sub === undefined ? null : new Set([sub]);
    return true;
  }

  private deliver(raw: StreamEvent): void {
    if (this.current === 'closed') return;
    const event = { ...raw, id: String(raw.id) };
    if (!this.advance(event.id, String(event.subscription_id ?? ''))) return;
    if (this.opts.onEvent) {
      this.opts.onEvent(event);
      return;
    }
    const w = this.waiters.shift();
    if (w) return w.resolve({ value: event, done: false });
    this.queue.push(event);
    if (this.queue.length >= (this.opts.highWaterMark ?? 10_000) && this.ws) {
      // Pause: stop reading; resume from the last queued id once the caller catches up.
      this.setState('paused');
      const ws = this.ws;
      this.ws = undefined;
      ws.close(1000, 'paused');
    }
  }

  private maybeResume(): void {
    if (this.current === 'paused' && this.queue.length <= (this.opts.highWaterMark ?? 10_000) / 2) {
      this.attempts = 0;
      this.connect();
    }
  }

  private fail(err: Error): void {
    this.failure = err;
    this.ready.catch(() => undefined);
    this.settleReady(err);
    this.opts.onError?.(err);
    this.setState('closed');
    clearTimeout(this.timer);
    clearTimeout(this.idleTimer);
    for (const w of this.waiters.splice(0)) w.reject(err);
    this.resolveClosed();
  }

  private settleWaiters(): void {
    for (const w of this.waiters.splice(0)) w.resolve({ value: undefined, done: true });
  }
}
