/**
 * Real Bitcoin Core in the tests: finds `bitcoind` (BITCOIND_BIN, else ../shared/bitcoin-core/
 * bin/bitcoind beside the project, read in place) and starts throwaway regtest nodes — their own
 * temporary datadir, free loopback ports, REST, every ZMQ topic on one endpoint, rpcauth (or the
 * cookie) and `-fallbackfee` (unless told not to), a descriptor wallet created and funded by 101 blocks when asked.
 * The handle restarts the node (on the same or other ports), kills it with SIGKILL and stops it.
 *
 * When bitcoind is missing, `describeBitcoind` fails the suite under CI and skips it with a
 * notice otherwise, as `describeFixtures` does for the shared fixtures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe } from 'vitest';
import { freePort } from '../../cli/embedded/free-port.js';
import { projectRoot } from './fixtures.js';

/** Where bitcoind is looked for: BITCOIND_BIN, else the Core build beside the project. */
export const bitcoindBin = process.env.BITCOIND_BIN ?? resolve(projectRoot, '..', 'shared', 'bitcoin-core', 'bin', 'bitcoind');
export const bitcoindPresent = existsSync(bitcoindBin);

const missing = `bitcoind not found at ${bitcoindBin} (set BITCOIND_BIN, or put Bitcoin Core at ../shared/bitcoin-core/bin/bitcoind beside the project)`;

/**
 * `describe` for suites that need a real bitcoind: runs them when it is there; when it is not,
 * fails under CI and skips with a notice otherwise.
 */
export function describeBitcoind(name: string, fn: () => void): void {
  if (bitcoindPresent) describe(name, fn);
  else if (process.env.CI) {
    describe(name, () => {
      throw new Error(`${missing}; CI requires it`);
    });
  } else {
    process.stderr.write(`notice: skipping '${name}': ${missing}\n`);
    describe.skip(name, fn);
  }
}

/** A JSON-RPC error as the node answered it: `code` and `message` are Core's. */
export class BitcoindRpcError extends Error {
  override name = 'BitcoindRpcError';
  constructor(
    readonly method: string,
    readonly code: number,
    message: string,
    readonly httpStatus: number,
  ) {
    super(message);
  }
}

/**
 * One JSON-RPC 1.0 call (as bitcoin-cli sends it) to the node at `rpc`; throws BitcoindRpcError
 * with the node's code and message. `wallet` sends it to `/wallet/<name>`.
 */
