/**
 * The prepared-statement pool of the API and the Electrum server (src/db/prepared-pool.ts): parameterized queries run as named prepared
 * statements, and its connections plan them generically (plan_cache_mode), so Postgres neither
 * parses nor plans the API's few query shapes again on every request. And the history page
 * statement (listHistoryPages), which relies on a nested loop's order under its LIMIT instead of
 * an ORDER BY, gets plans that keep that order, generic and custom, for one page and for
 * several requested together.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPreparedDb } from '../../../src/db/prepared-pool.js';
import { createHash } from 'node:crypto';
import { HistoryEntries, historyPagesQuery, listHistoryPage, listHistoryPages, readHistoryChunk } from '../../../api/queries/address.js';
import { HistoryChunkCache } from '../../../api/cache/history-chunk-cache.js';
import { listenChainChanges } from '../../../api/cache/chain-changes.js';
import { CHAIN_CHANNEL } from '../../../src/db/chain-changes.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createMigratedDatabase('apidb');
});
afterAll(async () => {
  await t?.drop();
});

it('runs parameterized queries as prepared statements on connections that use generic plans', async () => {
  const db = createPreparedDb(t.url, { max: 1 });
  try {
    await sql`SELECT height FROM chain_tip WHERE id = ${1}`.execute(db);
    await sql`SELECT height FROM chain_tip WHERE id = ${1}`.execute(db);
    const mode = await sql<{ plan_cache_mode: string }>`SHOW plan_cache_mode`.execute(db);
    expect(mode.rows[0]!.plan_cache_mode).toBe('force_generic_plan');
    const prepared = await sql<{ statement: string; generic_plans: string; custom_plans: string }>`
      SELECT statement, generic_plans::text, custom_plans::text FROM pg_prepared_statements WHERE name LIKE 'bw_%' AND statement LIKE '%FROM chain_tip WHERE id = $1%'`.execute(
      db,
    );
    expect(prepared.rows).toHaveLength(1);
    expect(Number(prepared.rows[0]!.custom_plans)).toBe(0);
    expect(Number(prepared.rows[0]!.generic_plans)).toBeGreaterThanOrEqual(1);
  } finally {
    await db.destroy();
  }
});

type PlanNode = { 'Node Type': string; 'Function Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] };

/**
 * Node types between each generate_series scan and the nearest Limit above it (scans with no
 * Limit above — the handed-over chunk's, whose aggregate orders its rows — are left out).
 */
function pathsToLimit(root: PlanNode): string[][] {
  const out: string[][] = [];
  const walk = (n: PlanNode, up: PlanNode[]) => {
    if (n['Node Type'] === 'Function Scan' && n['Function Name'] === 'generate_series') {
      const path: string[] = [];
      let i = up.length - 1;
      for (; i >= 0 && up[i]!['Node Type'] !== 'Limit'; i--) path.push(up[i]!['Node Type']);
      if (i >= 0) out.push(path);
    }
    for (const c of n.Plans ?? []) walk(c, [...up, n]);
  };
  walk(root, []);
  return out;
}

