/**
 * A whole Blockwire, in-process, for end-to-end tests: a regtest node — the devnode (the
 * stand-in, default) or a throwaway real bitcoind (`node: 'bitcoind'`, test/support/bitcoind.ts)
 * — → indexer → REST API with the WebSocket stream on the same port → delivery worker, plus the
 * stamper, against the run's test PostgreSQL (an isolated database) and Redis (a unique prefix).
 * Each role is started from its own factory, as `blockwire start` composes them.
 * `startStack()` returns the URLs, an API key, the node (`node`: the same calls on either kind;
 * `devnode`: the stand-in's own handle, null on bitcoind) and `stop()`.
 */
import { inject } from 'vitest';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from './db.js';
import { testConfig, type Config } from '../../src/config.js';
import { createLogger, silentLogger, type Logger } from '../../src/log.js';
import type { Devnode, DevnodeOptions } from '../../devnode/index.js';
import { BitcoindClient } from '../../src/rpc/bitcoind.js';
import { startIndexer, type IndexerHandle } from '../../indexer/main.js';
import { startApi, type ApiHandle } from '../../api/main.js';
import { startStreams, startWorker, type StreamsHandle, type WorkerDeps, type WorkerHandle } from '../../streams/main.js';
import { startStamper, type Stamper } from '../../stamp/stamper.js';
import { createApiKey } from '../../src/auth/keys.js';
import { getIndexTip } from '../../api/queries/chain.js';
import { Key } from '../../client/keys.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import type { BitcoindOptions } from './bitcoind.js';
import { nodes, type NodeKind, type TestNode } from './nodes.js';
import { waitFor } from './wait.js';

export type StackOptions<K extends NodeKind = 'devnode'> = {
  /** The node under the stack (default the devnode). Either one gets a wallet with 101 blocks mined to it, so it can pay. */
  node?: K;
  /** Devnode options. */
  devnode?: DevnodeOptions;
  /** bitcoind options (`funded` is always on). */
  bitcoind?: BitcoindOptions;
  /** Devnode only: mine a block every this many seconds in the background (default: only when the test mines). */
  mineEvery?: number;
  /** Configuration overrides (the stack sets the node, database, Redis, ports and fast polling). */
  config?: Partial<Config>;
  /** Run the stamper with a wallet the devnode funds (default true). */
  stamping?: boolean;
  /** Run the webhook/SNS delivery worker (default true). */
  worker?: boolean;
  /** The worker's SNS client overrides (a local endpoint's static credentials; its URL goes in `config.snsEndpoint`). */
  sns?: WorkerDeps['sns'];
  /** LOG_LEVEL for the stack's logs (default silent; BLOCKWIRE_TEST_LOG overrides). */
  logLevel?: 'debug' | 'info' | 'warn' | 'error' | 'silent';
};

export type Stack<K extends NodeKind = 'devnode'> = {
  /** `http://127.0.0.1:<port>`: REST at /v1/… and the stream at /v1/stream. */
  url: string;
  /** `ws://127.0.0.1:<port>/v1/stream`. */
  streamUrl: string;
  /** An API key with read and write scopes. */
  apiKey: string;
  /** The node, through calls both kinds answer (RPC, mining, tip, wallet payments). */
  node: TestNode;
  /** The devnode's own handle (fault injection, its wallet…); null on bitcoind. */
  devnode: K extends 'devnode' ? Devnode : null;
  db: TestDatabase;
  config: Config;
  redisUrl: string;
  redisPrefix: string;
  /** Another API key (tenancy tests). */
  newApiKey(name?: string): Promise<string>;
  /**
   * Resolves when the index has reached the node's tip as it was when called, on the node's
   * chain: a devnode that keeps mining (`mineEvery`) is never chased to its moving tip.
   */
  synced(timeoutMs?: number): Promise<void>;
  /** Mines `n` blocks and waits for the index to reach them. */
  mine(n?: number): Promise<string[]>;
  stop(): Promise<void>;
};

