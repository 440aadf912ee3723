/**
 * Standard Webhooks signing (https://www.standardwebhooks.com, spec "Signature scheme"):
 * `webhook-signature: v1,<base64 HMAC-SHA256(secret, "<webhook-id>.<webhook-timestamp>.<body>")>`,
 * where the secret is the base64 after `whsec_`. During a secret rotation both secrets sign and
 * the header carries both signatures, space-separated, so receivers holding either one verify.
 * @module
 */
import { createHmac } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** The key bytes of a `whsec_…` secret. Throws a TypeError for any other shape. */
export function secretBytes(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new TypeError('webhook secret must start with whsec_');
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new TypeError('webhook secret must be whsec_ followed by base64');
  return Buffer.from(b64, 'base64');
}

/** One `v1,<base64>` signature of a message. */
export function signatureV1(secret: string, id: string, timestampS: number, body: string): string {
  const mac = createHmac('sha256', secretBytes(secret)).update(`${id}.${timestampS}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three Standard Webhooks headers of one delivery, signed by every given secret. */
export function signedHeaders(
  secrets: readonly string[],
  id: string,
  timestampS: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  if (secrets.length === 0) throw new RangeError('at least one secret is needed to sign');
  if (!Number.isInteger(timestampS)) throw new RangeError('timestamp must be whole seconds');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': secrets.map((s) => signatureV1(s, id, timestampS, body)).join(' '),
  };
}
