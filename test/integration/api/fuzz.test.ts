/**
 * Input fuzzing: random hashes, addresses, paging parameters, stamp ids
 * and JSON bodies (unknown fields, huge arrays, deep nesting, > 64 KiB) never produce a 5xx other
 * than the 503 of a service this harness does not configure (node, stamping) for well-formed
 * writes; every refusal carries the error body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createApiHarness, type ApiHarness } from './harness.js';
import { A, insertMiniChain } from './mini-chain.js';

const hexChar = fc.constantFrom(...'0123456789abcdefABCDEFxyz-%'.split(''));
const hashLike = fc.oneof(
  fc.string({ minLength: 60, maxLength: 68, unit: hexChar }),
  fc.string({ maxLength: 120 }),
  fc.constant('a'.repeat(64)),
);
const addressLike = fc.oneof(
  fc.string({ maxLength: 130 }),
  fc.string({
    minLength: 20,
    maxLength: 95,
    unit: fc.constantFrom(...'bcrt1qpzry9x8gf2tvdw0s3jn54khce6mua7l123456789ABCDEFGHJKLMNPQRSTUVWXYZ'.split('')),
  }),
  fc.nat(A.length - 1).map((i) => A.slice(0, i) + (A[i] === 'q' ? 'p' : 'q') + A.slice(i + 1)),
);
const queryValue = fc.oneof(
  fc.integer({ min: -5, max: 20_000 }).map(String),
  fc.string({ maxLength: 40 }),
  fc.constant('1e3'),
  fc.constant('0x10'),
);

/** Nesting `n` deep, as text (a deep value would overflow fast-check's reporter). */
function deep(n: number): string {
  let open = '';
  let close = '';
  for (let i = 0; i < n; i++) {
    open += i % 2 ? '[' : '{"a":';
    close = (i % 2 ? ']' : '}') + close;
  }
  return `${open}1${close}`;
}

const jsonBody = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? 'null'),
  fc.record({ hash: hashLike }).map((v) => JSON.stringify(v)),
  fc.record({ hash: hashLike, extra: fc.jsonValue({ maxDepth: 2 }) }).map((v) => JSON.stringify(v)),
  fc.record({ tx: fc.string({ maxLength: 300, unit: hexChar }) }).map((v) => JSON.stringify(v)),
  fc.nat(5).map((k) => JSON.stringify({ hash: 'a'.repeat(64), list: new Array(k * 20_000).fill(7) })),
  fc.integer({ min: 10, max: 5000 }).map((d) => deep(d)),
  fc.constant(JSON.stringify({ tx: 'ab'.repeat(40_000) })),
  fc.string({ maxLength: 200 }),
);

/** This harness has no node and no stamping service: well-formed writes are 503 for that reason only. */
const NOT_CONFIGURED = new Set(['ERR_STAMPING_NOT_CONFIGURED', 'ERR_NODE_UNAVAILABLE']);

function check(r: { statusCode: number; body: string }, what: string) {
  if (r.statusCode >= 400) {
    const b = JSON.parse(r.body) as Record<string, unknown>;
    if (r.statusCode === 503) expect(NOT_CONFIGURED.has(b.error_code as string), `${what} → ${r.body}`).toBe(true);
    else expect(r.statusCode, `${what} → ${r.statusCode} ${r.body.slice(0, 200)}`).toBeLessThan(500);
    expect(typeof b.error_code, what).toBe('string');
    expect(typeof b.retry, what).toBe('boolean');
  }
}

describe('api fuzzing: 4xx, never 5xx', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await createApiHarness({ settings: { rateLimit: 1_000_000 } });
    await insertMiniChain(h.t.db);
  });
  afterAll(async () => h?.close());

  it('path parameters', async () => {
    await fc.assert(
      fc.asyncProperty(
        hashLike,
        addressLike,
        fc.constantFrom('blocks', 'transactions', 'stamps'),
        fc.constantFrom('balance', 'history', 'unspentoutputs'),
        async (hash, address, res, kind) => {
          const u1 = `/v1/${res}/${encodeURIComponent(hash)}`;
          check(await h.get(u1), u1);
          const u2 = `/v1/addresses/${encodeURIComponent(address)}/${kind}`;
          check(await h.get(u2), u2);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('paging parameters', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.constantFrom('limit', 'cursor', 'min_conf', 'x'), queryValue, { maxKeys: 4 }),
        fc.constantFrom('history', 'unspentoutputs', 'balance'),
        async (q, kind) => {
          const u = `/v1/addresses/${A}/${kind}?${new URLSearchParams(q).toString()}`;
          check(await h.get(u), u);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('JSON bodies', async () => {
    await fc.assert(
      fc.asyncProperty(jsonBody, fc.constantFrom('/v1/stamps', '/v1/transactions'), async (payload, url) => {
        const r = await h.app.inject({ method: 'POST', url, headers: { apiKey: h.key, 'content-type': 'application/json' }, payload });
        check(r, `${url} ${payload.slice(0, 80)}`);
      }),
      { numRuns: 120 },
    );
  });
});