export async function rpcCall<T = unknown>(
  rpc: { host: string; port: number; user: string; password: string },
  method: string,
  params: unknown[] = [],
  wallet?: string,
): Promise<T> {
  const path = wallet === undefined ? '/' : `/wallet/${encodeURIComponent(wallet)}`;
  const res = await fetch(`http://${rpc.host}:${rpc.port}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${rpc.user}:${rpc.password}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ jsonrpc: '1.0', id: method, method, params }),
  });
  const text = await res.text();
  let body: { result: T; error: { code: number; message: string } | null };
  try {
    body = JSON.parse(text);
  } catch {
    throw new BitcoindRpcError(method, 0, `HTTP ${res.status}: ${text.slice(0, 200)}`, res.status);
  }
  if (body.error) throw new BitcoindRpcError(method, body.error.code, body.error.message, res.status);
  return body.result;
}

export type BitcoindOptions = {
  /** `'rpcauth'` (default): a fixed user and password given as `-rpcauth`; `'cookie'`: bitcoind writes `.cookie` in its datadir. */
  auth?: 'rpcauth' | 'cookie';
  /** Create (and load on every start) a descriptor wallet of this name. */
  wallet?: string;
  /** Create the wallet and mine 101 blocks to it, so that it holds spendable coins (implies `wallet`, default name `'miner'`). */
  funded?: boolean;
  /** Run with `-txindex` (getrawtransaction of confirmed transactions without a block hash). */
  txindex?: boolean;
  /** Start with `-fallbackfee` (default true); false leaves it unset as Core ships: a wallet then needs a fee rate from the caller or an estimate. */
  fallbackFee?: boolean;
  /** More command-line arguments, e.g. `-maxmempool=5` or `-mempoolexpiry=1`. */
  args?: string[];
  /** Keep the node's stdout/stderr lines (debug.log stays in the datadir either way). */
  onLog?: (line: string) => void;
  /**
   * Start on a copy of this stopped node's datadir (its chain, and the wallets its settings load)
   * instead of an empty one; `wallet`/`funded` would create a wallet again, so leave them out.
   */
  copyDatadir?: string;
};

export type Bitcoind = {
  readonly kind: 'bitcoind';
  /** `http://user:password@127.0.0.1:port` (with the cookie: the cookie's user and password). */
  readonly rpcUrl: string;
  readonly restUrl: string;
  /** Every ZMQ topic (sequence, hashblock, rawblock, hashtx, rawtx) publishes here. */
  readonly zmqUrl: string;
  readonly rpc: { host: string; port: number; user: string; password: string };
  readonly datadir: string;
  /** `<datadir>/regtest/.cookie` (present while the node runs when `auth: 'cookie'`). */
  readonly cookieFile: string;
  /** The wallet created at start (`funded` or `wallet`), or null. */
  readonly wallet: string | null;
  /** Process id of the running bitcoind (undefined while stopped). */
  readonly pid: number | undefined;
  /** One JSON-RPC call; throws BitcoindRpcError with Core's code and message. `wallet` goes to `/wallet/<name>`. */
  call<T = unknown>(method: string, params?: unknown[], wallet?: string): Promise<T>;
  /** Mines `n` blocks to `address` (default: a new address of the node's wallet, else an OP_TRUE output); returns their hashes. */
  mine(n?: number, address?: string): Promise<string[]>;
  /** `{ height, hash }` of the best chain. */
  tip(): Promise<{ height: number; hash: string }>;
  /** Stops cleanly (the `stop` RPC, then waits for the process to exit) and starts again on the same datadir (see StartOptions). */
  restart(opts?: StartOptions): Promise<void>;
  /**
   * SIGKILL, no shutdown: the node is down until `start()`. Core writes its block index and
   * chainstate lazily, so blocks mined since the last flush are gone after the restart (the
   * chain comes back shorter, as after a power cut); `flush()` first to keep them.
   */
  kill(): Promise<void>;
  /** Makes Core write its chainstate and block index to disk (`gettxoutsetinfo none`, which flushes first). */
  flush(): Promise<void>;
  /** Starts a node that was killed or stopped, on its datadir (see StartOptions). */
  start(opts?: StartOptions): Promise<void>;
  /** Stops the node and removes its datadir. */
  stop(): Promise<void>;
};

/**
 * How a node starts again: `newPorts` picks other free RPC and ZMQ ports (`'zmq'`: only ZMQ, so a
 * subscriber on the old endpoint hears nothing while RPC stays where it was); `zmqPort` binds ZMQ
 * to that port (say the old one again); `args` replaces the extra arguments.
 */
export type StartOptions = { newPorts?: boolean | 'zmq'; zmqPort?: number; args?: string[] };

/** Core's rpcauth line for `user`/`password` (as share/rpcauth/rpcauth.py makes it). */
function rpcauth(user: string, password: string): string {
  const salt = randomBytes(16).toString('hex');
  return `${user}:${salt}$${createHmac('sha256', salt).update(password).digest('hex')}`;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

/** Starts a throwaway regtest bitcoind; call `stop()` when done (it removes the datadir). */
export async function startBitcoind(opts: BitcoindOptions = {}): Promise<Bitcoind> {
  if (!bitcoindPresent) throw new Error(missing);
  await mkdir(join(tmpdir(), 'blockwire-test'), { recursive: true });
  const datadir = await mkdtemp(join(tmpdir(), 'blockwire-test', 'bitcoind-'));
  if (opts.copyDatadir) await cp(opts.copyDatadir, datadir, { recursive: true });
  const cookieFile = join(datadir, 'regtest', '.cookie');
  const auth = opts.auth ?? 'rpcauth';
  const creds = { user: 'blockwire', password: randomBytes(12).toString('hex') };
  const ports = { rpc: await freePort(), zmq: await freePort() };
  const walletName = opts.wallet ?? (opts.funded ? 'miner' : null);
  let child: ChildProcess | undefined;
  let lastArgs: string[] = opts.args ?? [];
  let stderrTail = '';

  const baseArgs = () => {
    const zmq = `tcp://127.0.0.1:${ports.zmq}`;
    return [
      '-regtest',
      `-datadir=${datadir}`,
      '-daemon=0',
      '-server',
      '-rest',
      `-txindex=${opts.txindex ? 1 : 0}`,
      '-listen=0',
      '-dnsseed=0',
      '-fixedseeds=0',
      '-discover=0',
      '-natpmp=0',
      '-printtoconsole=0',
      '-rpcbind=127.0.0.1',
      '-rpcallowip=127.0.0.1',
      `-rpcport=${ports.rpc}`,
      // Tests run several clients at once (indexer, mempool sync, assertions) on a loaded machine.
      '-rpcthreads=8',
      '-rpcworkqueue=256',
      // A generateblock of a few hundred transactions outlasted the default 30 s at load 30 and
      // the node closed the connection mid-call (bench/core in the suite).
      '-rpcservertimeout=600',
      ...(auth === 'rpcauth' ? [`-rpcauth=${rpcauth(creds.user, creds.password)}`] : []),
      `-zmqpubsequence=${zmq}`,
      `-zmqpubhashblock=${zmq}`,
      `-zmqpubrawblock=${zmq}`,
      `-zmqpubhashtx=${zmq}`,
      `-zmqpubrawtx=${zmq}`,
      ...(opts.fallbackFee === false ? [] : ['-fallbackfee=0.0002']),
    ];
  };

  const call = <T>(method: string, params: unknown[] = [], wallet?: string): Promise<T> =>
    rpcCall<T>({ host: '127.0.0.1', port: ports.rpc, ...creds }, method, params, wallet);

  const exited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;

  const launch = async (args: string[]) => {
    const c = spawn(bitcoindBin, [...baseArgs(), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    running.add(c);
    c.once('exit', () => running.delete(c));
    stderrTail = '';
    c.stdout?.on('data', (d) => opts.onLog?.(String(d)));
    c.stderr?.on('data', (d) => {
      stderrTail = (stderrTail + String(d)).slice(-2000);
      opts.onLog?.(String(d));
    });
    // Ready when RPC answers past the warm-up (-28) and, with the cookie, the cookie is read.
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (exited(c)) throw new Error(`bitcoind exited (${c.exitCode ?? c.signalCode}) during start: ${stderrTail.trim()}`);
      if (Date.now() > deadline) {
        c.kill('SIGKILL');
        throw new Error('bitcoind did not answer RPC within 120 s');
      }
      try {
        if (auth === 'cookie') {
          const [user, password] = (await readFile(cookieFile, 'utf8')).trim().split(':');
          creds.user = user!;
          creds.password = password!;
        }
        await call('getblockchaininfo');
        // Ready when the mempool saved at the last stop is back (-persistmempool) and the wallets
        // have heard of it: a wallet asked to pay before then can pick a coin that a reloaded
        // transaction spends, and its send, refused by the mempool, still returns a txid.
        if (!(await call<{ loaded: boolean }>('getmempoolinfo')).loaded) throw new Error('mempool loading');
        await call('syncwithvalidationinterfacequeue');
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };

  const waitExit = async (c: ChildProcess, ms: number) => {
    if (exited(c)) return;
    let timer: NodeJS.Timeout | undefined;
    // The timer is cleared once the node has exited: left running it kept a script that stopped
    // its bitcoind (bench/core) alive for the rest of the 120 s.
    await Promise.race([new Promise((r) => c.once('exit', r)), new Promise((r) => (timer = setTimeout(r, ms)))]).finally(() =>
      clearTimeout(timer),
    );
  };

  const halt = async () => {
    const c = child;
    if (!c || exited(c)) return;
    try {
      await call('stop');
    } catch {
      c.kill('SIGTERM');
    }
    await waitExit(c, 120_000);
    if (!exited(c)) {
      c.kill('SIGKILL');
      await waitExit(c, 10_000);
    }
  };

  const start = async (o: StartOptions = {}) => {
    if (child && !exited(child)) throw new Error('bitcoind is running: stop or kill it first');
    if (o.newPorts === true) ports.rpc = await freePort();
    if (o.newPorts) ports.zmq = await freePort();
    if (o.zmqPort) ports.zmq = o.zmqPort;
    if (o.args) lastArgs = o.args;
    await launch(lastArgs);
  };

  await launch(lastArgs);
  if (walletName) await call('createwallet', [walletName, false, false, '', false, true, true]);

  const handle: Bitcoind = {
    kind: 'bitcoind',
    get rpcUrl() {
      return `http://${creds.user}:${creds.password}@127.0.0.1:${ports.rpc}`;
    },
    get restUrl() {
      return `http://127.0.0.1:${ports.rpc}/rest`;
    },
    get zmqUrl() {
      return `tcp://127.0.0.1:${ports.zmq}`;
    },
    get rpc() {
      return { host: '127.0.0.1', port: ports.rpc, user: creds.user, password: creds.password };
    },
    datadir,
    cookieFile,
    wallet: walletName,
    get pid() {
      return child && !exited(child) ? child.pid : undefined;
    },
    call,
    mine: async (n = 1, address?: string) => {
      if (address) return call<string[]>('generatetoaddress', [n, address]);
      if (walletName) return call<string[]>('generatetoaddress', [n, await call<string>('getnewaddress', [], walletName)]);
      return call<string[]>('generatetodescriptor', [n, 'raw(51)#8lvh9jxk']);
    },
    tip: async () => {
      const info = await call<{ blocks: number; bestblockhash: string }>('getblockchaininfo');
      return { height: info.blocks, hash: info.bestblockhash };
    },
    restart: async (o = {}) => {
      await halt();
      await start(o);
    },
    kill: async () => {
      const c = child;
      if (!c || exited(c)) return;
      c.kill('SIGKILL');
      await waitExit(c, 30_000);
    },
    start,
    flush: async () => {
      await call('gettxoutsetinfo', ['none', null, false]);
    },
    stop: async () => {
      await halt();
      await rm(datadir, { recursive: true, force: true });
    },
  };
  if (opts.funded) await handle.mine(101);
  return handle;
}
