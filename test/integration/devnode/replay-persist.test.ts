/**
 * Replay of regtest-chain-a (all at once, and step by step with the recorded C/D order on ZMQ),
 * persistence across restarts under a data dir (chain, mempool, wallet, cookie), the
 * `blockwire devnode` command, and an existing client (`bitcoin-core` npm package, batches
 * included) talking to the devnode.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { loadReplay } from '../../../devnode/replay.js';
import { describeFixtures, fixturePath, projectRoot, readFixtureJson } from '../../support/fixtures.js';
import { collectZmq, rawRpc, restGet, rpcResult, zmqSentinel } from './clients.js';
import { waitFor } from '../../support/wait.js';

// bitcoin-core is CommonJS (`export =`); this project compiles without esModuleInterop.
const Client = createRequire(import.meta.url)('bitcoin-core') as typeof import('bitcoin-core');

describeFixtures('devnode replay of regtest-chain-a', () => {
  it('replays everything at once and serves exactly the recorded chain over RPC and REST', async () => {
    const expected = await readFixtureJson<{ best_height: number; best_block_hash: string }>('regtest-chain-a', 'expected.json');
    const node = await startDevnode({ replay: { dir: fixturePath('regtest-chain-a'), pace: 'all' } });
    try {
      expect(await rpcResult(node, 'getbestblockhash')).toBe(expected.best_block_hash);
      expect(await rpcResult(node, 'getblockcount')).toBe(expected.best_height);
      expect(await rpcResult(node, 'getrawmempool')).toEqual([]);
      const tips = await rpcResult<{ status: string }[]>(node, 'getchaintips');
      expect(tips.filter((t) => t.status === 'active')).toHaveLength(1);
      expect(tips.length).toBeGreaterThan(1);
      const h = await restGet(node, `/rest/blockhashbyheight/${expected.best_height}.hex`);
      expect(h.text).toBe(`${expected.best_block_hash}\n`);
      expect(node.replay?.position()).toEqual({ applied: 298, total: 298 });
    } finally {
      await node.stop();
    }
  });

  it('replays at a pace in the background, serving RPC meanwhile', async () => {
    const plan = loadReplay(fixturePath('regtest-chain-a'));
    const node = await startDevnode({ replay: { dir: fixturePath('regtest-chain-a'), pace: 300 } });
    try {
      expect(node.replay!.position().applied).toBeLessThan(plan.events.length);
      const midway = await rpcResult<number>(node, 'getblockcount');
      expect(midway).toBeLessThan(plan.final.height);
      await node.replay!.done;
      expect(await rpcResult(node, 'getbestblockhash')).toBe(plan.final.hash);
    } finally {
      await node.stop();
    }
  });

  it('steps through the recording on request; ZMQ sequence shows the recorded C/D order and hashblock only for new tips', async () => {
    const plan = loadReplay(fixturePath('regtest-chain-a'));
    const node = await startDevnode({ replay: { dir: fixturePath('regtest-chain-a'), pace: 'manual' } });
    const zmq = await collectZmq(node.zmqUrl, ['sequence', 'hashblock']);
    try {
      expect(node.tip().height).toBe(0);
      let applied = 0;
      // Step at a pace the subscriber keeps up with (ZMQ drops past its high-water mark, as bitcoind's does).
      while (applied < plan.events.length) {
        applied += node.replay!.step(10);
        await node.faults.zmq.flush();
        await new Promise((r) => setTimeout(r, 20));
      }
      await node.replay!.done;
      await zmqSentinel(node, zmq);
      const cd = zmq.messages
        .filter((m) => m.topic === 'sequence' && m.body.length === 33)
        .map((m) => `${String.fromCharCode(m.body[32]!)}${Buffer.from(m.body.subarray(0, 32)).toString('hex')}`);
      expect(cd).toEqual(plan.events.map((e) => `${e.label}${e.hash}`));
      const seqs = zmq.messages.filter((m) => m.topic === 'sequence').map((m) => m.seq!);
      // Consecutive from 1: counter 0 went to the genesis block's connection, before anyone subscribed (as in Core).
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
      expect(seqs.length).toBeGreaterThan(plan.events.length);
      const hashblocks = zmq.messages.filter((m) => m.topic === 'hashblock').length;
      expect(hashblocks).toBeLessThan(cd.filter((x) => x.startsWith('C')).length);
      expect(node.tip().hash).toBe(plan.final.hash);
    } finally {
      zmq.close();
      await node.stop();
    }
  });
});

describe('devnode persistence under a data dir', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('continues the same chain, mempool and wallet after a restart, and writes a cookie file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'devnode-'));
    dirs.push(dir);
    let node: Devnode = await startDevnode({ dataDir: dir, initialBlocks: 105 });
    const address = node.wallet.address('p2tr');
    const confirmed = await node.wallet.send(address, 1_000_000n);
    await node.mine(1);
    const [stale] = await node.mine(1);
    await node.invalidate(stale!);
    const pending = await node.wallet.send(node.wallet.address('p2pkh'), 2_000_000n);
    const tip = node.tip();
    const cookie = await readFile(join(dir, '.cookie'), 'utf8');
    expect(cookie).toMatch(/^__cookie__:[0-9a-f]{64}$/);
    const viaCookie = await fetch(`http://${node.rpc.host}:${node.rpc.port}/`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(cookie).toString('base64')}` },
      body: JSON.stringify({ method: 'getblockcount', params: [], id: 1 }),
    });
    expect(viaCookie.status).toBe(200);
    await node.stop();

    node = await startDevnode({ dataDir: dir });
    try {
      expect(node.tip()).toEqual(tip);
      expect(node.wallet.address('p2tr')).toBe(address);
      expect(node.mempool()).toContain(pending);
      expect((await rawRpc(node, 'getrawtransaction', [confirmed, 1])).body.result).toMatchObject({ confirmations: 1 });
      const tips = await rpcResult<{ hash: string; status: string }[]>(node, 'getchaintips');
      expect(tips.find((t) => t.hash === stale)?.status).toBe('invalid');
      const [next] = await node.mine(1);
      expect(node.tip().height).toBe(tip.height + 1);
      expect(node.node.chain.get(next!)!.block.txs.length).toBe(2);
    } finally {
      await node.stop();
    }
  });
});

describeFixtures('devnode replay under a data dir', () => {
  it('keeps the replayed chain across a restart without replaying it again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'devnode-replay-'));
    try {
      const replay = { dir: fixturePath('regtest-chain-a'), pace: 'all' as const };
      let node = await startDevnode({ dataDir: dir, replay });
      const tip = node.tip();
      await node.stop();
      node = await startDevnode({ dataDir: dir, replay });
      try {
        expect(node.tip()).toEqual(tip);
        expect(node.replay!.position()).toEqual({ applied: 298, total: 298 });
        expect(node.faults.zmq.sent()).toHaveLength(0);
        expect(await rpcResult<{ status: string }[]>(node, 'getchaintips')).toEqual(
          expect.arrayContaining([expect.objectContaining({ status: 'valid-fork' })]),
        );
      } finally {
        await node.stop();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('blockwire devnode command and existing clients', () => {
  it('prints its URLs when ready, answers RPC, and exits 0 on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      [
        join(projectRoot, 'bin', 'blockwire.js'),
        'devnode',
        '--rpc-port',
        '0',
        '--zmq-port',
        '0',
        '--initial-blocks',
        '2',
        '--rpc-user',
        'u',
        '--rpc-password',
        'p',
      ],
      {
        cwd: projectRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor('the devnode banner', () => out.includes('zmq '), 60_000, 100);
      expect(out).toContain('devnode ready (a regtest stand-in, NOT bitcoind)');
      const rpcUrl = /rpc\s+(\S+)/.exec(out)![1]!;
      expect(/zmq\s+tcp:\/\/127\.0\.0\.1:\d+/.test(out)).toBe(true);
      const u = new URL(rpcUrl);
      expect([u.username, u.password]).toEqual(['u', 'p']);
      const res = await fetch(`http://${u.host}/`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from('u:p').toString('base64')}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'x', method: 'getblockcount', params: [] }),
      });
      expect(await res.json()).toEqual({ jsonrpc: '2.0', result: 2, id: 'x' });
      const denied = await fetch(`http://${u.host}/`, { method: 'POST', body: '{}' });
      expect([denied.status, denied.headers.get('www-authenticate')]).toEqual([401, 'Basic realm="jsonrpc"']);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  it('works with the bitcoin-core npm client: calls, Core errors, batches and REST', async () => {
    const node = await startDevnode({ initialBlocks: 3 });
    try {
      const client = new Client({ host: `http://${node.rpc.host}:${node.rpc.port}`, username: node.rpc.user, password: node.rpc.password });
      const info = await client.command('getblockchaininfo');
      expect(info.blocks).toBe(3);
      await expect(client.command('getblock', 'ab'.repeat(32))).rejects.toMatchObject({ code: -5, message: 'Block not found' });
      const batch = await client.command([
        { method: 'getblockhash', parameters: [0] },
        { method: 'getblockhash', parameters: [99] },
      ]);
      expect(batch[0]).toBe('0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206');
      expect(batch[1]).toMatchObject({ code: -8, message: 'Block height out of range' });
      const block = await client.getBlockByHash(node.tip().hash, { extension: 'json' });
      expect(block.height).toBe(3);
      await expect(client.getBlockByHash('ab'.repeat(32), { extension: 'json' })).rejects.toMatchObject({ code: 404 });
    } finally {
      await node.stop();
    }
  });
});
