/**
 * startApi as `blockwire start` runs it: a real listening socket, the network detected from the
 * node, /healthz with index tip, node tip and lag, /readyz and the address routes answering 503
 * while the index is behind or the node is down, and the cached key check refusing a key revoked
 * from another connection on the next request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import pg from 'pg';
import { Redis } from 'ioredis';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { startApi, type ApiHandle } from '../../../api/main.js';
import { testConfig } from '../../../src/config.js';
import { silentLogger } from '../../../src/log.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';
import { hexToHash } from '../../../src/bitcoin/hash.js';
import { waitFor } from '../../support/wait.js';

describe('startApi', () => {
  let node: Devnode;
  let t: TestDatabase;
  let redis: Redis;
  let api: ApiHandle;
  let key: string;
  let keyId: bigint;
  const get = (path: string, k: string | null = key) => fetch(`${api.url}${path}`, { headers: k ? { apiKey: k } : {} });

  beforeAll(async () => {
    node = await startDevnode({ initialBlocks: 5 });
    t = await createMigratedDatabase('start');
    redis = new Redis(inject('redisUrl'));
    const created = await createApiKey(t.db, { name: 'start' });
    key = created.key;
    keyId = created.id;
    const config = testConfig({ host: '127.0.0.1', port: 0, apiMaxLagBlocks: 2 });
    expect(config.network).toBeUndefined();
    // One rate-limit window throughout: the limit test counts requests.
    const heldAt = Date.now();
    api = await startApi({
      config,
      log: silentLogger(),
      db: t.db,
      redis,
      node: new BitcoindClient({ url: node.rpcUrl, timeoutMs: 30_000 }),
      databaseUrl: t.url,
      tipPollMs: 50,
      redisPrefix: uniqueRedisPrefix('start'),
      rateClock: () => heldAt,
    });
  });
  afterAll(async () => {
    await api?.close();
    redis?.disconnect();
    await t?.drop();
    await node?.stop();
  });

  it('listens, detects regtest from the node, and reports a lagging index', async () => {
    expect(api.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const h = await (await get('/healthz', null)).json();
    expect(h).toMatchObject({
      status: 'syncing',
      network: 'regtest',
      index: { height: -1, hash: null },
      node: { height: 5, hash: node.tip().hash, initial_block_download: false },
      lag: 6,
    });
    expect((await get('/readyz', null)).status).toBe(503);
    const r = await get('/v1/addresses/bcrt1qa5pzh3yzt94etaygkd4zlxkru7kkl6ssecgx6n/balance');
    expect(r.status).toBe(503);
    expect(await r.json()).toMatchObject({ error_code: 'ERR_INDEX_SYNCING', retry: true });
  });

  it('is ready once the index is within API_MAX_LAG_BLOCKS of the node', async () => {
    await t.db
      .updateTable('chain_tip')
      .set({ height: 4, hash: Buffer.from(hexToHash(node.blockHash(4))) })
      .execute();
    const h = await waitFor('healthz ok', async () => {
      const v = await (await get('/healthz', null)).json();
      return v.status === 'ok' && v;
    });
    expect(h).toMatchObject({ status: 'ok', index: { height: 4, hash: node.blockHash(4) }, lag: 1 });
    expect((await get('/readyz', null)).status).toBe(200);
    const r = await get('/v1/addresses/bcrt1qa5pzh3yzt94etaygkd4zlxkru7kkl6ssecgx6n/balance');
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ balance: 0 });
  });

  it('answers address routes as soon as the index catches up, without waiting for a poll', async () => {
    const slow = await startApi({
      config: testConfig({ host: '127.0.0.1', port: 0, apiMaxLagBlocks: 0, network: 'regtest' }),
      log: silentLogger(),
      db: t.db,
      node: new BitcoindClient({ url: node.rpcUrl, timeoutMs: 30_000 }),
      tipPollMs: 3_600_000,
      stampStatus: async () => ({ address: 'bcrt1qexample', can_pay: true, balance: { confirmed: 5 } }),
    });
    try {
      const balance = () =>
        fetch(`${slow.url}/v1/addresses/bcrt1qa5pzh3yzt94etaygkd4zlxkru7kkl6ssecgx6n/balance`, { headers: { apiKey: key } });
      expect((await balance()).status).toBe(503); // index at 4, node at 5, no lag allowed
      await t.db
        .updateTable('chain_tip')
        .set({ height: 5, hash: Buffer.from(hexToHash(node.blockHash(5))) })
        .execute();
      expect((await balance()).status).toBe(200); // the next poll is an hour away
      const h = await (await fetch(`${slow.url}/healthz`, { headers: { apiKey: key } })).json();
      expect(h.stamping).toEqual({ address: 'bcrt1qexample', can_pay: true, balance: { confirmed: 5 } });
      const anonymous = await (await fetch(`${slow.url}/healthz`)).json();
      expect(anonymous.stamping).toEqual({ enabled: true }); // the wallet is shown to a valid key only
    } finally {
      await slow.close();
      await t.db
        .updateTable('chain_tip')
        .set({ height: 4, hash: Buffer.from(hexToHash(node.blockHash(4))) })
        .execute();
    }
  });

  it('shows a stamping status that cannot be read as an error, not a failed health check', async () => {
    const broken = await startApi({
      config: testConfig({ host: '127.0.0.1', port: 0, network: 'regtest' }),
      log: silentLogger(),
      db: t.db,
      tipPollMs: 3_600_000,
      stampStatus: async () => {
        throw new Error('wallet table unreadable');
      },
    });
    try {
      const r = await fetch(`${broken.url}/healthz`, { headers: { apiKey: key } });
      expect(r.status).toBe(200);
      expect((await r.json()).stamping).toEqual({ error: 'wallet table unreadable' });
    } finally {
      await broken.close();
    }
  });

  it('never answers a negative lag: an index past the last poll of the node asks the node again', async () => {
    const slow = await startApi({
      config: testConfig({ host: '127.0.0.1', port: 0, network: 'regtest' }),
      log: silentLogger(),
      db: t.db,
      node: new BitcoindClient({ url: node.rpcUrl, timeoutMs: 30_000 }),
      tipPollMs: 3_600_000,
    });
    const height = node.tip().height;
    try {
      // Polled once at start; since then a block was mined and indexed (the next poll is an hour away).
      await node.mine(1);
      await t.db
        .updateTable('chain_tip')
        .set({ height: height + 1, hash: Buffer.from(hexToHash(node.blockHash(height + 1))) })
        .execute();
      const h = await (await fetch(`${slow.url}/healthz`)).json();
      expect(h).toMatchObject({ index: { height: height + 1 }, node: { height: height + 1, hash: node.blockHash(height + 1) }, lag: 0 });
      expect(h.node.below_index).toBeUndefined();
      // A node still below the index when asked again (its chain got shorter): lag 0, and said.
      await t.db
        .updateTable('chain_tip')
        .set({ height: height + 3 })
        .execute();
      const below = await (await fetch(`${slow.url}/healthz`)).json();
      expect(below).toMatchObject({ index: { height: height + 3 }, node: { height: height + 1, below_index: true }, lag: 0 });
    } finally {
      await slow.close();
      await t.db
        .updateTable('chain_tip')
        .set({ height: 4, hash: Buffer.from(hexToHash(node.blockHash(4))) })
        .execute();
    }
  });

  it('reports the node unreachable (readyz 503) and recovers', async () => {
    await node.faults.down();
    try {
      const h = await waitFor('healthz node_unreachable', async () => {
        const v = await (await get('/healthz', null)).json();
        return v.status === 'node_unreachable' && v;
      });
      expect(h.status).toBe('node_unreachable');
      expect(typeof h.node.error).toBe('string');
      expect((await get('/readyz', null)).status).toBe(503);
    } finally {
      await node.faults.up();
    }
    const h = await waitFor('healthz ok', async () => {
      const v = await (await get('/healthz', null)).json();
      return v.status === 'ok' && v;
    });
    expect(h.status).toBe('ok');
  });

  it('refuses a key revoked from another connection on the next request', async () => {
    for (let i = 0; i < 3; i++) expect((await get('/v1/blockchain')).status).toBe(200);
    const other = new pg.Client({ connectionString: t.url });
    await other.connect();
    try {
      await other.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [String(keyId)]);
    } finally {
      await other.end();
    }
    const r = await get('/v1/blockchain');
    expect(r.status).toBe(401);
    expect(await r.json()).toMatchObject({ error_code: 'ERR_API_KEY_INVALID' });
  });

  it('answers rate limits from Redis over real HTTP', async () => {
    const limited = await createApiKey(t.db, { name: 'limited', rateLimit: 2 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await get('/v1/blockchain', limited.key)).status);
    expect(statuses).toEqual([200, 200, 429]);
  });
});
