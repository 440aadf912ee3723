/**
 * Property-based fuzzing of every operation the OpenAPI description lists (GET /openapi.json,
 * read at run time: a new route is fuzzed without touching this file). For each operation,
 * requests are generated from its own schemas — path and query parameters and the JSON body
 * valid per schema (patterns through fast-check's stringMatching, bounds, enums, required
 * members), mixed with values of the mini chain (its addresses, txids and block hashes) and with
 * invalid ones (wrong types, out of range, unknown members, junk text, deep nesting) — and sent
 * with a valid key through the whole app. Every answer must be:
 * - no 5xx, except the 503 of a service this harness does not run (node, stamping);
 * - when an error, the dialect's error body (`error_type`, `error_code`, `error_message`,
 *   `retry`, `error_cause`) and no stack trace or source path anywhere in it;
 * - and no request may block the event loop 100 ms: the process's CPU time over the whole of
 *   each request (requests run one at a time) must stay under 100 ms, which bounds its longest
 *   synchronous stretch and, unlike a wall-clock delay, is not inflated by a loaded machine.
 * Seeded (BLOCKWIRE_FUZZ_SEED, default fixed) and bounded (BLOCKWIRE_FUZZ_RUNS per operation,
 * default 25), so CI runs the same requests each time; a failure prints its seed and path.
 * Hook URLs are checked against a resolver that knows no name (no DNS leaves the test).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createApiHarness, type ApiHarness } from './harness.js';
import { A, B, blockHash, c0, m1, t1, insertMiniChain } from './mini-chain.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';

type Schema = {
  type?: string | string[];
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  format?: string;
};
type Parameter = { in: 'path' | 'query' | 'header'; name: string; required?: boolean; schema: Schema };
type Operation = { method: string; path: string; parameters: Parameter[]; body?: Schema };

const SEED = Number(process.env.BLOCKWIRE_FUZZ_SEED ?? 20261126);
const RUNS = Number(process.env.BLOCKWIRE_FUZZ_RUNS ?? 25);

/** Values of the mini chain, so that generated requests also reach found objects. */
const KNOWN = [
  A,
  B,
  c0.hex,
  t1.hex,
  m1.hex,
  ...blockHash.map((h) => hashToHex(h)),
  '0',
  '1',
  'wal_00000000000000000000',
  'hook_00000000000000000000',
];

/** A value valid for `s` (as far as a schema says; semantic checks may still refuse it). */
function valid(s: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (s.oneOf || s.anyOf) return fc.oneof(...(s.oneOf ?? s.anyOf)!.map((x) => valid(x, depth)));
  if (s.enum) return fc.constantFrom(...s.enum);
  const types = Array.isArray(s.type) ? s.type : [s.type ?? 'object'];
  return fc.oneof(...types.map((t) => validOfType(t, s, depth)));
}

function validOfType(t: string, s: Schema, depth: number): fc.Arbitrary<unknown> {
  switch (t) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: s.minimum ?? -1_000_000, max: Math.min(s.maximum ?? 1_000_000, 2_147_483_647) });
    case 'number':
      return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true });
    case 'string': {
      const max = Math.min(s.maxLength ?? 100, 300);
      const min = s.minLength ?? 0;
      if (s.pattern)
        return fc.stringMatching(new RegExp(s.pattern)).filter((x) => x.length >= min && x.length <= (s.maxLength ?? Infinity));
      if (s.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      return fc.oneof(
        fc.string({ minLength: min, maxLength: Math.max(min, max) }),
        fc.constantFrom(...KNOWN.filter((k) => k.length >= min && k.length <= max)),
      );
    }
    case 'array':
      return fc.array(depth > 3 ? fc.constant(null) : valid(s.items ?? {}, depth + 1), {
        minLength: s.minItems ?? 0,
        maxLength: Math.min(s.maxItems ?? 5, 5),
      });
    default: {
      const props = s.properties ?? {};
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) model[k] = depth > 3 ? fc.constant(null) : valid(v, depth + 1);
      return fc.record(model, { requiredKeys: (s.required ?? []).filter((k) => k in props) });
    }
  }
}

/** Nesting `n` deep, as text. */
function deep(n: number): string {
  return `${'['.repeat(n)}1${']'.repeat(n)}`;
}

/** Something a schema would not take: wrong types, out of range, junk. */
const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('', ' ', '-1', '1e309', '0x10', 'NaN', '%00', '../../etc/passwd', '\u0000', 'ffff'.repeat(300), '{"a":1}'),
  fc.jsonValue({ maxDepth: 3 }),
);

/** A parameter's value as text: valid for its schema, a known value, or junk. */
function paramText(p: Parameter): fc.Arbitrary<string | undefined> {
  const text = (v: unknown) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? 'null'));
  return fc.oneof(
    { weight: 5, arbitrary: valid(p.schema).map(text) },
    { weight: 1, arbitrary: fc.constantFrom(...KNOWN) },
    { weight: 2, arbitrary: junk.map(text) },
    ...(p.in === 'query' && !p.required ? [{ weight: 2, arbitrary: fc.constant(undefined) }] : []),
  );
}

