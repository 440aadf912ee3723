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
import { classifyHttpStatus, RESPONSE_EXCERPT_BYTES, type SendResult, type Transport } from '../transport.js';
import type { DeliveryJobData } from '../queues.js';
import { signedHeaders } from './sign.js';

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

export function createHttpTransport(opts: HttpTransportOptions): Transport {
  const now = opts.now ?? Date.now;
  const lookup = guardedLookup(opts.policy);
  const agentOptions = { keepAlive: true, maxSockets: 256, lookup };
  const agents = { 'http:': new http.Agent(agentOptions), 'https:': new https.Agent(agentOptions) };
  const userAgent = opts.userAgent ?? 'Blockwire-Webhooks/1';

  function post(url: URL, headers: Record<string, string>, body: string): Promise<SendResult> {
    return new Promise((resolve) => {
      const mod = url.protocol === 'https:' ? https : http;
      let settled = false;
      const done = (r: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(r);
      };
      const req = mod.request(url, {
        method: 'POST',
        agent: agents[url.protocol as 'http:' | 'https:'],
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': userAgent,
        },
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
        const finish = () =>
          done({
            ...classifyHttpStatus(res.statusCode ?? 0, { retryAfter: res.headers['retry-after'], location: res.headers.location }, now()),
            response: Buffer.concat(kept).toString('utf8'),
          });
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
      let url: URL;
      try {
        url = parseHookUrl(hook.url, opts.policy);
      } catch (err) {
        return { kind: 'permanent', status: null, error: `refused at delivery: ${(err as Error).message}` };
      }
      const secrets = signingSecrets(hook, now());
      if (secrets.length === 0) return { kind: 'permanent', status: null, error: 'hook has no secret' };
      const signedAt = Math.floor(now() / 1000);
      return { ...(await post(url, signedHeaders(secrets, job.delivery, signedAt, job.payload), job.payload)), signedAt };
    },
    async close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}
