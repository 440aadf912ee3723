/**
 * A child process that runs the real indexer until it is killed, for the kill -9 tests
 *. Configured by the environment: DATABASE_URL, BITCOIND_RPC_URL,
 * BITCOIND_ZMQ_URL and the indexer settings (src/config.ts). It loads its modules, prints
 * `{"loaded":true}` and waits for a line on stdin before it starts (so the parent can spawn the
 * next victim while it checks the last one); then `{"ready":true}`, or `{"fatal":...}` if it
 * stops by itself.
 */
import { createInterface } from 'node:readline';
import { loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/connect.js';
import { silentLogger } from '../../src/log.js';
import { startIndexer } from '../../indexer/main.js';
import { CHILD_APP } from './chain-crash.js';

process.stdout.write(`${JSON.stringify({ loaded: true })}\n`);
await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once('line', () => resolve()));
const config = loadConfig(process.env);
const url = config.databaseUrl!;
const db = createDb(url, { max: 4, applicationName: CHILD_APP });
const ix = await startIndexer({ config, log: silentLogger(), db, databaseUrl: url });
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
ix.done.catch((err: Error) => {
  process.stdout.write(`${JSON.stringify({ fatal: err.message })}\n`);
  process.exit(3);
});
