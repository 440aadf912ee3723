/**
 * The server side of bench/events.ts, in its own process (so the benchmark's 1,000 WebSocket
 * clients do not share its event loop): the streams role (relay + WebSocket stream on its own
 * port), the delivery workers, and with `devnode: true` a devnode and the indexer following it.
 * Production defaults except loopback hooks. Prints one JSON line `{port, rpcUrl, address}`.
 * Usage: `node --import tsx bench/events-server.ts '{"databaseUrl", "redisUrl", "devnode", "workerOnly"?}'`
 * (`workerOnly`: delivery workers alone, an extra worker process; `noWorker`: no delivery worker, the
 * relay apart from the workers).
 */
import { createDb } from '../src/db/connect.js';
import { createLogger } from '../src/log.js';
import { loadConfig } from '../src/config.js';
import { startStreams, startWorker } from '../streams/main.js';
import { startDevnode } from '../devnode/index.js';
import { startIndexer } from '../indexer/main.js';

type Args = { databaseUrl: string; redisUrl: string; devnode: boolean; workerOnly?: boolean; noWorker?: boolean };
const args = JSON.parse(process.argv[2] ?? '{}') as Args;

// BLOCKWIRE_* tunables from the environment apply (e.g. BLOCKWIRE_WEBHOOK_CONCURRENCY).
const config = loadConfig({
  ...process.env,
  BLOCKWIRE_ALLOW_PRIVATE_HOOKS: '1',
  BLOCKWIRE_STREAM_PORT: '0',
  LOG_LEVEL: 'warn',
  BITCOIN_NETWORK: 'regtest',
  NODE_ENV: 'development',
});
const log = createLogger({ level: 'warn', name: 'bench-events' });
const db = createDb(args.databaseUrl, { max: 8 });
let rpcUrl: string | null = null;
let address: string | null = null;
if (args.devnode) {
  const node = await startDevnode({ initialBlocks: 101 });
  rpcUrl = node.rpcUrl;
  address = node.wallet.newAddress('p2wpkh').address!;
  await startIndexer({ config, log, db, databaseUrl: args.databaseUrl, rpcUrl: node.rpcUrl, zmqUrl: node.zmqUrl });
}
const streams = args.workerOnly
  ? undefined
  : await startStreams({ config, log, db, databaseUrl: args.databaseUrl, redisUrl: args.redisUrl });
if (!args.noWorker) await startWorker({ config, log, db, redisUrl: args.redisUrl });
// SIGTERM exits at once (and lets --cpu-prof write its profile).
process.on('SIGTERM', () => process.exit(0));
process.stdout.write(`${JSON.stringify({ port: streams?.port ?? null, rpcUrl, address })}\n`);
