/**
 * The spends index (migrations/0008_spends.ts): `spent_tx_groups(ins)` in PostgreSQL reads the
 * packed input references exactly as src/db/packed.ts's `decodeIns` does (varints of every
 * length, vouts past 127, a coinbase's empty list), and the outspends statement is planned on
 * the GIN index under the API pool's generic plans, not on a scan of `txs`.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeIns, encodeIns } from '../../../src/db/packed.js';
import { getOutspends, outspendsStatement } from '../../../src/db/queries/spends.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';

describe('spent_tx_groups', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createMigratedDatabase('sg');
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('decodes what encodeIns writes: each input\'s prevout tx_num >> 4', async () => {
    const cases = [
      [],
      [{ txNum: 0, vout: 0 }],
      [{ txNum: 127, vout: 128 }, { txNum: 128, vout: 16_383 }, { txNum: 16_384, vout: 70_000 }],
      [{ txNum: (900_000n << 20n) + 24_999n, vout: 3 }, { txNum: (2n ** 43n) - 1n, vout: 1 }, { txNum: 1n << 20n, vout: 0 }],
    ];
    for (const ins of cases) {
      const packed = encodeIns(ins);
      const r = await sql<{ g: string[] }>`SELECT spent_tx_groups(${packed})::text[] AS g`.execute(t.db);
      expect(r.rows[0]!.g, JSON.stringify(ins, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))).toEqual(decodeIns(packed).map((i) => (i.txNum >> 4n).toString()));
    }
  });

  it('the outspends statement uses the index with generic plans', async () => {
    const rows = Array.from({ length: 5_000 }, (_, i) => ({ n: String((BigInt(1 + (i >> 5)) << 20n) + BigInt(i & 31)), ins: encodeIns([{ txNum: Math.max(0, i - 7), vout: i & 1 }]) }));
    const txid = (n: string) => Buffer.from(BigInt(n).toString(16).padStart(64, '0'), 'hex');
    await sql`INSERT INTO txs (tx_num, txid, outs, ins) SELECT n, x, '\\x'::bytea, i FROM unnest(${rows.map((r) => r.n)}::int8[], ${rows.map((r) => txid(r.n))}::bytea[], ${rows.map((r) => r.ins)}::bytea[]) AS u(n, x, i)`.execute(t.db);
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
