/**
 * PostgreSQL array literals built by joining, for the per-block writer's large array parameters
 * (a 4,000-transaction block's ~16,000 address keys and their amounts). node-postgres quotes and
 * escapes every element of an array parameter when it sends the statement (~1 µs each: 10–35 ms
 * for a block's three balance arrays, while the server waits for them); uuids and decimal
 * integers need neither, so `{a,b,c}` is the same array. test/integration/db/pg-array.test.ts
 * holds these to node-postgres's own encoding through a real server.
 * @module
 */

/** `keys` (address keys in uuid text form) as a `uuid[]` literal. */
export function uuidArray(keys: readonly string[]): string {
  return `{${keys.join(',')}}`;
}

/** Integers (numbers, bigints or their decimal text) as an `int2[]`/`int4[]`/`int8[]` literal. */
export function intArray(values: readonly (number | bigint | string)[]): string {
  return `{${values.join(',')}}`;
}
