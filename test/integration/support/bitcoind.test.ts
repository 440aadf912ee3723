/**
 * The real-bitcoind test helper (test/support/bitcoind.ts) and the two-node list
 * (test/support/nodes.ts): a throwaway regtest node answers RPC (rpcauth and cookie), REST and
 * ZMQ on its own ports, its wallet is funded, and it survives restart on other ports and kill -9.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BitcoindRpcError, describeBitcoind, startBitcoind, type Bitcoind } from '../../support/bitcoind.js';
import { waitFor } from '../../support/wait.js';
import { describeNodes, type TestNode } from '../../support/nodes.js';
import { collectZmq } from '../devnode/clients.js';

describeBitcoind('throwaway regtest bitcoind', () => {
  let node: Bitcoind;

  beforeAll(async () => {
    node = await startBitcoind({ funded: true });
  });

  afterAll(async () => {
    await node?.stop();
  });

  it('is Core 30 on regtest with a funded descriptor wallet', async () => {
    const net = await node.call<{ version: number; subversion: string }>('getnetworkinfo');
    expect(net.version).toBe(300000);
    expect(await node.tip()).toMatchObject({ height: 101 });
    const wallet = await node.call<{ descriptors: boolean; walletname: string }>('getwalletinfo', [], 'miner');
    expect(wallet).toMatchObject({ descriptors: true, walletname: 'miner' });
    expect(await node.call<number>('getbalance', [], 'miner')).toBe(50);
    await expect(node.call('getblockhash', [500])).rejects.toMatchObject({
      code: -8,
      message: 'Block height out of range',
      httpStatus: 500,
    });
    await expect(node.call('getblockhash', [500])).rejects.toBeInstanceOf(BitcoindRpcError);
  });

  it('serves REST and publishes every ZMQ topic on one endpoint', async () => {
    const rest = await fetch(`${node.restUrl}/chaininfo.json`);
    expect(rest.status).toBe(200);
    expect(((await rest.json()) as { blocks: number }).blocks).toBe(101);
    const zmqs = await node.call<{ type: string; address: string }[]>('getzmqnotifications');
    expect(zmqs.map((z) => z.type).sort()).toEqual(['pubhashblock', 'pubhashtx', 'pubrawblock', 'pubrawtx', 'pubsequence']);
    expect(zmqs.every((z) => z.address === node.zmqUrl)).toBe(true);
    const sub = await collectZmq(node.zmqUrl);
    try {
      const txid = await node.call<string>('sendtoaddress', [await node.call<string>('getnewaddress', [], 'miner'), 1], 'miner');
      const [hash] = await node.mine(1);
      await waitFor(
        'hashblock of the new block',
        () => sub.messages.some((m) => m.topic === 'hashblock' && Buffer.from(m.body).toString('hex') === hash),
        60_000,
      );
      const topics = new Set(sub.messages.map((m) => m.topic));
      expect([...topics].sort()).toEqual(['hashblock', 'hashtx', 'rawblock', 'rawtx', 'sequence']);
      expect(sub.messages.some((m) => m.topic === 'hashtx' && Buffer.from(m.body).toString('hex') === txid)).toBe(true);
    } finally {
      sub.close();
    }
  });

  it('restarts on other ports with its chain and wallet', async () => {
    const before = { tip: await node.tip(), rpc: node.rpc.port, zmq: node.zmqUrl, pid: node.pid };
    await node.restart({ newPorts: true });
    expect(node.rpc.port).not.toBe(before.rpc);
    expect(node.zmqUrl).not.toBe(before.zmq);
    expect(node.pid).not.toBe(before.pid);
    expect(await node.tip()).toEqual(before.tip);
    expect(await node.call<string[]>('listwallets')).toEqual(['miner']);
  });

  it('kill -9 leaves it down until started again; a flushed chain survives it', async () => {
    await node.mine(2);
    await node.flush();
    const tip = await node.tip();
    const pid = node.pid!;
    await node.kill();
    expect(node.pid).toBeUndefined();
    expect(() => process.kill(pid, 0)).toThrow();
    await expect(node.call('getblockcount')).rejects.toThrow();
    await node.start();
    expect(await node.tip()).toEqual(tip);
    expect(await node.call<string[]>('listwallets')).toEqual(['miner']);
  });

  it('authenticates with the cookie when asked, mines without a wallet, and removes its datadir on stop', async () => {
    const other = await startBitcoind({ auth: 'cookie' });
    try {
      expect(other.rpc.user).toBe('__cookie__');
      expect(existsSync(other.cookieFile)).toBe(true);
      expect(await other.mine(3)).toHaveLength(3);
      expect(await other.call<string[]>('listwallets')).toEqual([]);
    } finally {
      await other.stop();
    }
    expect(existsSync(other.datadir)).toBe(false);
  });
});

describeNodes('both nodes', (entry) => {
  let node: TestNode;

  beforeAll(async () => {
    node = await entry.start({ funded: true });
  });

  afterAll(async () => {
    await node?.stop();
  });

  it('start with a funded wallet at height 101 and answer RPC and REST alike', async () => {
    expect(node.kind).toBe(entry.name);
    expect(await node.tip()).toMatchObject({ height: 101 });
    expect(await node.call<number>('getblockcount')).toBe(101);
    const rest = await fetch(`${node.restUrl}/blockhashbyheight/101.json`);
    expect(await rest.json()).toEqual({ blockhash: (await node.tip()).hash });
    await expect(node.call('getblockhash', [500])).rejects.toMatchObject({ code: -8, message: 'Block height out of range' });
  });
});
