/**
 * BitcoindRest against the devnode: detection of REST, binary blocks, headers, block hash by
 * height, spent outputs decoded and equal to what the inputs spent, mempool with its sequence,
 * "not found" as null, the in-flight cap, an unreachable node as RetryableError.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeBlock, decodeHeader } from '../../../src/bitcoin/block.js';
import { bytesToHex, hashToHex } from '../../../src/bitcoin/hash.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { isRetryable } from '../../../src/errors.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { BitcoindRest, decodeSpentTxOuts } from '../../../src/rpc/rest.js';
import { btcToSats, type TxInfo } from '../../../src/rpc/types.js';
import { describeFixtures, readFixtureJsonl } from '../../support/fixtures.js';

describe('BitcoindRest', () => {
  let node: Devnode;
  let rest: BitcoindRest;
  let rpc: BitcoindClient;

  beforeAll(async () => {
    node = await startDevnode({ initialBlocks: 101 });
    for (const type of ['p2pkh', 'p2sh-p2wpkh', 'p2wpkh', 'p2tr', 'p2pk', 'p2sh-multisig', 'p2wsh-multisig', 'bare-multisig'] as const) {
      await node.wallet.send({ script: node.wallet.destination(type).script }, 3_000_000n);
    }
    await node.mine(1);
    // Spend everything just received, so the next block's spent outputs cover every type.
    const received = node.node.chain.tip().block.txs.slice(1).flatMap((t) => t.outputs.flatMap((o, v) => (o.value === 3_000_000n ? [`${hashToHex(t.txid)}:${v}`] : [])));
    expect(received).toHaveLength(8);
    await node.wallet.send(node.wallet.address('p2wpkh'), 23_900_000n, { from: received });
    await node.mine(1);
    rest = new BitcoindRest({ url: node.rpcUrl });
    rpc = new BitcoindClient({ url: node.rpcUrl });
  });

  afterAll(async () => {
    await node.stop();
  });

  it('detects REST, and its absence on a node started without -rest', async () => {
    expect(await rest.available()).toBe(true);
    const plain = await startDevnode({ rest: false });
    try {
      const off = new BitcoindRest({ url: plain.rpcUrl });
      expect(await off.available()).toBe(false);
      const err = await off.getSpentTxOuts(plain.tip().hash).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ERR_REST_UNSUPPORTED' });
      expect(isRetryable(err)).toBe(false);
    } finally {
      await plain.stop();
    }
  });

  it('fetches binary blocks, headers and hashes by height; unknown ones are null', async () => {
    const tip = node.tip();
    const raw = await rest.getBlock(tip.hash);
    expect(bytesToHex(raw!)).toBe(bytesToHex(await rpc.getBlockRaw(tip.hash)));
    expect(await rest.getBlock('ab'.repeat(32))).toBeNull();
    node.faults.hideBlock(tip.hash);
    expect(await rest.getBlock(tip.hash)).toBeNull();
    node.faults.unhideBlock(tip.hash);
    const headers = await rest.getHeaders(node.blockHash(100), 5);
    expect(headers).toHaveLength(4);
    expect(hashToHex(decodeHeader(headers[3]!).hash)).toBe(tip.hash);
    expect(hashToHex(decodeHeader(headers[1]!).prevHash)).toBe(node.blockHash(100));
    expect(await rest.getHeaders('ab'.repeat(32), 5)).toEqual([]);
    expect(await rest.getBlockHashByHeight(tip.height)).toBe(tip.hash);
    expect(await rest.getBlockHashByHeight(tip.height + 1)).toBeNull();
    expect((await rest.getChainInfo()).bestblockhash).toBe(tip.hash);
    expect(await rest.getTx('ab'.repeat(32))).toBeNull();
  });

  it('decodes spent outputs: one list per transaction, equal to the outputs the inputs spent', async () => {
    const tip = node.tip();
    const spent = await rest.getSpentTxOuts(tip.hash);
    const block = decodeBlock((await rest.getBlock(tip.hash))!);
    expect(spent!.map((l) => l.length)).toEqual(block.txs.map((t) => (t.isCoinbase ? 0 : t.inputs.length)));
    const verbose = await rpc.getBlock(tip.hash, 3);
    verbose.tx.forEach((t: TxInfo, i) => {
      t.vin.forEach((input, j) => {
        if (!input.prevout) return;
        expect(spent![i]![j]!.value).toBe(btcToSats(input.prevout.value));
        expect(bytesToHex(spent![i]![j]!.script)).toBe(input.prevout.scriptPubKey.hex);
      });
    });
    const types = new Set(verbose.tx.flatMap((t: TxInfo) => t.vin.map((v) => v.prevout?.scriptPubKey.type)).filter(Boolean));
    // Eight wallet types, seven Core output types (P2SH-P2WPKH and P2SH multisig are both `scripthash`).
    expect(types.size).toBe(7);
    expect(await rest.getSpentTxOuts('ab'.repeat(32))).toBeNull();
    expect(() => decodeSpentTxOuts(new Uint8Array([1, 0, 9]))).toThrow();
  });

  it('reads mempool txids with the mempool sequence, as getrawmempool(false, true)', async () => {
    await node.wallet.send(node.wallet.address('p2tr'), 500_000n);
    expect(await rest.getMempoolWithSequence()).toEqual(await rpc.getRawMempoolWithSequence());
  });

  it('keeps at most 8 requests in flight', async () => {
    const hashes = Array.from({ length: 60 }, (_, i) => node.blockHash(i % (node.tip().height + 1)));
    const client = new BitcoindRest({ url: node.rpcUrl });
    const blocks = await Promise.all(hashes.map((h) => client.getBlock(h)));
    expect(blocks.every((b) => b !== null)).toBe(true);
    expect(client.maxObservedInFlight).toBe(8);
    expect(node.stats().restPeakInFlight).toBeLessThanOrEqual(8);
    expect(new BitcoindRest({ url: node.rpcUrl, maxInFlight: 100 })).toBeInstanceOf(BitcoindRest);
  });

  it('reports an unreachable node as retryable and warm-up as retryable', async () => {
    await node.faults.down();
    try {
      const err = await rest.getBlock(node.tip().hash).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ERR_REST_UNAVAILABLE' });
      expect(isRetryable(err)).toBe(true);
    } finally {
      await node.faults.up();
    }
    node.faults.warmup(true);
    try {
      const err = await rest.getChainInfo().catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ERR_REST_WARMUP' });
      expect(isRetryable(err)).toBe(true);
    } finally {
      node.faults.warmup(false);
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
    expect(decoded.map((l) => l.map((o) => [o.value, bytesToHex(o.script)]))).toEqual(want.map((l) => l.map((o) => [btcToSats(o.value), o.scriptPubKey.hex])));
    expect(decoded[0]).toEqual([]);
    expect(decoded).toHaveLength(8);
  });
});
