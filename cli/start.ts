/**
 * `blockwire start [--role all|indexer,api,streams,worker,electrum]`: resolves the endpoints, starting
 * embedded ones for what is not configured — PostgreSQL under BLOCKWIRE_DATA_DIR when
 * DATABASE_URL is unset, a redis-server child when REDIS_URL is unset, and, when no bitcoind is
 * configured, a regtest node: a real bitcoind child when Bitcoin Core is installed
 * (quickstart-bitcoind.ts), else the devnode (the stand-in, said loudly) — then starts the roles
 * (compose.ts), prints where the API and the stream are, and stops gracefully on SIGTERM/SIGINT.
 * The children it starts are supervised (cli/embedded/supervise.ts): one that dies is started
 * again on the same port and data, with backoff (bitcoind included); the devnode runs inside
 * this process.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, settings, type Config } from '../src/config.js';
import { createLogger, type Logger } from '../src/log.js';
import { createShutdown, installSignalHandlers } from './lifecycle.js';
import { rememberQuickStartNode } from './quickstart-node.js';
import { InstanceRunningError, lockDataDir, type InstanceLock } from './instance-lock.js';
import { checkPorts, type PortClaim, type ResolvedPort } from './ops/ports.js';
import { checkDependencies, dependencyTargets, describeDependencyFailures } from './ops/dependencies.js';
import { DependencyError, explainDependencyFailure } from './ops/dependency-error.js';
import { openDatabase, type DatabaseHandle } from './open-database.js';
import { assertSchemaCurrent, migrateToLatest } from '../src/db/migrate.js';
import { startRedis, type RedisServer } from './embedded/redis.js';
import { redisTarget } from '../src/net/redis.js';
import { supervise } from './embedded/supervise.js';
import { createApiKey } from '../src/auth/keys.js';
import { encodeWif } from '../src/bitcoin/wif.js';
import type { Devnode } from '../devnode/index.js';
import { findBitcoind } from './embedded/bitcoind.js';
import { startQuickStartBitcoind, type QuickStartBitcoind } from './quickstart-bitcoind.js';
import { BitcoindClient } from '../src/rpc/bitcoind.js';
import { CONCRETE_ROLES, hostForUrl, parseRoles, startBlockwire, type Blockwire, type ConcreteRole } from './compose.js';
import { preflight } from './ops/preflight.js';
import { assertIndexOnNodeChain, OtherChainError } from './ops/chain-binding.js';
import { createMetrics, type Metrics } from './ops/metrics.js';
import { startOpsServer } from './ops/ops-server.js';

const USAGE = `usage: blockwire start [--role all|indexer,api,streams,worker,electrum]

Starts Blockwire. Configuration comes from the environment (docs/configuration.md). With nothing
configured it runs everything on one machine: an embedded PostgreSQL and a redis-server child
(data under BLOCKWIRE_DATA_DIR, default .blockwire) and, when no bitcoind is configured, a
regtest node mining a block every few seconds: Bitcoin Core when installed (BITCOIND_BIN, or
bitcoind on the PATH), else the built-in stand-in (devnode); BLOCKWIRE_QUICKSTART_NODE chooses.
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

/** The node the quick start runs when none is configured. */
type QuickNode = { kind: 'bitcoind'; bin: string } | { kind: 'devnode' };

/** BLOCKWIRE_QUICKSTART_NODE: bitcoind when found (or required), else the devnode. Throws a message for the user. */
function chooseQuickNode(config: Config): QuickNode {
  if (config.quickStartNode === 'devnode') return { kind: 'devnode' };
  const bin = findBitcoind(config.bitcoindBin);
  if (bin) return { kind: 'bitcoind', bin };
  if (config.quickStartNode === 'bitcoind')
    throw new Error(
      `${settings.quickStartNode.env}=bitcoind but no bitcoind was found: set ${settings.bitcoindBin.env} or put Bitcoin Core's bitcoind on the PATH`,
    );
  return { kind: 'devnode' };
}

