/**
 * A standby indexer (INDEXER_STANDBY=true): two real `blockwire start --role indexer` processes
 * on one database; the second waits on the writer lock and writes nothing (no heartbeat either).
 * While the devnode mines blocks paying a watched address, the active one is killed with
 * SIGKILL; the standby takes the lock within 10 s (the lock is a session advisory lock, freed
 * when the killed process's connection closes; the standby tries every second) and finishes the
 * chain. The index and the outbox then equal those of one indexer that indexed the same chain
 * from scratch on a fresh database (outbox `seq` aside: a sequence value taken by the killed
 * transaction is never reused, so only the order and the events are compared, and the order
 * must be strictly increasing).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sql } from 'kysely';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';
import { readEvents, startTestIndexer, waitSynced, watchAddress } from '../../support/chain-indexer.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';
import { HEARTBEAT_KEY } from '../../../src/ops/heartbeat.js';
import { processEnv, spawnBlockwire, type BlockwireProcess } from './processes.js';
import { waitFor } from '../../support/wait.js';

let devnode: Devnode;
let db: TestDatabase;
const procs: BlockwireProcess[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

const heartbeatPid = async (): Promise<number | null> => {
  const r = await sql<{ value: { pid: number } }>`SELECT value FROM sync_state WHERE key = ${HEARTBEAT_KEY}`.execute(db.db);
  return r.rows[0]?.value.pid ?? null;
};

describe('standby indexer: kill -9 of the active one', () => {
  beforeAll(async () => {
    devnode = await startDevnode({ initialBlocks: 101 });
    db = await createMigratedDatabase('standby');
  }, 120_000);

  afterAll(async () => {
    for (const p of procs) await p.stop().catch(() => undefined);
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    await devnode?.stop();
    await db?.drop();
  }, 120_000);

  it('the standby waits, takes over within 10 s, and the index and outbox equal one fresh indexer', async () => {
    const watched = devnode.wallet.newAddress('p2wpkh').address!;
    await watchAddress(db.db, watched, 3);
    const env = {
      ...processEnv({
        databaseUrl: db.url,
        redisUrl: inject('redisUrl'),
        redisPrefix: uniqueRedisPrefix('standby'),
        rpcUrl: devnode.rpcUrl,
        zmqUrl: devnode.zmqUrl,
      }),
      INDEXER_STANDBY: 'true',
    };
    const a = spawnBlockwire('indexer-a', ['start', '--role', 'indexer'], env);
    procs.push(a);
    await a.waitForLog('indexer lock taken');
    await waitSynced(db.db, devnode, 90_000);
    const b = spawnBlockwire('indexer-b', ['start', '--role', 'indexer'], env);
    procs.push(b);
    await b.waitForLog(/^standby: another indexer holds the writer lock/);
    expect(b.lines.some((l) => l.msg === 'indexer lock taken')).toBe(false);

    // The heartbeat is the active one's: the standby never writes it.
    await waitFor('the active indexer heartbeat', async () => (await heartbeatPid()) === a.child.pid);

    // Blocks paying the watched address, mined straight into blocks (no mempool: the fresh
    // reference index never sees a mempool either), while the active indexer is killed.
    let mined = 0;
    const mine = async (blocks: number) => {
      for (let i = 0; i < blocks; i++) {
        const tx = devnode.wallet.createTx(watched, 10_000n + BigInt(mined));
        await devnode.mine(1, { txs: [tx], includeMempool: false });
        mined++;
      }
    };
    await mine(5);
    await waitFor('the active indexer to index some of the new blocks', async () => {
      const tip = await db.db.selectFrom('chain_tip').select('height').executeTakeFirstOrThrow();
      return tip.height >= devnode.tip().height - 3;
    });
    const during = mine(15);
    a.child.kill('SIGKILL');
    const killedAt = Date.now();
    expect(await a.exited).toBe('SIGKILL');
    const takeover = await b.waitForLog(/^standby: writer lock taken/, 30_000);
    const tookMs = Date.now() - killedAt;
    process.stderr.write(`standby took over ${tookMs} ms after the kill\n`);
    expect(tookMs, `the standby took the lock ${tookMs} ms after the kill (log: ${JSON.stringify(takeover)})`).toBeLessThanOrEqual(10_000);
    await during;
    await mine(3);
    await waitSynced(db.db, devnode, 90_000);
    await waitFor('the new active indexer heartbeat', async () => (await heartbeatPid()) === b.child.pid);

    // One indexer, from scratch, on a fresh database with the same subscription.
    const ref = await createMigratedDatabase('standbyref');
    cleanups.push(() => ref.drop());
    await watchAddress(ref.db, watched, 3);
    const ix = await startTestIndexer(ref, devnode, { zmq: false, config: { indexerBulkThreshold: 1_000_000 } });
    await waitSynced(ref.db, devnode, 90_000);
    await ix.stop();

    expect({ ...(await snapshotIndex(db.db)), mempool: [] }).toEqual({ ...(await snapshotIndex(ref.db)), mempool: [] });
    const got = await readEvents(db.db);
    const want = await readEvents(ref.db);
    expect(got.every((e, i) => i === 0 || e.seq > got[i - 1]!.seq)).toBe(true);
    const strip = (es: typeof got) => es.map(({ seq: _seq, ...e }) => e);
    expect(strip(got)).toEqual(strip(want));
    // The payments are there: a tx.confirmed for each mined payment to the watched address.
    expect(got.filter((e) => e.type === 'tx.confirmed' && e.address === watched)).toHaveLength(mined);

    expect(await b.stop()).toBe(0);
  });
});
