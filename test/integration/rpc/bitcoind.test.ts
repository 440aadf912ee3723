/**
 * BitcoindClient against a real Bitcoin Core 30 and against the devnode: typed calls, Core's
 * errors as RpcError, batches, basic and cookie auth (re-read after a restart), node down as
 * RetryableError, bad credentials as FatalError, and the in-flight cap. Warm-up (-28) is played
 * on the devnode only (Core cannot be held in it on demand); a silent node needs no node.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeNodes, type TestNode } from '../../support/nodes.js';
import { startBitcoind } from '../../support/bitcoind.js';
import { testKey, type Coin, type TestKey } from '../../support/test-key.js';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { startDevnode } from '../../../devnode/index.js';
import { AppError, isRetryable } from '../../../src/errors.js';
import { BitcoindClient, RpcError } from '../../../src/rpc/bitcoind.js';
import { btcToSats } from '../../../src/rpc/types.js';

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

const PAYEE = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';

describeNodes('BitcoindClient', (entry) => {
  let node: TestNode;
  let rpc: BitcoindClient;
  let key: TestKey;
  let coins: Coin[];
  const pay = (sats: bigint) => {
    const c = coins.shift()!;
    return key.spend(
      [c],
      [
        { address: PAYEE, sats },
        { address: key.address, sats: c.sats - sats - 500n },
      ],
    );
  };

  beforeAll(async () => {
    node = await entry.start({ funded: true });
    key = testKey();
    coins = await key.fund(node, [10_000_000n, 10_000_000n]);
    rpc = new BitcoindClient({ url: node.rpcUrl });
  });

  afterAll(async () => {
    await node?.stop();
  });

  it('makes typed calls and fetches raw blocks', async () => {
    const info = await rpc.getBlockchainInfo();
    expect([info.chain, info.blocks, info.bestblockhash]).toEqual(['regtest', 102, (await node.tip()).hash]);
    const raw = await rpc.getBlockRaw(info.bestblockhash);
    expect(hashToHex(decodeBlock(raw).hash)).toBe(info.bestblockhash);
    expect(await rpc.getBlockHash(102)).toBe(info.bestblockhash);
    const header = await rpc.getBlockHeader(info.bestblockhash);
    expect(header.height).toBe(102);
    expect((await rpc.getBlockHeaderRaw(info.bestblockhash)).length).toBe(80);
    const block = await rpc.getBlock(await rpc.getBlockHash(1), 2);
    expect(btcToSats(block.tx[0]!.vout[0]!.value)).toBe(5_000_000_000n);
    expect((await rpc.getZmqNotifications()).map((z) => z.type)).toContain('pubsequence');
  });

  it('turns node errors into RpcError with Core code and message', async () => {
    const e1 = await caught(rpc.getBlockHash(500));
    expect(e1).toBeInstanceOf(RpcError);
    expect(e1).toMatchObject({ code: -8, message: 'Block height out of range', method: 'getblockhash' });
    expect(isRetryable(e1)).toBe(false);
    expect(await caught(rpc.getBlockRaw('ab'.repeat(32)))).toMatchObject({ code: -5, message: 'Block not found' });
    expect(await caught(rpc.call('nosuchmethod'))).toMatchObject({ code: -32601, message: 'Method not found' });
    expect(await caught(rpc.getMempoolEntry('ab'.repeat(32)))).toMatchObject({ code: -5, message: 'Transaction not in mempool' });
    const c = coins[0]!;
    const dust = key.spend(
      [c],
      [
        { address: PAYEE, sats: 100n },
        { address: key.address, sats: c.sats - 100n - 500n },
      ],
    );
    expect(await caught(rpc.sendRawTransaction(dust.hex))).toMatchObject({ code: -26, message: 'dust, tx with dust output must be 0-fee' });
    expect(await caught(rpc.sendRawTransaction('00'))).toMatchObject({ code: -22 });
  });

  it('broadcasts, reads the mempool with its sequence, and runs batches with per-call results', async () => {
    const { hex } = pay(1_000_000n);
    const [test] = await rpc.testMempoolAccept([hex]);
    expect(test!.allowed).toBe(true);
    const txid = await rpc.sendRawTransaction(hex);
    const { txids, mempool_sequence } = await rpc.getRawMempoolWithSequence();
    expect(txids).toContain(txid);
    expect(mempool_sequence).toBeGreaterThan(1);
    expect((await rpc.getMempoolEntry(txid)).vsize).toBeGreaterThan(0);
    const results = await rpc.batch<string>([
      { method: 'getblockhash', params: [0] },
      { method: 'getblockhash', params: [9999] },
      { method: 'getrawtransaction', params: [txid] },
    ]);
    expect(results[0]).toBe('0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206');
    expect(results[1]).toBeInstanceOf(RpcError);
    expect(results[1]).toMatchObject({ code: -8 });
    expect(results[2]).toBe(hex);
    expect(await rpc.batch([])).toEqual([]);
  });

  it('keeps at most maxInFlight calls open against the node', async () => {
    const capped = new BitcoindClient({ url: node.rpcUrl, maxInFlight: 4 });
    const before = node.devnode?.stats().requests ?? 0;
    const hashes = await Promise.all(Array.from({ length: 40 }, (_, i) => capped.getBlockHash(i % 10)));
    expect(hashes[3]).toBe(await rpc.getBlockHash(3));
    expect(capped.maxObservedInFlight).toBe(4);
    if (node.devnode) {
      expect(node.devnode.stats().requests - before).toBe(41);
      expect(node.devnode.stats().peakInFlight).toBeLessThanOrEqual(4);
    }
  });

  it('reports bad credentials as a FatalError and a down node as retryable', async () => {
    const u = new URL(node.rpcUrl);
    u.password = 'wrong';
    const bad = await caught(new BitcoindClient({ url: u.toString() }).getBlockCount());
    expect(bad).toMatchObject({ code: 'ERR_RPC_AUTH', name: 'FatalError' });
    expect(isRetryable(bad)).toBe(false);

    // Core's chainstate is written first, so that the kill loses no block.
    if (node.bitcoind) await node.bitcoind.flush().then(() => node.bitcoind!.kill());
    else await node.devnode!.faults.down();
    try {
      const down = await caught(rpc.getBlockCount());
      expect(down).toMatchObject({ code: 'ERR_RPC_UNAVAILABLE', name: 'RetryableError' });
      expect(isRetryable(down)).toBe(true);
    } finally {
      if (node.bitcoind) await node.bitcoind.start();
      else await node.devnode!.faults.up();
    }
    expect(await rpc.getBlockCount()).toBe((await node.tip()).height);
  });

  it.runIf(entry.name === 'devnode')('reports warm-up (-28) as retryable', async () => {
    node.devnode!.faults.warmup(true);
    try {
      const warm = await caught(rpc.getBlockCount());
      expect(warm).toMatchObject({ code: 'ERR_RPC_WARMUP' });
      expect(isRetryable(warm)).toBe(true);
    } finally {
      node.devnode!.faults.warmup(false);
    }
    expect(await rpc.getBlockCount()).toBe((await node.tip()).height);
  });

  it('authenticates with the cookie file and reads it again after the node restarts with a new one', async () => {
    if (entry.name === 'bitcoind') {
      const b = await startBitcoind({ auth: 'cookie', wallet: 'w' });
      try {
        const client = new BitcoindClient({ url: `http://127.0.0.1:${b.rpc.port}`, cookieFile: b.cookieFile });
        expect(await client.getBlockCount()).toBe(0);
        const before = b.rpc.password;
        await b.restart();
        expect(b.rpc.password).not.toBe(before);
        await b.mine(1);
        expect(await client.getBlockCount()).toBe(1);
        await b.call('loadwallet', ['w']).catch(() => undefined);
        const wallet = new BitcoindClient({ url: `http://127.0.0.1:${b.rpc.port}`, cookieFile: b.cookieFile, wallet: 'w' });
        expect(await wallet.call<number>('getbalance')).toBe(0);
      } finally {
        await b.stop();
      }
      return;
    }
    const dir = await mkdtemp(join(tmpdir(), 'devnode-cookie-'));
    let n = await startDevnode({ dataDir: dir });
    const port = n.rpc.port;
    try {
      const client = new BitcoindClient({ url: `http://127.0.0.1:${port}`, cookieFile: join(dir, '.cookie') });
      expect(await client.getBlockCount()).toBe(0);
      await n.stop();
      n = await startDevnode({ dataDir: dir, rpcPort: port, initialBlocks: 1 });
      expect(await client.getBlockCount()).toBe(1);
      const wallet = new BitcoindClient({ url: `http://127.0.0.1:${port}`, cookieFile: join(dir, '.cookie'), wallet: 'w' });
      expect(await wallet.call<number>('getbalance')).toBe(0);
    } finally {
      await n.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('BitcoindClient without a node', () => {
  it('times out on a node that never answers', async () => {
    const server: Server = createServer(() => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const err = await caught(new BitcoindClient({ url: `http://a:b@127.0.0.1:${port}`, timeoutMs: 200 }).getBlockCount());
      expect(err).toBeInstanceOf(AppError);
      expect(err).toMatchObject({ code: 'ERR_RPC_TIMEOUT' });
      expect(isRetryable(err)).toBe(true);
    } finally {
      server.close();
    }
  });
});
