/**
 * The quick start on a real Bitcoin Core: `blockwire start` with nothing configured and
 * BITCOIND_BIN naming Core 30 runs a regtest bitcoind itself (datadir under the data directory),
 * says so in its first log line and in the banner, mines a block every 2 s after sample payments
 * from the node's wallet, and the index follows it: the printed curl lines answer (an address
 * with payments in its history), a block of sample payments shows in the API as Core has it, the
 * faucet pays from Core's wallet. SIGTERM exits 0 and stops bitcoind; a second start reuses the
 * chain and the key; after a kill -9 of Blockwire (its bitcoind left running on the datadir) a
 * third start stops that bitcoind and runs its own. A missing bitcoind that the user asked for
 * stops the start, named.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { readQuickStartNode } from '../../../cli/quickstart-node.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { processAlive } from '../../../cli/embedded/process-alive.js';
import { bitcoindBin, describeBitcoind } from '../../support/bitcoind.js';
import { projectRoot } from '../../support/fixtures.js';
import { waitFor } from '../../support/wait.js';
import { spawnBlockwire, type BlockwireProcess } from './processes.js';
import { banner, getJson, runCurl } from './quickstart-banner.js';

const execFileP = promisify(execFile);

let dataDir: string | undefined;
let proc: BlockwireProcess | undefined;

const pidFile = () => join(dataDir!, 'bitcoind', 'regtest', 'bitcoind.pid');
const bitcoindPid = async () => (existsSync(pidFile()) ? Number((await readFile(pidFile(), 'utf8')).trim()) : undefined);

afterAll(async () => {
  await proc?.stop();
  const pid = dataDir ? await bitcoindPid() : undefined;
  if (pid && processAlive(pid)) process.kill(pid, 'SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 180_000);

describeBitcoind('quick start on a real bitcoind', () => {
  it('runs a regtest Bitcoin Core, says so first, mines sample payments the index follows, restarts on the same chain', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'blockwire-quickstart-core-'));
    // Ports the system picks: ops/quickstart runs a quick start at the same time on the other
    // worker, and the default ports (3000, 50001, 50002) free when this start checked them could
    // be that one's by the time this one listens (a full run saw 50002 taken in between).
    // The defaults and their busy fallback are ops/quickstart's subject.
    const env = {
      BLOCKWIRE_DATA_DIR: dataDir,
      BITCOIND_BIN: bitcoindBin,
      BLOCKWIRE_DEVNODE_MINE_EVERY: '2',
      PORT: '0',
      ELECTRUM_TCP_PORT: '0',
      ELECTRUM_TLS_PORT: '0',
    };
    proc = spawnBlockwire('quickstart-core', ['start'], env);
    const first = await banner(proc, 480_000);
    const out = proc.output();
    expect(proc.lines[0]!.msg).toBe(`no node configured: running Bitcoin Core (${bitcoindBin}) as a regtest node for the quick start`);
    expect(out).not.toContain('NO BITCOIND CONFIGURED');
    expect(out).toContain('Blockwire is running on Bitcoin Core (Satoshi:30.0.0, regtest), a node started for the quick start.');
    expect(out).toContain(`  bitcoind   ${bitcoindBin} -regtest -datadir=${join(dataDir, 'bitcoind')}`);
    expect(out).toContain('  coins      ./bin/blockwire.js faucet ADDRESS 0.5');

    // The node is Core itself, on its datadir under the data directory.
    const recorded = (await readQuickStartNode(dataDir))!;
    expect(recorded.kind).toBe('bitcoind');
    const rpc = new BitcoindClient({ url: recorded.rpcUrl });
    expect((await rpc.call<{ subversion: string }>('getnetworkinfo')).subversion).toBe('/Satoshi:30.0.0/');
    expect((await rpc.call<{ chain: string }>('getblockchaininfo')).chain).toBe('regtest');
    const pid = (await bitcoindPid())!;
    expect(processAlive(pid)).toBe(true);
    expect(await readFile(`/proc/${pid}/cmdline`, 'utf8')).toContain(`-datadir=${join(dataDir, 'bitcoind')}`);

    // The printed lines answer as printed; the example address has payments.
    expect(first.curls[0]).toBe(`curl -H 'apiKey: ${first.key}' ${first.apiBase}/v1/blockchain`);
    const chain = (await runCurl(first.curls[0]!)) as { best_height: number };
    expect(chain.best_height).toBeGreaterThanOrEqual(101);
    expect(((await runCurl(first.curls[1]!)) as unknown[]).length).toBeGreaterThan(0);

    // The background loop mines blocks holding sample payments; the index shows them as Core does.
    type CoreBlock = {
      hash: string;
      height: number;
      tx: { txid: string; vout: { value: number; scriptPubKey: { address?: string } }[] }[];
    };
    let sampled: CoreBlock | undefined;
    await waitFor(
      'a block of sample payments mined by the quick start',
      async () => {
        const tip = await rpc.call<CoreBlock>('getblock', [await rpc.call<string>('getbestblockhash'), 2]);
        if (tip.height > chain.best_height && tip.tx.length > 1) sampled = tip;
        return sampled !== undefined;
      },
      240_000,
    );
    const payment = sampled!.tx[1]!;
    await waitFor(
      'the index at the sampled block',
      async () => ((await getJson(`${first.apiBase}/v1/blockchain`, first.key)).body.best_height as number) >= sampled!.height,
      240_000,
    );
    for (const o of payment.vout.filter((v) => v.scriptPubKey.address)) {
      const history = await fetch(`${first.apiBase}/v1/addresses/${o.scriptPubKey.address}/history`, { headers: { apiKey: first.key } });
      expect(JSON.stringify(await history.json()), o.scriptPubKey.address).toContain(payment.txid);
    }

    // The faucet pays from Core's wallet; the index shows the payment confirmed.
    const payee = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';
    const paid = await execFileP(process.execPath, [join(projectRoot, 'bin', 'blockwire.js'), 'faucet', payee, '0.5'], {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? '', BLOCKWIRE_DATA_DIR: dataDir },
      timeout: 120_000,
    });
    expect(paid.stderr).toMatch(/^paid 0\.50000000 BTC to bcrt1q\w+ in [0-9a-f]{64}, confirmed in block \d+\n$/);
    const coreWallet = new BitcoindClient({ url: recorded.rpcUrl, wallet: 'blockwire' });
    expect((await coreWallet.call<{ confirmations: number }>('gettransaction', [paid.stdout.trim()])).confirmations).toBeGreaterThanOrEqual(
      1,
    );
    await waitFor(
      'the faucet payment in the index',
      async () => (await getJson(`${first.apiBase}/v1/addresses/${payee}/balance?min_conf=1`, first.key)).body.balance === 50_000_000,
      120_000,
    );

    // SIGTERM: Blockwire exits 0 and stops its bitcoind.
    const height = await rpc.call<number>('getblockcount');
    expect(await proc.stop()).toBe(0);
    await waitFor('bitcoind stopped with Blockwire', () => !processAlive(pid), 120_000);

    // Same data directory: the same chain (at least as high) and key.
    proc = spawnBlockwire('quickstart-core-2', ['start'], env);
    const second = await banner(proc, 480_000);
    expect(second.key).toBe(first.key);
    expect(((await runCurl(second.curls[0]!)) as { best_height: number }).best_height).toBeGreaterThanOrEqual(height);

    // kill -9 of Blockwire leaves its bitcoind (own process group) running on the datadir; the next
    // start stops it and runs its own.
    const left = (await bitcoindPid())!;
    proc.child.kill('SIGKILL');
    await proc.exited;
    expect(processAlive(left)).toBe(true);
    proc = spawnBlockwire('quickstart-core-3', ['start'], env);
    const third = await banner(proc, 480_000);
    expect(processAlive(left)).toBe(false);
    expect(((await runCurl(third.curls[0]!)) as { best_height: number }).best_height).toBeGreaterThanOrEqual(height);
    const now = (await bitcoindPid())!;
    expect(now).not.toBe(left);
    expect(await proc.stop()).toBe(0);
    await waitFor('bitcoind stopped with Blockwire', () => !processAlive(now), 120_000);
    proc = undefined;
  }, 1_500_000);

  it('a bitcoind asked for and not there stops the start, named', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'blockwire-quickstart-nobin-'));
    try {
      const wrong = spawnBlockwire('quickstart-bad-bin', ['start'], { BLOCKWIRE_DATA_DIR: dir, BITCOIND_BIN: join(dir, 'no-bitcoind') });
      expect(await wrong.exited).toBe(2);
      expect(wrong.output()).toContain(`blockwire start: BITCOIND_BIN=${join(dir, 'no-bitcoind')} is not an executable file`);
      const none = spawnBlockwire('quickstart-no-bin', ['start'], {
        BLOCKWIRE_DATA_DIR: dir,
        BLOCKWIRE_QUICKSTART_NODE: 'bitcoind',
        PATH: '/usr/bin:/bin',
      });
      expect(await none.exited).toBe(2);
      expect(none.output()).toContain(
        "blockwire start: BLOCKWIRE_QUICKSTART_NODE=bitcoind but no bitcoind was found: set BITCOIND_BIN or put Bitcoin Core's bitcoind on the PATH",
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