/** Starts a Blockwire stack on a fresh node (the devnode unless `node` says bitcoind); see the module comment. */
export async function startStack<K extends NodeKind = 'devnode'>(opts: StackOptions<K> = {}): Promise<Stack<K>> {
  const level = (process.env.BLOCKWIRE_TEST_LOG as StackOptions['logLevel']) ?? opts.logLevel ?? 'silent';
  const log: Logger = level === 'silent' ? silentLogger() : createLogger({ level, name: 'stack' });
  const stops: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch((err: unknown) => log.warn({ err }, 'stack: stop failed'));
  };
  try {
    const kind: NodeKind = opts.node ?? 'devnode';
    if (opts.mineEvery && kind !== 'devnode') throw new Error('startStack: mineEvery is a devnode option');
    const node = await nodes
      .find((n) => n.name === kind)!
      .start({
        funded: true,
        devnode: { ...opts.devnode, ...(opts.mineEvery ? { mineEvery: opts.mineEvery, samplePayments: false } : {}) },
        ...(opts.bitcoind ? { bitcoind: opts.bitcoind } : {}),
      });
    stops.push(() => node.stop());
    const db = await createMigratedDatabase('stack');
    stops.push(() => db.drop());
    const redisUrl = inject('redisUrl');
    const redisPrefix = uniqueRedisPrefix('stack');

    // The stamping wallet: a fresh key of the devnode's network, funded below.
    const stampWif = opts.stamping === false ? undefined : Key.random('regtest').toWif();
    const config = testConfig({
      network: 'regtest',
      bitcoindRpcUrl: node.rpcUrl,
      bitcoindZmqUrl: node.zmqUrl,
      databaseUrl: db.url,
      redisUrl,
      host: '127.0.0.1',
      port: 0,
      allowPrivateHooks: true,
      pollIntervalMs: 200,
      relayPollMs: 20,
      webhookTimeoutMs: 5_000,
      stampBatchWindowMs: 200,
      stampPollMs: 200,
      ...opts.config,
    });

    const indexer: IndexerHandle = await startIndexer({
      config,
      log,
      db: db.db,
      databaseUrl: db.url,
      rpcUrl: node.rpcUrl,
      zmqUrl: node.zmqUrl,
    });
    stops.push(() => indexer.stop());

    const client = new BitcoindClient({ url: node.rpcUrl, log });
    let stamper: Stamper | undefined;
    if (stampWif) {
      stamper = await startStamper({ db: db.db, log, config: { ...config, stampWalletWif: stampWif }, network: 'regtest', node: client });
      stops.push(() => stamper!.stop());
      // Fund every address of the wallet with a few coins and confirm them.
      for (const a of stamper.addresses)
        await node.payMany([
          { address: a, sats: 2_000_000n },
          { address: a, sats: 2_000_000n },
        ]);
      await node.mine(1);
    }

    const api: ApiHandle = await startApi({
      config,
      log,
      db: db.db,
      node: client,
      network: 'regtest',
      ...(stamper ? { stamps: stamper.service, stampStatus: stamper.status } : {}),
      tipPollMs: 200,
    });
    stops.push(() => api.close());
    const streams: StreamsHandle = await startStreams({
      config,
      log,
      db: db.db,
      databaseUrl: db.url,
      redisUrl,
      redisPrefix,
      server: api.app.server,
    });
    stops.push(() => streams.stop());
    if (opts.worker !== false) {
      const worker: WorkerHandle = await startWorker({
        config,
        log,
        db: db.db,
        databaseUrl: db.url,
        redisUrl,
        redisPrefix,
        ...(opts.sns ? { sns: opts.sns } : {}),
      });
      stops.push(() => worker.stop());
    }

    const apiKey = (await createApiKey(db.db, { name: 'stack' })).key;
    const synced = async (timeoutMs = 30_000) => {
      const target = (await node.tip()).height;
      await waitFor(
        `stack: the index at height ${target} or above, on the node's chain`,
        async () => {
          const index = await getIndexTip(db.db);
          const tip = await node.tip();
          return (
            index.height >= target &&
            index.height <= tip.height &&
            index.hash !== null &&
            hashToHex(index.hash) === (await node.call<string>('getblockhash', [index.height]))
          );
        },
        timeoutMs,
      );
    };
    await synced(60_000);
    return {
      url: api.url,
      streamUrl: `${api.url.replace(/^http/, 'ws')}/v1/stream`,
      apiKey,
      node,
      devnode: node.devnode as Stack<K>['devnode'],
      db,
      config,
      redisUrl,
      redisPrefix,
      newApiKey: async (name = 'stack-extra') => (await createApiKey(db.db, { name })).key,
      synced,
      async mine(n = 1) {
        const hashes = await node.mine(n);
        await synced();
        return hashes;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
