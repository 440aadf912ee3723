/**
 * A real Bitcoin Core holding a recorded chain, to ask it what it answers for blocks and
 * transactions the index also holds: bitcoind (BITCOIND_BIN, else ../shared/bitcoin-core/bin
 * read in place, as test/support/bitcoind.ts finds it) on a throwaway datadir and free loopback
 * ports, no peers, on `regtest` or on `main` (real mainnet blocks from genesis are valid there:
 * their proof of work is real; startBitcoind runs regtest only), fed the blocks with
 * `submitblock`. Suites use `describeBitcoind`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../cli/embedded/free-port.js';
import { BitcoindClient } from '../../src/rpc/bitcoind.js';
import { bitcoindBin } from './bitcoind.js';
import { waitFor } from './wait.js';

export type CoreChain = {
  rpc: BitcoindClient;
  rpcUrl: string;
  stop(): Promise<void>;
};

/** Starts bitcoind on `chain` and submits `blocks` in order; every one must be accepted. */
export async function startCoreWithBlocks(chain: 'main' | 'regtest', blocks: readonly Uint8Array[]): Promise<CoreChain> {
  await mkdir(join(tmpdir(), 'blockwire-test'), { recursive: true });
  const datadir = await mkdtemp(join(tmpdir(), 'blockwire-test', 'core-'));
  const port = await freePort();
  const child: ChildProcess = spawn(
    bitcoindBin,
    [
      `-chain=${chain}`,
      `-datadir=${datadir}`,
      '-server',
      '-rest',
      '-listen=0',
      '-connect=0',
      '-dnsseed=0',
      '-fixedseeds=0',
      '-txindex=0',
      '-printtoconsole=0',
      '-rpcbind=127.0.0.1',
      '-rpcallowip=127.0.0.1',
      `-rpcport=${port}`,
    ],
    { stdio: 'ignore' },
  );
  let exited = false;
  child.once('exit', () => (exited = true));
  const stop = async () => {
    if (!exited) {
      child.kill('SIGTERM');
      await waitFor('bitcoind to exit', () => exited, 60_000).catch(() => child.kill('SIGKILL'));
    }
    await rm(datadir, { recursive: true, force: true });
  };
  try {
    const cookie = join(datadir, chain === 'main' ? '' : chain, '.cookie');
    await waitFor('bitcoind to write its cookie', () => existsSync(cookie) || exited, 60_000);
    if (exited) throw new Error('bitcoind exited at start');
    const [user, password] = (await readFile(cookie, 'utf8')).trim().split(':');
    const rpcUrl = `http://${user}:${encodeURIComponent(password!)}@127.0.0.1:${port}`;
    const rpc = new BitcoindClient({ url: rpcUrl, timeoutMs: 30_000 });
    await waitFor('bitcoind RPC', () => rpc.call('getblockchaininfo').then(() => true), 60_000);
    // (blocks[0] is the genesis block, which bitcoind has built in)
    for (let i = 1; i < blocks.length; i++) {
      const r = await rpc.call<string | null>('submitblock', [Buffer.from(blocks[i]!).toString('hex')]);
      if (r !== null) throw new Error(`bitcoind refused block ${i}: ${r}`);
    }
    return { rpc, rpcUrl, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
