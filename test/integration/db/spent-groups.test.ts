/**
 * The spends index (migrations/0008_spends.ts): `spent_tx_groups(ins)` in PostgreSQL reads the
 * packed input references exactly as src/db/packed.ts's `decodeIns` does (varints of every
 * length, vouts past 127, a coinbase's empty list, a value stored compressed); its faster form
 * (0022_spent_groups_fast.ts) gives 0008's result or 0008's error for any bytes at all, so the
 * index built before it stays valid; and the outspends statement is planned on the GIN index
 * under the API pool's generic plans, not on a scan of `txs`.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byteByByte } from '../../../migrations/0022_spent_groups_fast.js';
import { decodeIns, encodeIns, type PackedInInput } from '../../../src/db/packed.js';
import { getOutspends, outspendsStatement } from '../../../api/queries/spends.js';
import { seededRandom } from '../../support/chain-crash.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';

/** What decodeIns reads: each input's prevout tx_num >> 4, as text. */
const groups = (packed: Uint8Array) => decodeIns(packed).map((i) => (i.txNum >> 4n).toString());

describe('spent_tx_groups', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createMigratedDatabase('sg');
  });
  afterAll(async () => {
    await t?.drop();
  });

  it("decodes what encodeIns writes: each input's prevout tx_num >> 4", async () => {
    const cases = [
      [],
      [{ txNum: 0, vout: 0 }],
      [
        { txNum: 127, vout: 128 },
        { txNum: 128, vout: 16_383 },
        { txNum: 16_384, vout: 70_000 },
      ],
      [
        { txNum: (900_000n << 20n) + 24_999n, vout: 3 },
        { txNum: 2n ** 43n - 1n, vout: 1 },
        { txNum: 1n << 20n, vout: 0 },
      ],
    ];
    for (const ins of cases) {
      const packed = encodeIns(ins);
      const r = await sql<{ g: string[] }>`SELECT spent_tx_groups(${packed})::text[] AS g`.execute(t.db);
      expect(
        r.rows[0]!.g,
        JSON.stringify(ins, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)),
      ).toEqual(groups(packed));
    }
  });

  it('equals decodeIns on random packed inputs: tx_nums of every bit length up to 63, vouts up to 32 bits', async () => {
    const rand = seededRandom(23);
    /** A value of exactly `n` bits (0 for n = 0), `n` uniform in 0..max. */
    const bits = (max: number) => {
      const n = Math.floor(rand() * (max + 1));
      let v = 0n;
      for (let b = 0; b < n; b++) v = (v << 1n) | (b === 0 || rand() < 0.5 ? 1n : 0n);
      return v;
    };
    const count = () => (rand() < 0.9 ? Math.floor(rand() * 4) : Math.floor(rand() * 400));
    const inputs = Array.from({ length: 3_000 }, () =>
      encodeIns(Array.from({ length: count() }, (): PackedInInput => ({ txNum: bits(63), vout: Number(bits(32)) }))),
    );
    const r = await sql<{
      g: string[];
    }>`SELECT spent_tx_groups(x)::text[] AS g FROM unnest(${inputs}::bytea[]) WITH ORDINALITY AS u(x, o) ORDER BY o`.execute(t.db);
    expect(r.rows.map((row) => row.g)).toEqual(inputs.map(groups));
  });

  it('reads a value stored compressed (a transaction with 1,500 inputs)', async () => {
    const ins = encodeIns(
      Array.from({ length: 1_500 }, (_, i) => ({ txNum: (BigInt(700 + (i % 5)) << 20n) + BigInt(i % 3), vout: i % 2 })),
    );
    await sql`INSERT INTO txs (tx_num, txid, outs, ins) VALUES (7, ${Buffer.alloc(32, 7)}, '\\x'::bytea, ${ins})`.execute(t.db);
    const r = await sql<{
      c: string | null;
      g: string[];
    }>`SELECT pg_column_compression(ins) AS c, spent_tx_groups(ins)::text[] AS g FROM txs WHERE tx_num = 7`.execute(t.db);
    expect(r.rows[0]!.c).not.toBeNull();
    expect(r.rows[0]!.g).toEqual(groups(ins));
    await sql`DELETE FROM txs WHERE tx_num = 7`.execute(t.db);
  });

  it("gives 0008's result, or 0008's error, for any bytes (so the index built with 0008's function stays valid)", async () => {
    await sql.raw(byteByByte('spent_tx_groups_0008')).execute(t.db);
    await sql`CREATE FUNCTION groups_or_error(f text, x bytea) RETURNS text LANGUAGE plpgsql AS $$
      DECLARE r text;
      BEGIN
        EXECUTE format('SELECT %I($1)::text', f) INTO r USING x;
        RETURN r;
      EXCEPTION WHEN OTHERS THEN RETURN 'error: ' || SQLERRM;
      END $$`.execute(t.db);
    const hex = (s: string) => Buffer.from(s.replace(/ /g, ''), 'hex');
    const edges: [Buffer, string][] = [
      [hex(''), '{}'],
      [hex('05'), '{0}'], // a tx_num without its vout
      [hex('85 01'), '{8}'],
      [hex('85'), 'error: index 1 out of valid range, 0..0'], // truncated tx_num
      [hex('05 80'), 'error: index 2 out of valid range, 0..1'], // truncated vout
      [hex('85 80 00 01'), '{0}'], // a non-canonical varint (5 in 3 bytes)
      [hex('ff ff ff ff ff ff ff ff 7f 00'), '{576460752303423487}'], // 2^63 - 1 in 9 bytes
      [hex('80 80 80 80 80 80 80 80 80 00 01'), '{0}'], // a 10-byte tx_num: 0008's loop
      [hex('20 00 80 80 80 80 80 80 80 80 80 00 00'), '{2,0}'], // the same after a short input
      [hex('20 80 80 80 80 80 80 80 80 80 80 01 31 00'), '{2,3}'], // an 11-byte vout
      [hex('ff ff ff ff ff ff ff ff ff 01 00'), '{-1}'], // past int8: 0008's wrapping shifts
    ];
    const rand = seededRandom(2_300);
    const byte = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
    // Varints of 1–12 bytes (continuation bytes, then a last one), sometimes cut short.
    const fuzz = Array.from({ length: 4_000 }, () => {
      const out: number[] = [];
      for (let v = Math.floor(rand() * 7); v > 0; v--) {
        const len = rand() < 0.8 ? byte(1, 6) : byte(7, 12);
        for (let j = 1; j < len; j++) out.push(byte(128, 255));
        out.push(byte(0, 127));
      }
      return Buffer.from(rand() < 0.2 ? out.slice(0, Math.floor(rand() * out.length)) : out);
    });
    const all = [...edges.map(([b]) => b), ...fuzz];
    const r = await sql<{ now: string; was: string }>`
      SELECT groups_or_error('spent_tx_groups', x) AS now, groups_or_error('spent_tx_groups_0008', x) AS was
      FROM unnest(${all}::bytea[]) WITH ORDINALITY AS u(x, o) ORDER BY o`.execute(t.db);
    expect(r.rows.slice(0, edges.length).map((row) => row.now)).toEqual(edges.map(([, g]) => g));
    expect(r.rows.filter((row) => row.now !== row.was)).toEqual([]);
    // The fuzz reached errors, the fast path and 0008's loop.
    expect(r.rows.filter((row) => row.now.startsWith('error')).length).toBeGreaterThan(100);
    expect(r.rows.filter((row) => !row.now.startsWith('error')).length).toBeGreaterThan(1_000);
    const longVarint = (b: Buffer) => b.some((_, i) => i + 9 <= b.length && b.subarray(i, i + 9).every((x) => x >= 128));
    expect(fuzz.filter(longVarint).length).toBeGreaterThan(100);
  });

  it('the outspends statement uses the index with generic plans', async () => {
    const rows = Array.from({ length: 5_000 }, (_, i) => ({
      n: String((BigInt(1 + (i >> 5)) << 20n) + BigInt(i & 31)),
      ins: encodeIns([{ txNum: Math.max(0, i - 7), vout: i & 1 }]),
    }));
    const txid = (n: string) => Buffer.from(BigInt(n).toString(16).padStart(64, '0'), 'hex');
    await sql`INSERT INTO txs (tx_num, txid, outs, ins) SELECT n, x, '\\x'::bytea, i FROM unnest(${rows.map((r) => r.n)}::int8[], ${rows.map((r) => txid(r.n))}::bytea[], ${rows.map((r) => r.ins)}::bytea[]) AS u(n, x, i)`.execute(
      t.db,
    );
    await sql`ANALYZE txs`.execute(t.db);
    const plan = await t.db.connection().execute(async (c) => {
      await sql`SET plan_cache_mode = force_generic_plan`.execute(c);
      await sql`SET enable_seqscan = off`.execute(c);
      const r = await sql<{ 'QUERY PLAN': string }>`EXPLAIN ${outspendsStatement(txid(rows[100]!.n))}`.execute(c);
      return r.rows.map((x) => x['QUERY PLAN']).join('\n');
    });
    expect(plan).toMatch(/Bitmap Index Scan on txs_spent_groups/);
    // (and the statement finds nothing wrong with a transaction that has no outputs)
    expect(await getOutspends(t.db, txid(rows[3]!.n))).toEqual({ spends: [], tip: { height: -1, hash: null } });
  });
});
