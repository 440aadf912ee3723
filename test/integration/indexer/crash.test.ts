/**
 * kill -9 of the indexer (RELIABILITY.md case 11, feature_dbcrash style): a child process runs
 * the real indexer against the devnode replaying regtest-chain-a step by step (its reorgs
 * included) and is SIGKILLed at ≥ 200 random moments (seeded; the seed is logged): during the
 * bulk sync and its finish, during block connects and undos, and shortly after restarts while
 * it recovers. After every kill the index sits at a block boundary; at the end it equals a
 * fresh index of the final chain (same UTXO-set hash), and the outbox's block events replay to
 * exactly that chain (none lost, none twice).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { startDevnode, type Devnode } from '../../../src/devnode/index.js';
import { applyBlock } from '../../../indexer/apply.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures, fixturePath } from '../../support/fixtures.js';
import { loadChainA } from '../../support/chain-fixture.js';
import { snapshotIndex, utxoSetHash } from '../../support/chain-snapshot.js';
import { checkBlockEvents, checkBoundary, crashSeed, killChild, seededRandom, spawnChild, startChild, type Child } from '../../support/chain-crash.js';
import { waitFor, waitMempoolSynced, waitSynced } from '../../support/chain-indexer.js';

const KILLS = Number(process.env.BLOCKWIRE_CRASH_KILLS ?? 200);

describeFixtures('kill -9 of the indexer at random points', () => {
  let node: Devnode;
  let t: TestDatabase;
  let ref: TestDatabase;

  beforeAll(async () => {
    node = await startDevnode({ replay: { dir: fixturePath('regtest-chain-a'), pace: 'manual' } });
    [t, ref] = await Promise.all([createMigratedDatabase('crash'), createMigratedDatabase('crashref')]);
  });
  afterAll(async () => {
    await node?.stop();
    await Promise.all([t?.drop(), ref?.drop()]);
  });

  it(`never leaves a half-applied block or a lost or doubled event (${KILLS} kills)`, { timeout: 900_000 }, async () => {
    const rand = seededRandom(crashSeed('indexer crash test'));
    const env = {
      DATABASE_URL: t.url,
      BITCOIND_RPC_URL: node.rpcUrl,
      BITCOIND_ZMQ_URL: node.zmqUrl,
      LOG_LEVEL: 'silent',
      POLL_INTERVAL_MS: '100',
      // Start far behind so the bulk path runs (small batches: many checkpoints to die between).
      INDEXER_BULK_THRESHOLD: '60',
      INDEXER_BULK_NEAR_TIP: '10',
      INDEXER_BULK_BATCH_TXS: '120',
    };
    const total = node.replay!.position().total;
    node.replay!.step(140);
    const seen = { bulk: 0, follow: 0, recovering: 0 };
    const t0 = performance.now();
    const timing = { ready: 0, kill: 0, check: 0 };
    // The next victims load their modules while the last one works and dies.
    const queue: Promise<Child>[] = [spawnChild(env), spawnChild(env), spawnChild(env)];
    for (let kill = 0; kill < KILLS; kill++) {
      const left = total - node.replay!.position().applied;
      // Keep the node ahead: reorgs and new blocks arrive while the indexer works and dies.
      if (left > 0 && rand() < 0.6) node.replay!.step(Math.min(left, 1 + Math.floor(rand() * 4)));
      const child = await queue.shift()!;
      queue.push(spawnChild(env));
      if (!(await child.loaded)) throw new Error(`crash child died while loading:\n${child.output.join('\n')}`);
      const tg = performance.now();
      child.go();
      const ok = await child.ready;
      timing.ready += performance.now() - tg;
      if (!ok) throw new Error(`crash child exited before it was ready:\n${child.output.join('\n')}`);
      const recovering = rand() < 0.25;
      await new Promise((r) => setTimeout(r, recovering ? rand() * 30 : 30 + rand() * 400));
      const tk = performance.now();
      await killChild(child);
      const tc = performance.now();
      const b = await checkBoundary(t.db);
      timing.kill += tc - tk;
      timing.check += performance.now() - tc;
      if (recovering) seen.recovering++;
      else if (b.bulk) seen.bulk++;
      else seen.follow++;
    }
    for (const c of queue) await killChild(await c);
    process.stderr.write(
      `indexer crash test: ${KILLS} kills in ${Math.round(performance.now() - t0)} ms: while recovering ${seen.recovering}, in bulk sync ${seen.bulk}, following ${seen.follow}; per kill: start ${Math.round(timing.ready / KILLS)} ms, kill ${Math.round(timing.kill / KILLS)} ms, check ${Math.round(timing.check / KILLS)} ms\n`,
    );
    expect(seen.bulk + seen.follow + seen.recovering).toBe(KILLS);

    // Let the last one finish: the whole recording, then no more kills.
    node.replay!.step(total);
    const last = await startChild(env);
    expect(await last.ready).toBe(true);
    await waitSynced(t.db, node, 120_000);
    await waitMempoolSynced(t.db, node);
    await waitFor(async () => (await checkBoundary(t.db)).bulk === false, 'the bulk sync to be finished');
    await killChild(last);

    const chain = loadChainA();
    for (let h = 0; h < chain.main.length; h++) await applyBlock(ref.db, decodeBlock(chain.blocks.get(chain.main[h]!)!.raw), h);
    expect(await utxoSetHash(t.db)).toBe(await utxoSetHash(ref.db));
    const [got, want] = await Promise.all([snapshotIndex(t.db), snapshotIndex(ref.db)]);
    expect({ ...got, mempool: [] }).toEqual({ ...want, mempool: [] });
    expect(got.mempool.length).toBe(node.mempool().length);
    await checkBlockEvents(t.db, chain.main);
  });
});
