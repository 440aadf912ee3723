/**
 * `blockwire faucet` against your own regtest bitcoind (README "Pointing it at a real node"), as
 * Core ships: no `-fallbackfee`, so a wallet without a fee estimate (a fresh regtest chain has
 * none) refuses to send unless the caller gives a fee rate. The faucet gives its own; the payment
 * is in the block it mines.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { describeBitcoind, startBitcoind, type Bitcoind } from '../../support/bitcoind.js';
import { projectRoot } from '../../support/fixtures.js';

const run = promisify(execFile);
let node: Bitcoind | undefined;

afterAll(async () => {
  await node?.stop();
}, 120_000);

describeBitcoind('blockwire faucet on a bitcoind without -fallbackfee', () => {
  it('pays with its own fee rate and mines the payment', async () => {
    node = await startBitcoind({ fallbackFee: false, wallet: 'miner' });
    // As Core ships: the wallet itself cannot send without a fee rate.
    await node.mine(101);
    await expect(node.call('sendtoaddress', ['bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080', 0.1], 'miner')).rejects.toThrow(
      /Fallbackfee is disabled/,
    );

    const payee = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/root',
      BITCOIND_RPC_URL: node.rpcUrl,
      BITCOIND_ZMQ_URL: node.zmqUrl,
    };
    const paid = await run(process.execPath, [join(projectRoot, 'bin', 'blockwire.js'), 'faucet', payee, '0.5'], {
      cwd: projectRoot,
      env,
      timeout: 120_000,
    }).catch((err: { stderr: string }) => {
      throw new Error(`faucet failed: ${err.stderr}`);
    });
    const txid = paid.stdout.trim();
    expect(txid).toMatch(/^[0-9a-f]{64}$/);
    expect(paid.stderr).toMatch(/^paid 0\.50000000 BTC to bcrt1q\w+ in [0-9a-f]{64}, confirmed in block 102\n$/);
    const tx = await node.call<{ confirmations: number; fee: number }>('gettransaction', [txid], 'miner');
    expect(tx.confirmations).toBe(1);
    expect(tx.fee).toBeLessThan(0);
  }, 300_000);
});
