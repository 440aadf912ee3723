/**
 * The real Electrum client (Debian's `electrum` 4.3, unmodified, headless) against Blockwire on a
 * real Bitcoin Core: a daemon with `--oneserver --server 127.0.0.1:PORT:t`, a wallet restored
 * from a seed and a watch-only wallet restored from an extended public key; their addresses are
 * funded from the node; Electrum's own getbalance, onchain_history and listunspent are compared
 * with the index; Electrum signs a payment and broadcasts it through Blockwire, sees it confirmed,
 * and sees it go back to unconfirmed when the node reorganises the block away.
 * Under CI a missing `electrum` fails the suite (scripts/setup-test.sh installs it).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeBitcoind } from '../../support/bitcoind.js';
import { waitFor } from '../../support/wait.js';
import { addressToScript } from '../../../src/bitcoin/address.js';
import { hashToHex, sha256 } from '../../../src/bitcoin/hash.js';
import { readScriptBalance, readScriptHistories, readScriptUnspent, scriptRef } from '../../../src/db/queries/script-hash.js';
import { startElectrumStack, type ElectrumStack } from './harness.js';

const execFileP = promisify(execFile);
const ELECTRUM = process.env.ELECTRUM_BIN ?? '/usr/bin/electrum';
const present = existsSync(ELECTRUM);
const W = 'miner';

/** Runs the suite when Electrum is installed; under CI its absence fails. */
function describeElectrum(name: string, fn: () => void): void {
  if (present) describeBitcoind(name, fn);
  else if (process.env.CI) {
    describe(name, () => {
      it('needs the electrum client', () => {
        throw new Error(`electrum not found at ${ELECTRUM} (apt-get install electrum; scripts/setup-test.sh does); CI requires it`);
      });
    });
  } else {
    process.stderr.write(`notice: skipping '${name}': electrum not found at ${ELECTRUM}\n`);
    describe.skip(name, fn);
  }
}

const sat = (btc: string | number) => Math.round(Number(btc) * 1e8);

