/**
 * The README's first command with nothing configured: `blockwire start` with no DATABASE_URL,
 * REDIS_URL or bitcoind (configured or installed: none on the PATH) starts an embedded PostgreSQL, a redis-server child and the
 * devnode (said loudly to be a stand-in), waits for the index, prints where the API and the stream
 * are with a working API key and curl lines. The printed curl line is run as printed; a chain
 * subscription on the printed stream URL sees the devnode's live blocks arrive; SIGTERM exits 0;
 * a second start on the same data directory reuses the key, the chain and the index.
 * The default ports (3000 and the devnode's) are held busy by the test, as on a machine running
 * something else: the quick start takes free ones and says so. The banner offers the faucet
 * (`blockwire faucet ADDRESS AMOUNT`, run here against the quick start's devnode: the payment
 * shows in the API) and says webhooks to this machine are allowed (a loopback hook is accepted).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../../src/config.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { readQuickStartNode } from '../../../cli/quickstart-node.js';
import { projectRoot } from '../../support/fixtures.js';
import WebSocket from 'ws';
import { spawnBlockwire, type BlockwireProcess } from './processes.js';
import { banner, getJson, runCurl } from './quickstart-banner.js';
import { waitFor } from '../../support/wait.js';
import { connectElectrum } from '../../support/electrum-client.js';

const execFileP = promisify(execFile);

let dataDir: string | undefined;
let proc: BlockwireProcess | undefined;
const held: Server[] = [];

/** Makes `port` busy: listens on it, or leaves it to whoever already does. */
async function holdBusy(port: number): Promise<void> {
  const server = createServer();
  const bound = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (bound) held.push(server);
}

