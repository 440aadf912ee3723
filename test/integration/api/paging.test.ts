/**
 * Paging over many history chunks and unspent outputs: every page size walks the whole list in
 * order with no gap or duplicate, and a new block added between pages does not shift them. The
 * same for an address whose history is in its bucket (`history_buckets`), whose cursors carry no
 * chunk place.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { createApiHarness, walkPages, type ApiHarness } from './harness.js';
import { addressToScript } from '../../../src/bitcoin/address.js';
import { addressKey } from '../../../src/db/address-key.js';
import { encodeOuts } from '../../../src/db/packed.js';
import { encodeHistoryChunk } from '../../../src/db/history-entries.js';
import { seedHistory } from '../../support/history-rows.js';
import { txNum } from '../../../src/db/tx-num.js';
import { decodeCursor, encodeCursor } from '../../../api/cursor.js';
import { createMetrics } from '../../../cli/ops/metrics.js';
import { silentLogger } from '../../../src/log.js';
import { waitFor } from '../../support/wait.js';

const C = 'bcrt1qa5pzh3yzt94etaygkd4zlxkru7kkl6ssecgx6n';
const script = addressToScript(C, 'regtest');
const key = addressKey(script);
const txidOf = (n: bigint) => createHash('sha256').update(String(n)).digest();
const display = (n: bigint) => Buffer.from(txidOf(n)).reverse().toString('hex');

const walk = async (h: ApiHarness, first: string, between?: () => Promise<void>) => (await walkPages(h, first, between)).items;
/** A `txs` row for each of `nums` (its txid `txidOf`, the outputs `outs`, no inputs), and the tip at `height`. */
const seedTxs = async (h: ApiHarness, nums: readonly bigint[], outs: Buffer, height: number) => {
  await sql`INSERT INTO txs (tx_num, txid, outs, ins) SELECT * FROM unnest(${nums.map(String)}::int8[], ${nums.map(txidOf)}::bytea[], ${nums.map(() => outs)}::bytea[], ${nums.map(() => Buffer.alloc(0))}::bytea[])`.execute(
    h.t.db,
  );
  await h.t.db
    .updateTable('chain_tip')
    .set({ height, hash: Buffer.alloc(32, 1) })
    .execute();
};

