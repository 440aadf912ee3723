/**
 * Requests signed with a key's secret, as Coinstack's SDKs sign them (go-hmacauth at the commit
 * coinstackd pins, 15a76fa): `Authorization: APIKey=<access key>,Signature=<base64>,
 * Timestamp=<RFC 3339>`, the signature being base64(HMAC-SHA256(secret, string to sign)) over
 *
 *     METHOD \n Host \n path (decoded, no query) \n Timestamp \n Content-MD5 \n Content-Type \n
 *
 * (an absent header is an empty line). The timestamp must be within 15 minutes of now, either
 * way. A request with a body must carry Content-MD5 = base64(MD5(body)), checked once the body
 * is read (checkBodyDigest). The browser SDK cannot set headers: `?auth=`, `?md5=` and
 * `?content-type=` stand for them and take precedence. Signatures are compared in constant
 * time; the Host is tried as sent and without its port (a Java SDK version signs the host
 * alone). Failures are 401 with go-hmacauth's messages.
 * @module
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { findSigningKey, type ApiKeyPrincipal, type Scope } from '../src/auth/keys.js';
import { ServiceError } from '../src/errors.js';
import type { ResolvedApiDeps } from './deps.js';

/** Requests older (or further ahead) than this are refused. */
const SIGNATURE_WINDOW_MS = 15 * 60_000;

type Parts = { APIKey: string; Signature: string; Timestamp: string };

const refuse = (message: string) => new ServiceError('ERR_API_KEY_INVALID', { message });

/** The three parts of an Authorization value, or the go-hmacauth message of what is wrong. */
export function parseAuthorization(header: string): Parts | string {
  const out: Partial<Parts> = {};
  for (const raw of header.split(',')) {
    const part = raw.trim();
    const eq = part.indexOf('=');
    if (eq < 0) return 'Invalid parameter in header string';
    const name = part.slice(0, eq);
    if (name !== 'APIKey' && name !== 'Signature' && name !== 'Timestamp') return 'Invalid parameter in header string';
    if (out[name] !== undefined) return `Repeated parameter: "${name}" in header string`;
    out[name] = part.slice(eq + 1);
  }
  if (!out.APIKey || !out.Signature || !out.Timestamp) return 'Missing parameter in header string';
  return out as Parts;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** The instant of an RFC 3339 timestamp (Go's time.RFC3339 layout: fractions allowed), or undefined. */
function parseRfc3339(ts: string): number | undefined {
  const m = RFC3339.exec(ts);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const t = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}${frac ? frac.slice(0, 4) : ''}${zone!.toUpperCase()}`);
  return Number.isNaN(t) ? undefined : t;
}

/** The go-hmacauth message for a timestamp outside the window, or undefined when inside. */
function timestampProblem(ts: string, now: number): string | undefined {
  const t = parseRfc3339(ts);
  if (t === undefined) return 'Invalid timestamp. Requires RFC3339 format.';
  const age = now - t;
  if (age < -SIGNATURE_WINDOW_MS) return 'Timestamp out of range';
  if (age > SIGNATURE_WINDOW_MS) return 'Signature expired';
  return undefined;
}

/** The string a signature covers. */
function stringToSign(r: {
  method: string;
  host: string;
  path: string;
  timestamp: string;
  contentMd5: string;
  contentType: string;
}): string {
  return `${r.method}\n${r.host}\n${r.path}\n${r.timestamp}\n${r.contentMd5}\n${r.contentType}\n`;
}

/** base64(HMAC-SHA256(secret, text)). */
function signString(secret: string, text: string): string {
  return createHmac('sha256', secret).update(text).digest('base64');
}

/** A header's value, or the query parameter that stands for it (which wins, as in coinstackd). */
function headerOrQuery(request: FastifyRequest, header: string, param: string): string {
  const q = (request.query as Record<string, unknown> | undefined)?.[param];
  if (typeof q === 'string') return q;
  const h = request.headers[header];
  return (Array.isArray(h) ? h[0] : h) ?? '';
}

/** The decoded path of the request (Go's URL.Path), or undefined when it does not decode. */
function decodedPath(url: string): string | undefined {
  const raw = url.split('?')[0]!;
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

const expectedMd5 = new WeakMap<FastifyRequest, string>();

/**
 * Checks a signed request (everything but its body) and returns the key's principal, or throws
 * ServiceError 401 with go-hmacauth's message (403 when the key lacks the route's scope).
 */
export async function authenticateSigned(
  deps: ResolvedApiDeps,
  request: FastifyRequest,
  authorization: string,
  scope: Scope,
  now = Date.now(),
): Promise<ApiKeyPrincipal> {
  const parts = parseAuthorization(authorization);
  if (typeof parts === 'string') throw refuse(parts);
  const problem = timestampProblem(parts.Timestamp, now);
  if (problem) throw refuse(problem);
  const key = await findSigningKey(deps.db, deps.keyring?.(), parts.APIKey);
  if (!key) throw refuse('Invalid APIKey');
  const contentMd5 = headerOrQuery(request, 'content-md5', 'md5');
  const contentType = headerOrQuery(request, 'content-type', 'content-type');
  const path = decodedPath(request.url);
  const given = Buffer.from(parts.Signature);
  let ok = false;
  const host = request.headers.host ?? '';
  const hostNoPort = host.replace(/:\d+$/, '');
  for (const h of host === hostNoPort ? [host] : [host, hostNoPort]) {
    const text = stringToSign({ method: request.method, host: h, path: path ?? '', timestamp: parts.Timestamp, contentMd5, contentType });
    const expected = Buffer.from(signString(key.secret, text));
    // (constant time; every candidate is compared, so the time does not tell which matched)
    if (given.length === expected.length && timingSafeEqual(given, expected) && path !== undefined) ok = true;
  }
  if (!ok) throw refuse('Invalid Signature');
  if (!key.principal.scopes.includes(scope)) throw new ServiceError('ERR_SCOPE', { message: `this API key lacks the '${scope}' scope` });
  expectedMd5.set(request, contentMd5);
  return key.principal;
}

/**
 * Checks the body of a signed request against its Content-MD5 (base64 of the MD5 of the bytes;
 * coinstackd's go-hmacauth version). Nothing to check for a request that was not signed or an
 * empty body. Throws ServiceError 401 with go-hmacauth's message.
 */
export function checkBodyDigest(request: FastifyRequest, body: Buffer | string): void {
  const md5 = expectedMd5.get(request);
  if (md5 === undefined || body.length === 0) return;
  if (md5 === '') throw refuse('Missing Content-MD5 for body');
  // base64 as coinstackd checks it; hex as older Java SDK builds may send it
  const digest = createHash('md5').update(body).digest();
  const given = Buffer.from(md5);
  const matches = (s: string) => given.length === s.length && timingSafeEqual(given, Buffer.from(s));
  if (!matches(digest.toString('base64')) && !matches(digest.toString('hex'))) throw refuse('Invalid Content-MD5 for body');
}
