/**
 * kill -9 of the indexer: a child process runs
 * the real indexer against the devnode (regtest-chain-a replayed, then new blocks with payments
 * of every type and reorgs made while it works), with transaction parts on, and is SIGKILLed at ≥ 200 random moments
 * (seeded; the seed is logged): first throughout the bulk sync of the recorded chain, then
 * during block connects and undos, and shortly after restarts while it recovers. After every kill the index sits at a block boundary; at the end it equals a
 * fresh index of the final chain (same UTXO-set hash), and the outbox's block events replay to
 * exactly that chain (none lost, none twice).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures, fixturePath } from '../../support/fixtures.js';
import { snapshotIndex, utxoSetHash } from '../../support/chain-snapshot.js';
import {
  checkBlockEvents,
  checkBoundary,
  cleanupChildren,
  crashSeed,
  killChild,
  seededRandom,
  spawnChild,
  startChild,
  type Child,
} from '../../support/chain-crash.js';
import { bulkActive } from '../../../indexer/writer/bulk.js';
import { freshBulkIndexOf, waitMempoolSynced, waitSynced } from '../../support/chain-indexer.js';
import { waitFor } from '../../support/wait.js';

const KILLS = Number(process.env.BLOCKWIRE_CRASH_KILLS ?? 200);

describeFixtures('kill -9 of the indexer at random points', () => {
  let node: Devnode;
  let t: TestDatabase;
  let ref: TestDatabase | undefined;

  beforeAll(async () => {
    node = await startDevnode({ replay: { dir: fixturePath('regtest-chain-a'), pace: 'manual' } });
    t = await createMigratedDatabase('crash');
  });
  afterAll(async () => {
    await cleanupChildren();
    await node?.stop();
    await Promise.all([t?.drop(), ref?.drop()]);
  });

  it(`never leaves a half-applied block or a lost or doubled event (${KILLS} kills)`, { timeout: 1_800_000 }, async () => {
    const rand = seededRandom(crashSeed('indexer crash test'));
    const env = {
      DATABASE_URL: t.url,
      BITCOIND_RPC_URL: node.rpcUrl,
      BITCOIND_ZMQ_URL: node.zmqUrl,
      LOG_LEVEL: 'silent',
      // (transaction parts on: the bulk finish and the idle folds move transactions, under kills too)
      TX_PARTS: '1',
      POLL_INTERVAL_MS: '100',
      // Start far behind so the bulk path runs (small batches: many checkpoints to die between).
      INDEXER_BULK_THRESHOLD: '60',
      INDEXER_BULK_NEAR_TIP: '10',
      INDEXER_BULK_BATCH_TXS: '25',
    };
    // The whole recording (its reorgs happen in the node), then coins for the devnode's wallet.
    node.replay!.step(node.replay!.position().total);
    await node.mine(101);
    /** New blocks with payments of every type, or a reorg, while the indexer works and dies. */
    const move = async () => {
      const r = rand();
      if (r < 0.15) await node.reorg(1 + Math.floor(rand() * 3), { newBlocks: 2 + Math.floor(rand() * 3), keepTxs: rand() < 0.7 });
      else if (r < 0.8) {
        for (const type of ['p2pkh', 'p2sh-p2wpkh', 'p2wpkh', 'p2tr'] as const)
          if (rand() < 0.5) await node.wallet.send(node.wallet.newAddress(type).address!, 5_000n + BigInt(Math.floor(rand() * 1e6)));
        await node.mine(1 + Math.floor(rand() * 2));
      }
    };
    const seen = { bulk: 0, follow: 0, recovering: 0 };
    const t0 = performance.now();
    const timing = { ready: 0, kill: 0, check: 0 };
    // The next victims load their modules while the last one works and dies.
    const queue: Promise<Child>[] = [spawnChild(env), spawnChild(env), spawnChild(env)];
    /** The bulk sync's mark (indexer/writer/bulk.ts): active, and the height of its last committed batch. */
    const bulkMark = async () =>
      (await t.db.selectFrom('sync_state').select('value').where('key', '=', 'bulk').executeTakeFirst())?.value as
        { active: boolean; height: number } | undefined;
    const cycle = async (moving: boolean) => {
      if (moving) await move();
      const child = await queue.shift()!;
      queue.push(spawnChild(env));
      if (!(await child.loaded)) throw new Error(`crash child died while loading:\n${child.output.join('\n')}`);
      const before = moving ? undefined : await bulkMark();
      const tg = performance.now();
      child.go();
      const ok = await child.ready;
      timing.ready += performance.now() - tg;
      if (!ok) throw new Error(`crash child exited before it was ready:\n${child.output.join('\n')}`);
      const recovering = rand() < 0.2;
      if (!moving && !recovering) {
        // In the bulk phase the kill lands in the bulk sync's work however slow the machine is
        // (with a fixed delay after "ready", a run at load 30-80 saw none of its 60 bulk-phase
        // kills inside the sync): the random delay starts once this child has begun the sync,
        // committed a batch of it, or finished it.
        let exited = false;
        void child.exited.then(() => (exited = true));
        await waitFor(
          'the child to get on with the bulk sync',
          async () => {
            if (exited) return true;
            const m = await bulkMark();
            if (before === undefined) return m?.active === true;
            return !before.active || !m?.active || m.height > before.height;
          },
          120_000,
          20,
        );
      }
      await new Promise((r) => setTimeout(r, recovering ? rand() * 30 : 30 + rand() * 300));
      const tk = performance.now();
      await killChild(child);
      const tc = performance.now();
      const b = await checkBoundary(t.db);
      timing.kill += tc - tk;
      timing.check += performance.now() - tc;
      if (recovering) seen.recovering++;
      else if (b.bulk) seen.bulk++;
      else seen.follow++;
      return b;
    };
    // Phase 1: the bulk sync (and its finish) dies again and again.
    const bulkKills = Math.round(KILLS * 0.3);
    for (let k = 0; k < bulkKills; k++) await cycle(false);
    // Let one run finish the bulk sync, then phase 2: connects and reorgs die.
    const finisher = await queue.shift()!;
    queue.push(spawnChild(env));
    await finisher.loaded;
    finisher.go();
    await waitFor('the bulk sync to finish', async () => !(await bulkActive(t.db)), 120_000);
    await waitSynced(t.db, node, 60_000);
    await killChild(finisher);
    for (let k = bulkKills; k < KILLS; k++) await cycle(true);
    for (const c of queue) await killChild(await c);
    process.stderr.write(
      `indexer crash test: ${KILLS} kills in ${Math.round(performance.now() - t0)} ms: while recovering ${seen.recovering}, in bulk sync ${seen.bulk}, following ${seen.follow}; per kill: start ${Math.round(timing.ready / KILLS)} ms, kill ${Math.round(timing.kill / KILLS)} ms, check ${Math.round(timing.check / KILLS)} ms\n`,
    );
    expect(seen.bulk + seen.follow + seen.recovering).toBe(KILLS);
    expect(seen.bulk).toBeGreaterThan(0);
    expect(seen.follow).toBeGreaterThan(0);

    // Let the last one finish, then compare with a fresh index of the node's final chain.
    const last = await startChild(env);
    expect(await last.ready).toBe(true);
    await waitSynced(t.db, node, 120_000);
    await waitMempoolSynced(t.db, node);
    await killChild(last);

    ref = await freshBulkIndexOf(node);
    expect(await utxoSetHash(t.db)).toBe(await utxoSetHash(ref.db));
    const [got, want] = await Promise.all([snapshotIndex(t.db), snapshotIndex(ref.db)]);
    expect({ ...got, mempool: [] }).toEqual(want);
    const tip = node.tip();
    await checkBlockEvents(
      t.db,
      Array.from({ length: tip.height + 1 }, (_, h) => node.blockHash(h)),
    );
  });
});
