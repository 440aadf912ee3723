/**
 * The server side of bench/electrum: a devnode, the indexer and the Electrum role in one
 * process, against the PostgreSQL the bench gives. Commands arrive as JSON lines on stdin and
 * are answered on stdout: `pay` (one transaction per 500 scripts paying each of them),
 * `mine` (one block; answers the epoch time at which the devnode had it), `mem` (RSS and heap
 * after a GC when exposed).
 */
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { createDb } from '../src/db/connect.js';
import { createLogger } from '../src/log.js';
import { loadConfig } from '../src/config.js';
import { BitcoindClient } from '../src/rpc/bitcoind.js';
import { startDevnode } from '../devnode/index.js';
import { startIndexer } from '../indexer/main.js';
import { startElectrum } from '../electrum/main.js';

type Args = { databaseUrl: string };
const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const config = loadConfig({
  ...process.env,
  LOG_LEVEL: 'warn',
  BITCOIN_NETWORK: 'regtest',
  ELECTRUM_TCP_PORT: '0',
  ELECTRUM_MAX_SUBSCRIPTIONS: '100000',
  ELECTRUM_RATE_LIMIT: '100000000',
  ELECTRUM_MAX_CONNECTIONS: '20000',
  // every bench connection comes from 127.0.0.1: the per-address cap would refuse the 51st
  ELECTRUM_MAX_CONNECTIONS_PER_IP: '20000',
  POLL_INTERVAL_MS: '100',
});
const log = createLogger({ level: 'warn', name: 'bench-electrum' });
const db = createDb(args.databaseUrl, { max: 8 });
const node = await startDevnode({ initialBlocks: 101 });
const indexer = await startIndexer({ config, log, db, databaseUrl: args.databaseUrl, rpcUrl: node.rpcUrl, zmqUrl: node.zmqUrl });
const indexed = async () => {
  while (indexer.status().tip.hash !== node.tip().hash) await new Promise((r) => setTimeout(r, 5));
};
await indexed();
const electrum = await startElectrum({ config, log, db, node: new BitcoindClient({ url: node.rpcUrl, log }) });
process.on('SIGTERM', () => process.exit(0));
const now = () => performance.timeOrigin + performance.now();
const reply = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);
reply({ port: electrum.tcpPort, pid: process.pid });

for await (const line of createInterface({ input: process.stdin })) {
  const cmd = JSON.parse(line) as { cmd: string; scripts?: string[]; sats?: number };
  if (cmd.cmd === 'pay') {
    const scripts = cmd.scripts ?? [];
    for (let i = 0; i < scripts.length; i += 500) {
      const [first, ...rest] = scripts.slice(i, i + 500).map((script) => ({ to: { script }, sats: BigInt(cmd.sats ?? 10_000) }));
      await node.wallet.send(first!.to, first!.sats, { outputs: rest });
    }
    reply({ at: now() });
  } else if (cmd.cmd === 'mine') {
    await node.mine(1);
    const at = now();
    await indexed();
    reply({ at, indexedAt: now() });
  } else if (cmd.cmd === 'mem') {
    (globalThis as { gc?: () => void }).gc?.();
    const m = process.memoryUsage();
    reply({ rss: m.rss, heapUsed: m.heapUsed, ...electrum.stats() });
  }
}
