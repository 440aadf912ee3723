/**
 * The bulk finish: its chain part drops the outputs later batches spent and recomputes balances;
 * its history part re-cuts each address's per-batch chunks into full chunks of CHUNK_ENTRIES
 * (entries and their order unchanged, every chunk full but an address's newest, `first_tx_num`
 * the chunk's first entry); its txs part builds the txs indexes. The parts run at once in separate
 * transactions, so a crash can land between their commits: finishing again must change nothing.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHUNK_ENTRIES } from '../../../src/db/history-entries.js';
import { beginBulk, finishBulk } from '../../../indexer/writer/bulk.js';
import { encodeHistoryChunk, historyChunkEntries, decodeEntries } from '../../../src/db/history-entries.js';
import { silentLogger } from '../../../src/log.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { recordingLogger } from '../../support/log-lines.js';

const key = (n: number) => `00000000-0000-0000-0000-${n.toString(16).padStart(12, '0')}`;

/** Ascending tx_nums spread over heights, `count` of them from `start`. */
const nums = (start: number, count: number) => Array.from({ length: count }, (_, i) => BigInt(start + i) * (1n << 20n) + BigInt(i % 7));

describe('bulk finish: history chunks', () => {
  let t: TestDatabase;
  let client: pg.Client;
  // Per address, its per-batch chunks as the load wrote them (each ≤ CHUNK_ENTRIES).
  const batches = new Map<string, bigint[][]>([
    [key(1), [nums(0, 700), nums(700, 800), nums(1500, 600), nums(2100, CHUNK_ENTRIES)]], // 3,124 entries
    [key(2), [nums(5, 1), nums(9, 3)]],
    [key(3), [nums(7, 1)]],
    [key(4), [nums(10, CHUNK_ENTRIES)]],
    [key(5), [nums(10, CHUNK_ENTRIES - 1), nums(CHUNK_ENTRIES + 10, 2)]],
  ]);

  beforeAll(async () => {
    t = await createMigratedDatabase('bf');
    client = new pg.Client({ connectionString: t.url });
    await client.connect();
    const deps = { databaseUrl: t.url, log: silentLogger(), batchTxs: 1000 };
    await beginBulk(client, deps, 0);
    // Two outputs of key 1, one of key 2; a later batch spent key 1's first.
    for (const [i, k] of [key(1), key(1), key(2)].entries()) {
      await client.query('INSERT INTO utxos (txid, vout, tx_num, value, script, addr_key) VALUES ($1, 0, $2, $3, $4, $5)', [
        Buffer.alloc(32, i + 1),
        String(i + 1),
        String(1000 * (i + 1)),
        Buffer.from([0x51]),
        k,
      ]);
    }
    await client.query('INSERT INTO bulk_spent (tx_num, vout) VALUES (1, 0)');
    for (const [k, chunks] of batches) {
      for (const c of chunks) {
        const { first_tx_num, rest } = encodeHistoryChunk(c);
        await client.query('INSERT INTO history (addr_key, first_tx_num, rest) VALUES ($1, $2, $3)', [k, first_tx_num.toString(), rest]);
      }
    }
    await finishBulk(client, deps);
  });
  afterAll(async () => {
    await client?.end();
    await t?.drop();
  });

  it('keeps every entry in order, in full chunks but the newest', async () => {
    const rows = (
      await client.query<{ addr_key: string; first_tx_num: string; rest: Buffer }>(
        'SELECT addr_key, first_tx_num::text, rest FROM history ORDER BY addr_key, first_tx_num',
      )
    ).rows;
    for (const [k, chunks] of batches) {
      const all = chunks.flat();
      const mine = rows.filter((r) => r.addr_key === k);
      expect(mine.length, k).toBe(Math.ceil(all.length / CHUNK_ENTRIES));
      const entries = mine.map((r) => decodeEntries(historyChunkEntries(BigInt(r.first_tx_num), r.rest)));
      entries.forEach((e, i) => {
        expect(BigInt(mine[i]!.first_tx_num)).toBe(e[0]);
        if (i < entries.length - 1) expect(e.length).toBe(CHUNK_ENTRIES);
      });
      expect(entries.flat()).toEqual(all);
    }
    expect(rows.length).toBe([...batches.values()].reduce((s, c) => s + Math.ceil(c.flat().length / CHUNK_ENTRIES), 0));
  });

  const state = async () => ({
    history: (await client.query('SELECT addr_key, first_tx_num::text, rest FROM history ORDER BY addr_key, first_tx_num')).rows,
    utxos: (await client.query('SELECT tx_num::text, vout, value::text, addr_key FROM utxos ORDER BY tx_num')).rows,
    balances: (await client.query('SELECT addr_key, balance::text, utxo_count FROM balances ORDER BY addr_key')).rows,
    spent: (await client.query('SELECT count(*)::int AS n FROM bulk_spent')).rows[0].n as number,
    indexes: (
      await client.query(
        `SELECT tablename, indexname FROM pg_indexes WHERE tablename IN ('txs', 'utxos', 'balances', 'history') ORDER BY 1, 2`,
      )
    ).rows,
    active: (await client.query(`SELECT value->>'active' AS a FROM sync_state WHERE key = 'bulk'`)).rows[0].a as string,
  });

  it('drops spent outputs, recomputes balances, builds every index and ends the bulk sync', async () => {
    const s = await state();
    expect(s.utxos.map((u) => u.tx_num)).toEqual(['2', '3']);
    expect(s.balances).toEqual([
      { addr_key: key(1), balance: '2000', utxo_count: 1 },
      { addr_key: key(2), balance: '3000', utxo_count: 1 },
    ]);
    expect(s.spent).toBe(0);
    expect(s.indexes.map((i) => i.indexname)).toEqual([
      'balances_pkey',
      'history_pkey',
      'txs_pkey',
      'txs_spent_groups',
      'txs_txid_key',
      'utxos_addr',
      'utxos_pkey',
    ]);
    expect(s.active).toBe('false');
  });

  it("finishing again (a crash between the parts' commits) changes nothing", async () => {
    const before = await state();
    await client.query(`UPDATE sync_state SET value = jsonb_set(value, '{active}', 'true'::jsonb) WHERE key = 'bulk'`);
    await finishBulk(client, { databaseUrl: t.url, log: silentLogger(), batchTxs: 1000 });
    expect(await state()).toEqual(before);
  });
});

