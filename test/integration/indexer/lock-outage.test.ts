/**
 * One writer, and waiting out outages: a second indexer on the same database is refused while
 * the first runs (and may start once it stopped); with the node unreachable or Postgres
 * restarted under it, the indexer retries, says why, and resumes on its own to an index equal
 * to a fresh one.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { createDb } from '../../../src/db/connect.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import { startPostgres } from '../../../cli/embedded/postgres.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { freshBulkIndexOf, startTestIndexer, waitSynced } from '../../support/chain-indexer.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';
import { startIndexer } from '../../../indexer/main.js';
import { indexerConfig } from '../../support/chain-indexer.js';
import { silentLogger } from '../../../src/log.js';
import { waitFor } from '../../support/wait.js';

describe('one writer; outages', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  const node = async (): Promise<Devnode> => {
    const n = await startDevnode({ initialBlocks: 101 });
    cleanups.push(() => n.stop());
    return n;
  };
  const database = async (): Promise<TestDatabase> => {
    const t = await createMigratedDatabase('lk');
    cleanups.push(() => t.drop());
    return t;
  };
  const equalsFresh = async (t: { db: TestDatabase['db'] }, n: Devnode) => {
    const ref = await freshBulkIndexOf(n);
    cleanups.push(() => ref.drop());
    expect({ ...(await snapshotIndex(t.db)), mempool: [] }).toEqual(await snapshotIndex(ref.db));
  };

  it('refuses a second indexer while the first runs', async () => {
    const [n, t] = await Promise.all([node(), database()]);
    const first = await startTestIndexer(t, n);
    await expect(startTestIndexer(t, n)).rejects.toMatchObject({ code: 'ERR_INDEXER_LOCKED' });
    await waitSynced(t.db, n, 60_000);
    await first.stop();
    const second = await startTestIndexer(t, n);
    await n.mine(1);
    await waitSynced(t.db, n);
    await second.stop();
  });

  it('waits while the node is unreachable and resumes', async () => {
    const [n, t] = await Promise.all([node(), database()]);
    const ix = await startTestIndexer(t, n);
    cleanups.push(() => ix.stop());
    await waitSynced(t.db, n, 60_000);
    await n.faults.down();
    await waitFor('the indexer to notice the outage', () => ix.metrics().retries > 0 && ix.status().lastError !== null);
    expect(ix.status().lastError).toMatch(/unreachable|ECONNREFUSED|fetch failed/i);
    await n.faults.up();
    await n.mine(3);
    await waitSynced(t.db, n);
    expect(ix.status().lastError).toBeNull();
    await equalsFresh(t, n);
  });

  it('survives a Postgres restart (and takes its lock again)', async () => {
    const n = await node();
    const dir = await mkdtemp(join(tmpdir(), 'blockwire-pg-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    let server = await startPostgres({ dataDir: join(dir, 'pg'), ephemeral: true });
    const port = server.port;
    cleanups.push(() => server.stop());
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query('CREATE DATABASE idx');
    await admin.end();
    const url = server.urlFor('idx');
    const db = createDb(url, { max: 4 });
    cleanups.push(() => db.destroy());
    await migrateToLatest(db);
    const ix = await startIndexer({
      config: indexerConfig(),
      log: silentLogger(),
      db,
      databaseUrl: url,
      rpcUrl: n.rpcUrl,
      zmqUrl: n.zmqUrl,
    });
    cleanups.push(() => ix.stop());
    await waitSynced(db, n, 60_000);
    await server.stop();
    await n.mine(2);
    await waitFor('the indexer to notice Postgres is gone', () => ix.metrics().retries > 0);
    server = await startPostgres({ dataDir: join(dir, 'pg'), port, ephemeral: true });
    await n.mine(1);
    await waitSynced(db, n, 60_000);
    await equalsFresh({ db }, n);
    // The lock was taken again: a second indexer is still refused.
    await expect(
      startIndexer({ config: indexerConfig(), log: silentLogger(), db, databaseUrl: url, rpcUrl: n.rpcUrl, zmqUrl: null }),
    ).rejects.toMatchObject({ code: 'ERR_INDEXER_LOCKED' });
  });
});