afterAll(async () => {
  await proc?.stop();
  for (const s of held) await new Promise<void>((r) => s.close(() => r()));
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 120_000);

describe('quick start: blockwire start with embedded defaults', () => {
  it('starts everything itself, prints a working curl line, streams live devnode blocks, restarts on the same data', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'blockwire-quickstart-'));
    // Nothing configured but where to keep data, and no blocks but those the test mines (a devnode
    // mining on its own races the index on a slow machine). The default ports are busy (held
    // here, or by someone else).
    const defaults = loadConfig({});
    for (const port of [defaults.port, defaults.devnodeRpcPort, defaults.devnodeZmqPort]) await holdBusy(port);
    // No Bitcoin Core to find (none on the PATH, BITCOIND_BIN unset): the stand-in runs.
    const path = (process.env.PATH ?? '/usr/bin:/bin').split(':').filter((d) => d && !existsSync(join(d, 'bitcoind')));
    const env = { BLOCKWIRE_DATA_DIR: dataDir, BLOCKWIRE_DEVNODE_MINE_EVERY: '0', PATH: path.join(':') };
    proc = spawnBlockwire('quickstart', ['start'], env);
    const first = await banner(proc, 480_000);
    const out = proc.output();
    expect(out).toContain('NO BITCOIND CONFIGURED: using the built-in regtest stand-in (devnode)');
    // Said first: the first log lines are the stand-in's banner.
    expect(proc.lines.slice(0, 2).map((l) => l.msg)).toEqual([
      '*'.repeat(72),
      '*  NO BITCOIND CONFIGURED: using the built-in regtest stand-in (devnode) *',
    ]);
    expect(out).toContain('NOT on Bitcoin Core');
    for (const [setting, port] of [
      ['PORT', defaults.port],
      ['BLOCKWIRE_DEVNODE_RPC_PORT', defaults.devnodeRpcPort],
      ['BLOCKWIRE_DEVNODE_ZMQ_PORT', defaults.devnodeZmqPort],
    ] as const) {
      expect(out).toContain(`  note       ${setting} ${port} was in use:`);
    }
    expect(new URL(first.apiBase).port).not.toBe(String(defaults.port));
    expect(out).toContain('  coins      ./bin/blockwire.js faucet ADDRESS 0.5   (regtest: pays ADDRESS from the node');
    expect(out).toContain('  webhooks   receivers on this machine (loopback, private addresses) are allowed in the quick start');

    // The faucet pays an address from the quick start's devnode; the index shows it confirmed.
    const payee = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';
    const paid = await execFileP(process.execPath, [join(projectRoot, 'bin', 'blockwire.js'), 'faucet', payee, '0.5'], {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? '', BLOCKWIRE_DATA_DIR: dataDir },
      timeout: 120_000,
    });
    expect(paid.stdout).toMatch(/^[0-9a-f]{64}\n$/);
    expect(paid.stderr).toMatch(/^paid 0\.50000000 BTC to bcrt1q\w+ in [0-9a-f]{64}, confirmed in block \d+\n$/);
    await waitFor(
      'the faucet payment in the index',
      async () => (await getJson(`${first.apiBase}/v1/addresses/${payee}/balance?min_conf=1`, first.key)).body.balance === 50_000_000,
      120_000,
    );

    // A webhook to a receiver on this machine is accepted in the quick start.
    const hook = await fetch(`${first.apiBase}/v1/hooks`, {
      method: 'POST',
      headers: { apiKey: first.key, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'http', url: 'http://127.0.0.1:9/blockwire' }),
    });
    expect(hook.status, await hook.clone().text()).toBeLessThan(300);
    expect(first.streamUrl).toBe(`${first.apiBase.replace(/^http/, 'ws')}/v1/stream`);
    // The console's address carries the key in its fragment (never sent: the page takes it).
    expect(first.consoleUrl).toBe(`${first.apiBase}/console#key=${first.key}`);
    const page = await fetch(first.consoleUrl);
    expect([page.status, page.headers.get('content-security-policy')]).toEqual([200, expect.stringContaining("script-src 'self'")]);
    expect(first.curls.length).toBeGreaterThanOrEqual(2);
    expect(first.curls[0]).toBe(`curl -H 'apiKey: ${first.key}' ${first.apiBase}/v1/blockchain`);

    // The printed lines answer as printed.
    const chain = (await runCurl(first.curls[0]!)) as { best_height: number; best_block_hash: string };
    expect(chain.best_block_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(chain.best_height).toBeGreaterThanOrEqual(101);
    const history = (await runCurl(first.curls[1]!)) as unknown[];
    expect(Array.isArray(history)).toBe(true);

    // The Electrum server the banner names answers over TCP and over TLS (self-signed certificate).
    const electrum = /electrum {3}tcp 127\.0\.0\.1:(\d+) {2}tls 127\.0\.0\.1:(\d+) {3}\(certificate: (\S+)\)/.exec(out);
    expect(electrum, out.slice(-3000)).not.toBeNull();
    expect(electrum![3]!.startsWith(dataDir)).toBe(true);
    expect(out).toContain(`electrum --regtest -D DIR daemon -d --oneserver --server 127.0.0.1:${electrum![1]}:t`);
    for (const [port, tls] of [
      [Number(electrum![1]), false],
      [Number(electrum![2]), true],
    ] as const) {
      const e = await connectElectrum(port, { tls });
      const tip = await e.request<{ height: number }>('blockchain.headers.subscribe');
      expect(tip.height).toBeGreaterThanOrEqual(chain.best_height);
      e.close();
    }
    expect(history.length).toBeGreaterThan(0);

    // Live blocks: a chain subscription on the printed stream URL receives block.connected for
    // blocks the devnode mines from now on, and /healthz follows with no lag.
    const sub = await fetch(`${first.apiBase}/v1/subscriptions`, {
      method: 'POST',
      headers: { apiKey: first.key, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'chain' }),
    });
    expect(sub.status).toBeLessThan(300);
    const ws = new WebSocket(first.streamUrl, { headers: { apiKey: first.key } });
    const heights: number[] = [];
    ws.on('message', (d: Buffer) => {
      const e = JSON.parse(String(d)) as { type?: string; height?: number; block?: { height?: number } };
      if (e.type === 'block.connected') heights.push(e.height ?? e.block?.height ?? -1);
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const node = (await readQuickStartNode(dataDir))!;
    expect(node.kind).toBe('devnode');
    const rpc = new BitcoindClient({ url: node.rpcUrl });
    await rpc.call('generatetoaddress', [3, payee]);
    await waitFor('three block.connected events on the stream', () => heights.length >= 3, 180_000);
    ws.close();
    expect(heights[0]).toBeGreaterThan(chain.best_height - 1);
    for (let i = 1; i < heights.length; i++) expect(heights[i]).toBe(heights[i - 1]! + 1);
    const health = await getJson(`${first.apiBase}/healthz`, first.key);
    expect(health.status).toBe(200);
    const after = await getJson(`${first.apiBase}/v1/blockchain`, first.key);
    expect(after.body.best_height as number).toBeGreaterThanOrEqual(heights[heights.length - 1]!);

    expect(await proc.stop()).toBe(0);

    // Same data directory again: the same key, the chain kept by the devnode, the index kept by the
    // embedded PostgreSQL (its tip at least where it was).
    proc = spawnBlockwire('quickstart-2', ['start'], env);
    const second = await banner(proc, 480_000);
    expect(second.key).toBe(first.key);
    const again = (await runCurl(second.curls[0]!)) as { best_height: number };
    expect(again.best_height).toBeGreaterThanOrEqual(after.body.best_height as number);
    expect(await proc.stop()).toBe(0);
    proc = undefined;
  }, 1_200_000);
});
