/**
 * The writer's binary array parameters (src/db/pg-array.ts) against node-postgres's own encoding
 * of the same values as an array parameter, read back by a real server: the same arrays, element
 * by element, for every kind of value the writer sends (address keys, amounts of either sign
 * beyond 2^53, counts, none at all), and values that are not of the type refused before anything
 * is sent.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { byteaArray, int4Array, int8Array, uuidArray } from '../../../src/db/pg-array.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('pga');
});
afterAll(async () => {
  await t?.drop();
});

/** Both encodings of `values` as `type`, as the server reads them (text form). */
async function both(values: readonly (string | number | bigint)[], type: 'uuid' | 'int4' | 'int8') {
  const param = type === 'uuid' ? uuidArray(values as string[]) : type === 'int8' ? int8Array(values) : int4Array(values as number[]);
  const own = values.map((v) => (typeof v === 'bigint' ? v.toString() : v));
  const r = await sql<{ ours: string[]; pgs: string[]; same: boolean; dims: string | null }>`
    SELECT ${param}::${sql.raw(type)}[]::text[] AS ours, ${own}::${sql.raw(type)}[]::text[] AS pgs,
           ${param}::${sql.raw(type)}[] = ${own}::${sql.raw(type)}[] AS same, array_dims(${param}::${sql.raw(type)}[]) AS dims`.execute(
    t.db,
  );
  return r.rows[0]!;
}

it('uuid arrays: the same keys, in order, duplicates kept, upper-case hex read alike', async () => {
  const keys: string[] = Array.from({ length: 5_000 }, () => randomUUID());
  keys.push(keys[0]!, keys[17]!, keys[3]!.toUpperCase());
  const r = await both(keys, 'uuid');
  expect(r.same).toBe(true);
  expect(r.ours).toEqual(keys.map((k) => k.toLowerCase()));
  expect(r.dims).toBe(`[1:${keys.length}]`);
});

it('int8 arrays: amounts of either sign, beyond 2^53, zero, from bigints, numbers and text', async () => {
  const sats: (bigint | number | string)[] = [
    0n,
    1n,
    -1n,
    2_100_000_000_000_000n,
    -2_100_000_000_000_000n,
    (1n << 62n) + 12345n,
    -(1n << 63n),
    (1n << 63n) - 1n,
  ];
  for (let i = 0; i < 1_000; i++) sats.push(BigInt(Math.floor(Math.random() * 2e15)) * (i % 2 ? -1n : 1n));
  sats.push(42, -7, '123456789012345678');
  const r = await both(sats, 'int8');
  expect(r.same).toBe(true);
  expect(r.ours).toEqual(sats.map(String));
});

it('int4 arrays: counts of either sign, the type bounds', async () => {
  const counts = [0, 1, -1, 2_147_483_647, -2_147_483_648, 42];
  const r = await both(counts, 'int4');
  expect(r.same).toBe(true);
  expect(r.ours).toEqual(counts.map(String));
});

it('bytea arrays: txids, other lengths, empty values and zero bytes, in order', async () => {
  const values: Buffer[] = Array.from({ length: 3_000 }, () => randomBytes(32));
  values.push(Buffer.alloc(0), Buffer.alloc(32), Buffer.from([0, 0x5c, 0x78, 0xff]), randomBytes(5_000), values[0]!);
  const r = await sql<{ ours: Buffer[]; same: boolean; dims: string | null; n: number }>`
    SELECT ${byteaArray(values)}::bytea[] AS ours, ${byteaArray(values)}::bytea[] = ${values}::bytea[] AS same,
           array_dims(${byteaArray(values)}::bytea[]) AS dims, cardinality(${byteaArray([])}::bytea[]) AS n`.execute(t.db);
  const row = r.rows[0]!;
  expect(row.same).toBe(true);
  expect(row.dims).toBe(`[1:${values.length}]`);
  expect(row.n).toBe(0);
  expect(row.ours.map((b) => Buffer.from(b).toString('hex'))).toEqual(values.map((b) => b.toString('hex')));
});

it('an empty array is an empty array', async () => {
  for (const type of ['uuid', 'int8', 'int4'] as const) {
    const r = await both([], type);
    expect(r.same).toBe(true);
    expect(r.ours).toEqual([]);
  }
});

it('a parameter of the wrong element type is refused by the server, not read as another', async () => {
  await expect(sql`SELECT ${int8Array([1n])}::int4[] AS x`.execute(t.db)).rejects.toThrow(/array element type 20 .*instead of expected 23/);
});

it('a value that is not of its type is refused before anything is sent', () => {
  for (const bad of [
    'not-a-uuid',
    '',
    '0123456789abcdef0123456789abcdef',
    'g1234567-89ab-cdef-0123-456789abcdef',
    '01234567-89ab-cdef-0123-456789abcdeX',
    '01234567+89ab-cdef-0123-456789abcdef',
  ])
    expect(() => uuidArray([randomUUID(), bad])).toThrow(RangeError);
  expect(() => int8Array([1n << 63n])).toThrow(RangeError);
  expect(() => int8Array([-(1n << 63n) - 1n])).toThrow(RangeError);
  expect(() => int8Array([1.5])).toThrow(RangeError);
  expect(() => int8Array(['12x'])).toThrow(SyntaxError);
  expect(() => int4Array([2 ** 31])).toThrow(RangeError);
  expect(() => int4Array([0.5])).toThrow(RangeError);
});