describe('bulk finish: one part committed, the other not', () => {
  let t: TestDatabase;
  let client: pg.Client;
  afterAll(async () => {
    await client?.end();
    await t?.drop();
  });

  it('the next finish completes it', async () => {
    t = await createMigratedDatabase('bf1');
    client = new pg.Client({ connectionString: t.url });
    await client.connect();
    const deps = { databaseUrl: t.url, log: silentLogger(), batchTxs: 1000 };
    await beginBulk(client, deps, 0);
    await client.query(
      'INSERT INTO utxos (txid, vout, tx_num, value, script, addr_key) VALUES ($1, 0, 1, 500, $2, $3), ($4, 0, 2, 700, $2, $3)',
      [Buffer.alloc(32, 1), Buffer.from([0x51]), key(9), Buffer.alloc(32, 2)],
    );
    await client.query('INSERT INTO bulk_spent (tx_num, vout) VALUES (1, 0)');
    const chunks = [nums(0, 600), nums(600, 600)];
    for (const c of chunks) {
      const { first_tx_num, rest } = encodeHistoryChunk(c);
      await client.query('INSERT INTO history (addr_key, first_tx_num, rest) VALUES ($1, $2, $3)', [key(9), first_tx_num.toString(), rest]);
    }
    // The chain part fails (its work table is in the way); the history part commits. The log names
    // the step that failed, and the thrown error is its.
    await client.query('CREATE TABLE utxos_live (x int)');
    const { log, lines } = recordingLogger('warn');
    await expect(finishBulk(client, { ...deps, log })).rejects.toThrow(/utxos_live/);
    const failure = lines.map((l) => JSON.parse(l) as { msg: string; step?: string; err?: { message: string } });
    expect(failure.filter((l) => l.msg === 'bulk finish: a part failed')).toEqual([
      expect.objectContaining({ step: 'utxos', err: expect.objectContaining({ message: expect.stringMatching(/utxos_live/) }) }),
    ]);
    expect(failure.filter((l) => l.msg === 'bulk finish: another part failed too')).toEqual([]);
    const mid = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM history');
    expect(mid.rows[0]!.n).toBe(2); // 1,200 entries: re-cut into 1,024 + 176
    expect((await client.query(`SELECT value->>'active' AS a FROM sync_state WHERE key = 'bulk'`)).rows[0].a).toBe('true');
    expect((await client.query('SELECT count(*)::int AS n FROM bulk_spent')).rows[0].n).toBe(1);
    await client.query('DROP TABLE utxos_live');
    await finishBulk(client, deps);
    const rows = (
      await client.query<{ first_tx_num: string; rest: Buffer }>('SELECT first_tx_num::text, rest FROM history ORDER BY first_tx_num')
    ).rows;
    expect(rows.flatMap((r) => decodeEntries(historyChunkEntries(BigInt(r.first_tx_num), r.rest)))).toEqual(chunks.flat());
    expect(rows.map((r) => r.rest.length / 8 + 1)).toEqual([CHUNK_ENTRIES, 1200 - CHUNK_ENTRIES]);
    expect((await client.query('SELECT tx_num::text FROM utxos')).rows).toEqual([{ tx_num: '2' }]);
    expect((await client.query('SELECT balance::text, utxo_count FROM balances')).rows).toEqual([{ balance: '700', utxo_count: 1 }]);
    expect((await client.query(`SELECT value->>'active' AS a FROM sync_state WHERE key = 'bulk'`)).rows[0].a).toBe('false');
    expect(
      (await client.query(`SELECT count(*)::int AS n FROM pg_indexes WHERE tablename IN ('txs', 'utxos', 'balances', 'history')`)).rows[0]
        .n,
    ).toBe(7);
  });
});
