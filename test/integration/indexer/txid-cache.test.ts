/**
 * The spend's recent transactions (indexer/writer/txid-cache.ts) on the per-block path, against a
 * real PostgreSQL on regtest-chain-a: through the node's 7 reorgs (transactions of undone blocks
 * re-mined at other positions, then spent) the index equals one built without it, and the cache
 * names each re-mined transaction's new position and none of those no block re-mined; a block
 * whose transaction fails after its rows are derived and written (before the commit) adds
 * nothing to it; an entry of another txid under the same 8-byte key (a collision) pointing at
 * another unspent output with the same vout deletes nothing of it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { decodeBlock, type DecodedBlock } from '../../../src/bitcoin/block.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { txNumOf } from '../../../src/db/tx-num.js';
import { applyBlock } from '../../../indexer/writer/apply.js';
import { TxidCache, fillFromIndex } from '../../../indexer/writer/txid-cache.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, indexChainA, loadChainA } from '../../support/chain-fixture.js';
import { Writable } from 'node:stream';
import { createLogger } from '../../../src/log.js';
import { createRunLoop } from '../../../indexer/run.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';

describeFixtures('the recent transactions on the per-block path', () => {
  const chain = loadChainA();
  const main = chain.main.map((h) => decodeBlock(chain.blocks.get(h)!.raw));
  let plain: TestDatabase;
  let cached: TestDatabase;
  let ref: TestDatabase;
  let t: TestDatabase;
  const reorged = new TxidCache(1_000_000);
  const cache = new TxidCache(1_000_000);
  /** The first main block from the middle on that spends an output of an earlier block. */
  const h = main.findIndex((b, height) => height >= main.length / 2 && b.txs.length > 1 && !b.txs[1]!.isCoinbase);

  beforeAll(async () => {
    [plain, cached, ref, t] = await Promise.all([
      createMigratedDatabase('tcp'),
      createMigratedDatabase('tcc'),
      createMigratedDatabase('tcr'),
      createMigratedDatabase('tct'),
    ]);
    await indexChainA(plain.db);
    await indexChainA(cached.db, { txids: reorged });
    for (let height = 0; height < main.length; height++) expect((await applyBlock(ref.db, main[height]!, height)).kind).toBe('applied');
    for (let height = 0; height < h; height++)
      expect((await applyBlock(t.db, main[height]!, height, { txids: cache })).kind).toBe('applied');
  }, 600_000);
  afterAll(async () => {
    await Promise.all([plain, cached, ref, t].map((d) => d?.drop()));
  });

  it('gives the index the same rows through the reorgs, re-mined transactions named at their new position', async () => {
    expect(await snapshotIndex(cached.db)).toEqual(await snapshotIndex(plain.db));
    const mined = new Map<string, number>();
    main.forEach((b, height) => b.txs.forEach((tx, pos) => mined.set(hashToHex(tx.txid), txNumOf(height, pos))));
    let moved = 0;
    let lost = 0;
    for (const b of chain.blocks.values()) {
      if (b.main) continue;
      decodeBlock(b.raw).txs.forEach((tx, pos) => {
        const now = mined.get(hashToHex(tx.txid));
        if (now === undefined) lost++;
        else if (now !== txNumOf(b.height, pos)) moved++;
        // Undone, it left; re-mined, the block that mined it again named it.
        expect(reorged.get(tx.txid), hashToHex(tx.txid)).toBe(now);
      });
    }
    // The fixture's reorgs do both (and the main chain spends outputs of moved transactions).
    expect(moved).toBeGreaterThan(0);
    expect(lost).toBeGreaterThan(0);
    expect(reorged.size).toBe(mined.size);
  });

  it('adds nothing of a block whose transaction fails after the rows were written', async () => {
    const block = main[h]!;
    const size = cache.size;
    // The block's last statement moves the tip: it fails there, after derive and every write.
    await sql`
      CREATE FUNCTION fail_tip() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'crash before commit'; END $$`.execute(t.db);
    await sql`CREATE TRIGGER fail_tip BEFORE UPDATE ON chain_tip FOR EACH ROW EXECUTE FUNCTION fail_tip()`.execute(t.db);
    await expect(applyBlock(t.db, block, h, { txids: cache })).rejects.toThrow(/crash before commit/);
    await sql`DROP TRIGGER fail_tip ON chain_tip`.execute(t.db);
    expect(cache.size).toBe(size);
    for (const tx of block.txs) expect(cache.get(tx.txid)).toBeUndefined();
    expect((await t.db.selectFrom('chain_tip').select('height').executeTakeFirstOrThrow()).height).toBe(h - 1);
  });

  it('deletes no other output for an entry of another txid under the same key', async () => {
    const block = main[h]!;
    const spent = block.txs.slice(1).flatMap((tx) => tx.inputs);
    const victim = spent.find((i) => cache.get(i.prevTxid) !== undefined)!;
    expect(victim, 'the block spends an output of a recent transaction').toBeDefined();
    // Another unspent output with the same vout, which this block does not spend.
    const spentKeys = new Set(spent.map((i) => `${hashToHex(i.prevTxid)}:${i.vout}`));
    const others = await sql<{ txid: Buffer; tx_num: string }>`
      SELECT txid, tx_num::text FROM utxos WHERE vout = ${victim.vout} AND txid <> ${Buffer.from(victim.prevTxid)} ORDER BY tx_num`.execute(
      t.db,
    );
    const other = others.rows.find((r) => !spentKeys.has(`${hashToHex(r.txid)}:${victim.vout}`))!;
    expect(other).toBeDefined();
    // A txid sharing the victim's first 8 bytes, added last: its entry now answers the victim's txid.
    const twin = new Uint8Array(victim.prevTxid);
    twin[31] = twin[31]! ^ 0xff;
    cache.add(twin, Number(other.tx_num));
    expect(cache.get(victim.prevTxid)).toBe(Number(other.tx_num));

    expect((await applyBlock(t.db, block, h, { txids: cache })).kind).toBe('applied');
    const left = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM utxos WHERE tx_num = ${other.tx_num}::int8 AND vout = ${victim.vout}`.execute(t.db);
    expect(left.rows[0]!.n).toBe(1);
    for (let height = h + 1; height < main.length; height++)
      expect((await applyBlock(t.db, main[height] as DecodedBlock, height, { txids: cache })).kind).toBe('applied');
    expect(await snapshotIndex(t.db)).toEqual(await snapshotIndex(ref.db));
  });

  it('fills from the index with its newest whole blocks, up to the limit, only when empty', async () => {
    const total = main.reduce((n, b) => n + b.txs.length, 0);
    // A limit that cuts the chain: the newest blocks that fit, whole.
    const limit = Math.floor(total / 3);
    const filled = new TxidCache(limit);
    const n = await fillFromIndex(ref.db, filled);
    let fits = 0;
    let low = main.length;
    while (low > 0 && fits + main[low - 1]!.txs.length <= limit) fits += main[--low]!.txs.length;
    expect(n).toBe(fits);
    expect(filled.size).toBe(fits);
    for (let height = 0; height < main.length; height++)
      main[height]!.txs.forEach((tx, pos) => {
        const got = filled.get(tx.txid);
        if (height >= low) expect(got, `${height}:${pos}`).toBe(txNumOf(height, pos));
        // (older transactions: absent, unless a newer one shares the first 8 bytes: none does here)
        else expect(got, `${height}:${pos}`).toBeUndefined();
      });
    // Not again once it holds entries; nothing for an empty index or a cache that is off.
    expect(await fillFromIndex(ref.db, filled)).toBe(0);
    expect(await fillFromIndex(ref.db, new TxidCache(0))).toBe(0);
    const empty = await createMigratedDatabase('tce');
    try {
      expect(await fillFromIndex(empty.db, new TxidCache(1_000))).toBe(0);
    } finally {
      await empty.drop();
    }
    // A limit below the newest block alone: nothing.
    expect(await fillFromIndex(ref.db, new TxidCache(main[main.length - 1]!.txs.length - 1))).toBe(0);
  });

  it('the run loop reads them in the background while it applies blocks, once, and the index is the same', async () => {
    const node = new FixtureChain(chain.main.map((hash) => chain.blocks.get(hash)!));
    node.setActive(chain.main);
    const half = Math.floor(main.length / 2);
    const r = await createMigratedDatabase('tcl');
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n'))
          if (l.includes('recent transactions')) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    try {
      for (let height = 0; height < half; height++) expect((await applyBlock(r.db, main[height]!, height)).kind).toBe('applied');
      const log = createLogger({ level: 'info', format: 'json', destination });
      const loop = createRunLoop({ db: r.db, source: node, log, pollIntervalMs: 20, maxReorgDepth: 100, txidCacheTxs: 1_000_000 });
      const running = loop.run();
      try {
        for (let i = 0; i < 3000 && ((await readTip(r.db)).height < main.length - 1 || lines.length === 0); i++)
          await new Promise((resolve) => setTimeout(resolve, 10));
      } finally {
        await loop.stop();
        await running.catch(() => undefined);
      }
      expect((await readTip(r.db)).height).toBe(main.length - 1);
      expect(await snapshotIndex(r.db)).toEqual(await snapshotIndex(ref.db));
      // One fill, of at least the blocks indexed before the loop started (those it applied may be in it too).
      expect(lines.map((l) => l.msg)).toEqual(['recent transactions read from the index']);
      const before = main.slice(0, half).reduce((n, b) => n + b.txs.length, 0);
      expect(Number(lines[0]!.txs)).toBeGreaterThanOrEqual(before);
      expect(Number(lines[0]!.txs)).toBeLessThanOrEqual(main.reduce((n, b) => n + b.txs.length, 0));
    } finally {
      await r.drop();
    }
  });
});
