/**
 * A streams role in a child process, for crash tests that kill -9 it: `node --import tsx
 * child-role.ts '<json>'` with {role: 'streams' | 'worker' | 'both', databaseUrl, redisUrl,
 * prefix, config}. Prints `ready <pid>` on stdout once started, then runs until killed.
 */
import { createDb } from '../../../src/db/connect.js';
import { silentLogger } from '../../../src/log.js';
import { testConfig, type Config } from '../../../src/config.js';
import { startStreams, startWorker } from '../../../streams/main.js';

type Args = { role: 'streams' | 'worker' | 'both'; databaseUrl: string; redisUrl: string; prefix: string; config: Partial<Config> };

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const db = createDb(args.databaseUrl, { max: 4 });
const deps = {
  config: testConfig(args.config),
  log: silentLogger(),
  db,
  databaseUrl: args.databaseUrl,
  redisUrl: args.redisUrl,
  redisPrefix: args.prefix,
};
if (args.role !== 'worker') await startStreams(deps);
if (args.role !== 'streams') await startWorker(deps);
process.stdout.write(`ready ${process.pid}\n`);