describeElectrum('the real Electrum client on Blockwire', () => {
  let s: ElectrumStack;
  let dir: string;
  let daemon: ChildProcess | undefined;
  const daemonLog: string[] = [];
  const seedWallet = () => join(dir, 'seed_wallet');
  const xpubWallet = () => join(dir, 'xpub_wallet');
  const signerWallet = () => join(dir, 'signer_wallet');

  /** One Electrum command (the CLI talks to the running daemon unless `offline`); JSON output parsed. */
  const electrum = async <T = unknown>(args: string[], offline = false): Promise<T> => {
    const { stdout } = await execFileP(ELECTRUM, ['--regtest', '-D', dir, ...(offline ? ['--offline'] : []), ...args], {
      timeout: 120_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    const text = stdout.trim();
    try {
      return JSON.parse(text) as T;
    } catch {
      return text as T;
    }
  };

  /** What the index says about a set of addresses: balance, history (txid → height) and unspent outputs. */
  const indexView = async (addresses: string[]) => {
    const refs = addresses.map((a) => scriptRef(sha256(addressToScript(a, 'regtest'))));
    let confirmed = 0;
    let unconfirmed = 0;
    for (const r of refs) {
      const b = await readScriptBalance(s.db.db, r);
      confirmed += Number(b.confirmed);
      unconfirmed += Number(b.unconfirmed);
    }
    const history = new Map<string, number>();
    for (const h of await readScriptHistories(s.db.db, refs, 10_000)) {
      if (h.kind !== 'ok') throw new Error('history too long');
      for (const e of h.confirmed) history.set(hashToHex(e.txid), e.height);
      for (const e of h.mempool) history.set(hashToHex(e.txid), e.height);
    }
    const unspent: string[] = [];
    for (const [i, r] of refs.entries())
      for (const u of await readScriptUnspent(s.db.db, r, 10_000))
        unspent.push(`${hashToHex(u.txid)}:${u.vout}:${u.value}:${u.height}:${addresses[i]}`);
    return { confirmed, unconfirmed, history, unspent: unspent.sort() };
  };

  /** What Electrum says about a wallet, in the same shape. */
  const electrumView = async (wallet: string) => {
    const bal = await electrum<{ confirmed: string; unconfirmed?: string; unmatured?: string }>(['getbalance', '-w', wallet]);
    const hist = await electrum<{ transactions: { txid: string; height: number }[] }>(['onchain_history', '-w', wallet]);
    const utxos = await electrum<{ prevout_hash: string; prevout_n: number; value: string; height: number; address: string }[]>([
      'listunspent',
      '-w',
      wallet,
    ]);
    return {
      confirmed: sat(bal.confirmed),
      unconfirmed: sat(bal.unconfirmed ?? 0),
      history: new Map(hist.transactions.map((t) => [t.txid, Math.max(t.height, t.height < 0 ? -1 : 0)])),
      unspent: utxos.map((u) => `${u.prevout_hash}:${u.prevout_n}:${sat(u.value)}:${Math.max(u.height, 0)}:${u.address}`).sort(),
    };
  };

  /**
   * Electrum's view equals the index's for every address the wallet has. Balances are compared
   * as totals: Electrum's getbalance counts the change of its own unconfirmed payment as
   * confirmed and leaves the coins that payment spends out of both parts, where the protocol's
   * get_balance (electrs's rule) keeps them confirmed and puts the payment's net in unconfirmed.
   */
  const walletMatchesIndex = async (wallet: string) => {
    const addresses = await electrum<string[]>(['listaddresses', '-w', wallet]);
    const [e, i] = [await electrumView(wallet), await indexView(addresses)];
    const iHistory = new Map([...i.history].map(([t, h]) => [t, Math.max(h, h < 0 ? -1 : 0)]));
    return {
      e,
      i,
      same:
        e.confirmed + e.unconfirmed === i.confirmed + i.unconfirmed &&
        JSON.stringify([...e.history].sort()) === JSON.stringify([...iHistory].sort()) &&
        JSON.stringify(e.unspent) === JSON.stringify(i.unspent),
    };
  };

  const synced = async (wallet: string) => {
    let last: unknown;
    await waitFor(
      `Electrum's view of ${wallet} to equal the index`,
      async () => {
        const m = await walletMatchesIndex(wallet);
        last = m;
        return m.same && (await electrum<boolean>(['is_synchronized', '-w', wallet])) === true;
      },
      120_000,
      500,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last: ${JSON.stringify(last, (_k, v: unknown) => (v instanceof Map ? [...v] : v))}`);
    });
  };

  beforeAll(async () => {
    s = await startElectrumStack({ electrumTlsPort: undefined });
    dir = await mkdtemp(join(tmpdir(), 'bw-electrum-client-'));
    // Wallets are made offline before the daemon starts: one from a fresh seed, and a watch-only
    // one from the extended public key of another seed's wallet.
    const seed = await electrum<string>(['make_seed'], true);
    await electrum(['restore', seed, '-w', seedWallet()], true);
    await electrum(['restore', await electrum<string>(['make_seed'], true), '-w', signerWallet()], true);
    const vpub = await electrum<string>(['getmpk', '-w', signerWallet()], true);
    expect(vpub).toMatch(/^vpub/);
    await electrum(['restore', vpub, '-w', xpubWallet()], true);

    // The CLI's credentials for its daemon, set before it starts: without them the daemon makes
    // random ones and saves them to the config as it starts, and a CLI call reading the config
    // first makes its own and saves those; the two then differ, and every later call is
    // "Forbidden" (electrum/daemon.py get_rpc_credentials): seen under the suite's load.
    await electrum(['setconfig', 'rpcuser', 'blockwire'], true);
    await electrum(['setconfig', 'rpcpassword', randomBytes(16).toString('hex')], true);
    // The daemon logs (info and above) to stderr; its last lines go into a failure's message.
    daemon = spawn(
      ELECTRUM,
      ['--regtest', '-D', dir, '-v=info', 'daemon', '--oneserver', '--server', `127.0.0.1:${s.electrum.tcpPort}:t`],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    for (const out of [daemon.stdout!, daemon.stderr!])
      out.on('data', (chunk: Buffer) => {
        daemonLog.push(...String(chunk).split('\n').filter(Boolean));
        daemonLog.splice(0, Math.max(0, daemonLog.length - 200));
      });
    const tip = await s.node.tip();
    let info: unknown;
    await waitFor(
      "the Electrum daemon connected to Blockwire at the node's tip",
      async () => {
        const i = await electrum<{ connected?: boolean; blockchain_height?: number }>(['getinfo']).catch((err: Error) => err.message);
        info = i;
        return typeof i === 'object' && i.connected === true && i.blockchain_height === tip.height;
      },
      // Each CLI call is a Python start (seconds at the suite's load) and a daemon that lost its
      // first connection waits up to 10 s to retry: 240 s leaves room for several rounds.
      240_000,
      500,
    ).catch((err: Error) => {
      const exit = daemon?.exitCode ?? daemon?.signalCode ?? 'running';
      throw new Error(
        `${err.message} (tip ${tip.height}); last getinfo: ${JSON.stringify(info)}; daemon: ${exit}; its log's tail:\n${daemonLog.join('\n')}`,
      );
    });
    for (const w of [seedWallet(), xpubWallet()]) await electrum(['load_wallet', '-w', w]);
  }, 480_000);

  afterAll(async () => {
    if (daemon && daemon.exitCode === null) {
      await electrum(['stop']).catch(() => {});
      await waitFor('the Electrum daemon to exit', () => daemon!.exitCode !== null || daemon!.signalCode !== null, 30_000).catch(() =>
        daemon!.kill('SIGKILL'),
      );
    }
    await s?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it('the daemon is on Blockwire only, at the node’s tip', async () => {
    const info = await electrum<{ server: string; blockchain_height: number; connected: boolean }>(['getinfo']);
    expect(info.server).toBe('127.0.0.1');
    expect(info.blockchain_height).toBe((await s.node.tip()).height);
  });

  it('a wallet restored from a seed and one restored from an xpub, funded from the node: Electrum’s getbalance, history and listunspent equal the index', async () => {
    for (const w of [seedWallet(), xpubWallet()]) {
      const addresses = await electrum<string[]>(['listaddresses', '-w', w, '--receiving']);
      await s.node.call('sendtoaddress', [addresses[0], 1.5], W);
      await s.node.call('sendtoaddress', [addresses[1], 0.25], W);
      await s.node.call('sendtoaddress', [addresses[3], 0.125], W);
    }
    await s.mine(1);
    for (const w of [seedWallet(), xpubWallet()]) {
      const addresses = await electrum<string[]>(['listaddresses', '-w', w, '--receiving']);
      await s.node.call('sendtoaddress', [addresses[2], 0.0625], W); // stays unconfirmed
    }
    await s.synced();
    for (const w of [seedWallet(), xpubWallet()]) {
      await synced(w);
      const { e, i } = await walletMatchesIndex(w);
      expect([e.confirmed, e.unconfirmed]).toEqual([i.confirmed, i.unconfirmed]);
      expect(e.confirmed).toBe(sat(1.875));
      expect(e.unconfirmed).toBe(sat(0.0625));
      expect(e.history.size).toBe(4);
      expect(e.unspent).toHaveLength(4);
    }
  }, 600_000);

  it('Electrum signs a payment and broadcasts it through Blockwire; it confirms; a reorg on the node shows in Electrum’s history', async () => {
    const dest = await s.node.call<string>('getnewaddress', [], W);
    const tx = await electrum<string>(['payto', dest, '0.3', '--feerate', '2', '-w', seedWallet()]);
    expect(tx).toMatch(/^[0-9a-f]+$/);
    const txid = await electrum<string>(['broadcast', tx]);
    expect(await s.node.call<string[]>('getrawmempool')).toContain(txid);
    await s.synced();
    await synced(seedWallet());
    const [block] = await s.mine(1);
    const height = (await s.node.tip()).height;
    await synced(seedWallet());
    expect((await electrumView(seedWallet())).history.get(txid)).toBe(height);
    expect((await s.node.call<{ confirmations: number }>('gettransaction', [txid], W)).confirmations).toBe(1);

    // The node reorganises the block away: the payment is unconfirmed again in Electrum.
    await s.node.call('invalidateblock', [block]);
    await s.synced();
    await waitFor('Electrum to see the reorg', async () => (await electrumView(seedWallet())).history.get(txid) === 0, 120_000, 500);
    await synced(seedWallet());
    // A longer branch confirms it again.
    await s.mine(2);
    await waitFor(
      'Electrum to see the payment confirmed on the new branch',
      async () => (await electrumView(seedWallet())).history.get(txid) === height,
      120_000,
      500,
    );
    await synced(seedWallet());
  }, 600_000);
});
