/**
 * Blockwire's Electrum server on a real Bitcoin Core: a throwaway regtest bitcoind (a funded
 * wallet), a test database, the indexer following the node and the Electrum role listening on
 * free TCP and TLS ports. `electrumOn(overrides)` starts another Electrum server over the same
 * index with other settings (limits).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testConfig, type Config } from '../../../src/config.js';
import { silentLogger, createLogger, type Logger } from '../../../src/log.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { getIndexTip } from '../../../api/queries/chain.js';
import { startIndexer, type IndexerHandle } from '../../../indexer/main.js';
import { startElectrum, type ElectrumHandle } from '../../../electrum/main.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { startBitcoind, type Bitcoind } from '../../support/bitcoind.js';
import { connectElectrum, type ElectrumTestClient } from '../../support/electrum-client.js';
import { waitForProgress } from '../../support/wait.js';

export type ElectrumStack = {
  node: Bitcoind;
  db: TestDatabase;
  config: Config;
  indexer: IndexerHandle;
  electrum: ElectrumHandle;
  log: Logger;
  /** Resolves when the index holds the node's tip and every transaction of its mempool. */
  synced(): Promise<void>;
  /** Mines `n` blocks to the wallet and waits for the index. */
  mine(n?: number): Promise<string[]>;
  connect(opts?: { tls?: boolean; port?: number }): Promise<ElectrumTestClient>;
  /** Another Electrum server over the same index, with these settings; stopped with the stack. */
  electrumOn(overrides: Partial<Config>): Promise<ElectrumHandle>;
  /** Starts an indexer again (after `indexer.stop()`), with the stack's settings; stopped with the stack. */
  restartIndexer(): Promise<IndexerHandle>;
  stop(): Promise<void>;
};

export async function startElectrumStack(overrides: Partial<Config> = {}): Promise<ElectrumStack> {
  const log = process.env.BLOCKWIRE_TEST_LOG ? createLogger({ level: process.env.BLOCKWIRE_TEST_LOG as 'debug' }) : silentLogger();
  const stops: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => {});
  };
  try {
    const node = await startBitcoind({ funded: true });
    stops.push(() => node.stop());
    const db = await createMigratedDatabase('electrum');
    stops.push(() => db.drop());
    const dataDir = await mkdtemp(join(tmpdir(), 'bw-electrum-'));
    stops.push(() => rm(dataDir, { recursive: true, force: true }));
    const config = testConfig({
      network: 'regtest',
      bitcoindRpcUrl: node.rpcUrl,
      bitcoindZmqUrl: node.zmqUrl,
      databaseUrl: db.url,
      dataDir,
      pollIntervalMs: 200,
      electrumTcpPort: 0,
      electrumTlsPort: 0,
      electrumPollMs: 50,
      electrumMempoolPollMs: 200,
      ...overrides,
    });
    const indexer = await startIndexer({ config, log, db: db.db, databaseUrl: db.url, rpcUrl: node.rpcUrl, zmqUrl: node.zmqUrl });
    stops.push(() => indexer.stop());
    const client = new BitcoindClient({ url: node.rpcUrl, log });
    const electrum = await startElectrum({ config, log, db: db.db, databaseUrl: db.url, node: client });
    stops.push(() => electrum.stop());

    const synced = async () => {
      // Fails when the index (tip and mempool) has not moved for 60 s: at load 30 catching up a
      // hundred blocks takes longer than that, but keeps moving.
      let at = '';
      await waitForProgress(
        "the index to hold the node's tip and mempool",
        async () => {
          const tip = await node.tip();
          const index = await getIndexTip(db.db);
          const have = await db.db.selectFrom('mempool_txs').select('txid').execute();
          at = `${index.height} ${index.hash ? hashToHex(index.hash) : ''} ${have.length}`;
          if (index.height !== tip.height || !index.hash || hashToHex(index.hash) !== tip.hash)
            throw new Error(`index at ${index.height}, node at ${tip.height}`);
          const pool = await node.call<string[]>('getrawmempool');
          const known = new Set(have.map((r) => hashToHex(r.txid)));
          if (pool.some((t) => !known.has(t)) || known.size !== pool.length) throw new Error('mempool not indexed yet');
          return true;
        },
        () => at,
        60_000,
      );
    };
    await synced();
    return {
      node,
      db,
      config,
      indexer,
      electrum,
      log,
      synced,
      async mine(n = 1) {
        const hashes = await node.mine(n);
        await synced();
        return hashes;
      },
      async connect(opts = {}) {
        const port = opts.port ?? (opts.tls ? electrum.tlsPort! : electrum.tcpPort!);
        const c = await connectElectrum(port, { tls: opts.tls ?? false });
        stops.push(async () => c.close());
        return c;
      },
      async restartIndexer() {
        const again = await startIndexer({ config, log, db: db.db, databaseUrl: db.url, rpcUrl: node.rpcUrl, zmqUrl: node.zmqUrl });
        stops.push(() => again.stop());
        return again;
      },
      async electrumOn(o) {
        const e = await startElectrum({
          config: { ...config, electrumTlsPort: undefined, ...o },
          log,
          db: db.db,
          databaseUrl: db.url,
          node: client,
        });
        stops.push(() => e.stop());
        return e;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
