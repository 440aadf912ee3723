/**
 * Child process of bench/sync and bench/live: the indexer role (indexer/main.ts startIndexer)
 * against a node and a database given as JSON in argv[2], run until the index reaches
 * `target` (then it stops and prints `RESULT {…}`), or with `follow` until SIGTERM. Its pino log
 * goes to stdout, where the parent reads `block applied` and the bulk-sync lines.
 * @module
 */
import { loadConfig } from '../src/config.js';
import { createDb } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createLogger } from '../src/log.js';
import { startIndexer } from '../indexer/main.js';

interface Args {
  databaseUrl: string;
  rpcUrl: string;
  zmqUrl: string | null;
  target: number;
  follow?: boolean;
  env?: Record<string, string>;
}

const args = JSON.parse(process.argv[2]!) as Args;
const config = loadConfig({
  ...process.env,
  BITCOIN_NETWORK: 'regtest',
  DATABASE_URL: args.databaseUrl,
  BITCOIND_RPC_URL: args.rpcUrl,
  ...(args.zmqUrl ? { BITCOIND_ZMQ_URL: args.zmqUrl } : {}),
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  ...args.env,
});
const log = createLogger({ level: config.logLevel });
const db = createDb(args.databaseUrl);
await migrateToLatest(db);
const t0 = performance.now();
const indexer = await startIndexer({ config, log, db, databaseUrl: args.databaseUrl, rpcUrl: args.rpcUrl, zmqUrl: args.zmqUrl });
let failed: unknown = null;
indexer.done.catch((err: unknown) => (failed = err));
if (args.follow) {
  process.on(
    'SIGTERM',
    () =>
      void indexer
        .stop()
        .then(() => db.destroy())
        .then(() => process.exit(0)),
  );
} else {
  for (;;) {
    const s = indexer.status();
    if (failed) throw failed;
    if (s.tip.height >= args.target && s.mode === 'following') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const ms = performance.now() - t0;
  const m = indexer.metrics();
  await indexer.stop();
  await db.destroy();
  process.stdout.write(
    `RESULT ${JSON.stringify({ ms, tip: indexer.status().tip.height, blocksApplied: m.blocksApplied, txsApplied: m.txsApplied, blocksUndone: m.blocksUndone, reorgs: m.reorgs })}\n`,
  );
}