/** A body as text: valid, valid with an unknown member or a member replaced by junk, other JSON, broken JSON. */
function bodyText(s: Schema): fc.Arbitrary<string> {
  const mutated = fc.tuple(valid(s), fc.string({ minLength: 1, maxLength: 12 }), junk).map(([v, k, j]) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const o = { ...(v as Record<string, unknown>) };
    const keys = Object.keys(o);
    if (keys.length > 0 && k.length % 2 === 0) o[keys[k.length % keys.length]!] = j;
    else o[k] = j;
    return o;
  });
  return fc.oneof(
    { weight: 4, arbitrary: valid(s).map((v) => JSON.stringify(v)) },
    { weight: 3, arbitrary: mutated.map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.integer({ min: 20, max: 3000 }).map(deep) },
    // Nesting within POST /transactions' 2 MiB: what stalled the whole process ~2 s before bodies were bounded by shape.
    { weight: 1, arbitrary: fc.constant(`{"tx":${deep(900_000)}}`) },
    { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  );
}

/** Services this harness does not run: well-formed requests needing them are 503 for that reason only. */
const NOT_RUN = new Set(['ERR_STAMPING_NOT_CONFIGURED', 'ERR_NODE_UNAVAILABLE']);

describe('fuzzing every OpenAPI operation', () => {
  let h: ApiHarness;
  let ops: Operation[];
  /** The most CPU one request took, and which. */
  let longestMs = 0;
  let longestAt = '';

  beforeAll(async () => {
    h = await createApiHarness({
      settings: { rateLimit: 100_000_000 },
      hookUrls: {
        allowPrivate: false,
        resolve: async () => {
          throw Object.assign(new Error('no such name'), { code: 'ENOTFOUND' });
        },
      },
    });
    await insertMiniChain(h.t.db);
    const doc = (await h.get('/openapi.json', null)).json() as {
      paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody?: { content: Record<string, { schema: Schema }> } }>>;
    };
    ops = [];
    for (const [path, byMethod] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(byMethod)) {
        const body = op.requestBody?.content['application/json']?.schema;
        ops.push({
          method: method.toUpperCase(),
          path,
          parameters: (op.parameters ?? []).filter((p) => p.in !== 'header'),
          ...(body ? { body } : {}),
        });
      }
    }
  });
  afterAll(async () => {
    await h?.close();
  });

  it('the description lists the routes (reads, writes, hooks, subscriptions, wallets)', () => {
    const listed = new Set(ops.map((o) => `${o.method} ${o.path}`));
    for (const r of [
      'GET /v1/blocks/{hash}',
      'POST /v1/transactions',
      'POST /v1/stamps',
      'POST /v1/hooks',
      'POST /v1/subscriptions',
      'POST /v1/wallets',
      'GET /v1/addresses/{address}/history',
    ]) {
      expect(listed.has(r), r).toBe(true);
    }
    expect(ops.length).toBeGreaterThan(40);
  });

  it('every operation: no 5xx but a service not run, the error body, no stack trace, no request over 100 ms of CPU', async () => {
    for (const [i, op] of ops.entries()) {
      const request = fc.record({
        params: fc.tuple(...op.parameters.map(paramText)),
        body: op.body ? bodyText(op.body) : fc.constant(undefined),
      });
      await fc.assert(
        fc.asyncProperty(request, async ({ params, body }) => {
          let path = op.path;
          const query = new URLSearchParams();
          op.parameters.forEach((p, k) => {
            const v = params[k];
            if (p.in === 'path') path = path.replace(`{${p.name}}`, encodeURIComponent(v === undefined || v === '' ? 'x' : v));
            else if (v !== undefined) query.set(p.name, v);
          });
          const url = query.size > 0 ? `${path}?${query.toString()}` : path;
          const what = `${op.method} ${url.slice(0, 200)} ${body?.slice(0, 120) ?? ''}`;
          const cpu = process.cpuUsage();
          const r = await h.app.inject({
            method: op.method as 'GET',
            url,
            headers: { apiKey: h.key, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
            ...(body !== undefined ? { payload: body } : {}),
          });
          const used = process.cpuUsage(cpu);
          if ((used.user + used.system) / 1000 > longestMs) {
            longestMs = (used.user + used.system) / 1000;
            longestAt = what;
          }
          expect(r.body, what).not.toMatch(/\n\s+at |node_modules|\.ts:\d+|\.js:\d+/);
          if (r.statusCode >= 400) {
            const b = r.json() as Record<string, unknown>;
            expect(Object.keys(b).sort(), what).toEqual(['error_cause', 'error_code', 'error_message', 'error_type', 'retry']);
            expect(typeof b.error_code, what).toBe('string');
            expect(typeof b.error_type, what).toBe('string');
            expect(typeof b.error_message, what).toBe('string');
            expect(typeof b.retry, what).toBe('boolean');
            if (r.statusCode >= 500)
              expect(r.statusCode === 503 && NOT_RUN.has(b.error_code as string), `${what} → ${r.statusCode} ${r.body.slice(0, 300)}`).toBe(
                true,
              );
          }
        }),
        { seed: SEED + i, numRuns: RUNS, endOnFailure: true },
      );
    }
    expect(longestMs, `the request that took the most CPU: ${longestAt}`).toBeLessThan(100);
  }, 600_000);
});
