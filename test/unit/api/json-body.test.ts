/**
 * The shape scan of JSON bodies (api/json-body.ts) against the parsed value: for any JSON text
 * (fast-check's JSON values, in compact and spaced forms, strings full of quotes, backslashes
 * and brackets), it refuses exactly the texts deeper than the depth limit or holding more array
 * elements and object members than the item limit; a 2 MB nesting is refused in a pass.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { jsonShapeProblem } from '../../../api/json-body.js';

/** Depth (a scalar is 0) and items (elements and members, over the whole value) of a parsed value. */
function shape(v: unknown): { depth: number; items: number } {
  if (v === null || typeof v !== 'object') return { depth: 0, items: 0 };
  const children = Array.isArray(v) ? v : Object.values(v as Record<string, unknown>);
  let depth = 0;
  let items = children.length;
  for (const c of children) {
    const s = shape(c);
    depth = Math.max(depth, s.depth);
    items += s.items;
  }
  return { depth: depth + 1, items };
}

const tricky = fc.string({ unit: fc.constantFrom('"', '\\', '[', ']', '{', '}', ',', 'a', ' ', '\n') });
const value = fc.oneof(
  fc.jsonValue({ maxDepth: 6 }),
  fc.array(fc.dictionary(tricky, fc.oneof(tricky, fc.array(tricky))), { maxLength: 5 }),
);

describe('JSON body shape', () => {
  it('refuses exactly what is too deep or holds too many items', () => {
    fc.assert(
      fc.property(value, fc.boolean(), (v, spaced) => {
        const text = JSON.stringify(v, null, spaced ? 2 : undefined) ?? 'null';
        const { depth, items } = shape(JSON.parse(text));
        expect(jsonShapeProblem(text, { maxDepth: Math.max(1, depth), maxItems: Math.max(1, items) })).toBeUndefined();
        if (depth > 1) expect(jsonShapeProblem(text, { maxDepth: depth - 1, maxItems: 1e9 })).toMatch(/nests deeper than/);
        if (items > 1) expect(jsonShapeProblem(text, { maxDepth: 1e9, maxItems: items - 1 })).toMatch(/more than/);
      }),
      { seed: 26, numRuns: 500 },
    );
  });

  it('refuses a 2 MB nesting and a 2 MB flat array; passes a 2 MB string', () => {
    const n = 1_000_000;
    const limits = { maxDepth: 32, maxItems: 10_000 };
    expect(jsonShapeProblem(`{"tx": ${'['.repeat(n)}${']'.repeat(n)}}`, limits)).toBe('body nests deeper than 32 levels');
    expect(jsonShapeProblem(`[${'1,'.repeat(n - 1)}1]`, limits)).toBe('body holds more than 10000 array elements and object members');
    expect(jsonShapeProblem(JSON.stringify({ tx: 'ab'.repeat(n) }), limits)).toBeUndefined();
  });
});