it('the history page statement keeps chunk order up to its LIMIT, with generic and custom plans', async () => {
  // One address with 300 full chunks (the million-entry shape), the newest 20 in history_recent,
  // and 20,000 with one entry each.
  const heavy = '00000000-0000-4000-8000-000000000001';
  await sql`
    INSERT INTO history (addr_key, first_tx_num, rest)
    SELECT ${heavy}::uuid, c * 1024::int8, string_agg(int8send(c * 1024::int8 + k), ''::bytea ORDER BY k)
      FROM generate_series(0, 299) c, generate_series(1, 1023) k GROUP BY c`.execute(t.db);
  await sql`
    INSERT INTO history (addr_key, first_tx_num, rest)
    SELECT md5(i::text)::uuid, 400000 + i, ''::bytea FROM generate_series(1, 20000) i`.execute(t.db);
  // The newest 20 of its chunks as a live block's rows wait, apart (indexer/writer/history-recent.ts):
  // the page merges both tables' chunks, still in order.
  await sql`WITH m AS (DELETE FROM history WHERE addr_key = ${heavy}::uuid AND first_tx_num >= 280 * 1024 RETURNING *)
    INSERT INTO history_recent SELECT * FROM m`.execute(t.db);
  await sql`ANALYZE history, history_recent`.execute(t.db);
  const apiDb = createPreparedDb(t.url, { max: 1 });
  try {
    const version = (await readHistoryChunk(apiDb, heavy, 150n * 1024n))!.version;
    const at = { first: 150n * 1024n, index: 500 };
    const variants = [
      { mempoolAfter: undefined, before: (1n << 62n) - 1n, minConf: 0, limit: 26 },
      { mempoolAfter: null, before: 150n * 1024n + 500n, at, minConf: 0, limit: 1001 },
      { mempoolAfter: null, before: 150n * 1024n + 500n, minConf: 3, limit: 26 },
      // the page from a held chunk
      {
        mempoolAfter: null,
        before: 150n * 1024n + 500n,
        at,
        minConf: 0,
        limit: 26,
        held: {
          version,
          chain: (await listHistoryPage(apiDb, heavy, { mempoolAfter: null, before: 150n * 1024n + 500n, at, minConf: 0, limit: 26 }))
            .chain,
        },
      },
    ];
    const requests = variants.map((v) => ({ ...v, addrKey: heavy }));
    for (const batch of [...requests.map((r) => [r]), requests]) {
      for (const [plans, db] of [
        ['generic', apiDb],
        ['custom', t.db],
      ] as const) {
        const q = historyPagesQuery(batch);
        const r = await sql<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>`EXPLAIN (FORMAT JSON) ${q}`.execute(db);
        // (a Result node passes its input's rows on in order: the one-time filter of a held page)
        const paths = pathsToLimit(r.rows[0]!['QUERY PLAN'][0].Plan).map((path) => path.filter((node) => node !== 'Result'));
        // (the chunks' entries through one nested loop; the bucket's records straight from their scan)
        expect(paths, `${plans} plan, ${JSON.stringify(batch, (_k, x) => (typeof x === 'bigint' ? String(x) : x))}`).toEqual([
          ['Nested Loop'],
          [],
        ]);
      }
    }
    // And the pages themselves: the newest entries below the bound, newest first (the heavy
    // address holds 0 … 307,199; min_conf 3 on an empty chain bounds everything away), alone
    // and requested together.
    const together = await listHistoryPages(apiDb, requests);
    for (const [j, v] of variants.entries()) {
      const page = await listHistoryPage(apiDb, heavy, v);
      const top = v.minConf > 1 ? 0n : v.before < 307_200n ? v.before : 307_200n;
      const expected = Array.from({ length: top > 0n ? v.limit : 0 }, (_, i) => top - 1n - BigInt(i));
      expect(page.chain.all().map((c) => c.n)).toEqual(expected);
      expect(together[j]!.chain.all()).toEqual(page.chain.all());
    }
  } finally {
    await apiDb.destroy();
  }
});

it('a page from a held chunk: used while the chunk row is the version it was read from, cut afresh once the row changed', async () => {
  const addr = '00000000-0000-4000-8000-000000000002';
  const first = 5000n;
  const entries = (base: bigint) => Array.from({ length: 1024 }, (_, k) => base + BigInt(k) * 2n);
  const bytes = (nums: bigint[]) => Buffer.concat(nums.map((n) => Buffer.from(n.toString(16).padStart(16, '0'), 'hex')));
  const txidsOf = (nums: bigint[]) =>
    Buffer.concat(
      nums.map((n) =>
        createHash('sha256')
          .update(bytes([n]))
          .digest(),
      ),
    );
  const original = entries(first);
  await sql`INSERT INTO history (addr_key, first_tx_num, rest) VALUES (${addr}::uuid, ${first}, ${bytes(original.slice(1))})`.execute(t.db);
  await sql`INSERT INTO txs (tx_num, txid, outs, ins) SELECT n, sha256(int8send(n)), '\\x'::bytea, '\\x'::bytea FROM generate_series(5000::int8, 9000::int8) n`.execute(
    t.db,
  );
  const apiDb = createPreparedDb(t.url, { max: 1 });
  try {
    const at = { first, index: 700 };
    const base = { addrKey: addr, mempoolAfter: null, before: original[700]!, at, minConf: 0, limit: 26 };
    const expected = original.slice(674, 700).reverse();
    // The chunk as the API reads it to hold: every entry with its txid.
    const chunk = (await readHistoryChunk(apiDb, addr, first))!;
    expect(chunk.entries).toEqual(bytes(original));
    expect(chunk.txids).toEqual(txidsOf(original));
    expect(await readHistoryChunk(apiDb, addr, first + 1n)).toBeUndefined();
    const version = chunk.version;
    // The version: the row's xmin and the server's start time (a restore, PITR or failover, after
    // which transaction ids can repeat, restarts the server).
    const server = await sql<{
      x: string;
      s: string;
    }>`SELECT xmin::text AS x, (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::int8::text AS s FROM history WHERE addr_key = ${addr}::uuid AND first_tx_num = ${first}`.execute(
      t.db,
    );
    expect(version).toBe(`${server.rows[0]!.x}@${server.rows[0]!.s}`);
    const [otherServer] = await listHistoryPages(apiDb, [
      { ...base, held: { version: `${server.rows[0]!.x}@1`, chain: new HistoryEntries(Buffer.alloc(32, 7), Buffer.alloc(20, 1)) } },
    ]);
    expect(otherServer!.fromHeld).toBe(false);
    // Held at that version: the page is the caller's (here made up, to show the statement added
    // nothing to it).
    const madeUp = new HistoryEntries(Buffer.alloc(32, 7), Buffer.alloc(20, 1));
    const [held, plain] = await listHistoryPages(apiDb, [{ ...base, held: { version, chain: madeUp } }, base]);
    expect(held!.chain).toBe(madeUp);
    expect(held!.fromHeld).toBe(true);
    expect(plain!.fromHeld).toBe(false);
    expect(plain!.chain.all().map((e) => e.n)).toEqual(expected);
    // What the cache makes of the chunk is the page Postgres cuts.
    const cache = new HistoryChunkCache({ maxBytes: 1 << 20 });
    cache.put(addr, first, chunk);
    const fromCache = cache.page(addr, first, at.index, base.before, base.limit)!;
    expect(fromCache.version).toBe(version);
    expect(fromCache.chain.all()).toEqual(plain!.chain.all());
    expect(fromCache.chain.txidsHex(26)).toEqual(plain!.chain.txidsHex(26));
    // A held version the row no longer has (a block appended, a reorg rewrote it): cut afresh.
    const rewritten = entries(first).map((n, k) => (k >= 680 ? n + 1n : n));
    await sql`UPDATE history SET rest = ${bytes(rewritten.slice(1))} WHERE addr_key = ${addr}::uuid AND first_tx_num = ${first}`.execute(
      t.db,
    );
    const [fresh] = await listHistoryPages(apiDb, [{ ...base, held: fromCache }]);
    expect(fresh!.fromHeld).toBe(false);
    expect(fresh!.chain.all().map((e) => e.n)).toEqual(rewritten.slice(674, 700).reverse());
    const reread = (await readHistoryChunk(apiDb, addr, first))!;
    expect(reread.version).not.toBe(version);
    expect(reread.entries).toEqual(bytes(rewritten));
    expect(reread.txids).toEqual(txidsOf(rewritten));
    // A version of another chunk, or none at all, is no version of this one.
    const [other] = await listHistoryPages(apiDb, [{ ...base, held: { version: '1', chain: madeUp } }]);
    expect(other!.chain.all().map((e) => e.n)).toEqual(rewritten.slice(674, 700).reverse());
  } finally {
    await apiDb.destroy();
  }
});

