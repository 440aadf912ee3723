/**
 * A real regtest `bitcoind` child for the quick start when Bitcoin Core is installed and no node
 * is configured: found through BITCOIND_BIN or the PATH, run on its own datadir with REST, every
 * ZMQ topic on one loopback port, RPC on another (free ports, taken once and kept across
 * restarts), credentials given as `-rpcauth` for a password made at each start. Its own process
 * group, so that a terminal's Ctrl-C reaches Blockwire first, which stops it (the `stop` RPC).
 * A bitcoind that a killed Blockwire left running on the datadir is stopped first.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { delimiter, join, resolve } from 'node:path';
import { BitcoindClient } from '../../src/rpc/bitcoind.js';
import { freePort } from './free-port.js';
import { processAlive } from './process-alive.js';

export type RegtestBitcoind = {
  /** The executable that runs. */
  readonly bin: string;
  /** `-datadir` (the regtest chain is under `regtest/`). */
  readonly datadir: string;
  /** Core's version as it reports it, e.g. `Satoshi:30.0.0`. */
  readonly version: string;
  /** `http://user:password@127.0.0.1:port`. */
  readonly rpcUrl: string;
  readonly rpcPort: number;
  /** Every topic (sequence, hashblock, rawblock, hashtx, rawtx) publishes here. */
  readonly zmqUrl: string;
  readonly pid: number | undefined;
  /** The `stop` RPC, then waits for the process to exit (SIGTERM, then SIGKILL, if it does not). */
  stop(): Promise<void>;
  /** Starts it again on the same ports and datadir. */
  restart(): Promise<void>;
  /** Calls `listener` when the node exits without stop() or restart() asking it to. */
  onCrash(listener: (how: string) => void): void;
};

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Where bitcoind is: `bin` (BITCOIND_BIN) when given — it must be an executable, else this throws:
 * the user asked for it — else the first `bitcoind` on `path`, else undefined.
 */
export function findBitcoind(bin: string | undefined, path = process.env.PATH ?? ''): string | undefined {
  if (bin) {
    if (!executable(bin)) throw new Error(`BITCOIND_BIN=${bin} is not an executable file`);
    return resolve(bin);
  }
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'bitcoind');
    if (executable(candidate)) return resolve(candidate);
  }
  return undefined;
}

/** Stops a bitcoind still running on `datadir` (its pid file) from a Blockwire that was killed. */
async function stopPrevious(datadir: string): Promise<void> {
  const file = join(datadir, 'regtest', 'bitcoind.pid');
  if (!existsSync(file)) return;
  const pid = Number((await readFile(file, 'utf8')).trim());
  if (!pid || !processAlive(pid)) return;
  // Only a bitcoind on this datadir: a reused pid could be anything.
  const cmdline = existsSync(`/proc/${pid}/cmdline`) ? await readFile(`/proc/${pid}/cmdline`, 'utf8') : '';
  if (!cmdline.includes(`-datadir=${datadir}`)) return;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 120_000;
  while (processAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  if (processAlive(pid)) process.kill(pid, 'SIGKILL');
}

/** Starts `bin` as a regtest node on `datadir`; resolves when its RPC answers past warm-up. */
export async function startRegtestBitcoind(opts: {
  bin: string;
  datadir: string;
  onLog?: (line: string) => void;
}): Promise<RegtestBitcoind> {
  const datadir = resolve(opts.datadir);
  await mkdir(datadir, { recursive: true });
  await stopPrevious(datadir);
  const user = 'blockwire';
  const password = randomBytes(16).toString('hex');
  const salt = randomBytes(16).toString('hex');
  const rpcauth = `${user}:${salt}$${createHmac('sha256', salt).update(password).digest('hex')}`;
  const rpcPort = await freePort();
  const zmqPort = await freePort();
  const zmqUrl = `tcp://127.0.0.1:${zmqPort}`;
  const rpcUrl = `http://${user}:${password}@127.0.0.1:${rpcPort}`;
  const args = [
    '-regtest',
    `-datadir=${datadir}`,
    '-daemon=0',
    '-server',
    '-rest',
    '-listen=0',
    '-dnsseed=0',
    '-fixedseeds=0',
    '-discover=0',
    '-printtoconsole=0',
    '-rpcbind=127.0.0.1',
    '-rpcallowip=127.0.0.1',
    `-rpcport=${rpcPort}`,
    `-rpcauth=${rpcauth}`,
    ...['sequence', 'hashblock', 'rawblock', 'hashtx', 'rawtx'].map((t) => `-zmqpub${t}=${zmqUrl}`),
    // The sample payments and the faucet pay from the node's wallet on a chain with no fee history.
    '-fallbackfee=0.0002',
  ];
  const client = new BitcoindClient({ url: rpcUrl, timeoutMs: 10_000 });
  let child: ChildProcess | undefined;
  const expected = new WeakSet<ChildProcess>();
  const crashListeners: ((how: string) => void)[] = [];
  const exited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;
  let version = '';

  const launch = async () => {
    const c = spawn(opts.bin, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child = c;
    let tail = '';
    c.stdout?.on('data', (d) => opts.onLog?.(String(d)));
    c.stderr?.on('data', (d) => {
      tail = (tail + String(d)).slice(-2000);
      opts.onLog?.(String(d));
    });
    c.once('exit', (code, signal) => {
      if (!expected.has(c)) for (const l of crashListeners) l(signal ? `signal ${signal}` : `exit code ${code}`);
    });
    const spawnError = new Promise<never>((_, reject) => c.once('error', reject));
    spawnError.catch(() => undefined);
    // Ready when RPC answers past the warm-up (-28: loading the block index, verifying blocks).
    const deadline = Date.now() + 300_000;
    for (;;) {
      if (exited(c))
        throw new Error(
          `bitcoind exited (${c.exitCode ?? c.signalCode}) while starting: ${tail.trim() || `see ${join(datadir, 'regtest', 'debug.log')}`}`,
        );
      if (Date.now() > deadline) {
        c.kill('SIGKILL');
        throw new Error('bitcoind did not answer RPC within 5 minutes');
      }
      try {
        const info = await Promise.race([client.call<{ subversion: string }>('getnetworkinfo', []), spawnError]);
        version = info.subversion.replace(/^\/|\/$/g, '');
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'EACCES') throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  };

  const halt = async () => {
    const c = child;
    if (!c || exited(c)) return;
    expected.add(c);
    const gone = new Promise((r) => c.once('exit', r));
    try {
      await client.call('stop', []);
    } catch {
      c.kill('SIGTERM');
    }
    const timer = setTimeout(() => c.kill('SIGKILL'), 120_000);
    await gone;
    clearTimeout(timer);
  };

  await launch();
  process.once('exit', () => {
    if (child && !exited(child)) child.kill('SIGTERM');
  });
  return {
    bin: opts.bin,
    datadir,
    get version() {
      return version;
    },
    rpcUrl,
    rpcPort,
    zmqUrl,
    get pid() {
      return child && !exited(child) ? child.pid : undefined;
    },
    stop: halt,
    restart: async () => {
      await halt();
      await launch();
    },
    onCrash: (listener) => void crashListeners.push(listener),
  };
}