export async function run(argv: string[]): Promise<number> {
  let roles: Set<ConcreteRole>;
  try {
    const { values } = parseArgs({
      args: argv,
      options: { role: { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    });
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
  // Every port this process will listen on, before anything starts. With nothing configured
  // (the quick start) a busy default is replaced by a free port; a port the user chose is not.
  const quickStart = !config.databaseUrl;
  const nodeConfigured = Boolean(config.bitcoindRpcUrl || config.bitcoindCookieFile);
  let quickNode: QuickNode | undefined;
  if (!nodeConfigured && needsNodeFor(roles)) {
    try {
      quickNode = chooseQuickNode(config);
    } catch (err) {
      process.stderr.write(`blockwire start: ${(err as Error).message}\n`);
      return 2;
    }
  }
  // What keeps its files in the data directory (the quick start's node, embedded PostgreSQL or
  // Redis) runs once per directory: a second start refuses now, naming the first, and changes nothing.
  let lock: InstanceLock | undefined;
  if (quickStart || quickNode || (needsRedisFor(roles) && !redisTarget(config))) {
    try {
      lock = await lockDataDir(resolve(config.dataDir));
    } catch (err) {
      if (!(err instanceof InstanceRunningError)) throw err;
      process.stderr.write(`blockwire start: ${err.message}\n`);
      return 1;
    }
  }
  const unlocked = async (code: number) => {
    await lock?.release();
    return code;
  };
  // The quick start serves Electrum wallets on the protocol's usual ports (free ones when busy).
  if (
    quickStart &&
    !nodeConfigured &&
    roles.has('electrum') &&
    config.electrumTcpPort === undefined &&
    config.electrumTlsPort === undefined
  ) {
    config = Object.freeze({ ...config, electrumTcpPort: QUICKSTART_ELECTRUM_TCP, electrumTlsPort: QUICKSTART_ELECTRUM_TLS });
  }
  const ports = await checkPorts(portClaims(config, roles, quickNode?.kind === 'devnode'), { takeFreeWhenDefault: quickStart });
  if (ports.problems.length > 0) {
    process.stderr.write(`blockwire start: ports unavailable:\n  ${ports.problems.join('\n  ')}\n`);
    return unlocked(2);
  }
  const replaced = ports.ports.filter((p) => p.replaced);
  for (const p of replaced) {
    const key = PORT_SETTINGS[p.setting];
    if (key) config = Object.freeze({ ...config, [key]: 0 });
  }
  // The quick start is for trying things on one machine: webhooks to a receiver on this machine
  // (loopback, private addresses) are allowed unless the user said otherwise or runs production.
  const hooksAllowedByQuickStart =
    quickStart && !config.allowPrivateHooks && !isSet(settings.allowPrivateHooks.env) && config.nodeEnv !== 'production';
  if (hooksAllowedByQuickStart) config = Object.freeze({ ...config, allowPrivateHooks: true });

  const log = createLogger({ level: config.logLevel, format: config.logFormat });
  // First, which node this runs on.
  if (quickNode?.kind === 'devnode') for (const line of DEVNODE_BANNER) log.warn(line);
  if (quickNode?.kind === 'bitcoind')
    log.info(
      { bitcoind: quickNode.bin, datadir: join(resolve(config.dataDir), 'bitcoind') },
      `no node configured: running Bitcoin Core (${quickNode.bin}) as a regtest node for the quick start`,
    );
  for (const w of checked.warnings) log.warn(w);
  for (const p of replaced)
    log.warn(
      { setting: p.setting },
      `${p.setting} ${p.requested} is in use: ${p.what} takes a free port instead (set ${p.setting} to choose one)`,
    );
  if (hooksAllowedByQuickStart)
    log.info(
      `quick start: webhooks to loopback and private addresses are allowed (set ${settings.allowPrivateHooks.env}=0 to refuse them)`,
    );

  // The configured dependencies, probed all at once: every one that is wrong is named now.
  const deps = await checkDependencies(dependencyTargets(config, roles));
  if (deps.failures.length > 0) {
    process.stderr.write(`blockwire start: ${describeDependencyFailures(deps.failures)}\n`);
    return unlocked(1);
  }
  const shutdown = createShutdown(log);
  // Registered first, so released last: the directory is free once everything in it has stopped.
  if (lock) shutdown.add('data-directory lock', () => lock.release());
  // A graceful stop that hangs (a peer that never answers) must not keep the process forever.
  shutdown.signal.addEventListener('abort', () => {
    setTimeout(() => {
      log.error(
        { timeoutMs: config.shutdownTimeoutMs, waitingFor: shutdown.pending },
        'graceful stop took too long (SHUTDOWN_TIMEOUT_MS): exiting',
      );
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
  });
  let exitCode = 0;
  let interruptedStart = false;
  const finished = new Promise<number>((resolveExit) => {
    installSignalHandlers(shutdown, (code) => resolveExit(code || exitCode));
  });

  try {
    // The quick start's default ports that were free at the check: one taken before it is bound
    // (another instance starting beside this one) is replaced by a free port then.
    const takeable: PortTaker = { claims: ports.ports.filter((p) => quickStart && !p.explicit && !p.replaced && p.port !== 0), replaced };
    const starting = startEverything(
      config,
      log,
      roles,
      shutdown.add.bind(shutdown),
      shutdown.signal,
      deps.nodeNotYet,
      quickNode,
      takeable,
    );
    // SIGTERM while starting aborts the start-up; the hooks run once it has settled.
    shutdown.startingUntil(starting);
    const started = await starting;
    interruptedStart = shutdown.stopping;
    if (!shutdown.stopping) printWhereToGo(started, roles, { hooksAllowed: hooksAllowedByQuickStart, replaced });
    if (started.blockwire.apiUrl) await lock?.announce(started.blockwire.apiUrl);
    if (!shutdown.stopping) log.info({ roles: [...roles] }, 'started');
    // A role that stops on its own (a FatalError in the indexer) stops the process non-zero.
    started.blockwire.indexer?.done.catch((err: unknown) => {
      log.fatal({ err }, 'indexer stopped');
      exitCode = 1;
      void shutdown.run('indexer failed').then(() => process.exit(1));
    });
  } catch (err) {
    // Ctrl-C (or SIGTERM) while starting: stop what started, promptly, without a failure.
    if (shutdown.stopping && err instanceof Interrupted) {
      await shutdown.run('interrupted while starting');
      return shutdown.signal.reason === 'SIGINT' ? 130 : 0;
    }
    log.fatal({ err }, err instanceof DependencyError || err instanceof OtherChainError ? err.message : 'blockwire failed to start');
    await shutdown.run('start failed');
    return 1;
  }
  // Ctrl-C while starting is 130 however far the start-up got.
  const stopped = await finished;
  const code = stopped === 0 && interruptedStart && shutdown.signal.reason === 'SIGINT' ? 130 : stopped;
  // Everything has stopped ("stopped" is logged): nothing is left to keep the process. When
  // something still does (a timer or socket a role forgot), say what, and exit anyway.
  setTimeout(() => {
    log.warn({ waitingFor: process.getActiveResourcesInfo() }, 'stopped, but the process is still held by what is listed: exiting');
    process.exit(code);
  }, STOPPED_EXIT_GRACE_MS).unref();
  return code;
}

/** How long the process may live after "stopped" before it says what holds it and exits. */
const STOPPED_EXIT_GRACE_MS = 1000;

/** The quick start's default ports that were free at the check, and the list of those replaced (for the banner). */
type PortTaker = { claims: ResolvedPort[]; replaced: ResolvedPort[] };

/** The port of an EADDRINUSE error: net's `port`, or the end of zeromq's `address`. */
function takenPort(err: unknown): number | undefined {
  const e = err as { code?: unknown; port?: unknown; address?: unknown };
  if (e?.code !== 'EADDRINUSE') return undefined;
  if (typeof e.port === 'number') return e.port;
  const m = /:(\d+)$/.exec(String(e.address ?? ''));
  return m ? Number(m[1]) : undefined;
}

/**
 * Runs a step that listens (it cleans up after itself when it fails). When it fails because one of
 * the quick start's default ports was taken after the check — another instance started beside
 * this one — that port is replaced by a free one (0), said in the log and the banner, and the step
 * runs again. Any other failure, or a port the user chose, is thrown as is.
 */
async function onFreePortWhenTaken<T>(
  taker: PortTaker,
  config: Config,
  log: Logger,
  step: (config: Config) => Promise<T>,
): Promise<{ value: T; config: Config }> {
  for (;;) {
    try {
      return { value: await step(config), config };
    } catch (err) {
      const port = takenPort(err);
      const claim = taker.claims.find((c) => c.port === port);
      const key = claim && PORT_SETTINGS[claim.setting];
      if (!claim || !key || config[key] !== port) throw err;
      taker.claims.splice(taker.claims.indexOf(claim), 1);
      taker.replaced.push({ ...claim, port: 0, replaced: true });
      log.warn(
        { setting: claim.setting },
        `${claim.setting} ${claim.requested} was taken while starting (another instance beside this one?): ${claim.what} takes a free port instead (set ${claim.setting} to choose one)`,
      );
      config = Object.freeze({ ...config, [key]: 0 });
    }
  }
}

/** Config keys of the ports the quick start may replace, by setting name. */
const PORT_SETTINGS: Record<string, keyof Config> = {
  [settings.port.env]: 'port',
  [settings.streamPort.env]: 'streamPort',
  [settings.devnodeRpcPort.env]: 'devnodeRpcPort',
  [settings.devnodeZmqPort.env]: 'devnodeZmqPort',
  [settings.electrumTcpPort.env]: 'electrumTcpPort',
  [settings.electrumTlsPort.env]: 'electrumTlsPort',
};

const isSet = (env: string) => process.env[env] !== undefined && process.env[env] !== '';
const needsNodeFor = (roles: Set<ConcreteRole>) => roles.has('indexer') || roles.has('api') || roles.has('electrum');
const needsRedisFor = (roles: Set<ConcreteRole>) => roles.has('api') || roles.has('streams') || roles.has('worker');

/** The ports `start` listens on for these roles, each with the setting that chooses it. */
function portClaims(config: Config, roles: Set<ConcreteRole>, runsDevnode: boolean): PortClaim[] {
  const claims: PortClaim[] = [];
  const claim = (key: keyof typeof settings, what: string, host: string, port: number | undefined) => {
    if (port === undefined) return;
    claims.push({ setting: settings[key].env, what, host, port, explicit: isSet(settings[key].env) });
  };
  if (roles.has('api')) claim('port', 'the REST API and stream', config.host, config.port);
  else if (roles.has('streams')) claim('streamPort', 'the WebSocket stream', config.host, config.streamPort);
  claim('metricsPort', 'the metrics and health listener', config.host, config.metricsPort);
  if (roles.has('electrum')) {
    claim('electrumTcpPort', 'the Electrum server (TCP)', config.electrumHost, config.electrumTcpPort);
    claim('electrumTlsPort', 'the Electrum server (TLS)', config.electrumHost, config.electrumTlsPort);
  }
  if (runsDevnode) {
    claim('devnodeRpcPort', "the regtest stand-in's RPC", '127.0.0.1', config.devnodeRpcPort);
    claim('devnodeZmqPort', "the regtest stand-in's ZMQ", '127.0.0.1', config.devnodeZmqPort);
  }
  return claims;
}

type Started = {
  blockwire: Blockwire;
  devnode: Devnode | undefined;
  bitcoind: QuickStartBitcoind | undefined;
  /** An address with payments, for the banner's history example. */
  exampleAddress: string | undefined;
  apiKey: string | undefined;
  apiKeyFile: string | undefined;
  stampAddress: string | undefined;
  electrumHost: string;
};

async function startEverything(
  config: Config,
  log: Logger,
  roles: Set<ConcreteRole>,
  onStop: (name: string, hook: () => Promise<void>, takesMs?: number) => void,
  signal: AbortSignal,
  nodeNotYet: DependencyError | undefined,
  quickNode: QuickNode | undefined,
  takeable: PortTaker,
): Promise<Started> {
  const stopping = () => signal.aborted;
  const dataDir = resolve(config.dataDir);
  const embeddedDefaults = !config.databaseUrl;
  const needsRedis = roles.has('api') || roles.has('streams') || roles.has('worker');

  // 1. The node: the configured bitcoind, a regtest bitcoind child, or the devnode.
  let devnode: Devnode | undefined;
  let bitcoind: QuickStartBitcoind | undefined;
  let rpcUrl = config.bitcoindRpcUrl;
  let zmqUrl: string | null | undefined = config.bitcoindZmqUrl;
  if (quickNode?.kind === 'bitcoind') {
    await mkdir(dataDir, { recursive: true });
    const node = await startQuickStartBitcoind({ bin: quickNode.bin, dataDir, mineEvery: config.devnodeMineEvery, log });
    bitcoind = node;
    onStop('bitcoind', () => node.stop());
    const supervisor = supervise(node.node, { name: 'bitcoind', log });
    onStop('bitcoind-supervisor', async () => supervisor.stop());
    rpcUrl = node.node.rpcUrl;
    zmqUrl = node.node.zmqUrl;
    await rememberQuickStartNode(dataDir, { rpcUrl, kind: 'bitcoind' });
    log.info(
      { version: node.node.version, rpc: rpcUrl.replace(/\/\/[^@]*@/, '//'), zmq: zmqUrl, datadir: node.node.datadir },
      'bitcoind (Bitcoin Core, regtest) running',
    );
  } else if (quickNode?.kind === 'devnode') {
    const { startDevnode } = await import('../devnode/index.js');
    await mkdir(dataDir, { recursive: true });
    const started = await onFreePortWhenTaken(takeable, config, log, (c) =>
      startDevnode({
        dataDir: join(dataDir, 'devnode'),
        rpcPort: c.devnodeRpcPort,
        zmqPort: c.devnodeZmqPort,
        ...(c.devnodeMineEvery > 0 ? { mineEvery: c.devnodeMineEvery, samplePayments: true } : {}),
        log: log.child({ component: 'devnode' }),
      }),
    );
    config = started.config;
    devnode = started.value;
    const node = devnode;
    onStop('devnode', () => node.stop());
    // Coinbase outputs mature after 100 blocks: give the stand-in's wallet coins to pay with.
    const height = devnode.tip().height;
    if (height < 101) await devnode.mine(101 - height);
    rpcUrl = devnode.rpcUrl;
    zmqUrl = devnode.zmqUrl;
    await rememberQuickStartNode(dataDir, { rpcUrl: devnode.rpcUrl, kind: 'devnode' });
    log.warn({ rpc: devnode.rpcUrl.replace(/\/\/[^@]*@/, '//'), zmq: devnode.zmqUrl }, 'devnode (regtest stand-in, not bitcoind) running');
  } else if (rpcUrl && nodeNotYet && needsNodeFor(roles)) {
    await waitForNode(rpcUrl, config, log, signal, nodeNotYet);
  }

  goOn(signal);
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

  goOn(signal);
  // The index belongs to the chain it followed: another node's chain is refused, not undone.
  if (roles.has('indexer') && rpcUrl) {
    const node = new BitcoindClient({ url: rpcUrl, ...(config.bitcoindCookieFile ? { cookieFile: config.bitcoindCookieFile } : {}), log });
    await assertIndexOnNodeChain(handle.db, node, handle.embedded ? `data directory ${dataDir}` : 'DATABASE_URL');
  }

  goOn(signal);
  // 3. Redis.
  let redisUrl = redisTarget(config);
  if (needsRedis && !redisUrl) {
    const redis: RedisServer = await startRedis({
      dir: join(dataDir, 'redis'),
      persist: true,
      onLog: (l) => log.debug({ component: 'redis' }, l.trim()),
    });
    onStop('redis', () => redis.stop());
    const supervisor = supervise(redis, { name: 'redis-server', log });
    onStop('redis-supervisor', async () => supervisor.stop());
    redisUrl = redis.url;
    log.info({ url: redis.url }, 'redis-server child started');
  }

  goOn(signal);
  // 4. Quick-start conveniences, only with the node it runs: a stamping wallet it funds.
  let effective = config;
  const quickChain = devnode ? devnodeChain(devnode) : bitcoind;
  if (quickChain && !config.stampWalletWif && !config.stampWalletDescriptor && roles.has('api')) {
    const wif = await loadOrCreate(join(dataDir, 'quickstart-stamp.wif'), () => encodeWif(randomBytes(32), 'regtest'));
    effective = Object.freeze({ ...config, stampWalletWif: wif, network: config.network ?? 'regtest' });
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
  goOn(signal);
  const { value: blockwire } = await onFreePortWhenTaken(takeable, effective, log, (c) =>
    startBlockwire({
      config: c,
      log,
      roles,
      db: handle.db,
      databaseUrl: handle.url,
      redisPrefix: config.redisPrefix,
      metrics,
      ...(redisUrl ? { redisUrl } : {}),
      ...(rpcUrl ? { rpcUrl } : {}),
      ...(zmqUrl !== undefined ? { zmqUrl } : {}),
    }),
  );
  onStop('blockwire', () => blockwire.stop());
  current.bw = blockwire;
  // Runs first on SIGTERM: /healthz already answers 503; keep serving while balancers notice.
  if (config.shutdownDrainMs > 0) {
    onStop(
      'drain',
      async () => {
        log.info({ ms: config.shutdownDrainMs }, 'draining: still serving while load balancers stop sending (SHUTDOWN_DRAIN_MS)');
        await new Promise((r) => setTimeout(r, config.shutdownDrainMs));
      },
      config.shutdownDrainMs,
    );
  }

  // With the node it runs, wait until the index has caught up so the first curl answers at once.
  if (quickChain && blockwire.indexer) await waitForIndex(quickChain, blockwire, log, signal);

  let stampAddress: string | undefined;
  if (quickChain && blockwire.stamper) {
    stampAddress = blockwire.stamper.addresses[0];
    const status = await blockwire.stamper.status();
    if (status.balance.confirmed === 0 && status.balance.spendable === 0) {
      await quickChain.fund(blockwire.stamper.addresses, 5_000_000n);
      if (blockwire.indexer) await waitForIndex(quickChain, blockwire, log, signal);
    }
  }
  const exampleAddress = devnode ? devnode.wallet.address('p2wpkh') : await bitcoind?.exampleAddress();

  goOn(signal);
  // 5. With embedded defaults, a key to try the API with, kept in the data directory.
  let apiKey: string | undefined;
  let apiKeyFile: string | undefined;
  if (embeddedDefaults && roles.has('api')) {
    apiKeyFile = join(dataDir, 'quickstart-api-key');
    apiKey = await loadOrCreate(apiKeyFile, async () => (await createApiKey(handle.db, { name: 'quickstart' })).key);
  }
  return { blockwire, devnode, bitcoind, exampleAddress, apiKey, apiKeyFile, stampAddress, electrumHost: config.electrumHost };
}

/** A start-up cut short by SIGTERM/SIGINT: not a failure. */
class Interrupted extends Error {
  constructor() {
    super('interrupted while starting');
  }
}

/** Between two steps of the start-up: a signal meanwhile ends it here (what started stops by its hooks). */
function goOn(signal: AbortSignal): void {
  if (signal.aborted) throw new Interrupted();
}

/** Sleeps `ms`, or rejects at once when `signal` aborts (Ctrl-C while starting). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolveSleep, reject) => {
    if (signal.aborted) return reject(new Interrupted());
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolveSleep();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Interrupted());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** What the quick start needs of the node it runs, the devnode or a regtest bitcoind. */
type QuickChain = {
  tip(): Promise<{ height: number; hash: string }>;
  blockHash(height: number): Promise<string>;
  /** Pays `sats` to each address from the node's wallet and mines a block. */
  fund(addresses: readonly string[], sats: bigint): Promise<void>;
};

function devnodeChain(devnode: Devnode): QuickChain {
  return {
    tip: async () => devnode.tip(),
    blockHash: async (h) => devnode.blockHash(h),
    fund: async (addresses, sats) => {
      for (const a of addresses) await devnode.wallet.send(a, sats);
      await devnode.mine(1);
    },
  };
}

/**
 * Resolves once the index holds the block the node had as its tip when this was called (the
 * node keeps mining: chasing its moving tip could last as long as the machine is slow), on the
 * node's chain, logging progress; or after 5 minutes.
 */
async function waitForIndex(node: QuickChain, blockwire: Blockwire, log: Logger, signal: AbortSignal): Promise<void> {
  const target = (await node.tip()).height;
  const deadline = Date.now() + 300_000;
  let lastLog = 0;
  while (Date.now() < deadline) {
    const { tip } = blockwire.indexer!.status();
    const nodeTip = await node.tip();
    if (tip.height >= target && tip.height <= nodeTip.height && tip.hash === (await node.blockHash(tip.height))) return;
    if (Date.now() - lastLog > 5000) {
      lastLog = Date.now();
      log.info({ index: tip.height, node: nodeTip.height }, 'waiting for the index to catch up');
    }
    await pause(100, signal);
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

/**
 * Waits until the configured node answers: it did not listen at the first probe and may be
 * starting. Says what is wrong and how to fix it while waiting; stops at once on Ctrl-C; a
 * failure that waiting cannot cure (not JSON-RPC there, credentials refused) ends the start.
 */
async function waitForNode(rpcUrl: string, config: Config, log: Logger, signal: AbortSignal, first: DependencyError): Promise<void> {
  const client = new BitcoindClient({ url: rpcUrl, ...(config.bitcoindCookieFile ? { cookieFile: config.bitcoindCookieFile } : {}), log });
  log.warn({ setting: first.setting, node: first.target }, `waiting for bitcoind: ${first.message} (Ctrl-C to stop)`);
  for (let attempt = 1; ; attempt++) {
    await pause(Math.min(5000, 500 * attempt), signal);
    try {
      const info = await client.call<{ chain: string; blocks: number }>('getblockchaininfo', []);
      log.info({ node: client.target, chain: info.chain, blocks: info.blocks }, 'bitcoind reachable');
      return;
    } catch (err) {
      if ((err as { code?: unknown }).code === 'ERR_RPC_WARMUP') continue;
      const explained = explainDependencyFailure('node', rpcUrl, err);
      if (!explained.transient) throw explained.error;
      if (attempt % 10 === 0)
        log.warn(
          { setting: explained.error.setting, node: explained.error.target },
          `still waiting for bitcoind: ${explained.error.message}`,
        );
    }
  }
}

/** How the user calls this command line: `./bin/blockwire.js` from a checkout, else `blockwire`. */
function cliName(): string {
  const bin = resolve('bin', 'blockwire.js');
  return existsSync(bin) && process.argv[1] !== undefined && resolve(process.argv[1]) === bin ? './bin/blockwire.js' : 'blockwire';
}

function printWhereToGo(s: Started, roles: Set<ConcreteRole>, opts: { hooksAllowed: boolean; replaced: ResolvedPort[] }): void {
  const cli = cliName();
  const out: string[] = [''];
  if (s.devnode) out.push('Blockwire is running on the built-in regtest stand-in (devnode), NOT on Bitcoin Core.');
  else if (s.bitcoind)
    out.push(`Blockwire is running on Bitcoin Core (${s.bitcoind.node.version}, regtest), a node started for the quick start.`);
  else out.push('Blockwire is running.');
  if (s.blockwire.apiUrl)
    out.push(
      `  REST API   ${s.blockwire.apiUrl}/v1/   (OpenAPI: ${s.blockwire.apiUrl}/openapi.json, health: ${s.blockwire.apiUrl}/healthz)`,
    );
  if (s.blockwire.streamUrl) out.push(`  stream     ${s.blockwire.streamUrl}`);
  const e = s.blockwire.electrum;
  if (e) {
    const host = hostForUrl(s.electrumHost);
    const parts = [e.tcpPort !== undefined && `tcp ${host}:${e.tcpPort}`, e.tlsPort !== undefined && `tls ${host}:${e.tlsPort}`]
      .filter(Boolean)
      .join('  ');
    out.push(`  electrum   ${parts}${e.tlsCertFile ? `   (certificate: ${e.tlsCertFile})` : ''}`);
  }
  if (s.devnode) out.push(`  devnode    ${s.devnode.rpcUrl}  zmq ${s.devnode.zmqUrl}`);
  if (s.bitcoind) {
    const n = s.bitcoind.node;
    out.push(`  bitcoind   ${n.bin} -regtest -datadir=${n.datadir}   rpc 127.0.0.1:${n.rpcPort}  zmq ${n.zmqUrl}`);
    out.push(
      `             (bitcoin-cli -regtest -datadir=${n.datadir} -rpcport=${n.rpcPort} -rpcuser=blockwire -rpcpassword=${new URL(n.rpcUrl).password} getblockchaininfo)`,
    );
  }
  if (s.stampAddress) out.push(`  stamping   wallet ${s.stampAddress} (funded by the ${s.devnode ? 'devnode' : "node's wallet"})`);
  if (s.devnode || s.bitcoind)
    out.push(`  coins      ${cli} faucet ADDRESS 0.5   (regtest: pays ADDRESS from the node's wallet and mines a block)`);
  if (opts.hooksAllowed) out.push('  webhooks   receivers on this machine (loopback, private addresses) are allowed in the quick start');
  for (const p of opts.replaced) out.push(`  note       ${p.setting} ${p.requested} was in use: ${p.what} took a free port (shown above)`);
  if (roles.has('api') && s.blockwire.apiUrl) {
    const key = s.apiKey ?? '<API_KEY>';
    if (s.apiKey) out.push(`  API key    ${s.apiKey}   (kept in ${s.apiKeyFile})`);
    else out.push(`  API key    create one with: ${cli} keys create --name NAME`);
    const base = s.blockwire.apiUrl.replace(/\/\/([^/:]+)/, (_, h: string) => `//${hostForUrl(h)}`);
    // (the key in the fragment: the browser never sends it; the page takes it and clears the address bar)
    out.push(`  console    ${base}/console${s.apiKey ? `#key=${s.apiKey}` : ''}   (docs/console.md)`);
    out.push('', 'Try:', `  curl -H 'apiKey: ${key}' ${base}/v1/blockchain`);
    if (s.exampleAddress) out.push(`  curl -H 'apiKey: ${key}' ${base}/v1/addresses/${s.exampleAddress}/history`);
  }
  if (e?.tcpPort !== undefined)
    out.push(
      `  electrum ${s.devnode || s.bitcoind ? '--regtest ' : ''}-D DIR daemon -d --oneserver --server ${hostForUrl(s.electrumHost)}:${e.tcpPort}:t   (headless; make a wallet first: docs/electrum.md)`,
    );
  out.push('');
  process.stdout.write(`${out.join('\n')}\n`);
}
