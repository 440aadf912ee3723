/**
 * The writer's joined array literals (src/db/pg-array.ts) against node-postgres's own encoding of
 * the same values as an array parameter, read back by a real server: the same arrays, element by
 * element, for every kind of value the writer sends (address keys, amounts of either sign beyond
 * 2^53, counts, none at all).
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { intArray, uuidArray } from '../../../src/db/pg-array.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('pga');
});
afterAll(async () => {
  await t?.drop();
});

/** Both encodings of `values` cast to `type`, as the server reads them (text form). */
async function both(values: readonly (string | number | bigint)[], type: 'uuid' | 'int2' | 'int4' | 'int8') {
  const literal = type === 'uuid' ? uuidArray(values as string[]) : intArray(values);
  const own = values.map((v) => (typeof v === 'bigint' ? v.toString() : v));
  const r = await sql<{ ours: string[]; pgs: string[]; same: boolean }>`
    SELECT ${literal}::${sql.raw(type)}[]::text[] AS ours, ${own}::${sql.raw(type)}[]::text[] AS pgs,
           ${literal}::${sql.raw(type)}[] = ${own}::${sql.raw(type)}[] AS same`.execute(t.db);
  return r.rows[0]!;
}

it('uuid arrays: the same keys, in order, duplicates kept', async () => {
  const keys = Array.from({ length: 5_000 }, () => randomUUID());
  keys.push(keys[0]!, keys[17]!);
  const r = await both(keys, 'uuid');
  expect(r.same).toBe(true);
  expect(r.ours).toEqual(keys);
});

it('int8 arrays: amounts of either sign, beyond 2^53, zero', async () => {
  const sats = [0n, 1n, -1n, 2_100_000_000_000_000n, -2_100_000_000_000_000n, (1n << 62n) + 12345n, -(1n << 63n), (1n << 63n) - 1n];
  for (let i = 0; i < 1_000; i++) sats.push(BigInt(Math.floor(Math.random() * 2e15)) * (i % 2 ? -1n : 1n));
  const r = await both(sats, 'int8');
  expect(r.same).toBe(true);
  expect(r.ours).toEqual(sats.map(String));
});

it('int4 and int2 arrays from numbers and decimal text', async () => {
  const counts = [0, 1, -1, 2_147_483_647, -2_147_483_648, 42];
  expect((await both(counts, 'int4')).same).toBe(true);
  expect((await both(['7', '-7', '0'], 'int2')).ours).toEqual(['7', '-7', '0']);
});

it('an empty array is an empty array', async () => {
  const r = await both([], 'uuid');
  expect(r.same).toBe(true);
  expect(r.ours).toEqual([]);
});

it('a value that is not one of its type fails as node-postgres would make it fail', async () => {
  await expect(both(['not-a-uuid'], 'uuid')).rejects.toThrow(/invalid input syntax for type uuid/);
  await expect(both([1n << 63n], 'int8')).rejects.toThrow(/out of range/);
});
