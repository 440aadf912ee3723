/**
 * BitcoindRest against a real Bitcoin Core 30 and against the devnode: detection of REST (and of
 * its absence), binary blocks, headers, block hash by height, spent outputs decoded and equal to
 * what the inputs spent (getblock verbosity 3), mempool with its sequence, "not found" as null,
 * the in-flight cap, an unreachable node as RetryableError. A block the node no longer serves
 * and warm-up (503) are played on the devnode only (its fault injection).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeBlock, decodeHeader } from '../../../src/bitcoin/block.js';
import { bytesToHex, hashToHex } from '../../../src/bitcoin/hash.js';
import { isRetryable } from '../../../src/errors.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { BitcoindRest, decodeSpentTxOuts } from '../../../indexer/node-rest.js';
import { btcToSats, type TxInfo } from '../../../src/rpc/types.js';
import { describeFixtures, readFixtureJsonl } from '../../support/fixtures.js';
import { describeNodes, type TestNode } from '../../support/nodes.js';

describeNodes('BitcoindRest', (entry) => {
  let node: TestNode;
  let rest: BitcoindRest;
  let rpc: BitcoindClient;
  /** Output types the inputs of the tip block spend. */
  let spentTypes: number;

  beforeAll(async () => {
    node = await entry.start({ funded: true });
    rest = new BitcoindRest({ url: node.rpcUrl });
    rpc = new BitcoindClient({ url: node.rpcUrl });
    const d = node.devnode;
    if (d) {
      for (const type of ['p2pkh', 'p2sh-p2wpkh', 'p2wpkh', 'p2tr', 'p2pk', 'p2sh-multisig', 'p2wsh-multisig', 'bare-multisig'] as const) {
        await d.wallet.send({ script: d.wallet.destination(type).script }, 3_000_000n);
      }
      await d.mine(1);
      // Spend everything just received, so the next block's spent outputs cover every type.
      const received = d.node.chain
        .tip()
        .block.txs.slice(1)
        .flatMap((t) => t.outputs.flatMap((o, v) => (o.value === 3_000_000n ? [`${hashToHex(t.txid)}:${v}`] : [])));
      expect(received).toHaveLength(8);
      await d.wallet.send(d.wallet.address('p2wpkh'), 23_900_000n, { from: received });
      await d.mine(1);
      // Eight wallet types, seven Core output types (P2SH-P2WPKH and P2SH multisig are both `scripthash`).
      spentTypes = 7;
    } else {
      // Core's wallet: one coin of each address type it makes, then all four spent in one transaction.
      const w = node.bitcoind!.wallet!;
      const coins: { txid: string; vout: number }[] = [];
      for (const type of ['legacy', 'p2sh-segwit', 'bech32', 'bech32m']) {
        const address = await node.call<string>('getnewaddress', ['', type], w);
        const txid = await node.pay(address, 3_000_000n);
        const tx = await node.call<{ details: { address: string; vout: number; category: string }[] }>('gettransaction', [txid], w);
        coins.push({ txid, vout: tx.details.find((x) => x.address === address && x.category === 'receive')!.vout });
      }
      await node.mine(1);
      await node.call(
        'send',
        [{ [await node.call<string>('getnewaddress', [], w)]: 0.119 }, null, 'unset', null, { inputs: coins, add_inputs: false }],
        w,
      );
      await node.mine(1);
      // pubkeyhash, scripthash (P2SH-P2WPKH), witness_v0_keyhash, witness_v1_taproot.
      spentTypes = 4;
    }
  });

  afterAll(async () => {
    await node?.stop();
  });

  it('detects REST, and its absence on a node started without -rest', async () => {
    expect(await rest.available()).toBe(true);
    const plain = await entry.start({ bitcoind: { args: ['-rest=0'] }, devnode: { rest: false } });
    try {
      const off = new BitcoindRest({ url: plain.rpcUrl });
      expect(await off.available()).toBe(false);
      const err = await off.getSpentTxOuts((await plain.tip()).hash).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ERR_REST_UNSUPPORTED' });
      expect(isRetryable(err)).toBe(false);
    } finally {
      await plain.stop();
    }
  });

  it('fetches binary blocks, headers and hashes by height; unknown ones are null', async () => {
    const tip = await node.tip();
    const raw = await rest.getBlock(tip.hash);
    expect(bytesToHex(raw!)).toBe(bytesToHex(await rpc.getBlockRaw(tip.hash)));
    expect(await rest.getBlock('ab'.repeat(32))).toBeNull();
    if (node.devnode) {
      node.devnode.faults.hideBlock(tip.hash);
      expect(await rest.getBlock(tip.hash)).toBeNull();
      node.devnode.faults.unhideBlock(tip.hash);
    }
    const at = tip.height - 3;
    const headers = await rest.getHeaders(await rpc.getBlockHash(at), 5);
    expect(headers).toHaveLength(4);
    expect(hashToHex(decodeHeader(headers[3]!).hash)).toBe(tip.hash);
    expect(hashToHex(decodeHeader(headers[1]!).prevHash)).toBe(await rpc.getBlockHash(at));
    expect(await rest.getHeaders('ab'.repeat(32), 5)).toEqual([]);
    expect(await rest.getBlockHashByHeight(tip.height)).toBe(tip.hash);
    expect(await rest.getBlockHashByHeight(tip.height + 1)).toBeNull();
    expect((await rest.getChainInfo()).bestblockhash).toBe(tip.hash);
    expect(await rest.getTx('ab'.repeat(32))).toBeNull();
  });

  it('decodes spent outputs: one list per transaction, equal to the outputs the inputs spent', async () => {
    const tip = await node.tip();
    const spent = await rest.getSpentTxOuts(tip.hash);
    const block = decodeBlock((await rest.getBlock(tip.hash))!);
    expect(spent!.map((l) => l.length)).toEqual(block.txs.map((t) => (t.isCoinbase ? 0 : t.inputs.length)));
    const verbose = await rpc.getBlock(tip.hash, 3);
    let compared = 0;
    verbose.tx.forEach((t: TxInfo, i) => {
      t.vin.forEach((input, j) => {
        if (!input.prevout) return;
        expect(spent![i]![j]!.value).toBe(btcToSats(input.prevout.value));
        expect(bytesToHex(spent![i]![j]!.script)).toBe(input.prevout.scriptPubKey.hex);
        compared++;
      });
    });
    expect(compared).toBeGreaterThanOrEqual(spentTypes);
    const types = new Set(verbose.tx.flatMap((t: TxInfo) => t.vin.map((v) => v.prevout?.scriptPubKey.type)).filter(Boolean));
    expect(types.size).toBe(spentTypes);
    expect(await rest.getSpentTxOuts('ab'.repeat(32))).toBeNull();
    expect(() => decodeSpentTxOuts(new Uint8Array([1, 0, 9]))).toThrow();
  });

  it('a block the node disconnected still gives its spent outputs and its bytes (what an undo asks the node for)', async () => {
    const tip = await node.tip();
    const spent = await rest.getSpentTxOuts(tip.hash);
    const raw = await rest.getBlock(tip.hash);
    expect(spent!.flat().length).toBeGreaterThan(0);
    await rpc.invalidateBlock(tip.hash);
    try {
      expect((await node.tip()).hash).not.toBe(tip.hash);
      const after = await rest.getSpentTxOuts(tip.hash);
      expect(after!.map((l) => l.map((o) => [o.value, bytesToHex(o.script)]))).toEqual(
        spent!.map((l) => l.map((o) => [o.value, bytesToHex(o.script)])),
      );
      expect(bytesToHex((await rest.getBlock(tip.hash))!)).toBe(bytesToHex(raw!));
    } finally {
      await rpc.reconsiderBlock(tip.hash);
    }
    expect((await node.tip()).hash).toBe(tip.hash);
  });

  it('reads mempool txids with the mempool sequence, as getrawmempool(false, true)', async () => {
    await node.pay('bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080', 500_000n);
    const viaRest = await rest.getMempoolWithSequence();
    expect(viaRest.txids.length).toBeGreaterThan(0);
    expect(viaRest).toEqual(await rpc.getRawMempoolWithSequence());
  });

  it('keeps at most 8 requests in flight', async () => {
    const height = (await node.tip()).height;
    const hashes = await Promise.all(Array.from({ length: 60 }, (_, i) => rpc.getBlockHash(i % (height + 1))));
    const client = new BitcoindRest({ url: node.rpcUrl });
    const blocks = await Promise.all(hashes.map((h) => client.getBlock(h)));
    expect(blocks.every((b) => b !== null)).toBe(true);
    expect(client.maxObservedInFlight).toBe(8);
    if (node.devnode) expect(node.devnode.stats().restPeakInFlight).toBeLessThanOrEqual(8);
    expect(new BitcoindRest({ url: node.rpcUrl, maxInFlight: 100 })).toBeInstanceOf(BitcoindRest);
  });

  it('reports an unreachable node as retryable', async () => {
    const tip = await node.tip();
    // Core's chainstate is written first, so that the kill loses no block.
    if (node.bitcoind) await node.bitcoind.flush().then(() => node.bitcoind!.kill());
    else await node.devnode!.faults.down();
    try {
      const err = await rest.getBlock(tip.hash).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ERR_REST_UNAVAILABLE' });
      expect(isRetryable(err)).toBe(true);
    } finally {
      if (node.bitcoind) await node.bitcoind.start();
      else await node.devnode!.faults.up();
    }
    expect(bytesToHex((await rest.getBlock(tip.hash))!)).toBe(bytesToHex(await rpc.getBlockRaw(tip.hash)));
  });

  it.runIf(entry.name === 'devnode')('reports warm-up (503) as retryable', async () => {
    node.devnode!.faults.warmup(true);
    try {
      const err = await rest.getChainInfo().catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ERR_REST_WARMUP' });
      expect(isRetryable(err)).toBe(true);
    } finally {
      node.devnode!.faults.warmup(false);
    }
  });
});

describeFixtures('decodeSpentTxOuts on the recorded Core 30 answer', () => {
  it('decodes /rest/spenttxouts .bin to the same outputs as its .json', async () => {
    const rest = await readFixtureJsonl<{ path: string; body: { hex?: string; text?: string } }>('bitcoind', 'rest.jsonl');
    const bin = rest.find((r) => r.path.includes('/spenttxouts/') && r.path.endsWith('.bin'))!;
    const json = rest.find((r) => r.path.includes('/spenttxouts/') && r.path.endsWith('.json'))!;
    const decoded = decodeSpentTxOuts(Uint8Array.from(Buffer.from(bin.body.hex!, 'hex')));
    const want = JSON.parse(json.body.text!) as { value: number; scriptPubKey: { hex: string } }[][];
    expect(decoded.map((l) => l.map((o) => [o.value, bytesToHex(o.script)]))).toEqual(
      want.map((l) => l.map((o) => [btcToSats(o.value), o.scriptPubKey.hex])),
    );
    expect(decoded[0]).toEqual([]);
    expect(decoded).toHaveLength(8);
  });
});
