/**
 * `txs` by txid through the B-tree on `txid_key(txid)` (migrations/0007_txid_key.ts): the
 * helpers find exactly the asked rows, also among txids sharing their first 8 bytes, and every
 * query that looks a txid up in `txs` (API, reorged settlement, stamping) is planned on the
 * index, not on a scan of the table.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { txidIn, txidIs } from '../../../src/db/txid-key.js';
import { byteaArray, int8PrefixArray } from '../../../src/db/pg-array.js';
import { findConfirmedTx, getTxsByTxid, txKnown } from '../../../api/queries/chain.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';

const txid = (i: number, prefix?: number) => {
  const b = Buffer.alloc(32);
  b.writeUInt32BE(i, 28);
  b.writeBigUInt64BE((BigInt(prefix ?? i) * 0x9e3779b97f4a7c15n) % (1n << 64n), 0);
  return b;
};

describe('txs by txid key', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createMigratedDatabase('tk');
    await sql`INSERT INTO blocks (height, hash, prev_hash, header, time, tx_count, size, weight)
      SELECT h, decode(lpad(to_hex(h), 64, '0'), 'hex'), decode(lpad(to_hex(h - 1), 64, '0'), 'hex'), '\\x00'::bytea, 0, 1, 1, 4 FROM generate_series(0, 199) h`.execute(
      t.db,
    );
    // 20,000 transactions; 3 of them share their first 8 bytes with another.
    const rows = Array.from({ length: 20_000 }, (_, i) => ({
      tx_num: String(BigInt(i % 200) * (1n << 20n) + BigInt(i)),
      txid: i >= 19_997 ? txid(i, i - 10) : txid(i),
    }));
    await sql`INSERT INTO txs (tx_num, txid, outs, ins) SELECT n, x, '\\x'::bytea, '\\x'::bytea FROM unnest(${rows.map((r) => r.tx_num)}::int8[], ${rows.map((r) => r.txid)}::bytea[]) AS u(n, x)`.execute(
      t.db,
    );
    await sql`ANALYZE txs`.execute(t.db);
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('finds exactly the asked txids, also when another shares the key', async () => {
    for (const i of [5, 19_997, 19_998, 19_999 - 10]) {
      const r = await sql<{
        txid: Buffer;
      }>`SELECT txid FROM txs WHERE ${txidIs(sql.ref('txid'), txid(i, i >= 19_997 ? i - 10 : i))}`.execute(t.db);
      expect(r.rows.map((x) => x.txid.readUInt32BE(28))).toEqual([i]);
    }
    const ask = [txid(7), txid(19_998, 19_988), txid(19_988), txid(123_456)];
    const r = await sql<{ txid: Buffer }>`SELECT txid FROM txs WHERE ${txidIn(sql.ref('txid'), ask)} ORDER BY tx_num`.execute(t.db);
    expect(r.rows.map((x) => x.txid.readUInt32BE(28)).sort((a, b) => a - b)).toEqual([7, 19_988, 19_998]);
    expect((await getTxsByTxid(t.db, ask)).size).toBe(3);
    expect(await txKnown(t.db, txid(42))).toBe('confirmed');
    expect(await txKnown(t.db, txid(123_456))).toBeUndefined();
    expect((await findConfirmedTx(t.db, txid(9)))?.txid.equals(txid(9))).toBe(true);
  });

  it('sends the key of a txid as txid_key computes it, either sign (int8PrefixArray)', async () => {
    const txids = [
      ...Array.from({ length: 200 }, (_, i) => txid(i)),
      Buffer.alloc(32, 0xff),
      Buffer.alloc(32, 0),
      Buffer.from('80'.padEnd(64, '0'), 'hex'),
    ];
    const r = await sql<{ k: string; sent: string }>`
      SELECT txid_key(x)::text AS k, sent::text
        FROM unnest(${byteaArray(txids)}::bytea[], ${int8PrefixArray(txids)}::int8[]) WITH ORDINALITY AS u(x, sent, i) ORDER BY i`.execute(
      t.db,
    );
    expect(r.rows).toHaveLength(txids.length);
    expect(r.rows.map((x) => x.sent)).toEqual(r.rows.map((x) => x.k));
    expect(new Set(r.rows.map((x) => x.k.startsWith('-'))).size).toBe(2);
    expect(() => int8PrefixArray([Buffer.alloc(7)])).toThrow(RangeError);
  });

  it("gives 0007's key for every value (migration 0057 reads bytes instead of hex)", async () => {
    const values: (Buffer | null)[] = [null, Buffer.alloc(0), Buffer.alloc(32, 0xff), Buffer.alloc(32, 0x80), Buffer.alloc(32)];
    for (let n = 1; n <= 9; n++) values.push(Buffer.from([0x80, 0xff, 0x7f, 0x01, 0xfe, 0x00, 0x81, 0xc3, 0x55].slice(0, n)));
    for (let i = 0; i < 2000; i++) values.push(txid(i * 7919 + 13));
    const r = await sql<{ now: string | null; was: string | null }>`
      SELECT txid_key(v)::text AS now, (('x' || encode(substring(v FROM 1 FOR 8), 'hex'))::bit(64)::int8)::text AS was
        FROM unnest(${values}::bytea[]) AS u(v)`.execute(t.db);
    expect(r.rows).toHaveLength(values.length);
    expect(r.rows.filter((x) => x.now !== x.was)).toEqual([]);
    expect(r.rows[0]).toEqual({ now: null, was: null });
    expect(r.rows[2]!.now).toBe('-1');
    expect(r.rows[3]!.now).toBe((-(2n ** 63n) + 0x0080808080808080n).toString());
    // Inlined into the statement (a STRICT declaration over a CASE would make it a call per row, ~12 × the CPU).
    const plan = await sql<{ 'QUERY PLAN': string }>`EXPLAIN VERBOSE SELECT txid_key(v) FROM unnest(${values}::bytea[]) AS u(v)`.execute(
      t.db,
    );
    const output = plan.rows.map((x) => x['QUERY PLAN']).join('\n');
    expect(output).toMatch(/get_byte/);
    expect(output).not.toMatch(/txid_key\(/);
  });

  it('is planned on the index (one txid, a list, a join)', async () => {
    const plans: string[] = [];
    const explain = async (q: ReturnType<typeof sql>) => {
      await t.db.connection().execute(async (c) => {
        await sql`SET enable_seqscan = off`.execute(c);
        const r = await sql<{ 'QUERY PLAN': string }>`EXPLAIN ${q}`.execute(c);
        plans.push(r.rows.map((x) => x['QUERY PLAN']).join('\n'));
        await sql`RESET enable_seqscan`.execute(c);
      });
    };
    await explain(sql`SELECT tx_num FROM txs WHERE ${txidIs(sql.ref('txid'), txid(3))}`);
    await explain(sql`SELECT tx_num FROM txs WHERE ${txidIn(sql.ref('txid'), [txid(3), txid(4)])}`);
    await explain(
      sql`SELECT t.tx_num FROM unnest(${[txid(3), txid(4)]}::bytea[]) AS q(txid) JOIN txs t ON ${txidIs(sql.ref('t.txid'), sql.ref('q.txid'))}`,
    );
    // The API's sessions plan generically (src/db/prepared-pool.ts): the key of a parameter still reaches the index.
    await t.db.connection().execute(async (c) => {
      await sql`SET plan_cache_mode = force_generic_plan`.execute(c);
      await sql`SET enable_seqscan = off`.execute(c);
      await sql`PREPARE by_txid(bytea) AS SELECT tx_num FROM txs WHERE txid_key(txid) = txid_key($1) AND txid = $1`.execute(c);
      const r = await sql<{ 'QUERY PLAN': string }>`EXPLAIN EXECUTE by_txid(${sql.raw(`'\\x${txid(3).toString('hex')}'::bytea`)})`.execute(
        c,
      );
      plans.push(r.rows.map((x) => x['QUERY PLAN']).join('\n'));
      await sql`DEALLOCATE by_txid`.execute(c);
      await sql`RESET enable_seqscan`.execute(c);
      await sql`RESET plan_cache_mode`.execute(c);
    });
    expect(plans).toHaveLength(4);
    for (const p of plans) {
      expect(p).toMatch(/Index (Only )?Scan using txs_txid_key|Bitmap Index Scan on txs_txid_key/);
      expect(p).not.toMatch(/Seq Scan on txs/);
    }
  });
});
