/**
 * A stamper and the REST API over real HTTP in a child process, so a test can kill -9 it at a
 * chosen point of a batch (`crashAt`: claimed, reserved, persisted, broadcast). Argument: JSON
 * `{ databaseUrl, rpcUrl, config, crashAt? }`. Prints `ready <port>` when listening.
 */
import { buildApi } from '../../../api/app.js';
import { testConfig } from '../../../src/config.js';
import { createDb } from '../../../src/db/connect.js';
import { silentLogger } from '../../../src/log.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import type { StampPhase } from '../../../stamp/batcher.js';
import { startStamper } from '../../../stamp/stamper.js';

const arg = JSON.parse(process.argv[2]!) as { databaseUrl: string; rpcUrl: string; config: Record<string, unknown>; crashAt?: StampPhase };
const db = createDb(arg.databaseUrl, { max: 4 });
const log = silentLogger();
const stamper = await startStamper({
  db,
  log,
  config: testConfig(arg.config),
  network: 'regtest',
  node: new BitcoindClient({ url: arg.rpcUrl }),
  rebroadcastMs: 1000,
  onPhase: (phase) => {
    // SIGKILL: no exit handlers, no flush, exactly as a crash.
    if (phase === arg.crashAt) process.kill(process.pid, 'SIGKILL');
  },
});
const app = await buildApi({ db, log, network: 'regtest', stamps: stamper.service });
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
process.stdout.write(`ready ${typeof address === 'object' && address ? address.port : 0}\n`);
