/**
 * The spends key (src/db/spent-groups.ts): the GIN index's expression takes `txs.spent_group`
 * where the writer set it (a transaction spending from one group of 16) and decodes `ins` with
 * `spent_tx_groups` otherwise (migrations/0052_spent_group_column.ts).
 * - The expression gives every row the keys `spent_tx_groups(ins)` gives (0008's index): rows as
 *   the writer writes them on a real chain with its reorgs, and random rows with heights up to
 *   2^21 - 1 (the column's negative half) and positions up to 2^20 - 1 (keys that do not fit).
 * - Migration 0052 from an index with the old layout (every migration but 0052: the GIN on
 *   `spent_tx_groups(ins)`, no column), holding chain A's rows and transactions with 1,500
 *   inputs (a value stored compressed) and tx_nums up to 2^43: the index the bulk finish builds,
 *   every outspends answer unchanged; during a bulk sync the index is left to the finish.
 * - The old function the expression falls back on (0008_spends.ts, its faster form 0022) decodes
 *   what encodeIns writes, and the faster form gives 0008's result or error for any bytes.
 * - The outspends statement is planned on the GIN index under the API pool's generic plans.
 */
import * as historyBuckets from '../../../migrations/0059_history_buckets.js';
import * as txParts from '../../../migrations/0062_tx_parts.js';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byteByByte } from '../../../migrations/0022_spent_groups_fast.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import type { Database } from '../../../src/db/schema.js';
import { decodeIns, encodeIns, type PackedInInput } from '../../../src/db/packed.js';
import { groupKey, spendsKeysSql, SpentGroupKey } from '../../../src/db/spent-groups.js';
import { getOutspends, outspendsStatement } from '../../../api/queries/spends.js';
import { seededRandom } from '../../support/chain-crash.js';
import { indexChainA } from '../../support/chain-fixture.js';
import { describeFixtures } from '../../support/fixtures.js';
import { createMigratedDatabase, createTestDatabase, migrateAllBut, type TestDatabase } from '../../support/db.js';

/** What decodeIns reads: each input's prevout tx_num >> 4, as text (0008's function: every input, in order). */
const groups = (packed: Uint8Array) => decodeIns(packed).map((i) => (i.txNum >> 4n).toString());
/** The keys of a row as a sorted set of text (a GIN indexes each distinct key once). */
const keySet = (g: readonly string[]) => [...new Set(g)].sort();
/** The column as the writer fills it, from the row's own input references. */
const column = (packed: Uint8Array): number | null => {
  const k = new SpentGroupKey();
  k.reset();
  for (const i of decodeIns(packed)) k.add(Number(i.txNum));
  return k.key();
};

/** Every migration before 0052: the layout main shipped before it (0053 on rewrites txs with 0052's column). */
const migrateAsToday = (db: Kysely<Database>) => migrateAllBut(db, '0052_spent_group_column', { andLater: true });

/** Copies `table`'s rows from `from` into `to` (the columns `to` has; bytea through JSON's `\x` text). */
async function copyRows(from: Kysely<Database>, to: Kysely<Database>, table: 'blocks' | 'txs' | 'chain_tip'): Promise<void> {
  const rows = (await sql<{ j: unknown }>`SELECT coalesce(json_agg(t), '[]') AS j FROM ${sql.table(table)} t`.execute(from)).rows[0]!.j;
  await sql`DELETE FROM ${sql.table(table)}`.execute(to);
  await sql`INSERT INTO ${sql.table(table)} SELECT * FROM json_populate_recordset(null::${sql.table(table)}, ${JSON.stringify(rows)})`.execute(
    to,
  );
}

const spendsIndex = async (db: Kysely<Database>) =>
  (await sql<{ def: string }>`SELECT indexdef AS def FROM pg_indexes WHERE indexname = 'txs_spent_groups'`.execute(db)).rows[0]?.def ??
  null;

/** Every spending row: its column, its keys by the index expression and by 0008's function. */
const keyRows = async (db: Kysely<Database>) =>
  (
    await sql<{ n: string; ins: Buffer; g: number | null; expr: string[]; fn: string[] }>`
      SELECT tx_num::text AS n, ins, spent_group AS g, ${sql.raw(spendsKeysSql('t'))}::text[] AS expr, spent_tx_groups(ins)::text[] AS fn
      FROM txs t WHERE length(ins) > 0 ORDER BY tx_num`.execute(db)
  ).rows;

