/**
 * Standard Webhooks signatures: what webhook/sign.ts produces verifies
 * with the official `standardwebhooks` library, and every tampered case is rejected by it.
 */
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { randomBytes } from 'node:crypto';
import { secretBytes, signatureHeader, signatureV1 } from '../../../streams/webhook/sign.js';
import { signingSecrets } from '../../../streams/webhook/http-transport.js';

/** The three Standard Webhooks headers of one delivery, as the transport sends them. */
function signedHeaders(
  secrets: readonly string[],
  id: string,
  timestampS: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const signature = signatureHeader(secrets, id, timestampS, body);
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampS), 'webhook-signature': signature };
}

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;
const body = JSON.stringify({ id: 42, type: 'tx.confirmed', address: 'bcrt1qexample', received: 5000 });
const nowS = () => Math.floor(Date.now() / 1000);

describe('Standard Webhooks signing', () => {
  it('matches the official library byte for byte', () => {
    const s = secret();
    const ts = nowS();
    const ours = signatureV1(s, 'sub_ab-42', ts, body);
    const theirs = new Webhook(s).sign('sub_ab-42', new Date(ts * 1000), body);
    expect(ours).toBe(theirs);
  });

  it('is verified by the official library', () => {
    const s = secret();
    const headers = signedHeaders([s], 'sub_ab-42', nowS(), body);
    expect(new Webhook(s).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('matches a fixed vector from the Standard Webhooks reference test suite', () => {
    // standard-webhooks/libraries javascript/src/index.test.ts: this secret, id, timestamp and payload sign to this value.
    const s = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const sig = signatureV1(s, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
    expect(sig).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('rejects a tampered body', () => {
    const s = secret();
    const headers = signedHeaders([s], 'sub_ab-42', nowS(), body);
    expect(() => new Webhook(s).verify(body.replace('5000', '5001'), headers)).toThrow(/No matching signature/);
  });

  it('rejects the wrong secret', () => {
    const headers = signedHeaders([secret()], 'sub_ab-42', nowS(), body);
    expect(() => new Webhook(secret()).verify(body, headers)).toThrow(/No matching signature/);
  });

  it('rejects timestamps 301 s in the past or the future', () => {
    const s = secret();
    for (const skew of [-301, 301]) {
      const headers = signedHeaders([s], 'sub_ab-42', nowS() + skew, body);
      expect(() => new Webhook(s).verify(body, headers)).toThrow(/Message timestamp too (old|new)/);
    }
    // Inside the tolerance it passes.
    expect(() => new Webhook(s).verify(body, signedHeaders([s], 'sub_ab-42', nowS() - 290, body))).not.toThrow();
  });

  it('carries one v1 signature per secret during a rotation; either secret verifies', () => {
    const oldS = secret();
    const newS = secret();
    const headers = signedHeaders([newS, oldS], 'sub_ab-42', nowS(), body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(headers['webhook-signature'].split(' ').every((p) => p.startsWith('v1,'))).toBe(true);
    expect(new Webhook(newS).verify(body, headers)).toBeTruthy();
    expect(new Webhook(oldS).verify(body, headers)).toBeTruthy();
    expect(() => new Webhook(secret()).verify(body, headers)).toThrow(/No matching signature/);
  });

  it('signs ids containing a dot exactly as the library does', () => {
    const s = secret();
    const ts = nowS();
    const headers = signedHeaders([s], 'evt.with.dots', ts, body);
    expect(new Webhook(s).verify(body, headers)).toBeTruthy();
    // The id is part of the signed content: the same signature under another id fails.
    expect(() => new Webhook(s).verify(body, { ...headers, 'webhook-id': 'evt.with.dot' })).toThrow(/No matching signature/);
  });

  it('signs with the previous secret only during its grace period', () => {
    const hook = { secret: 'whsec_bmV3', previous_secret: 'whsec_b2xk', previous_secret_until: new Date(10_000) };
    expect(signingSecrets(hook, 9_999)).toEqual(['whsec_bmV3', 'whsec_b2xk']);
    expect(signingSecrets(hook, 10_000)).toEqual(['whsec_bmV3']);
  });

  it('refuses malformed secrets with exact messages', () => {
    expect(() => secretBytes('abc')).toThrow('webhook secret must start with whsec_');
    expect(() => secretBytes('whsec_not base64!')).toThrow('webhook secret must be whsec_ followed by base64');
    expect(() => signedHeaders([], 'x', 1, body)).toThrow('at least one secret is needed to sign');
  });
});