it('answers a held page without a statement only while the chain is unchanged since a statement found its chunk', async () => {
  const changes = await listenChainChanges({ databaseUrl: t.url });
  try {
    const addr = '00000000-0000-4000-8000-0000000000bb';
    const entries = Buffer.alloc(1024 * 8);
    for (let k = 0; k < 1024; k++) entries.writeBigInt64BE(1000n + BigInt(k), k * 8);
    const cache = new HistoryChunkCache({ maxBytes: 1 << 20, changes });
    cache.put(addr, 1000n, { version: 'v1', entries, txids: Buffer.alloc(1024 * 32, 1) });
    const tip = { height: 7, hash: Buffer.alloc(32, 9) };
    const held = () => cache.page(addr, 1000n, 500, 1500n, 26)!;
    const g = cache.chainGeneration!;
    expect(g).toBeTypeOf('number');
    // No statement has found the chunk yet: the statement must run.
    expect(await cache.unchanged(held(), g)).toBeUndefined();
    // A statement sent after g found another version: still not answered without one.
    cache.answered(g, tip, { addrKey: addr, first: 1000n, version: 'v0' });
    expect(await cache.unchanged(held(), g)).toBeUndefined();
    // It found this version: answered with the tip of that page, while nothing changed.
    cache.answered(g, tip, { addrKey: addr, first: 1000n, version: 'v1' });
    expect(await cache.unchanged(held(), g)).toEqual(tip);
    // A chain change committed (any notification on the chain channel): the statement runs again.
    await sql`SELECT pg_notify(${CHAIN_CHANNEL}, '')`.execute(t.db);
    expect(await cache.unchanged(held(), g)).toBeUndefined();
    const g2 = cache.chainGeneration!;
    expect(g2).not.toBe(g);
    expect(await cache.unchanged(held(), g2)).toBeUndefined();
    // Without chain notifications nothing is ever answered without a statement.
    const plain = new HistoryChunkCache({ maxBytes: 1 << 20 });
    plain.put(addr, 1000n, { version: 'v1', entries, txids: Buffer.alloc(1024 * 32, 1) });
    expect(plain.chainGeneration).toBeUndefined();
    plain.answered(g2, tip, { addrKey: addr, first: 1000n, version: 'v1' });
    expect(await plain.unchanged(plain.page(addr, 1000n, 500, 1500n, 26)!, g2)).toBeUndefined();
  } finally {
    await changes.close();
  }
});
