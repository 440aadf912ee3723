/**
 * A child process that runs the real indexer until it is killed, for the kill -9 tests
 * (RELIABILITY.md case 11). Configured by the environment: DATABASE_URL, BITCOIND_RPC_URL,
 * BITCOIND_ZMQ_URL and the indexer settings (src/config.ts). Prints one JSON line per event of
 * interest on stdout: `{"ready":true}` once started, `{"fatal":...}` if it stops by itself.
 */
import { loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/connect.js';
import { silentLogger } from '../../src/log.js';
import { startIndexer } from '../../indexer/main.js';

const config = loadConfig(process.env);
const url = config.databaseUrl!;
const db = createDb(url, { max: 4 });
const ix = await startIndexer({ config, log: silentLogger(), db, databaseUrl: url });
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
ix.done.catch((err: Error) => {
  process.stdout.write(`${JSON.stringify({ fatal: err.message })}\n`);
  process.exit(3);
});
