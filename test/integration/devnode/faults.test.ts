/**
 * Fault injection for Blockwire's reliability tests: ZMQ gaps,
 * silence, reordering, counter resets and arbitrary frames seen by a real subscriber; RPC/REST
 * going down and coming back; a restart; warm-up answers; blocks the node pretends not to have.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { classifyScript } from '../../../src/bitcoin/script.js';
import { collectZmq, rawRpc, restGet, zmqSentinel } from './clients.js';
import { waitFor } from '../../support/wait.js';

describe('devnode fault injection', () => {
  let node: Devnode;
  let zmq: Awaited<ReturnType<typeof collectZmq>>;

  beforeAll(async () => {
    node = await startDevnode({ initialBlocks: 101 });
    zmq = await collectZmq(node.zmqUrl);
  });

  afterAll(async () => {
    zmq.close();
    await node.stop();
  });

  const seqsOf = (topic: string) => zmq.messages.filter((m) => m.topic === topic).map((m) => m.seq);

  it('drops the next N messages of a topic while its counter advances (a visible gap)', async () => {
    zmq.messages.length = 0;
    const before = node.faults.zmq.sent().filter((m) => m.topic === 'hashblock').length;
    node.faults.zmq.drop('hashblock', 2);
    await node.mine(4);
    await zmqSentinel(node, zmq);
    const seqs = seqsOf('hashblock');
    expect(seqs).toHaveLength(2);
    expect(seqs[1]! - seqs[0]!).toBe(1);
    expect(seqsOf('rawblock')).toHaveLength(4);
    // The two delivered hashblocks carry counters 2 and 3 past the dropped ones.
    expect(seqs[0]).toBe(seqsOf('rawblock')[2]);
    expect(node.faults.zmq.sent().filter((m) => m.topic === 'hashblock').length - before).toBe(2);
  });

  it('stays silent while mining, then resumes with counters that show what was lost', async () => {
    zmq.messages.length = 0;
    node.faults.zmq.silence(true);
    await node.mine(20);
    node.faults.zmq.silence(false);
    const [tip] = await node.mine(1);
    // The new block's hashblock is the sentinel: one socket keeps its order, so a message of the
    // twenty silent blocks would have come before it.
    const hashOf = (m: (typeof zmq.messages)[number]) => Buffer.from(m.body).toString('hex');
    await waitFor('the hashblock of the block mined after the silence', () =>
      zmq.messages.some((m) => m.topic === 'hashblock' && hashOf(m) === tip),
    );
    const hb = zmq.messages.filter((m) => m.topic === 'hashblock');
    expect(hb.map(hashOf)).toEqual([tip]);
    expect(hb[0]!.seq).toBe(node.faults.zmq.counter('hashblock') - 1);
    const upToSentinel = zmq.messages.slice(0, zmq.messages.indexOf(hb[0]!) + 1);
    // (the new block's coinbase hashtx and rawtx and its sequence C come first)
    expect(upToSentinel.map((m) => m.topic)).toEqual(['hashtx', 'rawtx', 'sequence', 'hashblock']);
  });

  it('reorders the next messages and resets counters to 0 as a restart does', async () => {
    zmq.messages.length = 0;
    node.faults.zmq.reorderNext(5);
    await node.mine(1); // coinbase hashtx, rawtx, sequence C, hashblock, rawblock — sent reversed
    await zmqSentinel(node, zmq);
    expect(zmq.messages.map((m) => m.topic)).toEqual(['rawblock', 'hashblock', 'sequence', 'rawtx', 'hashtx']);
    zmq.messages.length = 0;
    node.faults.zmq.resetCounters();
    await node.mine(1);
    await zmqSentinel(node, zmq);
    expect(zmq.messages.map((m) => m.seq)).toEqual([0, 0, 0, 0, 0]);
  });

  it('publishes arbitrary frames: unknown hash, 31- and 34-byte bodies, wrong topic, bad label, two frames', async () => {
    zmq.messages.length = 0;
    const hash = new Uint8Array(32).fill(0xab);
    await node.faults.zmq.publishRaw(['hashblock', hash, new Uint8Array([9, 0, 0, 0])]);
    await node.faults.zmq.publishRaw(['hashblock', new Uint8Array(31), new Uint8Array(4)]);
    await node.faults.zmq.publishRaw(['sequence', new Uint8Array(34), new Uint8Array(4)]);
    await node.faults.zmq.publishRaw(['hashblockx', hash, new Uint8Array(4)]);
    await node.faults.zmq.publishRaw(['sequence', new Uint8Array([...hash, 0x58]), new Uint8Array(4)]);
    await node.faults.zmq.publishRaw(['rawtx', new Uint8Array([1, 2, 3])]);
    await zmqSentinel(node, zmq);
    expect(zmq.messages.map((m) => [m.topic, m.body.length, m.frames])).toEqual([
      ['hashblock', 32, 3],
      ['hashblock', 31, 3],
      ['sequence', 34, 3],
      ['hashblockx', 32, 3],
      ['sequence', 33, 3],
      ['rawtx', 3, 2],
    ]);
    expect(zmq.messages[0]!.seq).toBe(9);
  });

  it('announces a block twice with the same counters', async () => {
    zmq.messages.length = 0;
    await node.mine(1);
    await node.faults.zmq.repeatLast(2);
    await zmqSentinel(node, zmq);
    const hb = zmq.messages.filter((m) => m.topic === 'hashblock');
    expect(hb).toHaveLength(2);
    expect(hb[1]!.seq).toBe(hb[0]!.seq);
    expect(Buffer.from(hb[1]!.body).toString('hex')).toBe(node.tip().hash);
  });

  it('answers "not found" for a hidden (stale) block over RPC and REST, and serves it again after', async () => {
    const { hash } = node.tip();
    node.faults.hideBlock(hash);
    const r = await rawRpc(node, 'getblock', [hash, 0]);
    expect([r.status, r.body.error]).toEqual([500, { code: -5, message: 'Block not found' }]);
    const h = await rawRpc(node, 'getblockheader', [hash, true]);
    expect(h.body.error).toEqual({ code: -5, message: 'Block not found' });
    const rest = await restGet(node, `/rest/block/${hash}.bin`);
    expect([rest.status, rest.type, rest.text]).toEqual([404, 'text/plain', `${hash} not found\r\n`]);
    node.faults.unhideBlock(hash);
    expect((await rawRpc(node, 'getblock', [hash, 0])).status).toBe(200);
  });

  it('answers -28 and REST 503 while warming up', async () => {
    node.faults.warmup(true);
    const r = await rawRpc(node, 'getblockcount');
    expect([r.status, r.body.error?.code]).toEqual([500, -28]);
    const rest = await restGet(node, '/rest/chaininfo.json');
    expect([rest.status, rest.text]).toEqual([503, 'Service temporarily unavailable: Loading block index…\r\n']);
    node.faults.warmup(false);
    expect((await rawRpc(node, 'getblockcount')).status).toBe(200);
  });

  it('setfeeestimate (not a Core method) makes estimatesmartfee answer { feerate, blocks } in Core\'s shape; null restores "Insufficient data"', async () => {
    const none = await rawRpc(node, 'estimatesmartfee', [6]);
    expect(Object.keys(none.body.result as object)).toEqual(['errors', 'blocks']);
    expect((none.body.result as { errors: string[] }).errors).toEqual(['Insufficient data or no feerate found']);

    expect(await rawRpc(node, 'setfeeestimate', [12])).toMatchObject({ status: 200, body: { result: null, error: null } });
    const six = await rawRpc(node, 'estimatesmartfee', [6]);
    expect(six.body.result).toEqual({ feerate: 0.00012, blocks: 6 });
    expect(Object.keys(six.body.result as object)).toEqual(['feerate', 'blocks']);
    expect(six.text).toContain('"result":{"feerate":0.00012000,"blocks":6}');
    expect((await rawRpc(node, 'estimatesmartfee', [1])).body.result).toEqual({ feerate: 0.00012, blocks: 2 });

    // BTC/kvB as estimatesmartfee prints it, found at 4 blocks: nearer targets answer 4.
    await rawRpc(node, 'setfeeestimate', [0.000205, 4, 'BTC/kvB']);
    expect((await rawRpc(node, 'estimatesmartfee', [2, 'economical'])).body.result).toEqual({ feerate: 0.000205, blocks: 4 });
    expect((await rawRpc(node, 'estimatesmartfee', [10])).body.result).toEqual({ feerate: 0.000205, blocks: 10 });
    // Core never answers under the relay fee (Core 30: 0.1 sat/vB).
    await rawRpc(node, 'setfeeestimate', [0.05]);
    expect((await rawRpc(node, 'estimatesmartfee', [6])).body.result).toEqual({ feerate: 0.000001, blocks: 6 });
    node.faults.setFeeEstimate(3_500n);
    expect((await rawRpc(node, 'estimatesmartfee', [6])).body.result).toEqual({ feerate: 0.000035, blocks: 6 });

    expect((await rawRpc(node, 'setfeeestimate', [-1])).body.error).toEqual({
      code: -8,
      message: 'Invalid fee_rate: must not be negative',
    });
    expect((await rawRpc(node, 'setfeeestimate', [5, 1])).body.error?.code).toBe(-8);
    expect((await rawRpc(node, 'setfeeestimate', [5, 2, 'sat/B'])).body.error?.code).toBe(-8);
    expect((await rawRpc(node, 'setfeeestimate', ['five'])).body.error?.code).toBe(-3);
    expect((await rawRpc(node, 'estimatesmartfee', [6])).body.result).toEqual({ feerate: 0.000035, blocks: 6 });
    // As bitcoin-cli sends them (strings, for a method it does not know).
    await rawRpc(node, 'setfeeestimate', ['7.5', '3']);
    expect((await rawRpc(node, 'estimatesmartfee', [2])).body.result).toEqual({ feerate: 0.000075, blocks: 3 });

    await rawRpc(node, 'setfeeestimate', ['null']);
    expect((await rawRpc(node, 'estimatesmartfee', [6])).body.result).toEqual(none.body.result);
  });

  it('goes down (connection refused) and comes back on the same port; an outage ends by itself', async () => {
    await node.faults.down();
    await expect(rawRpc(node, 'getblockcount')).rejects.toThrow();
    await node.faults.up();
    expect((await rawRpc(node, 'getblockcount')).body.result).toBe(node.tip().height);
    await node.faults.outage(300);
    await expect(rawRpc(node, 'getblockcount')).rejects.toThrow();
    await waitFor(
      'the RPC port answering again',
      () =>
        rawRpc(node, 'getblockcount').then(
          () => true,
          () => false,
        ),
      30_000,
      100,
    );
  });

  it('restarts like bitcoind: ZMQ counters and the mempool sequence start again', async () => {
    await node.wallet.send(node.wallet.address('p2tr'), 100_000n);
    const before = (await rawRpc(node, 'getrawmempool', [false, true])).body.result as { mempool_sequence: number };
    expect(before.mempool_sequence).toBeGreaterThan(1);
    await node.faults.restart();
    const after = (await rawRpc(node, 'getrawmempool', [false, true])).body.result as { mempool_sequence: number; txids: string[] };
    expect(after.mempool_sequence).toBe(1);
    expect(after.txids).toHaveLength(1);
    const sub = await collectZmq(node.zmqUrl);
    try {
      await node.mine(1);
      await zmqSentinel(node, sub);
      expect(sub.messages.find((m) => m.topic === 'hashblock')?.seq).toBe(0);
    } finally {
      sub.close();
    }
  });
});

describe('devnode background mining (the quick start)', () => {
  it('mines a block every interval with sample payments of every address type', async () => {
    const node = await startDevnode({ mineEvery: 0.25 });
    try {
      expect(node.tip().height).toBeGreaterThanOrEqual(101);
      const start = node.tip().height;
      await waitFor('four blocks mined', () => node.tip().height >= start + 4, 30_000, 100);
      const types = new Set<string>();
      for (const e of node.node.chain.active.slice(start + 1)) {
        for (const tx of e.block.txs.slice(1)) for (const o of tx.outputs) types.add(classifyScript(o.script));
      }
      for (const t of [
        'pubkeyhash',
        'scripthash',
        'witness_v0_keyhash',
        'witness_v1_taproot',
        'pubkey',
        'witness_v0_scripthash',
        'multisig',
        'nulldata',
      ]) {
        expect(types.has(t), t).toBe(true);
      }
    } finally {
      await node.stop();
    }
  });
});
