/**
 * Two addresses built to share a bucket identity (the bucket's bits and the key's bytes 4..11,
 * what a record keeps): the per-block writer's history (indexer/writer/history-rows.ts) never
 * stops on them (docs/lean-layout.md "False matches"). Made-up keys (a real 83-bit collision is
 * too dear to build), busy 2, base 2, written through the writer's own functions block by block:
 * - a busy address and a bucket one of one identity: the bucket one crosses on its own count (the
 *   busy one is not a candidate: no duplicate or overlapping chunk rows), and undoing that block
 *   gives the logs before it byte for byte;
 * - two bucket addresses of one identity in one transaction, crossing together: both get the
 *   older entries once, and undoing that block leaves one record per transaction, readable.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { historyChunks } from '../../../src/db/history-entries.js';
import { readHistoryEntries } from '../../../src/db/history-reads.js';
import { txNum } from '../../../src/db/tx-num.js';
import { readHistoryLayout, undoHistory, writeHistory } from '../../../indexer/writer/history-rows.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createMigratedDatabase('hcoll');
  await sql`UPDATE history_bucket_params SET busy = 2, base = 2 WHERE id = 1`.execute(t.db);
});
afterAll(async () => t?.drop());

const n = (h: number, p: number) => Number(txNum(h, p));
/** A key of the same identity as `key`: only its last bytes differ. */
const twin = (key: string) => `${key.slice(0, 32)}${key.slice(32) === 'ffff' ? '0000' : 'ffff'}`;
const write = (block: Record<string, number[]>) =>
  t.db.transaction().execute(async (trx) => {
    const entries = new Map(Object.entries(block));
    await writeHistory(trx, await readHistoryLayout(trx), entries, historyChunks(entries));
  });
const undo = (keys: string[], lo: number) =>
  t.db.transaction().execute(async (trx) => undoHistory(trx, await readHistoryLayout(trx), keys, lo));
const state = async () => ({
  logs: (await sql<{ b: number; log: string }>`SELECT bucket AS b, encode(log, 'hex') AS log FROM history_buckets ORDER BY 1`.execute(t.db))
    .rows,
  chunks: (
    await sql<{ row: string }>`SELECT (addr_key, first_tx_num, encode(rest, 'hex'))::text AS row FROM history ORDER BY 1`.execute(t.db)
  ).rows.map((r) => r.row),
});
const chunkKeys = async () =>
  new Set((await sql<{ k: string }>`SELECT DISTINCT addr_key::text AS k FROM history`.execute(t.db)).rows.map((r) => r.k));

it('a busy address and a bucket one of one identity: the bucket one crosses alone; undone, the logs before', async () => {
  const a = randomUUID();
  const b = twin(a);
  await write({ [a]: [n(1, 0), n(1, 1), n(1, 2)] });
  expect(await chunkKeys()).toContain(a);
  await write({ [a]: [n(2, 0)], [b]: [n(2, 0)] });
  const before = await state();
  // b's identity passes busy in this block; a, already in chunks, is not moved again.
  await write({ [a]: [n(3, 0)], [b]: [n(3, 1), n(3, 2)] });
  expect(await chunkKeys()).toEqual(new Set([a, b]));
  const [ea, eb] = await readHistoryEntries(t.db, [a, b]);
  expect(ea).toEqual([n(1, 0), n(1, 1), n(1, 2), n(2, 0), n(3, 0)].map(BigInt));
  expect(eb).toEqual([n(2, 0), n(3, 1), n(3, 2)].map(BigInt));
  await undo([a, b], n(3, 0));
  expect(await state()).toEqual(before);
  await sql`DELETE FROM history`.execute(t.db);
  await sql`DELETE FROM history_buckets`.execute(t.db);
});

it('two bucket addresses of one identity crossing together: the writer goes on, one record per transaction after the undo', async () => {
  const d = randomUUID();
  const e = twin(d);
  const other = randomUUID();
  await write({ [d]: [n(5, 0)], [e]: [n(5, 0)], [other]: [n(5, 1)] });
  await write({ [d]: [n(6, 0)], [e]: [n(6, 1)] });
  expect(await chunkKeys()).toEqual(new Set([d, e]));
  const [ed, ee] = await readHistoryEntries(t.db, [d, e]);
  expect(ed).toEqual([n(5, 0), n(6, 0)].map(BigInt));
  expect(ee).toEqual([n(5, 0), n(6, 1)].map(BigInt));
  await undo([d, e], n(6, 0));
  expect(await chunkKeys()).toEqual(new Set());
  const [bd, be, bo] = await readHistoryEntries(t.db, [d, e, other]);
  expect(bd).toEqual([BigInt(n(5, 0))]);
  expect(be).toEqual([BigInt(n(5, 0))]);
  expect(bo).toEqual([BigInt(n(5, 1))]);
  // And the next blocks of the bucket are written as ever.
  await write({ [other]: [n(7, 0)], [d]: [n(7, 1)] });
  expect((await readHistoryEntries(t.db, [other]))[0]).toEqual([n(5, 1), n(7, 0)].map(BigInt));
});
