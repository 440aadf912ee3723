/**
 * A throwaway regtest Bitcoin Core for the wallet tests (real bitcoind: ../shared/bitcoin-core,
 * or BITCOIND_BIN), with the same shape as the shared helper: `describeBitcoind` fails under CI
 * and skips with a notice otherwise when bitcoind is missing; `startBitcoind()` gives `call`,
 * `mine`, the RPC/ZMQ URLs and `stop()` (which kills the node and removes its datadir).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe } from 'vitest';
import { freePort } from '../../../src/embedded/free-port.js';
import { projectRoot } from '../../support/fixtures.js';

export const bitcoindBin = process.env.BITCOIND_BIN ?? resolve(projectRoot, '..', 'shared', 'bitcoin-core', 'bin', 'bitcoind');
const missing = `bitcoind not found at ${bitcoindBin} (set BITCOIND_BIN, or put Bitcoin Core at ../shared/bitcoin-core/bin/bitcoind beside the project)`;

export function describeBitcoind(name: string, fn: () => void): void {
  if (existsSync(bitcoindBin)) describe(name, fn);
  else if (process.env.CI) {
    describe(name, () => {
      throw new Error(`${missing}; CI requires it`);
    });
  } else {
    process.stderr.write(`notice: skipping '${name}': ${missing}\n`);
    describe.skip(name, fn);
  }
}

export class CoreRpcError extends Error {
  constructor(
    readonly code: number,
    readonly rpcMessage: string,
  ) {
    super(`${code} ${rpcMessage}`);
  }
}

export type CoreNode = {
  rpcUrl: string;
  zmqUrl: string;
  call<T = unknown>(method: string, params?: unknown[], wallet?: string): Promise<T>;
  mine(n: number, address?: string): Promise<string[]>;
  stop(): Promise<void>;
};

export async function startBitcoind(): Promise<CoreNode> {
  const datadir = await mkdtemp(join(tmpdir(), 'blockwire-wallets-core-'));
  const rpcPort = await freePort();
  const zmqPort = await freePort();
  const password = randomBytes(12).toString('hex');
  const zmq = `tcp://127.0.0.1:${zmqPort}`;
  const child: ChildProcess = spawn(
    bitcoindBin,
    [
      '-regtest', `-datadir=${datadir}`, '-server', '-rest', '-listen=0', '-dnsseed=0', '-fixedseeds=0', '-printtoconsole=0',
      '-rpcbind=127.0.0.1', '-rpcallowip=127.0.0.1', `-rpcport=${rpcPort}`, '-rpcuser=bw', `-rpcpassword=${password}`, '-rpcthreads=8',
      `-zmqpubsequence=${zmq}`, `-zmqpubhashblock=${zmq}`, `-zmqpubrawtx=${zmq}`, '-fallbackfee=0.0002',
    ],
    { stdio: 'ignore' },
  );
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  const call = async <T>(method: string, params: unknown[] = [], wallet?: string): Promise<T> => {
    const res = await fetch(`http://127.0.0.1:${rpcPort}/${wallet === undefined ? '' : `wallet/${encodeURIComponent(wallet)}`}`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`bw:${password}`).toString('base64')}` },
      body: JSON.stringify({ jsonrpc: '1.0', id: method, method, params }),
    });
    const body = (await res.json()) as { result: T; error: { code: number; message: string } | null };
    if (body.error) throw new CoreRpcError(body.error.code, body.error.message);
    return body.result;
  };
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`bitcoind exited with ${child.exitCode}`);
    try {
      await call('getblockchaininfo');
      break;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    rpcUrl: `http://bw:${password}@127.0.0.1:${rpcPort}`,
    zmqUrl: zmq,
    call,
    async mine(n, address) {
      // Without an address: an anyone-can-spend output (OP_TRUE) that no wallet counts.
      return address === undefined ? call<string[]>('generatetodescriptor', [n, 'raw(51)#8lvh9jxk']) : call<string[]>('generatetoaddress', [n, address]);
    },
    async stop() {
      process.off('exit', kill);
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        kill();
        await exited;
      }
      await rm(datadir, { recursive: true, force: true });
    },
  };
}
