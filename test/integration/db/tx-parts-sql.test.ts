/**
 * The SQL reading of a transaction part (src/db/tx-parts.ts `SQL_PARTS`) equals its JavaScript
 * reading (`decodePartTx`) slot by slot, on parts of every size from 1 to 64 and on parts whose
 * ends are 4 bytes wide, and answers null past a part's transactions.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { decodePartTx, encodePart, PART_TXS, SQL_PARTS, type PartColumns } from '../../../src/db/tx-parts.js';

describe('transaction parts read in SQL', () => {
  let t: TestDatabase;
  const parts = new Map<number, PartColumns>();

  beforeAll(async () => {
    t = await createTestDatabase('txparts');
    await sql`CREATE TABLE parts (part int8 PRIMARY KEY, txids bytea NOT NULL, ends bytea NOT NULL, outs bytea NOT NULL, ins bytea NOT NULL)`.execute(
      t.db,
    );
    let id = 0;
    const add = (txs: { txid: Buffer; outs: Buffer; ins: Buffer }[]) => parts.set(id++, encodePart(txs));
    for (let n = 1; n <= PART_TXS; n++)
      add(
        Array.from({ length: n }, (_, i) => ({
          txid: randomBytes(32),
          outs: randomBytes(1 + ((n * 7 + i * 13) % 50)),
          ins: i % 9 === 0 ? Buffer.alloc(0) : randomBytes(3 + ((n + i) % 20)),
        })),
      );
    // ends 4 bytes wide: one transaction of 80 KB of outputs, and a large ins too
    add([
      { txid: randomBytes(32), outs: randomBytes(20), ins: Buffer.alloc(0) },
      { txid: randomBytes(32), outs: randomBytes(80_000), ins: randomBytes(70_000) },
      { txid: randomBytes(32), outs: randomBytes(33), ins: randomBytes(12) },
    ]);
    // an end past 2^24 (the fourth byte of a 4-byte end)
    add([
      { txid: randomBytes(32), outs: randomBytes(2 ** 24 + 3), ins: randomBytes(5) },
      { txid: randomBytes(32), outs: randomBytes(9), ins: randomBytes(7) },
    ]);
    for (const [part, p] of parts) await sql`INSERT INTO parts VALUES (${part}, ${p.txids}, ${p.ends}, ${p.outs}, ${p.ins})`.execute(t.db);
  });

  afterAll(async () => {
    await t?.drop();
  });

  it('gives every slot of every part as decodePartTx does, and null past its transactions', async () => {
    const r = await sql<{ part: string; s: number; txid: Buffer | null; outs: Buffer | null; ins: Buffer | null }>`
      SELECT p.part::text AS part, g.s, ${sql.raw(SQL_PARTS.txidAt('p', 'g.s'))} AS txid, ${sql.raw(SQL_PARTS.outsAt('p', 'g.s'))} AS outs,
             ${sql.raw(SQL_PARTS.insAt('p', 'g.s'))} AS ins
        FROM parts p CROSS JOIN generate_series(0, ${PART_TXS}) AS g(s) ORDER BY p.part, g.s`.execute(t.db);
    expect(r.rows.length).toBe(parts.size * (PART_TXS + 1));
    let read = 0;
    for (const row of r.rows) {
      const want = decodePartTx(parts.get(Number(row.part))!, row.s);
      if (!want) {
        expect([row.txid, row.outs, row.ins]).toEqual([null, null, null]);
        continue;
      }
      read++;
      expect(row.txid!.equals(Buffer.from(want.txid))).toBe(true);
      expect(row.outs!.equals(Buffer.from(want.outs))).toBe(true);
      expect(row.ins!.equals(Buffer.from(want.ins))).toBe(true);
    }
    // every transaction was read: 1 + 2 + … + 64, and the wide parts' 3 and 2
    expect(read).toBe((PART_TXS * (PART_TXS + 1)) / 2 + 5);
  });
});