describe('paging across chunks', () => {
  let h: ApiHarness;
  const nums: bigint[] = [];
  beforeAll(async () => {
    h = await createApiHarness();
    // 2,552 transactions over 40 blocks, in chunks of 1024, 1024, 500, 3 and 1 entries.
    for (let height = 1; height <= 40; height++) for (let p = 0; p < 64 && nums.length < 2552; p++) nums.push(txNum(height, p));
    const sizes = [1024, 1024, 500, 3, 1];
    let at = 0;
    for (const size of sizes) {
      const part = nums.slice(at, at + size);
      at += size;
      await h.t.db
        .insertInto('history')
        .values({ addr_key: key, ...encodeHistoryChunk(part) })
        .execute();
    }
    await seedTxs(h, nums, encodeOuts([{ value: 1000n, script }]), 40);
    await sql`INSERT INTO utxos (txid, vout, tx_num, addr_key, value, script) SELECT t, v, n, ${key}::uuid, 1000, ${Buffer.from(script)} FROM unnest(${nums.map(txidOf)}::bytea[], ${nums.map(String)}::int8[]) AS q(t, n), generate_series(0, 1) v`.execute(
      h.t.db,
    );
    await h.t.db
      .insertInto('balances')
      .values({ addr_key: key, balance: BigInt(nums.length * 2000), utxo_count: nums.length * 2 })
      .execute();
  });
  afterAll(async () => h?.close());

  it('history: every limit walks all 2,552 entries newest first', async () => {
    const expected = [...nums].reverse().map(display);
    expect(await walk(h, `/v1/addresses/${C}/history?limit=10000`)).toEqual(expected);
    for (const limit of [7, 1000, 1024, 1025]) {
      expect(await walk(h, `/v1/addresses/${C}/history?limit=${limit}`), `limit ${limit}`).toEqual(expected);
    }
  });

  it('history cursors carry the chunk position; a wrong or stale position still gives the right page', async () => {
    const expected = [...nums].reverse().map(display);
    const first = await h.get(`/v1/addresses/${C}/history?limit=600`);
    const raw = /cursor=([^&>]+)/.exec(first.headers.link as string)![1]!;
    const cursor = decodeCursor(raw, 'h');
    // Newest 600 of 2,552: chunks of 1, 3 and 500 entries, then 96 of the second chunk (entries
    // 1024…2047): the last one is nums[1952], index 928 of the chunk starting at nums[1024].
    expect(cursor.phase === 'c' && cursor.chunk).toEqual({ first: nums[1024]!, index: 928 });
    const want = expected.slice(600, 1200);
    expect((await h.get(`/v1/addresses/${C}/history?limit=600&cursor=${raw}`)).json()).toEqual(want);
    if (cursor.phase !== 'c') throw new Error('chain cursor expected');
    for (const chunk of [
      { first: cursor.chunk!.first, index: cursor.chunk!.index + 1 },
      { first: cursor.chunk!.first, index: 99_999 },
      { first: 12345n, index: 0 },
    ]) {
      const forged = encodeCursor({ ...cursor, chunk });
      expect(
        (await h.get(`/v1/addresses/${C}/history?limit=600&cursor=${forged}`)).json(),
        JSON.stringify(chunk, (_k, v) => (typeof v === 'bigint' ? String(v) : v)),
      ).toEqual(want);
    }
  });

  it('deep pages come from the chunk the API holds only while its row is unchanged: a rewritten chunk is cut afresh', async () => {
    // An API without held chunks, on the same database, answers every page as Postgres cuts it;
    // `cached` counts where its pages came from (blockwire_api_history_pages_total).
    const plain = await createApiHarness({ settings: { historyCacheBytes: 0 } }, h.t);
    const metrics = createMetrics({ db: h.t.db, log: silentLogger(), roles: ['api'], processMetrics: false });
    const cached = await createApiHarness({ metrics }, h.t);
    const pagesBy = async () => {
      const text = await metrics.render();
      const count = (source: string) =>
        Number(new RegExp(`^blockwire_api_history_pages_total\\{source="${source}"\\} (\\d+)$`, 'm').exec(text)![1]);
      return { held: count('held'), cut: count('cut') };
    };
    try {
      const page = async (api: ApiHarness, url: string) => {
        const r = await api.get(url);
        expect(r.statusCode, url).toBe(200);
        return { body: r.json() as string[], link: r.headers.link };
      };
      /** Asks for `url` (a page inside a chunk) until it is answered from a held chunk: the chunk is read in the background. */
      const untilHeld = (url: string) =>
        waitFor(
          `${url} answered from a held chunk`,
          async () => {
            const n = (await pagesBy()).held;
            await page(cached, url);
            return (await pagesBy()).held > n;
          },
          20_000,
          10,
        );
      // Every 25-entry page of the chunk of entries 1024 … 2047, from its cursor: a page of a chunk
      // not held is cut and has the chunk read, later ones are answered from it.
      const links = (await walkPages(cached, `/v1/addresses/${C}/history?limit=25`)).links;
      const inChunk = links.filter((l) => {
        const c = decodeCursor(/cursor=([^&]+)/.exec(l)![1]!, 'h');
        return c.phase === 'c' && c.chunk?.first === nums[1024];
      });
      expect(inChunk.length).toBeGreaterThan(30);
      const index = (l: string) => {
        const c = decodeCursor(/cursor=([^&]+)/.exec(l)![1]!, 'h');
        return c.phase === 'c' ? c.chunk!.index : -1;
      };
      // (a page reaching below its chunk is cut: it needs the older chunk too)
      const heldable = inChunk.filter((l) => index(l) > 25).length;
      expect((await pagesBy()).held).toBeGreaterThan(30);
      await untilHeld(inChunk.find((l) => index(l) > 25)!);
      const walked = await pagesBy();
      for (const url of inChunk) expect(await page(cached, url), url).toEqual(await page(plain, url));
      expect((await pagesBy()).held).toBe(walked.held + heldable);
      // A reorg rewrites the chunk: the entries of height 31 (chunk indexes 896 … 959) become other
      // transactions of that height (with txs rows); the page taken is one of them.
      const url = inChunk.find((l) => index(l) >= 896 + 25 && index(l) <= 960)!;
      const before = await page(cached, url);
      const rewritten = nums.slice(1024, 2048).map((n, k) => (k >= 896 && k < 960 ? n + 1000n : n));
      await sql`INSERT INTO txs (tx_num, txid, outs, ins) SELECT n, sha256(int8send(n)), '\\x'::bytea, '\\x'::bytea FROM unnest(${rewritten.filter((n, k) => n !== nums[1024 + k]).map(String)}::int8[]) n`.execute(
        h.t.db,
      );
      const original = await sql<{
        rest: Buffer;
      }>`SELECT rest FROM history WHERE addr_key = ${key}::uuid AND first_tx_num = ${nums[1024]!}`.execute(h.t.db);
      await h.t.db
        .updateTable('history')
        .set(encodeHistoryChunk(rewritten))
        .where('addr_key', '=', key)
        .where('first_tx_num', '=', nums[1024]!)
        .execute();
      try {
        const counted = await pagesBy();
        const after = await page(cached, url);
        expect(after).toEqual(await page(plain, url));
        expect(after.body).not.toEqual(before.body);
        expect(await pagesBy()).toEqual({ held: counted.held, cut: counted.cut + 1 });
        // (cursors naming a rewritten entry no longer name the chunk's entry: cut)
        const unchanged = inChunk.filter((l) => index(l) > 25 && (index(l) < 896 || index(l) >= 960));
        await untilHeld(unchanged[0]!);
        const reread = await pagesBy();
        for (const u of inChunk) expect(await page(cached, u), u).toEqual(await page(plain, u));
        expect((await pagesBy()).held).toBe(reread.held + unchanged.length);
      } finally {
        await h.t.db
          .updateTable('history')
          .set({ rest: original.rows[0]!.rest })
          .where('addr_key', '=', key)
          .where('first_tx_num', '=', nums[1024]!)
          .execute();
      }
      expect(await page(cached, url)).toEqual(before);
    } finally {
      await plain.close();
      await cached.close();
    }
  });

  it('unspent outputs: every limit walks all 5,104 outputs, (tx, vout) descending', async () => {
    const expected = [...nums].reverse().flatMap((n) => [`${display(n)}:1`, `${display(n)}:0`]);
    for (const limit of [37, 1000, 10000]) {
      const seen = (await walk(h, `/v1/addresses/${C}/unspentoutputs?limit=${limit}`)) as { transaction_hash: string; index: number }[];
      expect(
        seen.map((u) => `${u.transaction_hash}:${u.index}`),
        `limit ${limit}`,
      ).toEqual(expected);
    }
  });

  it('a block added after the first page does not shift the following pages', async () => {
    const expected = [...nums].reverse().map(display);
    const newNum = txNum(41, 0);
    const seen = await walk(h, `/v1/addresses/${C}/history?limit=500`, async () => {
      await h.t.db
        .insertInto('txs')
        .values({ tx_num: newNum, txid: txidOf(newNum), outs: Buffer.alloc(0), ins: Buffer.alloc(0), first_seen: null })
        .execute();
      await seedHistory(h.t.db, key, [newNum]);
      await h.t.db.updateTable('chain_tip').set({ height: 41 }).execute();
    });
    expect(seen).toEqual(expected);
    expect(((await h.get(`/v1/addresses/${C}/history?limit=1`)).json() as string[])[0]).toBe(display(newNum));
  });

  it('mempool part: first seen newest first (ties by txid), paged into the chain part', async () => {
    const seen = [
      Date.parse('2026-01-01T00:00:05Z'),
      Date.parse('2026-01-01T00:00:09Z'),
      Date.parse('2026-01-01T00:00:07Z'),
      Date.parse('2026-01-01T00:00:07Z'),
      Date.parse('2026-01-01T00:00:01Z'),
    ];
    const txids = seen.map((_, i) => createHash('sha256').update(`mempool-${i}`).digest());
    for (const [i, txid] of txids.entries()) {
      await h.t.db
        .insertInto('mempool_txs')
        .values({ txid, raw: Buffer.from('00', 'hex'), first_seen: new Date(seen[i]!), fee: 1n, vsize: 1 })
        .execute();
      await h.t.db.insertInto('mempool_addresses').values({ addr_key: key, txid, received: 1n, sent: 0n }).execute();
    }
    const order = txids
      .map((txid, i) => ({ txid, at: seen[i]! }))
      .sort((a, b) => b.at - a.at || Buffer.compare(b.txid, a.txid))
      .map((x) => Buffer.from(x.txid).reverse().toString('hex'));
    const all = (await walk(h, `/v1/addresses/${C}/history?limit=2`)) as string[];
    expect(all.slice(0, 5)).toEqual(order);
    expect(all.length).toBe(5 + nums.length + 1);
    expect(((await h.get(`/v1/addresses/${C}/history?limit=3&min_conf=1`)).json() as string[]).some((x) => order.includes(x))).toBe(false);
    await h.t.db.deleteFrom('mempool_addresses').where('addr_key', '=', key).execute();
    await h.t.db.deleteFrom('mempool_txs').execute();
  });

  it('history pages requested at once (one statement for all of them) are the pages requested one by one', async () => {
    const txids = [3, 1, 2].map((i) => createHash('sha256').update(`together-${i}`).digest());
    for (const [i, txid] of txids.entries()) {
      await h.t.db
        .insertInto('mempool_txs')
        .values({
          txid,
          raw: Buffer.from('00', 'hex'),
          first_seen: new Date(Date.parse('2026-01-02T00:00:00Z') + i * 1000),
          fee: 1n,
          vsize: 1,
        })
        .execute();
      await h.t.db.insertInto('mempool_addresses').values({ addr_key: key, txid, received: 1n, sent: 0n }).execute();
    }
    try {
      // Cursors of every kind: in the mempool part, at a chunk boundary, deep in a chunk.
      const next = async (url: string) => /<([^>]+)>/.exec((await h.get(url)).headers.link as string)![1]!;
      const inMempool = await next(`/v1/addresses/${C}/history?limit=2`);
      const atBoundary = await next(`/v1/addresses/${C}/history?limit=5&min_conf=1`);
      const deep = await next(`/v1/addresses/${C}/history?limit=1700`);
      const other = 'bcrt1q6rhpng9evdsfnn833a4f4vej0asu6dk5srld6x';
      const urls = [
        `/v1/addresses/${C}/history?limit=2`,
        inMempool,
        `/v1/addresses/${C}/history?limit=7`,
        atBoundary,
        deep,
        `/v1/addresses/${C}/history?limit=3&min_conf=3`,
        `/v1/addresses/${C}/history?limit=1000&min_conf=1`,
        `/v1/addresses/${other}/history`,
      ];
      const alone = [];
      for (const url of urls) alone.push(await h.get(url));
      const together = await Promise.all(urls.map((url) => h.get(url)));
      for (const [i, url] of urls.entries()) {
        expect(together[i]!.statusCode, url).toBe(alone[i]!.statusCode);
        expect(together[i]!.body, url).toBe(alone[i]!.body);
        expect(together[i]!.headers.link, url).toBe(alone[i]!.headers.link);
      }
      expect(alone[7]!.statusCode).toBe(200);
      expect(alone[7]!.json()).toEqual([]);
      expect((alone[1]!.json() as string[])[0]).toBe(Buffer.from(txids[0]!).reverse().toString('hex'));
    } finally {
      await h.t.db.deleteFrom('mempool_addresses').where('addr_key', '=', key).execute();
      await h.t.db.deleteFrom('mempool_txs').execute();
    }
  });

  it('min_conf bounds the chain part by height', async () => {
    // tip 41: min_conf=3 keeps heights ≤ 39.
    const seen = await walk(h, `/v1/addresses/${C}/history?limit=10000&min_conf=3`);
    expect(seen).toEqual(
      [...nums]
        .filter((n) => n < txNum(40, 0))
        .reverse()
        .map(display),
    );
    const unspent = (await walk(h, `/v1/addresses/${C}/unspentoutputs?limit=1000&min_conf=3`)) as {
      transaction_hash: string;
      confirmations: number;
    }[];
    expect(unspent.length).toBe(nums.filter((n) => n < txNum(40, 0)).length * 2);
    expect(Math.min(...unspent.map((u) => u.confirmations))).toBe(3);
    expect((await h.get(`/v1/addresses/${C}/unspentoutputs?min_conf=100`)).json()).toEqual([]);
  });
});

