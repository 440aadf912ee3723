/**
 * ZMQ is only a wake-up hint, with the devnode's fault injection:
 * a counter gap forces a reconcile at the next message (long before the poll), a counter reset
 * (bitcoind restart) forces a full reconcile and mempool reseed without duplicate events, a
 * silent publisher costs at most a poll interval (and counts missed blocks), the last messages
 * lost with none after them (no gap to see) are caught by the idle mempool check, and lies
 * (unknown or stale hashes, malformed bodies, wrong topics, bad labels, missing frames) change
 * nothing.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import type { IndexerHandle } from '../../../indexer/main.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { freshBulkIndexOf, readEvents, startTestIndexer, waitMempoolSynced, waitSynced } from '../../support/chain-indexer.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';
import { waitFor } from '../../support/wait.js';
import { le32 } from '../../../devnode/zmq.js';

describe('ZMQ faults', () => {
  let node: Devnode;
  let t: TestDatabase;
  let ix: IndexerHandle;
  const dbs: TestDatabase[] = [];
  /** A poll slow enough that only ZMQ can explain a quick reaction. */
  const POLL_MS = 8000;

  const onePerBlock = async () => {
    const ev = await readEvents(t.db, ['block.connected']);
    expect(new Set(ev.map((e) => e.block)).size).toBe(ev.length);
  };
  const equalsFresh = async () => {
    await waitSynced(t.db, node);
    await waitMempoolSynced(t.db, node);
    const ref = await freshBulkIndexOf(node);
    dbs.push(ref);
    const got = await snapshotIndex(t.db);
    expect({ ...got, mempool: [] }).toEqual(await snapshotIndex(ref.db));
  };

  beforeAll(async () => {
    node = await startDevnode({ initialBlocks: 101 });
    t = await createMigratedDatabase('zq');
    dbs.push(t);
    ix = await startTestIndexer(t, node, { config: { pollIntervalMs: POLL_MS, mempoolResyncMs: 3_600_000 } });
    await waitSynced(t.db, node, 60_000);
    await waitFor('the first mempool sync', () => ix.metrics().mempool.resyncs >= 1);
  });
  afterAll(async () => {
    await ix?.stop();
    await node?.stop();
    await Promise.all(dbs.map((d) => d.drop()));
  });

  it('a counter gap triggers a reconcile at the next message', async () => {
    // The subscriber must have seen each topic once: the first message reveals no gap.
    await node.wallet.send(node.wallet.newAddress('p2wpkh').address!, 30_000n);
    await node.mine(1);
    await waitSynced(t.db, node);
    await waitMempoolSynced(t.db, node);
    const gaps = ix.metrics().zmq!.gaps;
    // Lose every announcement of the next block (its coinbase's rawtx too).
    for (const topic of ['hashblock', 'sequence', 'rawtx'] as const) node.faults.zmq.drop(topic, 1);
    await node.mine(1);
    await node.faults.zmq.flush();
    const resyncs = ix.metrics().mempool.resyncs;
    const started = Date.now();
    await node.wallet.send(node.wallet.newAddress('p2wpkh').address!, 30_000n); // its messages carry the jump
    await waitSynced(t.db, node, POLL_MS - 1000);
    expect(Date.now() - started).toBeLessThan(POLL_MS - 1000);
    expect(ix.metrics().zmq!.gaps).toBeGreaterThan(gaps);
    await waitFor('a mempool resync after the sequence gap', () => ix.metrics().mempool.resyncs > resyncs, POLL_MS - 1000);
    await equalsFresh();
  });

  it('a counter reset (bitcoind restart) forces a full reconcile, no duplicate events', async () => {
    const resets = ix.metrics().zmq!.resets;
    const resyncs = ix.metrics().mempool.resyncs;
    node.faults.zmq.resetCounters();
    await node.mine(2);
    await waitSynced(t.db, node, POLL_MS - 1000);
    await waitFor(
      'reset seen and mempool reseeded',
      () => ix.metrics().zmq!.resets > resets && ix.metrics().mempool.resyncs > resyncs,
      POLL_MS - 1000,
    );
    await onePerBlock();
    await equalsFresh();
  });

  it('dead: a silent publisher while 20 blocks are mined costs at most a poll interval', async () => {
    await ix.stop();
    ix = await startTestIndexer(t, node, { config: { pollIntervalMs: 500, mempoolResyncMs: 3_600_000 } });
    await waitSynced(t.db, node);
    // Its first turn has seen the node's height: every block from now on should be announced.
    await waitFor('the new indexer to look at the node', () => ix.status().nodeTip?.height === node.tip().height);
    const missed = ix.metrics().zmqMissedBlocks;
    node.faults.zmq.silence(true);
    for (let i = 0; i < 20; i++) {
      await node.wallet.send(node.wallet.newAddress('p2tr').address!, 20_000n);
      await node.mine(1);
    }
    const minedAt = Date.now();
    await waitSynced(t.db, node, 10_000);
    process.stderr.write(`zmq dead: index reached the tip ${Date.now() - minedAt} ms after the last block (poll 500 ms)\n`);
    await waitFor('the 20 unannounced blocks to be counted', () => ix.metrics().zmqMissedBlocks >= missed + 20, 30_000);
    node.faults.zmq.silence(false);
    await onePerBlock();
    await equalsFresh();
  });

  it('tail loss: the last mempool messages lost with none after them are caught by the idle check', async () => {
    await ix.stop();
    ix = await startTestIndexer(t, node, { config: { pollIntervalMs: 300, mempoolResyncMs: 3_600_000, mempoolCheckMs: 1000 } });
    await waitSynced(t.db, node);
    await waitFor('the first mempool sync', () => ix.metrics().mempool.resyncs >= 1);
    await waitMempoolSynced(t.db, node);
    const gaps = ix.metrics().zmq!.gaps;
    // Two payments whose `A` messages never arrive, then silence: no counter gap can show it.
    node.faults.zmq.drop('sequence', 2);
    const paid = [
      await node.wallet.send(node.wallet.newAddress('p2wpkh').address!, 41_000n),
      await node.wallet.send(node.wallet.newAddress('p2tr').address!, 42_000n),
    ];
    await node.faults.zmq.flush();
    expect(paid.every((txid) => node.mempool().includes(txid))).toBe(true);
    const started = Date.now();
    await waitMempoolSynced(t.db, node, 10_000);
    process.stderr.write(`zmq tail loss: mempool reconciled ${Date.now() - started} ms after the lost messages (check every 1000 ms)\n`);
    expect(ix.metrics().mempool.drifts).toBeGreaterThanOrEqual(1);
    expect(ix.metrics().zmq!.gaps).toBe(gaps);
    await node.mine(1);
    await equalsFresh();
  });

  it('lies change nothing: unknown and stale hashes, malformed bodies, wrong topic, bad label, missing frames', async () => {
    await node.faults.zmq.flush();
    await waitSynced(t.db, node);
    const lastSeq = (await readEvents(t.db)).at(-1)?.seq ?? 0n;
    const invalid = ix.metrics().zmq!.invalid;
    const stale = node.blockHash(50);
    const lies: (string | Uint8Array)[][] = [
      ['hashblock', randomBytes(32), le32(900)],
      ['hashblock', Buffer.from(stale, 'hex'), le32(901)],
      ['hashblock', randomBytes(31), le32(902)],
      ['hashblock', randomBytes(34), le32(903)],
      ['hashfoo', randomBytes(32), le32(0)],
      ['sequence', Buffer.concat([randomBytes(32), Buffer.from('X')]), le32(904)],
      ['sequence', Buffer.concat([randomBytes(32), Buffer.from('A')]), le32(905)],
      ['sequence', Buffer.concat([randomBytes(32), Buffer.from('R'), Buffer.alloc(8)]), le32(906)],
      ['sequence', Buffer.concat([Buffer.from(stale, 'hex'), Buffer.from('D')]), le32(907)],
      ['hashblock', randomBytes(32)],
      ['rawtx', randomBytes(100), Buffer.from([1, 2])],
    ];
    for (const frames of lies) await node.faults.zmq.publishRaw(frames);
    // Five malformed ones reach the notifier: not hashfoo, a topic it never subscribed to, nor
    // the rawtx lie, since the devnode publishes sequence and the notifier has dropped rawtx from
    // its subscription (the publisher filters it; notify.test.ts has it counted as malformed).
    await waitFor('the malformed messages to be counted', () => ix.metrics().zmq!.invalid >= invalid + 5);
    // The sentinel: a block mined after the lies. The indexer reads its socket in order and its
    // loop takes one step at a time, so whatever a lie set going is done once that block is
    // applied: then the block's own event must be the only one since the lies, and the index
    // must equal a fresh one of the node's chain.
    const [tip] = await node.mine(1);
    await waitSynced(t.db, node);
    expect((await readEvents(t.db)).filter((e) => e.seq > lastSeq).map((e) => [e.type, e.block])).toEqual([['block.connected', tip]]);
    expect(ix.status().lastError).toBeNull();
    await equalsFresh();
  });
});
