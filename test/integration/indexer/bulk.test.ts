/**
 * The bulk path (COPY, indexes after load, many blocks per transaction) builds the same index as
 * the per-block path: regtest-chain-a and mainnet 0–599, in small batches so that outputs cross
 * batch boundaries, then handing over to the per-block path and undoing bulk-loaded blocks.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as btc from '@scure/btc-signer';
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
import { keyOfAddress, readAddress, snapshotIndex } from '../../support/chain-snapshot.js';

async function perBlock(t: TestDatabase, blocks: readonly FixtureBlock[], upTo = blocks.length - 1): Promise<void> {
  for (let h = 0; h <= upTo; h++) expect((await applyBlock(t.db, decodeBlock(blocks[h]!.raw), h)).kind).toBe('applied');
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
    const r = await runBulk(
      t.db,
      { databaseUrl: t.url, log: silentLogger(), batchTxs: 300 },
      (from) => createPrefetcher(chain, 8).feed(from, 264),
      264,
    );
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
    await runBulk(
      t.db,
      { databaseUrl: t.url, log: silentLogger(), batchTxs: 1000 },
      (from) => createPrefetcher(chain, 8).feed(from, 200),
      200,
    );
    for (let h = 201; h < chainA.length; h++) expect((await applyBlock(t.db, decodeBlock(chainA[h]!.raw), h)).kind).toBe('applied');
    expect(await snapshotIndex(t.db)).toEqual(await snapshotIndex(referenceA.db));
    // Undo into the bulk-loaded range (history chunks there straddle block boundaries) and redo.
    for (let h = chainA.length - 1; h >= 190; h--) expect((await undoBlock(t.db, h, chain)).kind).toBe('undone');
    expect((await readTip(t.db)).height).toBe(189);
    for (let h = 190; h < chainA.length; h++) expect((await applyBlock(t.db, decodeBlock(chainA[h]!.raw), h)).kind).toBe('applied');
    expect(await snapshotIndex(t.db)).toEqual(await snapshotIndex(referenceA.db));
  });

  it('indexes mainnet 0–599 (P2PK coinbases, the first spends) like the per-block path', async () => {
    const [bulk, ref] = [await make(), await make()];
    const chain = chainOf(mainnet);
    await runBulk(
      bulk.db,
      { databaseUrl: bulk.url, log: silentLogger(), batchTxs: 50 },
      (from) => createPrefetcher(chain, 8).feed(from, 599),
      599,
    );
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
