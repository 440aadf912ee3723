/**
 * `spent_tx_groups(ins)`, the expression of the spends GIN (0008_spends.ts), in fewer PL/pgSQL
 * statements. 0008's function runs five statements per byte of the packed input references (~40
 * per input: a tx_num varint takes 3–6 bytes), which made it about half of a block's `txs`
 * insert and most of the bulk finish's GIN build. Here an input takes six: one CASE expression
 * finds the tx_num varint's length, one the vout's, one test, one append of the tx_num computed
 * from its bytes, one step to the next input. A varint longer than 9 bytes (never written: a
 * tx_num < 2^63 and a vout < 2^32 take at most 9) sends the rest of the input to 0008's
 * byte-by-byte loop. Every byte string gets exactly 0008's result, or its error at the same
 * byte: the same shifts and ORs of the same bytes, a last tx_num without its vout still taken,
 * a truncated varint still an error (test/integration/db/spent-groups.test.ts compares the two
 * functions on random bytes and both with src/db/packed.ts's decodeIns). Same results, so the
 * index 0008 built stays valid: no REINDEX. The argument is copied once first: a value stored
 * compressed (a transaction with hundreds of inputs) would otherwise be decompressed again by
 * every get_byte.
 */
import { sql, type Kysely } from 'kysely';

/** 0008's loop over the varints from byte i (every other one a tx_num, from `txnum`). */
const BYTE_LOOP = `
    WHILE i < n LOOP
      v := 0; s := 0;
      LOOP
        b := get_byte(ins, i); i := i + 1;
        v := v | ((b & 127)::int8 << s);
        EXIT WHEN b < 128;
        s := s + 7;
      END LOOP;
      IF txnum THEN r := array_append(r, v >> 4); END IF;
      txnum := NOT txnum;
    END LOOP;`;

/** The longest varint the fast path reads (9 × 7 = 63 bits: any int8 tx_num). */
const FAST_BYTES = 9;
const upTo = (n: number) => Array.from({ length: n }, (_, j) => j);
const byteAt = (base: string, j: number) => (j === 0 ? `get_byte(ins, ${base})` : `get_byte(ins, ${base} + ${j})`);
/** The length of the varint at `base` (1 to FAST_BYTES), else `longer`. */
const varintLength = (base: string, longer: string) =>
  `CASE ${upTo(FAST_BYTES)
    .map((j) => `WHEN ${byteAt(base, j)} < 128 THEN ${j + 1}`)
    .join(' ')} ELSE ${longer} END`;
/** The value of the k-byte varint at i: 0008's `v | ((b & 127)::int8 << s)` over its bytes. */
const varintValue = `CASE k ${upTo(FAST_BYTES)
  .map(
    (last) =>
      `WHEN ${last + 1} THEN ${upTo(last + 1)
        .map((j) => `((${byteAt('i', j)} & 127)::int8 << ${7 * j})`)
        .join(' | ')}`,
  )
  .join(' ')} END`;

export const SPENT_TX_GROUPS = `
  CREATE OR REPLACE FUNCTION spent_tx_groups(ins bytea) RETURNS int8[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
  DECLARE
    r int8[] := '{}'; i int := 0; n int := length(ins); k int; j int; v int8; s int; b int; txnum bool := true;
  BEGIN
    ins := ins || ''::bytea;
    WHILE i < n LOOP
      -- k: the tx_num's length (0: longer than ${FAST_BYTES} bytes); j: the vout's (0: the input
      -- ends after its tx_num; -1: longer than ${FAST_BYTES} bytes, or the tx_num was).
      k := ${varintLength('i', '0')};
      j := CASE WHEN k = 0 THEN -1 WHEN i + k >= n THEN 0 ELSE ${varintLength('i + k', '-1')} END;
      EXIT WHEN j < 0;
      r := array_append(r, (${varintValue}) >> 4);
      i := i + k + j;
    END LOOP;
    -- From an input with a varint longer than ${FAST_BYTES} bytes on (if any), 0008's loop.${BYTE_LOOP}
    RETURN r;
  END $$;`;

/** 0008's function under `name`, as 0008 created it (`down` puts it back; the tests compare). */
export const byteByByte = (name: string) => `
  CREATE OR REPLACE FUNCTION ${name}(ins bytea) RETURNS int8[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
  DECLARE
    r int8[] := '{}'; i int := 0; n int := length(ins); v int8; s int; b int; txnum bool := true;
  BEGIN${BYTE_LOOP}
    RETURN r;
  END $$;`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql.raw(SPENT_TX_GROUPS).execute(db);
}

/** 0008's function again: same results, so the index stays valid either way. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(byteByByte('spent_tx_groups')).execute(db);
}
