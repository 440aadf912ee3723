/**
 * `blockwire start [--role all|indexer,api,streams,worker]`: resolves the endpoints, starting
 * embedded ones for what is not configured — PostgreSQL under BLOCKWIRE_DATA_DIR when
 * DATABASE_URL is unset, a redis-server child when REDIS_URL is unset, and the devnode (the
 * regtest stand-in, said loudly) when no bitcoind is configured — then starts the roles
 * (compose.ts), prints where the API and the stream are, and stops gracefully on SIGTERM/SIGINT.
 * The children it starts are supervised (src/embedded/supervise.ts): one that dies is started
 * again on the same port and data, with backoff; the devnode runs inside this process.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../src/config.js';
import { createLogger, type Logger } from '../src/log.js';
import { createShutdown, installSignalHandlers } from '../src/lifecycle.js';
import { FatalError, isRetryable } from '../src/errors.js';
import { openDatabase, type DatabaseHandle } from '../src/db/open.js';
import { assertSchemaCurrent, migrateToLatest } from '../src/db/migrate.js';
import { startRedis, type RedisServer } from '../src/embedded/redis.js';
import { supervise } from '../src/embedded/supervise.js';
import { createApiKey } from '../src/auth/keys.js';
import { encodeWif } from '../src/bitcoin/wif.js';
import type { Devnode } from '../devnode/index.js';
import { BitcoindClient } from '../src/rpc/bitcoind.js';
import { CONCRETE_ROLES, hostForUrl, parseRoles, startBlockwire, type Blockwire, type ConcreteRole } from './compose.js';
import { preflight } from '../src/ops/preflight.js';
import { createMetrics, type Metrics } from '../src/ops/metrics.js';
import { startOpsServer } from '../src/ops/ops-server.js';

const USAGE = `usage: blockwire start [--role all|indexer,api,streams,worker]

Starts Blockwire. Configuration comes from the environment (docs/configuration.md). With nothing
configured it runs everything on one machine: an embedded PostgreSQL and a redis-server child
(data under BLOCKWIRE_DATA_DIR, default .blockwire) and, when no bitcoind is configured, the
built-in regtest stand-in (devnode) mining a block every few seconds.
`;

/** Electrum's customary ports (plain TCP, TLS), used by the quick start. */
const QUICKSTART_ELECTRUM_TCP = 50001;
const QUICKSTART_ELECTRUM_TLS = 50002;

const DEVNODE_BANNER = [
  '************************************************************************',
  '*  NO BITCOIND CONFIGURED: using the built-in regtest stand-in (devnode) *',
  '*  This is NOT Bitcoin Core. Set BITCOIND_RPC_URL and BITCOIND_ZMQ_URL  *',
  '*  to index a real node.                                                *',
  '************************************************************************',
];

