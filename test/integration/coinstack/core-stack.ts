/**
 * Blockwire on a real regtest Bitcoin Core for the Coinstack client tests: bitcoind (funded
 * descriptor wallet) → indexer → stamper (its wallet funded by Core) → API listening on a free
 * loopback port, with a server keyring for signing keys and the run's Redis for rate limits;
 * optionally the streams role (relay and stream) on the same server and Redis prefix.
 * `signingKey()` makes an access key and secret as `blockwire keys create --secret` does.
 */
import { inject } from 'vitest';
import { Redis } from 'ioredis';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';
import { startBitcoind, type Bitcoind } from '../../support/bitcoind.js';
import { waitFor } from '../../support/wait.js';
import { testConfig } from '../../../src/config.js';
import { silentLogger } from '../../../src/log.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { startIndexer } from '../../../indexer/main.js';
import { startApi, type ApiHandle } from '../../../api/main.js';
import { startStreams } from '../../../streams/main.js';
import { startStamper } from '../../../stamp/stamper.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { newServerKeyLine, parseKeyring } from '../../../src/auth/secret-box.js';
import { getIndexTip } from '../../../api/queries/chain.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { Key } from '../../../client/keys.js';

export type CoreStack = {
  core: Bitcoind;
  api: ApiHandle;
  db: TestDatabase;
  /** `127.0.0.1:<port>`: what the Coinstack SDK takes as its endpoint. */
  endpoint: string;
  signingKey(opts?: { scopes?: ('read' | 'write')[]; rateLimit?: number }): Promise<{ access: string; secret: string }>;
  /** Waits until the index holds Core's tip. */
  synced(): Promise<void>;
  /** Waits until the index's mempool holds `txid` (display hex). */
  inMempool(txid: string): Promise<void>;
  mine(n?: number): Promise<void>;
  /** Pays `sats` from Core's wallet to `address`; returns the txid. */
  fund(address: string, sats: bigint): Promise<string>;
  stop(): Promise<void>;
};

export type CoreStackOptions = {
  /** Run the streams role (its relay publishes the feed) on the API's server and Redis prefix. */
  streams?: boolean;
  /** startApi's pushPollMs (how often /websocket reads the outbox without a feed message). */
  pushPollMs?: number;
};

export async function startCoreStack(opts: CoreStackOptions = {}): Promise<CoreStack> {
  const log = silentLogger();
  const stops: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
  };
  try {
    const core = await startBitcoind({ funded: true, txindex: true });
    stops.push(() => core.stop());
    const db = await createMigratedDatabase('coinstack');
    stops.push(() => db.drop());
    const keyLine = newServerKeyLine();
    const keyring = parseKeyring(keyLine);
    const stampWif = Key.random('regtest').toWif();
    const config = testConfig({
      network: 'regtest',
      bitcoindRpcUrl: core.rpcUrl,
      bitcoindZmqUrl: core.zmqUrl,
      databaseUrl: db.url,
      host: '127.0.0.1',
      port: 0,
      pollIntervalMs: 200,
      stampBatchWindowMs: 200,
      stampPollMs: 200,
      serverSecretKeys: keyLine,
    });
    const indexer = await startIndexer({ config, log, db: db.db, databaseUrl: db.url, rpcUrl: core.rpcUrl, zmqUrl: core.zmqUrl });
    stops.push(() => indexer.stop());
    const node = new BitcoindClient({ url: core.rpcUrl, log });
    const stamper = await startStamper({ db: db.db, log, config: { ...config, stampWalletWif: stampWif }, network: 'regtest', node });
    stops.push(() => stamper.stop());
    const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
    stops.push(async () => redis.disconnect());
    // One rate-limit window throughout: the SDK test counts a key's requests against its limit.
    const heldAt = Date.now();
    const redisPrefix = uniqueRedisPrefix('cs');
    const api = await startApi({
      config,
      log,
      db: db.db,
      node,
      network: 'regtest',
      redis,
      redisPrefix,
      stamps: stamper.service,
      stampStatus: stamper.status,
      tipPollMs: 200,
      rateClock: () => heldAt,
      ...(opts.pushPollMs !== undefined ? { pushPollMs: opts.pushPollMs } : {}),
    });
    stops.push(() => api.close());
    if (opts.streams) {
      const streams = await startStreams({
        config,
        log,
        db: db.db,
        databaseUrl: db.url,
        redisUrl: inject('redisUrl'),
        redisPrefix,
        server: api.app.server,
      });
      stops.push(() => streams.stop());
    }

    const synced = async () => {
      const target = await core.tip();
      await waitFor(`index at Core's tip ${target.height}`, async () => {
        const t = await getIndexTip(db.db);
        return t.height === target.height && t.hash !== null && hashToHex(t.hash) === target.hash;
      });
    };
    const mine = async (n = 1) => {
      await core.mine(n);
      await synced();
    };
    const fund = (address: string, sats: bigint) => core.call<string>('sendtoaddress', [address, Number(sats) / 1e8], core.wallet!);
    for (const a of stamper.addresses) await fund(a, 2_000_000n);
    await mine(1);
    return {
      core,
      api,
      db,
      endpoint: api.url.replace(/^http:\/\//, ''),
      async signingKey(opts = {}) {
        const k = await createApiKey(db.db, {
          name: 'sdk',
          secret: { keyring },
          ...(opts.scopes ? { scopes: opts.scopes } : {}),
          rateLimit: opts.rateLimit ?? null,
        });
        return { access: k.key, secret: k.secret! };
      },
      synced,
      async inMempool(txid) {
        await waitFor(
          `index mempool holding ${txid}`,
          async () =>
            (await db.db
              .selectFrom('mempool_txs')
              .select('txid')
              .where('txid', '=', Buffer.from(txid, 'hex').reverse())
              .executeTakeFirst()) !== undefined,
        );
      },
      mine,
      fund,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
