/**
 * The webhook transport: one HTTP POST per delivery with the Standard Webhooks headers
 * (webhook/sign.ts), a hard time limit for the whole exchange (10 s by default), no redirect
 * followed, and the SSRF guard on every attempt: the URL's shape and IP literals are checked
 * before the request, host names inside the connection's lookup, so the address connected to is
 * the one checked (a name that rebinds to 127.0.0.1 after registration is refused at delivery).
 *
 * Requests go through undici's dispatcher (the HTTP client Node's own fetch is built on): kept-alive
 * connections per origin, one request at a time on each (no pipelining: receivers are arbitrary),
 * and no request or response stream objects: the answer's status and first bytes are all a
 * delivery needs, and undici hands them to a plain handler. (Node's http.request cost twice the
 * CPU per POST.)
 * @module
 */
import { Agent, type Dispatcher } from 'undici';
import { HookUrlError, guardedLookup, parseHookUrl, type HookUrlPolicy } from '../../src/net/hook-url.js';
import type { HookRow } from '../../src/db/queries/tenancy-hooks.js';
import { classifyHttpStatus, RESPONSE_EXCERPT_BYTES, responseExcerpt, type SendResult, type Transport } from '../transport.js';
import type { DeliveryJobData } from '../queues.js';
import { signatureHeader } from './sign.js';
import { boundedMemo } from './bounded-memo.js';

export type HttpTransportOptions = {
  policy: HookUrlPolicy;
  /** Limit for connect + request + response, in ms. */
  timeoutMs: number;
  userAgent?: string;
  /** Clock in ms (tests). */
  now?: () => number;
};

/** Bytes of a response body read (and thrown away) at most; more and the connection is dropped. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** Connections kept per receiver origin at most (requests beyond wait for one). */
const CONNECTIONS_PER_ORIGIN = 256;

/** The secrets that sign now: the current one, and the previous one during its grace period. */
export function signingSecrets(hook: Pick<HookRow, 'secret' | 'previous_secret' | 'previous_secret_until'>, now: number): string[] {
  const out: string[] = [];
  if (hook.secret) out.push(hook.secret);
  if (hook.previous_secret && hook.previous_secret_until && hook.previous_secret_until.getTime() > now) out.push(hook.previous_secret);
  return out;
}

function errorText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ? `${e.code}: ${e.message}` : String(e?.message ?? err);
}

/** A header's value as one string (the first of repeated ones). */
function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** Where a hook's requests go, from its URL checked once (parseHookUrl is a function of the URL alone). */
type Target = { origin: string; path: string };

/** Hook URLs whose targets are kept at most; past it the cache starts over. */
const TARGETS_KEPT = 10_000;

/**
 * One POST in flight: undici's handler for it and the settling of its result. Settled once: by
 * the answer's end, by a failure, or by the time limit, whichever comes first; what comes after
 * is ignored (and a request the limit settled before it was written is aborted, not sent).
 */
class Exchange implements Dispatcher.DispatchHandler {
  private settled = false;
  private status = 0;
  private retryAfter: string | undefined;
  private location: string | undefined;
  private seen = 0;
  private readonly kept: Buffer[] = [];
  private controller: Dispatcher.DispatchController | undefined;
  readonly timer: NodeJS.Timeout;

  constructor(
    private readonly resolve: (r: SendResult) => void,
    private readonly now: () => number,
    private readonly timeoutMs: number,
  ) {
    this.timer = setTimeout(expire, timeoutMs, this);
  }

  settle(r: SendResult): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.resolve(r);
  }

  /** The result of the answer so far (its status, the first bytes of its body). */
  answered(): void {
    const r = classifyHttpStatus(this.status, { retryAfter: this.retryAfter, location: this.location }, this.now());
    r.response = responseExcerpt(this.kept);
    this.settle(r);
  }

  expire(): void {
    this.settle({ kind: 'retry', status: null, error: `no answer within ${this.timeoutMs} ms` });
    this.controller?.abort(new Error('webhook time limit'));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled) controller.abort(new Error('webhook time limit'));
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // (informational: the answer is still to come)
    this.status = statusCode;
    if (statusCode === 429) this.retryAfter = one(headers['retry-after']);
    else if (statusCode >= 300 && statusCode < 400) this.location = one(headers.location);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // The answer's first bytes are kept for the delivery log; the rest is read and thrown away.
    if (this.seen < RESPONSE_EXCERPT_BYTES) this.kept.push(chunk.subarray(0, RESPONSE_EXCERPT_BYTES - this.seen));
    this.seen += chunk.length;
    if (this.seen > MAX_RESPONSE_BYTES) {
      this.answered();
      controller.abort(new Error('webhook answer too long'));
    }
  }

  onResponseEnd(): void {
    this.answered();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.settled) return;
    // (an answer cut short after its status still counts as that answer)
    if (this.status !== 0) this.answered();
    else if (err instanceof HookUrlError) this.settle({ kind: 'permanent', status: null, error: `refused at delivery: ${err.message}` });
    else this.settle({ kind: 'retry', status: null, error: errorText(err) });
  }
}

function expire(x: Exchange): void {
  x.expire();
}

export function createHttpTransport(opts: HttpTransportOptions): Transport {
  const now = opts.now ?? Date.now;
  const agent = new Agent({
    connections: CONNECTIONS_PER_ORIGIN,
    pipelining: 1,
    // (the guard resolves names inside the connection; the connect phase ends within the limit too)
    connect: { lookup: guardedLookup(opts.policy), timeout: opts.timeoutMs },
  });
  const userAgent = opts.userAgent ?? 'Blockwire-Webhooks/1';

  /** The request target of a hook URL (the URL's shape and IP literals checked); throws HookUrlError. */
  const targetOf = boundedMemo(TARGETS_KEPT, (raw): Target => {
    const url = parseHookUrl(raw, opts.policy);
    return { origin: url.origin, path: `${url.pathname}${url.search}` };
  });

  function post(target: Target, headers: string[], body: string): Promise<SendResult> {
    return new Promise((resolve) => {
      const x = new Exchange(resolve, now, opts.timeoutMs);
      // (literals, not spreads, on this path: see streams/events.ts decodeOutboxRow)
      agent.dispatch({ origin: target.origin, path: target.path, method: 'POST', headers, body }, x);
    });
  }

  return {
    async send(hook: HookRow, job: DeliveryJobData): Promise<SendResult> {
      if (hook.type !== 'http' || !hook.url) return { kind: 'permanent', status: null, error: 'hook has no URL' };
      let target: Target;
      try {
        target = targetOf(hook.url);
      } catch (err) {
        return { kind: 'permanent', status: null, error: `refused at delivery: ${(err as Error).message}` };
      }
      const at = now();
      const secrets = signingSecrets(hook, at);
      if (secrets.length === 0) return { kind: 'permanent', status: null, error: 'hook has no secret' };
      const signedAt = Math.floor(at / 1000);
      const body = job.payload;
      // (a flat list of names and values; Host and Content-Length are undici's, from the origin and the body)
      const headers = [
        'webhook-id',
        job.delivery,
        'webhook-timestamp',
        String(signedAt),
        'webhook-signature',
        signatureHeader(secrets, job.delivery, signedAt, body),
        'content-type',
        'application/json',
        'user-agent',
        userAgent,
      ];
      const r = await post(target, headers, body);
      r.signedAt = signedAt;
      return r;
    },
    async close() {
      await agent.destroy();
    },
  };
}
