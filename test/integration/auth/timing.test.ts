/**
 * No timing oracle: verifying an unknown well-formed key and a real key
 * with its last character changed (which also breaks its checksum) take indistinguishable time.
 * Judged statistically, not by a time threshold: with interleaved samples, the probability that
 * one kind is slower than the other (the Mann–Whitney AUC) must stay near 0.5. The same statistic
 * run against a deliberately leaky verifier (checksum checked before the lookup) must find the
 * leak, so the test is shown able to fail.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { createApiKey, verifyApiKey } from '../../../src/auth/keys.js';
import { generateApiKey, isWellFormedApiKey } from '../../../src/auth/api-key.js';

type Verify = (key: string) => Promise<unknown>;

/** P(a random sample of `a` exceeds one of `b`), ties counting half. */
function auc(a: number[], b: number[]): number {
  const all = [...a.map((v) => ({ v, g: 0 })), ...b.map((v) => ({ v, g: 1 }))].sort((x, y) => x.v - y.v);
  let sumA = 0;
  for (let i = 0; i < all.length;) {
    let j = i;
    while (j < all.length && all[j]!.v === all[i]!.v) j++;
    const avg = (i + 1 + j) / 2;
    for (let k = i; k < j; k++) if (all[k]!.g === 0) sumA += avg;
    i = j;
  }
  return (sumA - (a.length * (a.length + 1)) / 2) / (a.length * b.length);
}

async function sample(verify: Verify, keyA: string, keyB: string, n: number): Promise<[number[], number[]]> {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < 30; i++) await verify(i % 2 ? keyA : keyB); // warm-up: pool connections, JIT
  for (let i = 0; i < n; i++) {
    const order = Math.random() < 0.5 ? ([keyA, a, keyB, b] as const) : ([keyB, b, keyA, a] as const);
    for (const [k, out] of [
      [order[0], order[1]],
      [order[2], order[3]],
    ] as const) {
      const t = process.hrtime.bigint();
      await verify(k);
      out.push(Number(process.hrtime.bigint() - t));
    }
  }
  return [a, b];
}

describe('api key verification timing', () => {
  let t: TestDatabase;
  let real: string;
  beforeAll(async () => {
    t = await createMigratedDatabase('timing');
    for (let i = 0; i < 50; i++) await createApiKey(t.db, { name: `k${i}` });
    real = (await createApiKey(t.db, { name: 'real' })).key;
  });
  afterAll(async () => t?.drop());

  it('unknown key vs wrong last character: no usable difference', async () => {
    const unknown = generateApiKey();
    const wrongLast = real.slice(0, -1) + (real.endsWith('A') ? 'B' : 'A');
    expect(await verifyApiKey(t.db, unknown)).toBeNull();
    expect(await verifyApiKey(t.db, wrongLast)).toBeNull();
    expect(await verifyApiKey(t.db, real)).not.toBeNull();
    const [u, w] = await sample((k) => verifyApiKey(t.db, k), unknown, wrongLast, 400);
    const p = auc(u, w);
    expect(Math.abs(p - 0.5), `AUC ${p.toFixed(3)}`).toBeLessThan(0.2);
  });

  it('the same statistic finds the leak of a verifier that checks the checksum first', async () => {
    const leaky: Verify = async (k) => (isWellFormedApiKey(k) ? verifyApiKey(t.db, k) : null);
    const unknown = generateApiKey();
    const wrongLast = real.slice(0, -1) + (real.endsWith('A') ? 'B' : 'A');
    const [u, w] = await sample(leaky, unknown, wrongLast, 100);
    expect(auc(u, w)).toBeGreaterThan(0.9);
  });
});
