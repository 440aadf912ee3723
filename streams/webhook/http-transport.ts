/**
 * The webhook transport: one HTTP POST per delivery with the Standard Webhooks headers
 * (webhook/sign.ts), a hard time limit for the whole exchange (10 s by default), no redirect
 * followed, and the SSRF guard on every attempt: the URL's shape and IP literals are checked
 * before the request, host names inside the agent's lookup, so the address connected to is the
 * one checked (a name that rebinds to 127.0.0.1 after registration is refused at delivery).
 * @module
 */
import * as http from 'node:http';
import * as https from 'node:https';
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

/** Bytes of a response body read (and thrown away) at most; more and the socket is dropped. */
const MAX_RESPONSE_BYTES = 64 * 1024;

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

/** Where a hook's requests go, from its URL checked once (parseHookUrl is a function of the URL alone). */
type Target = { https: boolean; protocol: string; hostname: string; port: number; path: string; host: string; agent: http.Agent };

/** Hook URLs whose targets are kept at most; past it the cache starts over. */
const TARGETS_KEPT = 10_000;

export function createHttpTransport(opts: HttpTransportOptions): Transport {
  const now = opts.now ?? Date.now;
  const lookup = guardedLookup(opts.policy);
  const agentOptions = { keepAlive: true, maxSockets: 256, lookup };
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
  const userAgent = opts.userAgent ?? 'Blockwire-Webhooks/1';

  /** The request target of a hook URL (the URL's shape and IP literals checked); throws HookUrlError. */
  const targetOf = boundedMemo(TARGETS_KEPT, (raw): Target => {
    const url = parseHookUrl(raw, opts.policy);
    const isHttps = url.protocol === 'https:';
    return {
      https: isHttps,
      protocol: url.protocol,
      // (an IPv6 literal without its brackets, as http.request wants it)
      hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
      port: url.port === '' ? (isHttps ? 443 : 80) : Number(url.port),
      path: `${url.pathname}${url.search}`,
      // (the Host header as http.request would make it: the request's headers come as a list, which it takes as they are)
      host: url.host,
      agent: isHttps ? agents.https : agents.http,
    };
  });

  function post(target: Target, headers: string[], body: string): Promise<SendResult> {
    return new Promise((resolve) => {
      let settled = false;
      const done = (r: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(r);
      };
      // (literals, not spreads, on this path: see streams/events.ts decodeOutboxRow)
      const req = (target.https ? https : http).request({
        protocol: target.protocol,
        hostname: target.hostname,
        port: target.port,
        path: target.path,
        method: 'POST',
        agent: target.agent,
        headers,
      });
      const timer = setTimeout(() => {
        req.destroy();
        done({ kind: 'retry', status: null, error: `no answer within ${opts.timeoutMs} ms` });
      }, opts.timeoutMs);
      req.on('response', (res) => {
        let seen = 0;
        // The answer's first bytes are kept for the delivery log; the rest is read and thrown away.
        const kept: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          if (seen < RESPONSE_EXCERPT_BYTES) kept.push(chunk.subarray(0, RESPONSE_EXCERPT_BYTES - seen));
          seen += chunk.length;
          if (seen > MAX_RESPONSE_BYTES) res.destroy();
        });
        const finish = () => {
          if (settled) return;
          const r = classifyHttpStatus(
            res.statusCode ?? 0,
            { retryAfter: res.headers['retry-after'], location: res.headers.location },
            now(),
          );
          r.response = responseExcerpt(kept);
          done(r);
        };
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
      });
      req.on('error', (err) => {
        if (err instanceof HookUrlError) done({ kind: 'permanent', status: null, error: `refused at delivery: ${err.message}` });
        else done({ kind: 'retry', status: null, error: errorText(err) });
      });
      req.end(body);
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
      // (a flat list of names and values: http.request writes it as it is, checking each name and
      // value, where an object's headers are set one by one)
      const headers = [
        'host',
        target.host,
        'webhook-id',
        job.delivery,
        'webhook-timestamp',
        String(signedAt),
        'webhook-signature',
        signatureHeader(secrets, job.delivery, signedAt, body),
        'content-type',
        'application/json',
        'content-length',
        String(Buffer.byteLength(body)),
        'user-agent',
        userAgent,
      ];
      const r = await post(target, headers, body);
      r.signedAt = signedAt;
      return r;
    },
    async close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
