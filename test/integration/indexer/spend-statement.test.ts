/**
 * The writer's spend (indexer/writer/chain-rows.ts `spendUtxos`: one statement a part, its
 * deleted rows packed into one bytea that `takePacked` reads) on a real PostgreSQL: outputs named
 * by the recent transactions' cache and outputs looked up by txid come back as the rows held
 * them (values beyond 2^53, scripts of any length, an address key or none), a stale cache entry
 * deletes nothing and its outpoint is found by txid, an outpoint the index does not hold is
 * absent from the answer, and an answer naming no outpoint of the statement is an error.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { spendUtxos, takePacked } from '../../../indexer/writer/chain-rows.js';
import { TxidCache } from '../../../indexer/writer/txid-cache.js';
import { OutpointMap } from '../../../indexer/writer/txid-maps.js';
import type { Prevout } from '../../../indexer/writer/derive.js';
import { txNumOf } from '../../../src/db/tx-num.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createMigratedDatabase('spst');
});
afterAll(async () => {
  await t?.drop();
});

const txid = (n: number) => Buffer.alloc(32, n);

it('returns every deleted output as its row held it, whichever way it was found', async () => {
  const key = randomUUID();
  const long = Buffer.alloc(10_000, 0x51);
  const rows = [
    // (tx_num, vout, addr_key, value, script)
    { n: txNumOf(10, 0), tx: 1, vout: 0, key, value: 5n, script: Buffer.from('0014' + '11'.repeat(20), 'hex') },
    { n: txNumOf(10, 1), tx: 2, vout: 3, key: null, value: (1n << 60n) + 7n, script: long },
    { n: txNumOf(11, 0), tx: 3, vout: 1, key, value: 0n, script: Buffer.alloc(0) },
    { n: txNumOf(11, 5), tx: 4, vout: 0, key: null, value: 1n, script: Buffer.from('6a', 'hex') },
  ];
  for (const r of rows) {
    await sql`INSERT INTO txs (tx_num, txid, outs, ins) VALUES (${r.n}, ${txid(r.tx)}, ''::bytea, ''::bytea) ON CONFLICT DO NOTHING`.execute(
      t.db,
    );
    await sql`INSERT INTO utxos (txid, vout, tx_num, addr_key, value, script)
              VALUES (${txid(r.tx)}, ${r.vout}, ${r.n}, ${r.key}::uuid, ${r.value.toString()}::int8, ${r.script})`.execute(t.db);
  }
  const cache = new TxidCache(1_000);
  cache.add(txid(1), txNumOf(10, 0)); // right
  cache.add(txid(3), txNumOf(12, 0)); // stale: names another position
  const outpoints = [
    { txid: txid(1), vout: 0 },
    { txid: txid(2), vout: 3 },
    { txid: txid(3), vout: 1 },
    { txid: txid(4), vout: 0 },
    { txid: txid(9), vout: 0 }, // not in the index
    { txid: txid(2), vout: 0 }, // a txid the index holds, a vout it does not
  ];
  const found = await t.db.transaction().execute((trx) => spendUtxos(trx, outpoints, cache));
  for (const r of rows) {
    const p = found.get(txid(r.tx), r.vout)!;
    expect(p, `${r.tx}:${r.vout}`).toBeDefined();
    expect(p.txNum).toBe(r.n);
    expect(p.value).toBe(r.value);
    expect(Buffer.from(p.script)).toEqual(r.script);
    expect(p.keys).toBe(r.key ?? undefined);
  }
  expect(found.get(txid(9), 0)).toBeUndefined();
  expect(found.get(txid(2), 0)).toBeUndefined();
  expect((await sql<{ n: string }>`SELECT count(*)::text AS n FROM utxos`.execute(t.db)).rows[0]!.n).toBe('0');
  // Nothing to delete: an empty answer.
  const none = await t.db.transaction().execute((trx) => spendUtxos(trx, outpoints, cache));
  expect(none.get(txid(1), 0)).toBeUndefined();
});

it('refuses an answer that names no outpoint of the statement', () => {
  const packed = Buffer.alloc(25);
  packed.writeInt32BE(3, 0); // the third of two
  packed[20] = 0;
  packed.writeInt32BE(0, 21);
  expect(() =>
    takePacked(
      new OutpointMap<Prevout>(),
      [
        { txid: txid(1), vout: 0 },
        { txid: txid(2), vout: 0 },
      ],
      packed,
    ),
  ).toThrow(/names outpoint 3 of 2/);
});