describe('paging an address kept in its bucket', () => {
  let h: ApiHarness;
  const nums: bigint[] = [];
  beforeAll(async () => {
    h = await createApiHarness();
    // 300 transactions over 60 blocks, the address's records in its bucket among 40 other addresses'.
    for (let height = 1; height <= 60; height++) for (let p = 0; p < 5; p++) nums.push(txNum(height, p * 3));
    await sql`UPDATE history_bucket_params SET base = 3 WHERE id = 1`.execute(h.t.db);
    await seedHistory(h.t.db, key, nums, 'bucket');
    for (let i = 0; i < 40; i++) await seedHistory(h.t.db, randomUUID(), [txNum(1 + i, 1), txNum(2 + i, 2)], 'bucket');
    await seedTxs(h, nums, Buffer.alloc(0), 60);
  });
  afterAll(async () => h?.close());

  it('every limit walks all 300 entries newest first; cursors carry no chunk place, and a made-up one is ignored', async () => {
    expect(Number((await sql<{ n: string }>`SELECT count(*)::text AS n FROM history`.execute(h.t.db)).rows[0]!.n)).toBe(0);
    const expected = [...nums].reverse().map(display);
    for (const limit of [1, 7, 100, 299, 300, 1000]) {
      const { items, links } = await walkPages(h, `/v1/addresses/${C}/history?limit=${limit}`);
      expect(items, `limit ${limit}`).toEqual(expected);
      for (const link of links) {
        const cursor = decodeCursor(/cursor=([^&]+)/.exec(link)![1]!, 'h');
        expect(cursor.phase === 'c' && cursor.chunk, link).toBeUndefined();
      }
    }
    const first = await h.get(`/v1/addresses/${C}/history?limit=100`);
    const cursor = decodeCursor(/cursor=([^&>]+)/.exec(first.headers.link as string)![1]!, 'h');
    if (cursor.phase !== 'c') throw new Error('chain cursor expected');
    const forged = encodeCursor({ ...cursor, chunk: { first: nums[0]!, index: 5 } });
    expect((await h.get(`/v1/addresses/${C}/history?limit=100&cursor=${forged}`)).json()).toEqual(expected.slice(100, 200));
    expect((await h.get(`/v1/addresses/${C}/history?limit=100&min_conf=11`)).json()).toEqual(
      [...nums]
        .filter((n) => n < txNum(51, 0))
        .reverse()
        .slice(0, 100)
        .map(display),
    );
  });

  it('a block added after the first page does not shift the following pages', async () => {
    const expected = [...nums].reverse().map(display);
    const newNum = txNum(61, 0);
    const seen = await walk(h, `/v1/addresses/${C}/history?limit=40`, async () => {
      await h.t.db
        .insertInto('txs')
        .values({ tx_num: newNum, txid: txidOf(newNum), outs: Buffer.alloc(0), ins: Buffer.alloc(0), first_seen: null })
        .execute();
      await seedHistory(h.t.db, key, [newNum], 'bucket');
      await h.t.db.updateTable('chain_tip').set({ height: 61 }).execute();
    });
    expect(seen).toEqual(expected);
    expect(((await h.get(`/v1/addresses/${C}/history?limit=1`)).json() as string[])[0]).toBe(display(newNum));
  });
});
