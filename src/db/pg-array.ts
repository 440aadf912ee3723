/**
 * Array parameters for the per-block writer's large arrays (a 4,000-transaction block's ~16,000
 * address keys and their amounts), in PostgreSQL's binary array format: node-postgres sends a
 * Buffer parameter as binary, which the server reads element by element without parsing text
 * (`array_recv`: ~7 ms less per statement than the same keys and amounts as text, which
 * `uuid_in` and `int8in` parse before any row is read), and node-postgres's own quoting of every
 * element of an array value (~1 µs each) is skipped too. test/integration/db/pg-array.test.ts
 * holds them to node-postgres's own encoding through a real server.
 *
 * The format (PostgreSQL's `array_send`): int32 dimensions (1), int32 flags (0: no nulls),
 * int32 element type OID, per dimension int32 length and int32 lower bound (1), then each
 * element as int32 byte length and its binary form (`uuid_send`: 16 bytes; `int8send`: 8 bytes
 * big-endian; `int4send`: 4). An empty array is 0 dimensions, no bounds.
 * @module
 */
import { writeUuidBytes } from './uuid-bytes.js';

const UUID_OID = 2950;
const INT8_OID = 20;
const INT4_OID = 23;
const BYTEA_OID = 17;

/** A binary array of `n` elements taking `bytes` with their lengths, with its header written; elements start at `HEADER`. */
function arrayOf(oid: number, n: number, bytes: number): Buffer {
  const buf = Buffer.allocUnsafe(n === 0 ? 12 : HEADER + bytes);
  buf.writeInt32BE(n === 0 ? 0 : 1, 0);
  buf.writeInt32BE(0, 4);
  buf.writeInt32BE(oid, 8);
  if (n === 0) return buf;
  buf.writeInt32BE(n, 12);
  buf.writeInt32BE(1, 16);
  return buf;
}

const HEADER = 20;

/**
 * `keys` (address keys in canonical uuid text form, as the index writes them) as a `uuid[]`
 * parameter.
 * @throws RangeError for a key that is not a canonical uuid.
 */
export function uuidArray(keys: readonly string[]): Buffer {
  const buf = arrayOf(UUID_OID, keys.length, keys.length * 20);
  let at = HEADER;
  for (const key of keys) {
    buf.writeInt32BE(16, at);
    at += 4;
    if (!writeUuidBytes(buf, at, key)) throw new RangeError(`not a uuid: ${key}`);
    at += 16;
  }
  return buf;
}

/**
 * Integers (numbers, bigints or their decimal text) as an `int8[]` parameter.
 * @throws RangeError for a value outside int8 or a fraction; SyntaxError for text that is not an integer.
 */
export function int8Array(values: readonly (number | bigint | string)[]): Buffer {
  const buf = arrayOf(INT8_OID, values.length, values.length * 12);
  let at = HEADER;
  for (const v of values) {
    buf.writeInt32BE(8, at);
    buf.writeBigInt64BE(BigInt(v), at + 4);
    at += 12;
  }
  return buf;
}

/**
 * Integers as an `int4[]` parameter.
 * @throws RangeError for a value that is not an int4.
 */
export function int4Array(values: readonly number[]): Buffer {
  const buf = arrayOf(INT4_OID, values.length, values.length * 8);
  let at = HEADER;
  for (const v of values) {
    if (!Number.isInteger(v)) throw new RangeError(`not an integer: ${v}`);
    buf.writeInt32BE(4, at);
    buf.writeInt32BE(v, at + 4);
    at += 8;
  }
  return buf;
}

/**
 * Each value's first 8 bytes, read as a big-endian signed integer, as an `int8[]` parameter: the
 * binary form of an int8 is those 8 bytes, so a txid's `txid_key` (src/db/txid-key.ts) is sent
 * without being computed here.
 * @throws RangeError for a value shorter than 8 bytes.
 */
export function int8PrefixArray(values: readonly Uint8Array[]): Buffer {
  const buf = arrayOf(INT8_OID, values.length, values.length * 12);
  let at = HEADER;
  for (const v of values) {
    if (v.length < 8) throw new RangeError(`needs 8 bytes, got ${v.length}`);
    buf.writeInt32BE(8, at);
    buf.set(v.subarray(0, 8), at + 4);
    at += 12;
  }
  return buf;
}

/** Byte strings (txids) as a `bytea[]` parameter. */
export function byteaArray(values: readonly Uint8Array[]): Buffer {
  let bytes = 0;
  for (const v of values) bytes += v.length;
  const buf = arrayOf(BYTEA_OID, values.length, values.length * 4 + bytes);
  let at = HEADER;
  for (const v of values) {
    buf.writeInt32BE(v.length, at);
    buf.set(v, at + 4);
    at += 4 + v.length;
  }
  return buf;
}
