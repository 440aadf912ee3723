/**
 * The bulk path (COPY, indexes after load, many blocks per transaction) builds the same index as
 * the per-block path: regtest-chain-a and mainnet 0–599, in small batches so that outputs cross
 * batch boundaries, then handing over to the per-block path and undoing bulk-loaded blocks; and
 * the same with history buckets on (a small `busy`) against a per-block index at that `busy`,
 * with transaction parts off and on (the batches write parts, the finish records their txids in
 * JavaScript: the same parts and txid buckets, byte for byte, as the per-block index's SQL fold).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as btc from '@scure/btc-signer';
import { sql } from 'kysely';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { addressKey } from '../../../src/db/address-key.js';
import { silentLogger } from '../../../src/log.js';
import { applyBlock, undoBlock } from '../../../indexer/writer/apply.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { bulkActive, runBulk } from '../../../indexer/writer/bulk.js';
import { createPrefetcher } from '../../../indexer/prefetch.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, loadChainA, loadMainnet600, type FixtureBlock } from '../../support/chain-fixture.js';
import { keyOfAddress, readAddress, snapshotIndex, readHistoryPlaces } from '../../support/chain-snapshot.js';
import { foldAllHistory } from '../../support/history-rows.js';
import { foldHistory } from '../../../indexer/writer/history-build.js';
import { txRowsByTxid } from '../../../src/db/tx-reads.js';

async function perBlock(t: TestDatabase, blocks: readonly FixtureBlock[], upTo = blocks.length - 1): Promise<void> {
  for (let h = 0; h <= upTo; h++) expect((await applyBlock(t.db, decodeBlock(blocks[h]!.raw), h)).kind).toBe('applied');
}

/** A bulk sync of `t` up to `target` from `chain`, `batchTxs` transactions a batch. */
async function bulkTo(t: TestDatabase, chain: FixtureChain, target: number, batchTxs: number) {
  return runBulk(
    t.db,
    { databaseUrl: t.url, log: silentLogger(), batchTxs },
    (from) => createPrefetcher(chain, 8).feed(from, target),
    target,
  );
}

/** Folds `t`'s history (and, with parts on, its transactions) below block `toHeight`. */
async function foldTo(t: TestDatabase, toHeight: number): Promise<void> {
  await t.db.transaction().execute((trx) => foldHistory(trx, toHeight));
}

function chainOf(blocks: readonly FixtureBlock[]): FixtureChain {
  const c = new FixtureChain(blocks);
  c.setActive(blocks.map((b) => b.hash));
  return c;
}

