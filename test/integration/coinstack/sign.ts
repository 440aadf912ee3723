/**
 * Signing a request as Coinstack's SDKs do, written from their source for the tests (not the
 * server's code): base64(HMAC-SHA256(secret, METHOD\nHost\npath\nTimestamp\nContent-MD5\nContent-Type\n))
 * in `Authorization: APIKey=…,Signature=…,Timestamp=…`.
 */
import { createHash, createHmac } from 'node:crypto';

/** RFC 3339 with a numeric offset (moment's `YYYY-MM-DDTHH:mm:ssZ`, the JS SDK's). */
export function timestamp(at: Date, offsetMinutes = 540, millis = false): string {
  const local = new Date(at.getTime() + offsetMinutes * 60_000).toISOString().slice(0, millis ? 23 : 19);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

export function sign(
  secret: string,
  parts: { method: string; host: string; path: string; ts: string; md5?: string; type?: string },
): string {
  const text = [parts.method, parts.host, parts.path, parts.ts, parts.md5 ?? '', parts.type ?? ''].map((l) => `${l}\n`).join('');
  return createHmac('sha256', secret).update(text).digest('base64');
}

/** base64(MD5(body)): the Content-MD5 both SDKs send. */
export const md5 = (body: string) => createHash('md5').update(body).digest('base64');

/**
 * The headers the Java SDK (CoreBackEndAdaptor, util/HMAC) sends: no Content-Type unless given,
 * Content-MD5 with a body, a joda-time timestamp (milliseconds, local offset), the Host signed as
 * the URI's host without its port (one of its versions).
 */
export function javaHeaders(
  access: string,
  secret: string,
  r: { method: string; host: string; path: string; body?: string; contentType?: string },
): Record<string, string> {
  const ts = timestamp(new Date(), 540, true);
  const contentMd5 = r.body === undefined ? undefined : md5(r.body);
  const signature = sign(secret, {
    method: r.method,
    host: r.host.replace(/:\d+$/, ''),
    path: r.path,
    ts,
    ...(contentMd5 ? { md5: contentMd5 } : {}),
    ...(r.contentType ? { type: r.contentType } : {}),
  });
  return {
    host: r.host,
    authorization: `APIKey=${access},Signature=${signature},Timestamp=${ts}`,
    ...(contentMd5 ? { 'content-md5': contentMd5 } : {}),
    ...(r.contentType ? { 'content-type': r.contentType } : {}),
  };
}