const allOutspends = async (db: Kysely<Database>) => {
  const txids = (await sql<{ txid: Buffer }>`SELECT txid FROM txs ORDER BY tx_num`.execute(db)).rows.map((r) => r.txid);
  return Promise.all(txids.map((t) => getOutspends(db, t)));
};

describeFixtures('spent groups: the writer, the index expression and migration 0052', () => {
  let fresh: TestDatabase;
  let old: TestDatabase;
  let oldOutspends: Awaited<ReturnType<typeof allOutspends>>;
  /** Transactions the chain does not have: 1,500 inputs (stored compressed), tx_nums up to 2^43. */
  const extra = [
    encodeIns(Array.from({ length: 1_500 }, (_, i) => ({ txNum: (BigInt(700 + (i % 5)) << 20n) + BigInt(i % 37), vout: i % 2 }))),
    encodeIns([
      { txNum: (900_000n << 20n) + 24_999n, vout: 3 },
      { txNum: 2n ** 43n - 1n, vout: 1 },
      { txNum: 1n << 20n, vout: 0 },
      { txNum: (900_000n << 20n) + 24_990n, vout: 70_000 },
    ]),
  ];

  beforeAll(async () => {
    fresh = await createMigratedDatabase('sgnew');
    await indexChainA(fresh.db);
    old = await createTestDatabase('sgold');
    await migrateAsToday(old.db);
    for (const table of ['blocks', 'txs', 'chain_tip'] as const) await copyRows(fresh.db, old.db, table);
    await sql`INSERT INTO txs (tx_num, txid, outs, ins)
      SELECT (2000000 + o)::int8 << 20, decode(lpad(to_hex(o), 64, '0'), 'hex'), '\\x'::bytea, x
      FROM unnest(${extra}::bytea[]) WITH ORDINALITY AS u(x, o)`.execute(old.db);
    expect(await spendsIndex(old.db)).toMatch(/spent_tx_groups\(ins\)/);
    // Today's statement reads the column and the transaction parts: an empty column and empty
    // parts (0059's functions and 0062's tables) for the answers of the old layout, rolled back.
    const rollback = new Error('rolled back');
    await old.db
      .transaction()
      .execute(async (trx) => {
        await sql`ALTER TABLE txs ADD COLUMN spent_group int4`.execute(trx);
        await historyBuckets.up(trx as unknown as Kysely<unknown>);
        await txParts.up(trx as unknown as Kysely<unknown>);
        oldOutspends = await allOutspends(trx);
        throw rollback;
      })
      .catch((err: unknown) => {
        if (err !== rollback) throw err;
      });
    expect(await spendsIndex(old.db)).toMatch(/spent_tx_groups\(ins\)/);
    await migrateToLatest(old.db);
  });
  afterAll(async () => {
    await fresh?.drop();
    await old?.drop();
  });

  it("writes the one group a transaction spends from, null when several; the expression's keys are the function's", async () => {
    const rows = await keyRows(fresh.db);
    expect(rows.filter((r) => r.g !== null).length).toBeGreaterThan(10);
    expect(rows.map((r) => `${r.n} ${r.g}`)).toEqual(rows.map((r) => `${r.n} ${column(r.ins)}`));
    expect(rows.map((r) => `${r.n} ${keySet(r.expr)}`)).toEqual(rows.map((r) => `${r.n} ${keySet(r.fn)}`));
    expect(rows.map((r) => `${r.n} ${keySet(r.fn)}`)).toEqual(rows.map((r) => `${r.n} ${keySet(groups(r.ins))}`));
  });

  it("gives the function's keys for random rows: heights up to 2^21 - 1, positions up to 2^20 - 1", async () => {
    const rand = seededRandom(52);
    const pick = (): bigint => {
      const height = BigInt(Math.floor(rand() * 2 ** (rand() < 0.5 ? 21 : 18)));
      const pos = BigInt(Math.floor(rand() * (rand() < 0.9 ? 2 ** 15 : 2 ** 20)));
      return (height << 20n) + pos;
    };
    const rows = Array.from({ length: 3_000 }, () => {
      const first = pick();
      // Mostly one group (several inputs of it), sometimes several groups.
      const ins = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => ({
        txNum: rand() < 0.8 ? (first & ~15n) + BigInt(Math.floor(rand() * 16)) : pick(),
        vout: Math.floor(rand() * 4),
      }));
      return encodeIns(ins);
    });
    const expected = rows.map(column);
    expect(expected.filter((g) => g !== null && g < 0).length).toBeGreaterThan(100);
    expect(expected.filter((g) => g === null).length).toBeGreaterThan(100);
    const r = await sql<{ expr: string[]; fn: string[] }>`
      SELECT ${sql.raw(spendsKeysSql('u'))}::text[] AS expr, spent_tx_groups(u.ins)::text[] AS fn
      FROM unnest(${rows}::bytea[], ${expected}::int4[]) WITH ORDINALITY AS u(ins, spent_group, o) ORDER BY o`.execute(fresh.db);
    expect(r.rows.map((x) => keySet(x.expr))).toEqual(r.rows.map((x) => keySet(x.fn)));
  });

  it('keys only groups that fit 32 bits', () => {
    const group = (height: number, pos: number) => Math.floor((height * 2 ** 20 + pos) / 16);
    expect(groupKey(group(0, 0))).toBe(0);
    expect(groupKey(group(1, 16))).toBe(2 ** 11 + 1);
    expect(groupKey(group(2 ** 20, 0))).toBe(-(2 ** 31));
    expect(groupKey(group(2 ** 21 - 1, 2 ** 15 - 1))).toBe(-1);
    expect(groupKey(group(2 ** 21, 0))).toBeNull();
    expect(groupKey(group(5, 2 ** 15))).toBeNull();
  });

  it('gives an index of the old layout the index the bulk finish builds, its rows left to the function', async () => {
    const rows = await keyRows(old.db);
    expect(rows.every((r) => r.g === null)).toBe(true);
    expect(rows.map((r) => keySet(r.expr))).toEqual(rows.map((r) => keySet(r.fn)));
    expect(rows.at(-1)!.expr.length).toBe(4);
    expect(await spendsIndex(old.db)).toBe(await spendsIndex(fresh.db));
    expect(await spendsIndex(old.db)).toContain('WHEN (spent_group IS NULL) THEN spent_tx_groups(ins)');
  });

  it('answers every outspends as before the migration, and as an index written on the new layout', async () => {
    const after = await allOutspends(old.db);
    expect(after).toEqual(oldOutspends);
    const spent = after.flatMap((o) => o?.spends ?? []).filter((s) => s !== null);
    expect(spent.length).toBeGreaterThan(10);
    const written = await allOutspends(fresh.db);
    expect(written.length).toBeGreaterThan(10);
    expect(after.slice(0, written.length)).toEqual(written);
  });

  it('leaves the index to the bulk finish during a bulk sync', async () => {
    const bulk = await createTestDatabase('sgbulk');
    try {
      await migrateAsToday(bulk.db);
      await sql`INSERT INTO sync_state (key, value) VALUES ('bulk', '{"active": true, "from": -1, "height": 0}')`.execute(bulk.db);
      // (up to 0052: 0053 refuses to run while a bulk sync is under way)
      await migrateAllBut(bulk.db, '0053_tagged_outs', { andLater: true });
      expect(await spendsIndex(bulk.db)).toBeNull();
      const col = await sql<{
        n: number;
      }>`SELECT count(*)::int AS n FROM information_schema.columns WHERE table_name = 'txs' AND column_name = 'spent_group'`.execute(
        bulk.db,
      );
      expect(col.rows[0]!.n).toBe(1);
    } finally {
      await bulk.drop();
    }
  });
});

describe('spent_tx_groups (0008, 0022), which migration 0052 reads', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('sg');
    await migrateAsToday(t.db);
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

  it("gives 0008's result, or 0008's error, for any bytes (so the index built with 0008's function stayed valid)", async () => {
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
});

describe('the outspends statement', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createMigratedDatabase('sgplan');
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('uses the index with generic plans', async () => {
    const rows = Array.from({ length: 5_000 }, (_, i) => {
      const ins = encodeIns([{ txNum: Math.max(0, i - 7), vout: i & 1 }]);
      return { n: String((BigInt(1 + (i >> 5)) << 20n) + BigInt(i & 31)), ins, g: column(ins) };
    });
    const txid = (n: string) => Buffer.from(BigInt(n).toString(16).padStart(64, '0'), 'hex');
    await sql`INSERT INTO txs (tx_num, txid, outs, ins, spent_group)
      SELECT n, x, '\\x'::bytea, i, g FROM unnest(${rows.map((r) => r.n)}::int8[], ${rows.map((r) => txid(r.n))}::bytea[], ${rows.map((r) => r.ins)}::bytea[], ${rows.map((r) => r.g)}::int4[]) AS u(n, x, i, g)`.execute(
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
