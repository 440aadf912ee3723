/**
 * Two addresses built to share a bucket identity (the bucket's bits and the key's bytes 4..11,
 * what a record keeps): the fold (indexer/writer/history-build.ts) and the undo
 * (indexer/writer/history-rows.ts) never stop on them (docs/lean-layout.md "False matches").
 * Made-up keys (a real 83-bit collision is too dear to build), busy 2, base 2, chunk rows written
 * block by block as the writer writes them, folded one block at a time:
 * - a busy address and a bucket one of one identity: the bucket one crosses on its own count (the
 *   busy one is not a candidate: no duplicate or overlapping chunk rows), and undoing that block
 *   gives each address its entries before it;
 * - two bucket addresses of one identity in one transaction, crossing together: both get the
 *   older entry once, and after the undo each reads one entry per transaction.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { historyChunks } from '../../../src/db/history-entries.js';
import { readHistoryEntries } from '../../../src/db/history-reads.js';
import { txNum } from '../../../src/db/tx-num.js';
import { insertHistoryChunks } from '../../../indexer/writer/chain-rows.js';
import { foldHistory } from '../../../indexer/writer/history-build.js';
import { readHistoryLayout, undoHistory } from '../../../indexer/writer/history-rows.js';
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
/** Block `h`'s chunk rows, as the writer writes them, then the fold of everything up to it. */
const block = (h: number, entries: Record<string, number[]>) =>
  t.db.transaction().execute(async (trx) => {
    await insertHistoryChunks(trx, historyChunks(new Map(Object.entries(entries))));
    return foldHistory(trx, h + 1);
  });
const undo = (keys: string[], lo: number) =>
  t.db.transaction().execute(async (trx) => undoHistory(trx, await readHistoryLayout(trx), keys, lo));
const chunkKeys = async () =>
  new Set((await sql<{ k: string }>`SELECT DISTINCT addr_key::text AS k FROM history`.execute(t.db)).rows.map((r) => r.k));
const counted = async () => {
  const r = await sql<{ n: string; counted: string }>`
    SELECT (SELECT coalesce(sum(length(log)), 0) / 13 FROM history_buckets)::text AS n,
           (SELECT records FROM history_bucket_params)::text AS counted`.execute(t.db);
  expect(r.rows[0]!.counted).toBe(r.rows[0]!.n);
};
const reset = async () => {
  await sql`DELETE FROM history`.execute(t.db);
  await sql`DELETE FROM history_buckets`.execute(t.db);
  await sql`UPDATE history_bucket_params SET records = 0, folded = 0 WHERE id = 1`.execute(t.db);
};

it('a busy address and a bucket one of one identity: the bucket one crosses alone; undone, the entries before', async () => {
  const a = randomUUID();
  const b = twin(a);
  await block(1, { [a]: [n(1, 0), n(1, 1), n(1, 2)] });
  expect(await chunkKeys()).toContain(a);
  await block(2, { [a]: [n(2, 0)], [b]: [n(2, 0)] });
  expect(await chunkKeys()).toEqual(new Set([a]));
  // b's identity passes busy in this block; a, already in chunks, is not moved again.
  const f = await block(3, { [a]: [n(3, 0)], [b]: [n(3, 1), n(3, 2)] });
  expect(f.crossed).toBe(1);
  expect(await chunkKeys()).toEqual(new Set([a, b]));
  const [ea, eb] = await readHistoryEntries(t.db, [a, b]);
  expect(ea).toEqual([n(1, 0), n(1, 1), n(1, 2), n(2, 0), n(3, 0)].map(BigInt));
  expect(eb).toEqual([n(2, 0), n(3, 1), n(3, 2)].map(BigInt));
  await counted();
  await undo([a, b], n(3, 0));
  expect(await readHistoryEntries(t.db, [a, b])).toEqual([[n(1, 0), n(1, 1), n(1, 2), n(2, 0)].map(BigInt), [BigInt(n(2, 0))]]);
  expect((await readHistoryLayout(t.db)).folded).toBe(3);
  await counted();
  await reset();
});

it('two bucket addresses of one identity crossing together: the fold goes on, one entry per transaction after the undo', async () => {
  const d = randomUUID();
  const e = twin(d);
  const other = randomUUID();
  await block(5, { [d]: [n(5, 0)], [e]: [n(5, 0)], [other]: [n(5, 1)] });
  expect(await chunkKeys()).toEqual(new Set());
  const f = await block(6, { [d]: [n(6, 0)], [e]: [n(6, 1)] });
  expect(f.crossed).toBe(2);
  expect(await chunkKeys()).toEqual(new Set([d, e]));
  const [ed, ee] = await readHistoryEntries(t.db, [d, e]);
  expect(ed).toEqual([n(5, 0), n(6, 0)].map(BigInt));
  expect(ee).toEqual([n(5, 0), n(6, 1)].map(BigInt));
  await counted();
  await undo([d, e], n(6, 0));
  const [bd, be, bo] = await readHistoryEntries(t.db, [d, e, other]);
  expect(bd).toEqual([BigInt(n(5, 0))]);
  expect(be).toEqual([BigInt(n(5, 0))]);
  expect(bo).toEqual([BigInt(n(5, 1))]);
  // And the next blocks are written and folded as ever.
  await block(7, { [other]: [n(7, 0)], [d]: [n(7, 1)] });
  expect((await readHistoryEntries(t.db, [other]))[0]).toEqual([n(5, 1), n(7, 0)].map(BigInt));
  expect((await readHistoryEntries(t.db, [d]))[0]).toEqual([n(5, 0), n(7, 1)].map(BigInt));
  await counted();
});
