/**
 * Standard Webhooks signing (https://www.standardwebhooks.com, spec "Signature scheme"):
 * `webhook-signature: v1,<base64 HMAC-SHA256(secret, "<webhook-id>.<webhook-timestamp>.<body>")>`,
 * where the secret is the base64 after `whsec_`. During a secret rotation both secrets sign and
 * the header carries both signatures, space-separated, so receivers holding either one verify.
 * @module
 */
import { createHmac, createSecretKey } from 'node:crypto';
import { boundedMemo } from './bounded-memo.js';

const SECRET_PREFIX = 'whsec_';

/** Secrets whose keys are kept at most (a worker signs with the same few again and again). */
const KEYS_KEPT = 10_000;

/** The HMAC key of a secret, decoded once. */
const keyOf = boundedMemo(KEYS_KEPT, (secret) => createSecretKey(secretBytes(secret)));

/** The key bytes of a `whsec_…` secret. Throws a TypeError for any other shape. */
export function secretBytes(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new TypeError('webhook secret must start with whsec_');
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new TypeError('webhook secret must be whsec_ followed by base64');
  return Buffer.from(b64, 'base64');
}

/** One `v1,<base64>` signature of a message. */
export function signatureV1(secret: string, id: string, timestampS: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${id}.${timestampS}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

/** The `webhook-signature` value of one delivery: a `v1,…` signature by each given secret, space-separated. */
export function signatureHeader(secrets: readonly string[], id: string, timestampS: number, body: string): string {
  if (secrets.length === 0) throw new RangeError('at least one secret is needed to sign');
  if (!Number.isInteger(timestampS)) throw new RangeError('timestamp must be whole seconds');
  return secrets.length === 1
    ? signatureV1(secrets[0]!, id, timestampS, body)
    : secrets.map((s) => signatureV1(s, id, timestampS, body)).join(' ');
}
