/**
 * The API reading chain data from real PostgreSQL streaming replicas (DATABASE_READ_URL): a
 * primary of the test's own and two hot standbys made from base backups of it (test/support/
 * pg-replica.ts), the indexer writing the primary while the devnode mines payments to one address.
 * - after catch-up, answers through the replicas equal the primary's (blockchain, block, balance,
 *   every history and unspent page), and a paging cursor of one serves on the other;
 * - answers carry the replica's own tip (Blockwire-Tip-Height) while its replay is paused, a
 *   replica past API_MAX_LAG_BLOCKS is skipped and with every replica past it reads answer
 *   503 ERR_INDEX_SYNCING;
 * - a stopped replica is routed around: every request after the stop is answered (the request
 *   time limit bounds each), and with no replica left the primary serves.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import * as btc from '@scure/btc-signer';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { startPostgres, type PostgresServer } from '../../../cli/embedded/postgres.js';
import { createDb } from '../../../src/db/connect.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import type { Database } from '../../../src/db/schema.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { startApi, type ApiHandle } from '../../../api/main.js';
import { testConfig } from '../../../src/config.js';
import { silentLogger } from '../../../src/log.js';
import type { IndexerHandle } from '../../../indexer/main.js';
import { startTestIndexer, waitSynced } from '../../support/chain-indexer.js';
import { startReplica, type Replica } from '../../support/pg-replica.js';
import { waitFor } from '../../support/wait.js';

const MAX_LAG = 3;
const DB = 'bw';
const REGTEST = { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef };

describe('API reads from streaming replicas', () => {
  let dir: string;
  let devnode: Devnode;
  let primary: PostgresServer;
  let db: Kysely<Database>;
  let indexer: IndexerHandle;
  const replicas: Replica[] = [];
  let viaReplicas: ApiHandle;
  let viaPrimary: ApiHandle;
  let key: string;
  let address: string;

  const get = async (api: ApiHandle, path: string) => {
    const r = await fetch(`${api.url}${path}`, { headers: { apiKey: key } });
    const body = (await r.json()) as unknown;
    return { status: r.status, body, tip: r.headers.get('blockwire-tip-height'), link: r.headers.get('link') };
  };
  const replicaHeight = async (r: Replica) => {
    const c = createDb(r.urlFor(DB), { max: 1 });
    try {
      return (await c.selectFrom('chain_tip').select('height').executeTakeFirst())?.height ?? -1;
    } finally {
      await c.destroy();
    }
  };
  const primaryHeight = async () => (await db.selectFrom('chain_tip').select('height').executeTakeFirstOrThrow()).height;
  const caughtUp = (r: Replica) =>
    waitFor(`replica ${r.slot} to catch up`, async () => (await replicaHeight(r)) === (await primaryHeight()), 120_000, 200);
  const pay = async (blocks: number) => {
    for (let i = 0; i < blocks; i++)
      await devnode.mine(1, { txs: [devnode.wallet.createTx(address, 20_000n + BigInt(i))], includeMempool: false });
    await waitSynced(db, devnode, 90_000);
  };
  /** Every page of a paged list, `limit` at a time, alternating the API each page is asked of. */
  const pages = async (path: string, apis: ApiHandle[], limit: number) => {
    const items: unknown[] = [];
    let next: string | null = `${path}?limit=${limit}`;
    for (let i = 0; next; i++) {
      const r = await get(apis[i % apis.length]!, next);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      items.push(...(r.body as unknown[]));
      next = r.link ? /<([^>]+)>/.exec(r.link)![1]!.replace(/^https?:\/\/[^/]+/, '') : null;
    }
    return items;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bw-replicas-'));
    devnode = await startDevnode({ initialBlocks: 101 });
    primary = await startPostgres({ dataDir: join(dir, 'primary'), ephemeral: true });
    const admin = new pg.Client({ connectionString: primary.url });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${DB}`);
    await admin.end();
    db = createDb(primary.urlFor(DB), { max: 4 });
    await migrateToLatest(db);
    key = (await createApiKey(db, { name: 'replicas', scopes: ['read'] })).key;
    // An address of no wallet: its balance is exactly what was paid to it.
    address = btc.p2wpkh(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true), REGTEST).address!;
    // Base backups of the migrated, still empty index: the blocks reach the replicas by streaming.
    replicas.push(await startReplica(primary, join(dir, 'replica-a'), 'replica_a'));
    replicas.push(await startReplica(primary, join(dir, 'replica-b'), 'replica_b'));
    indexer = await startTestIndexer({ url: primary.urlFor(DB), name: DB, db, drop: async () => undefined }, devnode);
    await pay(12);
    const config = testConfig({ host: '127.0.0.1', port: 0, network: 'regtest', apiMaxLagBlocks: MAX_LAG });
    viaReplicas = await startApi({
      config,
      log: silentLogger(),
      db,
      databaseUrl: primary.urlFor(DB),
      readUrls: replicas.map((r) => r.urlFor(DB)),
      tipPollMs: 100,
    });
    viaPrimary = await startApi({ config, log: silentLogger(), db, databaseUrl: primary.urlFor(DB), tipPollMs: 100 });
  }, 240_000);

  afterAll(async () => {
    await viaReplicas?.close();
    await viaPrimary?.close();
    await indexer?.stop();
    await db?.destroy();
    for (const r of replicas) await r.stop().catch(() => undefined);
    await primary?.stop();
    await devnode?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it('after catch-up the replicas answer as the primary, and a cursor of one serves on the other', async () => {
    for (const r of replicas) await caughtUp(r);
    const height = await primaryHeight();
    // The API sees the replicas' tips by its own poll (every tipPollMs): until its next poll after
    // the catch-up it may still count them as lagging and answer 503.
    await waitFor(
      'the API to see the replicas caught up',
      async () => (await get(viaReplicas, '/v1/blockchain')).status === 200,
      30_000,
      50,
    );
    for (const path of [
      '/v1/blockchain',
      `/v1/blocks/height/${height - 5}`,
      `/v1/addresses/${address}/balance`,
      `/v1/addresses/${address}/balance?min_conf=3`,
    ]) {
      const [a, b] = [await get(viaReplicas, path), await get(viaPrimary, path)];
      expect(a.status, path).toBe(200);
      expect(a.body, path).toEqual(b.body);
    }
    expect((await get(viaReplicas, '/v1/blockchain')).tip).toBe(String(height));
    for (const list of ['history', 'unspentoutputs']) {
      const path = `/v1/addresses/${address}/${list}`;
      const whole = (await get(viaPrimary, path)).body as unknown[];
      expect(whole).toHaveLength(12);
      expect(await pages(path, [viaReplicas], 5)).toEqual(whole);
      // Cursors cross: page 1 from a replica, page 2 from the primary, page 3 from a replica…
      expect(await pages(path, [viaReplicas, viaPrimary], 4)).toEqual(whole);
      expect(await pages(path, [viaPrimary, viaReplicas], 3)).toEqual(whole);
    }
  });

  it("answers carry the replica's own tip; past API_MAX_LAG_BLOCKS a replica is skipped, every one past it: ERR_INDEX_SYNCING", async () => {
    const before = await primaryHeight();
    for (const r of replicas) await r.pauseReplay();
    await pay(2);
    // Within the allowed lag: the replicas answer, at their own (older) tip.
    const chain = await get(viaReplicas, '/v1/blockchain');
    expect(chain.status).toBe(200);
    expect(chain.tip).toBe(String(before));
    expect((chain.body as { best_height: number }).best_height).toBe(before);
    const balance = await get(viaReplicas, `/v1/addresses/${address}/balance`);
    expect(balance.tip).toBe(String(before));
    expect(balance.body).toEqual({ balance: Number(12n * 20_000n + 66n) });
    expect((await get(viaPrimary, '/v1/blockchain')).tip).toBe(String(before + 2));

    // Past it: every replica lags, so chain reads answer 503 ERR_INDEX_SYNCING.
    await pay(2);
    const syncing = await waitFor(
      'ERR_INDEX_SYNCING from the lagging replicas',
      async () => {
        const r = await get(viaReplicas, `/v1/addresses/${address}/balance`);
        return r.status === 503 ? r : undefined;
      },
      30_000,
      100,
    );
    expect((syncing.body as { error_code: string }).error_code).toBe('ERR_INDEX_SYNCING');

    // One replica replays again: it alone serves, at the primary's tip; the other is skipped.
    await replicas[1]!.resumeReplay();
    await caughtUp(replicas[1]!);
    const now = await primaryHeight();
    await waitFor('reads served again', async () => (await get(viaReplicas, '/v1/blockchain')).status === 200, 30_000, 100);
    for (let i = 0; i < 6; i++) {
      const r = await get(viaReplicas, '/v1/blockchain');
      expect(r.status).toBe(200);
      expect(r.tip).toBe(String(now));
    }
    await replicas[0]!.resumeReplay();
    await caughtUp(replicas[0]!);
  });

  it('a stopped replica is routed around, and with none left the primary serves', async () => {
    const height = await primaryHeight();
    // Both serve at first (turns alternate between them).
    for (let i = 0; i < 4; i++) expect((await get(viaReplicas, `/v1/addresses/${address}/history?limit=2`)).status).toBe(200);
    await replicas[0]!.stop();
    for (let i = 0; i < 10; i++) {
      const r = await get(viaReplicas, `/v1/addresses/${address}/balance`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.tip).toBe(String(height));
    }
    await replicas[1]!.stop();
    // No replica left: the primary serves, at its own tip.
    await pay(1);
    for (let i = 0; i < 4; i++) {
      const r = await get(viaReplicas, '/v1/blockchain');
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.tip).toBe(String(height + 1));
    }
  });
});