describeFixtures('bulk sync', () => {
  const dbs: TestDatabase[] = [];
  const make = async () => {
    const t = await createMigratedDatabase('bk');
    dbs.push(t);
    return t;
  };
  let chainA: FixtureBlock[];
  let mainnet: FixtureBlock[];
  let referenceA: TestDatabase;

  beforeAll(async () => {
    const a = loadChainA();
    chainA = a.main.map((h) => a.blocks.get(h)!);
    mainnet = loadMainnet600();
    referenceA = await make();
    await perBlock(referenceA, chainA);
  });
  afterAll(async () => {
    await Promise.all(dbs.map((d) => d.drop()));
  });

  it('indexes regtest-chain-a like the per-block path, across many batches', async () => {
    const t = await make();
    const chain = chainOf(chainA);
    const r = await bulkTo(t, chain, 264, 300);
    expect(r.reason).toBe('target');
    expect(r.blocks).toBe(265);
    expect(await bulkActive(t.db)).toBe(false);
    expect(await snapshotIndex(t.db)).toEqual(await snapshotIndex(referenceA.db));
    const a = loadChainA();
    const [address, want] = Object.entries(a.expected.addresses).find(([, v]) => v.history.length > 20)!;
    expect((await readAddress(t.db, keyOfAddress(address, 'regtest'))).history).toEqual(want.history);
    const events = await t.db.selectFrom('outbox').select(['type', 'height']).orderBy('seq').execute();
    expect(events.map((e) => e.height)).toEqual(chainA.map((b) => b.height));
  });

  it('hands over to the per-block path, which can undo bulk-loaded blocks', async () => {
    const t = await make();
    const chain = chainOf(chainA);
    await bulkTo(t, chain, 200, 1000);
    for (let h = 201; h < chainA.length; h++) expect((await applyBlock(t.db, decodeBlock(chainA[h]!.raw), h)).kind).toBe('applied');
    expect(await snapshotIndex(t.db)).toEqual(await snapshotIndex(referenceA.db));
    // Undo into the bulk-loaded range (history chunks there straddle block boundaries) and redo.
    for (let h = chainA.length - 1; h >= 190; h--) expect((await undoBlock(t.db, h, chain)).kind).toBe('undone');
    expect((await readTip(t.db)).height).toBe(189);
    for (let h = 190; h < chainA.length; h++) expect((await applyBlock(t.db, decodeBlock(chainA[h]!.raw), h)).kind).toBe('applied');
    expect(await snapshotIndex(t.db)).toEqual(await snapshotIndex(referenceA.db));
  });

  it.each([
    ['off', false],
    ['on', true],
  ])(
    'with history buckets on (busy 3), transaction parts %s: the per-block index at the same busy, through the hand-over and undo into the bulk range',
    async (_, parts) => {
      const busy = async (t: TestDatabase) => {
        await sql`UPDATE history_bucket_params SET busy = 3 WHERE id = 1`.execute(t.db);
        await sql`UPDATE txid_bucket_params SET fold = ${parts} WHERE id = 1`.execute(t.db);
        return t;
      };
      /** The parts and txid buckets byte for byte, and what is left in `txs`. */
      const stored = async (db: typeof referenceA.db) => ({
        parts: (await sql<Record<string, unknown>>`SELECT * FROM tx_parts ORDER BY part`.execute(db)).rows,
        buckets: (await sql<Record<string, unknown>>`SELECT * FROM txid_buckets ORDER BY bucket`.execute(db)).rows,
        params: (await sql<Record<string, unknown>>`SELECT base, ext, split, records FROM txid_bucket_params`.execute(db)).rows,
        rows: Number((await sql<{ n: string }>`SELECT count(*)::text AS n FROM txs`.execute(db)).rows[0]!.n),
      });
      /** The indexes and constraints of the chain's transaction tables (the finish rebuilds them, the migrations made them). */
      const keys = async (db: typeof referenceA.db) => ({
        indexes: (
          await sql<{
            indexdef: string;
          }>`SELECT indexdef FROM pg_indexes WHERE tablename IN ('txs', 'tx_parts') ORDER BY indexname`.execute(db)
        ).rows,
        constraints: (
          await sql<{ conname: string; contype: string }>`
            SELECT conname, contype FROM pg_constraint WHERE conrelid IN ('txs'::regclass, 'tx_parts'::regclass) ORDER BY conname`.execute(
            db,
          )
        ).rows,
      });
      /**
       * The parts each spends key finds through the parts' GIN (a bitmap scan: sequential scans
       * off), beside those a scan of every part finds: a bulk sync fills it through its pending
       * list (indexer/writer/parts-gin.ts), the per-block path by plain inserts.
       */
      const spenders = async (db: typeof referenceA.db) => {
        const read = (scan: string) =>
          db.transaction().execute(async (trx) => {
            await sql.raw(scan).execute(trx);
            const q = sql<{ g: string; parts: string[] }>`
              SELECT k.g::text AS g, array_agg(p.part::text ORDER BY p.part) AS parts
              FROM (SELECT DISTINCT unnest(spent_tx_groups(ins)) AS g FROM tx_parts) k
              JOIN LATERAL (SELECT part FROM tx_parts WHERE spent_tx_groups(ins) @> ARRAY[k.g]) p ON true
              GROUP BY k.g ORDER BY k.g`;
            const plan = (await sql<{ 'QUERY PLAN': string }>`EXPLAIN ${q}`.execute(trx)).rows.map((r) => r['QUERY PLAN']).join('\n');
            return { plan, rows: (await q.execute(trx)).rows };
          });
        const indexed = await read('SET LOCAL enable_seqscan = off');
        const scanned = await read('SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexscan = off');
        expect(indexed.plan).toContain('Bitmap Index Scan on tx_parts_spent_groups');
        expect(scanned.plan).not.toContain('tx_parts_spent_groups');
        expect(indexed.rows).toEqual(scanned.rows);
        return indexed.rows;
      };
      const [t, ref] = [await busy(await make()), await busy(await make())];
      await perBlock(ref, chainA);
      const chain = chainOf(chainA);
      await bulkTo(t, chain, 200, 300);
      for (let h = 201; h < chainA.length; h++) expect((await applyBlock(t.db, decodeBlock(chainA[h]!.raw), h)).kind).toBe('applied');
      // (blocks applied one by one are chunk rows until an idle indexer folds them)
      await foldAllHistory(ref.db);
      await foldAllHistory(t.db);
      const want = await snapshotIndex(ref.db);
      // (the same places too: which addresses are in chunk rows, which in buckets)
      const places = async (db: typeof t.db) => {
        const p = await readHistoryPlaces(db);
        return { chunks: [...p.chunks.keys()].sort(), records: [...p.records.keys()].sort() };
      };
      const wantPlaces = await places(ref.db);
      expect(wantPlaces.records.length).toBeGreaterThan(10);
      expect(wantPlaces.chunks.length).toBeGreaterThan(0);
      expect(await snapshotIndex(t.db)).toEqual(want);
      expect(await places(t.db)).toEqual(wantPlaces);
      const wantStored = await stored(ref.db);
      expect(wantStored.parts.length > 0).toBe(parts);
      expect(wantStored.rows).toBe(parts ? 0 : chainA.reduce((n, b) => n + decodeBlock(b.raw).txs.length, 0));
      expect(await stored(t.db)).toEqual(wantStored);
      // (the finish built the parts' GIN and key beside its other parts here, after the fold below)
      const wantKeys = await keys(ref.db);
      expect(wantKeys.indexes.map((i) => i.indexdef).join('\n')).toMatch(/tx_parts_spent_groups/);
      expect(await keys(t.db)).toEqual(wantKeys);
      const wantSpenders = parts ? await spenders(ref.db) : [];
      if (parts) {
        expect(wantSpenders.length).toBeGreaterThan(10);
        expect(await spenders(t.db)).toEqual(wantSpenders);
      }
      for (let h = chainA.length - 1; h >= 190; h--) expect((await undoBlock(t.db, h, chain)).kind).toBe('undone');
      for (let h = 190; h < chainA.length; h++) expect((await applyBlock(t.db, decodeBlock(chainA[h]!.raw), h)).kind).toBe('applied');
      await foldAllHistory(t.db);
      expect(await snapshotIndex(t.db)).toEqual(want);
      // The params row counts the records in every index.
      for (const x of [ref, t]) {
        const r = await sql<{ n: string; counted: string }>`
        SELECT (SELECT coalesce(sum(length(log)), 0) / 13 FROM history_buckets)::text AS n,
               (SELECT records FROM history_bucket_params)::text AS counted`.execute(x.db);
        expect(r.rows[0]!.counted).toBe(r.rows[0]!.n);
      }
      // Bulk-loaded the whole way: the same.
      const all = await busy(await make());
      await bulkTo(all, chain, chainA.length - 1, 300);
      expect(await snapshotIndex(all.db)).toEqual(want);
      expect(await stored(all.db)).toEqual(wantStored);
      if (parts) expect(await spenders(all.db)).toEqual(wantSpenders);
      // A bulk sync onto an index applied block by block and folded in part (parts below 40, rows
      // up to 60): the rows fold before the loaded parts' txids are recorded, newest first.
      const mixed = await busy(await make());
      await perBlock(mixed, chainA, 60);
      await foldTo(mixed, 40);
      await bulkTo(mixed, chain, chainA.length - 1, 300);
      expect(await snapshotIndex(mixed.db)).toEqual(want);
      expect(await keys(mixed.db)).toEqual(wantKeys);
      if (parts) expect(await spenders(mixed.db)).toEqual(wantSpenders);
      const m = await stored(mixed.db);
      expect({ parts: m.parts, buckets: m.buckets, rows: m.rows, records: m.params[0]!.records }).toEqual({
        parts: wantStored.parts,
        buckets: wantStored.buckets,
        rows: wantStored.rows,
        records: wantStored.params[0]!.records,
      });
      if (parts) {
        // TX_PARTS switched off between two runs of one bulk sync (stopped after 120 blocks): the
        // parts the first run's batches wrote get their txids recorded all the same.
        const switched = await busy(await make());
        const stop = new AbortController();
        let fed = 0;
        const stopped = await runBulk(
          switched.db,
          { databaseUrl: switched.url, log: silentLogger(), batchTxs: 300, signal: stop.signal },
          (from) => {
            const f = createPrefetcher(chain, 8).feed(from, chainA.length - 1);
            return {
              next: async () => {
                if (++fed >= 120) stop.abort();
                return f.next();
              },
              close: () => f.close(),
            };
          },
          chainA.length - 1,
        );
        expect(stopped.reason).toBe('stopped');
        expect(await bulkActive(switched.db)).toBe(true);
        expect((await stored(switched.db)).parts.length).toBeGreaterThan(0);
        await sql`UPDATE txid_bucket_params SET fold = false WHERE id = 1`.execute(switched.db);
        await bulkTo(switched, chain, chainA.length - 1, 300);
        expect(await snapshotIndex(switched.db)).toEqual(want);
        const st = await stored(switched.db);
        expect(Number(st.params[0]!.records)).toBe(st.parts.reduce((n, p) => n + (p.txids as Buffer).length / 32, 0));
        expect(st.rows).toBeGreaterThan(0);
        // (its later transactions are `txs` rows: the GIN answers as a scan of its parts does)
        expect((await spenders(switched.db)).length).toBeGreaterThan(0);
      }
      for (const h of [chainA.length - 1, 150, 45, 30]) {
        const b = decodeBlock(chainA[h]!.raw);
        for (const tx of b.txs.slice(0, 3))
          expect(
            (await sql<{ n: string }>`SELECT count(*)::text AS n FROM ${txRowsByTxid(Buffer.from(tx.txid))} t`.execute(mixed.db)).rows[0]!
              .n,
          ).toBe('1');
      }
    },
  );

  it('indexes mainnet 0–599 (P2PK coinbases, the first spends) like the per-block path', async () => {
    const [bulk, ref] = [await make(), await make()];
    const chain = chainOf(mainnet);
    await bulkTo(bulk, chain, 599, 50);
    await perBlock(ref, mainnet);
    const snapshot = await snapshotIndex(bulk.db);
    expect(snapshot).toEqual(await snapshotIndex(ref.db));
    // Both paths wrote the script alias of every distinct P2PK script of the chain (as
    // @scure/btc-signer reads the scripts): its own key → its key's P2PKH key, keyed.
    const want = new Set<string>();
    for (const b of mainnet) {
      for (const tx of decodeBlock(b.raw).txs) {
        for (const o of tx.outputs) {
          const d = (() => {
            try {
              return btc.OutScript.decode(o.script);
            } catch {
              return null;
            }
          })();
          if (d?.type === 'pk') want.add(`${addressKey(o.script)} ${addressKey(btc.p2pkh(d.pubkey).script)} true`);
        }
      }
    }
    expect(want.size).toBeGreaterThan(500);
    expect(new Set(snapshot.aliases)).toEqual(want);
  });
});