export async function run(argv: string[]): Promise<number> {
  let roles: Set<ConcreteRole>;
  try {
    const { values } = parseArgs({ args: argv, options: { role: { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' } }, strict: true });
    if (values.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    roles = parseRoles(values.role ?? ['all']);
  } catch (err) {
    process.stderr.write(`blockwire start: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }

  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`blockwire start: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const checked = preflight(config, roles);
  if (checked.problems.length > 0) {
    process.stderr.write(`blockwire start: invalid configuration:\n  ${checked.problems.join('\n  ')}\n`);
    return 2;
  }
  const log = createLogger({ level: config.logLevel });
  for (const w of checked.warnings) log.warn(w);
  const shutdown = createShutdown(log);
  // A graceful stop that hangs (a peer that never answers) must not keep the process forever.
  shutdown.signal.addEventListener('abort', () => {
    setTimeout(() => {
      log.error({ timeoutMs: config.shutdownTimeoutMs }, 'graceful stop took too long (SHUTDOWN_TIMEOUT_MS): exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
  });
  let exitCode = 0;
  const finished = new Promise<number>((resolveExit) => {
    installSignalHandlers(shutdown, (code) => resolveExit(code || exitCode));
  });

  try {
    const started = await startEverything(config, log, roles, shutdown.add.bind(shutdown), () => shutdown.stopping);
    printWhereToGo(started, roles);
    // A role that stops on its own (a FatalError in the indexer) stops the process non-zero.
    started.blockwire.indexer?.done.catch((err: unknown) => {
      log.fatal({ err }, 'indexer stopped');
      exitCode = 1;
      void shutdown.run('indexer failed').then(() => process.exit(1));
    });
  } catch (err) {
    log.fatal({ err }, 'blockwire failed to start');
    await shutdown.run('start failed');
    return err instanceof FatalError || err instanceof ConfigError ? 1 : 1;
  }
  return finished;
}

type Started = {
  blockwire: Blockwire;
  devnode: Devnode | undefined;
  apiKey: string | undefined;
  apiKeyFile: string | undefined;
  stampAddress: string | undefined;
  electrumHost: string;
};

async function startEverything(config: Config, log: Logger, roles: Set<ConcreteRole>, onStop: (name: string, hook: () => Promise<void>) => void, stopping: () => boolean): Promise<Started> {
  const dataDir = resolve(config.dataDir);
  const embeddedDefaults = !config.databaseUrl;
  const needsNode = roles.has('indexer') || roles.has('api') || roles.has('electrum');
  const needsRedis = roles.has('api') || roles.has('streams') || roles.has('worker');

  // 1. The node: the configured bitcoind, or the devnode.
  let devnode: Devnode | undefined;
  let rpcUrl = config.bitcoindRpcUrl;
  let zmqUrl: string | null | undefined = config.bitcoindZmqUrl;
  const nodeConfigured = Boolean(config.bitcoindRpcUrl || config.bitcoindCookieFile);
  if (needsNode && !nodeConfigured) {
    for (const line of DEVNODE_BANNER) log.warn(line);
    const { startDevnode } = await import('../devnode/index.js');
    await mkdir(dataDir, { recursive: true });
    devnode = await startDevnode({
      dataDir: join(dataDir, 'devnode'),
      rpcPort: config.devnodeRpcPort,
      zmqPort: config.devnodeZmqPort,
      ...(config.devnodeMineEvery > 0 ? { mineEvery: config.devnodeMineEvery, samplePayments: true } : {}),
      log: log.child({ component: 'devnode' }),
    });
    const node = devnode;
    onStop('devnode', () => node.stop());
    // Coinbase outputs mature after 100 blocks: give the stand-in's wallet coins to pay with.
    const height = devnode.tip().height;
    if (height < 101) await devnode.mine(101 - height);
    rpcUrl = devnode.rpcUrl;
    zmqUrl = devnode.zmqUrl;
    log.warn({ rpc: devnode.rpcUrl.replace(/\/\/[^@]*@/, '//'), zmq: devnode.zmqUrl }, 'devnode (regtest stand-in, not bitcoind) running');
  } else if (needsNode && rpcUrl) {
    await waitForNode(rpcUrl, config, log);
  }

  // 2. PostgreSQL.
  const handle: DatabaseHandle = await openDatabase(config, { max: 20, onLog: (l) => log.debug({ component: 'postgres' }, l.trim()) });
  onStop('database', () => handle.close());
  if (handle.embedded) {
    log.info({ dataDir: handle.embedded.dataDir, port: handle.embedded.port }, 'embedded PostgreSQL started');
    const supervisor = supervise(handle.embedded, { name: 'embedded PostgreSQL', log });
    onStop('postgres-supervisor', async () => supervisor.stop());
  }
  if (CONCRETE_ROLES.every((r) => roles.has(r)) || embeddedDefaults) {
    const ran = await migrateToLatest(handle.db);
    if (ran.length) log.info({ migrations: ran }, 'migrations applied');
  } else {
    await assertSchemaCurrent(handle.db);
  }

  // 3. Redis.
  let redisUrl = config.redisUrl;
  if (needsRedis && !redisUrl) {
    const redis: RedisServer = await startRedis({ dir: join(dataDir, 'redis'), persist: true, onLog: (l) => log.debug({ component: 'redis' }, l.trim()) });
    onStop('redis', () => redis.stop());
    const supervisor = supervise(redis, { name: 'redis-server', log });
    onStop('redis-supervisor', async () => supervisor.stop());
    redisUrl = redis.url;
    log.info({ url: redis.url }, 'redis-server child started');
  }

  // 4. Quick-start conveniences, only with the devnode: a stamping wallet it funds.
  let effective = config;
  if (devnode && !config.stampWalletWif && !config.stampWalletDescriptor && roles.has('api')) {
    const wif = await loadOrCreate(join(dataDir, 'quickstart-stamp.wif'), () => encodeWif(randomBytes(32), 'regtest'));
    effective = Object.freeze({ ...config, stampWalletWif: wif, network: config.network ?? 'regtest' });
  }

  // The quick start serves Electrum wallets on the protocol's usual ports.
  if (devnode && embeddedDefaults && roles.has('electrum') && config.electrumTcpPort === undefined && config.electrumTlsPort === undefined) {
    effective = Object.freeze({ ...effective, electrumTcpPort: QUICKSTART_ELECTRUM_TCP, electrumTlsPort: QUICKSTART_ELECTRUM_TLS });
  }

  const metrics: Metrics = createMetrics({ db: handle.db, log, roles: [...roles] });
  const current: { bw?: Blockwire } = {};
  if (config.metricsPort !== undefined) {
    const ops = await startOpsServer({
      host: config.host,
      port: config.metricsPort,
      metrics,
      log,
      stopping,
      health: () => ({ roles: [...roles], started: current.bw !== undefined, indexer: current.bw?.indexer?.status() }),
    });
    onStop('ops-server', () => ops.close());
  }
  const blockwire = await startBlockwire({
    config: effective,
    log,
    roles,
    db: handle.db,
    databaseUrl: handle.url,
    redisPrefix: config.redisPrefix,
    metrics,
    ...(redisUrl ? { redisUrl } : {}),
    ...(rpcUrl ? { rpcUrl } : {}),
    ...(zmqUrl !== undefined ? { zmqUrl } : {}),
  });
  onStop('blockwire', () => blockwire.stop());
  current.bw = blockwire;
  // Runs first on SIGTERM: /healthz already answers 503; keep serving while balancers notice.
  if (config.shutdownDrainMs > 0) {
    onStop('drain', async () => {
      log.info({ ms: config.shutdownDrainMs }, 'draining: still serving while load balancers stop sending (SHUTDOWN_DRAIN_MS)');
      await new Promise((r) => setTimeout(r, config.shutdownDrainMs));
    });
  }

  // With the devnode, wait until the index has caught up so the first curl answers at once.
  if (devnode && blockwire.indexer) await waitForIndex(devnode, blockwire, log);

  let stampAddress: string | undefined;
  if (devnode && blockwire.stamper) {
    stampAddress = blockwire.stamper.addresses[0];
    const status = await blockwire.stamper.status();
    if (status.balance.confirmed === 0 && status.balance.spendable === 0) {
      for (const a of blockwire.stamper.addresses) await devnode.wallet.send(a, 5_000_000n);
      await devnode.mine(1);
      if (blockwire.indexer) await waitForIndex(devnode, blockwire, log);
    }
  }

  // 5. With embedded defaults, a key to try the API with, kept in the data directory.
  let apiKey: string | undefined;
  let apiKeyFile: string | undefined;
  if (embeddedDefaults && roles.has('api')) {
    apiKeyFile = join(dataDir, 'quickstart-api-key');
    apiKey = await loadOrCreate(apiKeyFile, async () => (await createApiKey(handle.db, { name: 'quickstart' })).key);
  }
  return { blockwire, devnode, apiKey, apiKeyFile, stampAddress, electrumHost: config.electrumHost };
}

/** Resolves once the index holds the devnode's tip (logging progress), or after 5 minutes. */
async function waitForIndex(devnode: Devnode, blockwire: Blockwire, log: Logger): Promise<void> {
  const deadline = Date.now() + 300_000;
  let lastLog = 0;
  while (Date.now() < deadline) {
    const status = blockwire.indexer!.status();
    if (status.tip.hash === devnode.tip().hash) return;
    if (Date.now() - lastLog > 5000) {
      lastLog = Date.now();
      log.info({ index: status.tip.height, node: devnode.tip().height }, 'waiting for the index to catch up');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Reads a secret kept in the data directory, creating it (mode 0600) on first use. */
async function loadOrCreate(file: string, create: () => string | Promise<string>): Promise<string> {
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const value = await create();
  await writeFile(file, `${value}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return value;
}

/** Waits until the configured node answers, logging while it does not (it may be starting). */
async function waitForNode(rpcUrl: string, config: Config, log: Logger): Promise<void> {
  const client = new BitcoindClient({ url: rpcUrl, ...(config.bitcoindCookieFile ? { cookieFile: config.bitcoindCookieFile } : {}), log });
  for (let attempt = 0; ; attempt++) {
    try {
      const info = await client.call<{ chain: string; blocks: number }>('getblockchaininfo', []);
      log.info({ node: client.target, chain: info.chain, blocks: info.blocks }, 'bitcoind reachable');
      return;
    } catch (err) {
      if (!isRetryable(err) && !(err instanceof Error && /-28|loading|warm/i.test(err.message))) throw err;
      if (attempt % 10 === 0) log.warn({ node: client.target, err: (err as Error).message }, 'waiting for bitcoind');
      await new Promise((r) => setTimeout(r, Math.min(5000, 500 * (attempt + 1))));
    }
  }
}

function printWhereToGo(s: Started, roles: Set<ConcreteRole>): void {
  const out: string[] = [''];
  if (s.devnode) out.push('Blockwire is running on the built-in regtest stand-in (devnode), NOT on Bitcoin Core.');
  else out.push('Blockwire is running.');
  if (s.blockwire.apiUrl) out.push(`  REST API   ${s.blockwire.apiUrl}/v1/   (OpenAPI: ${s.blockwire.apiUrl}/openapi.json, health: ${s.blockwire.apiUrl}/healthz)`);
  if (s.blockwire.streamUrl) out.push(`  stream     ${s.blockwire.streamUrl}`);
  const e = s.blockwire.electrum;
  if (e) {
    const host = hostForUrl(s.electrumHost);
    const parts = [e.tcpPort !== undefined && `tcp ${host}:${e.tcpPort}`, e.tlsPort !== undefined && `tls ${host}:${e.tlsPort}`].filter(Boolean).join('  ');
    out.push(`  electrum   ${parts}${e.tlsCertFile ? `   (certificate: ${e.tlsCertFile})` : ''}`);
  }
  if (s.devnode) out.push(`  devnode    ${s.devnode.rpcUrl}  zmq ${s.devnode.zmqUrl}`);
  if (s.stampAddress) out.push(`  stamping   wallet ${s.stampAddress} (funded by the devnode)`);
  if (roles.has('api') && s.blockwire.apiUrl) {
    const key = s.apiKey ?? '<API_KEY>';
    if (s.apiKey) out.push(`  API key    ${s.apiKey}   (kept in ${s.apiKeyFile})`);
    else out.push('  API key    create one with: blockwire keys create --name NAME');
    const base = s.blockwire.apiUrl.replace(/\/\/([^/:]+)/, (_, h: string) => `//${hostForUrl(h)}`);
    out.push('', 'Try:', `  curl -H 'apiKey: ${key}' ${base}/v1/blockchain`);
    if (s.devnode) {
      const addr = s.devnode.wallet.address('p2wpkh');
      out.push(`  curl -H 'apiKey: ${key}' ${base}/v1/addresses/${addr}/history`);
    }
  }
  if (e?.tcpPort !== undefined) out.push(`  electrum ${s.devnode ? '--regtest ' : ''}--oneserver --server ${hostForUrl(s.electrumHost)}:${e.tcpPort}:t   (docs/electrum.md)`);
  out.push('');
  process.stdout.write(`${out.join('\n')}\n`);
}
