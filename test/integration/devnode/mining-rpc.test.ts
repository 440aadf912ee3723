/**
 * Mining over RPC as Core does it: generateblock with mempool txids and raw transactions,
 * generatetodescriptor, submitblock answers (null, duplicate, inconclusive for a side branch,
 * the reject reason for a bad block), and the reorg helper of the handle.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { bytesToHex, hexToBytes } from '../../../src/bitcoin/hash.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { assembleBlock } from '../../../devnode/miner.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { regtestScript } from '../../../devnode/address.js';
import { rawRpc, rpcResult } from './clients.js';

describe('devnode mining RPCs', () => {
  let node: Devnode;
  beforeAll(async () => {
    node = await startDevnode({ initialBlocks: 104 });
  });
  afterAll(async () => {
    await node.stop();
  });

  it('generateblock takes mempool txids and raw transactions, in order, and nothing else', async () => {
    const next = node.tip().height + 1;
    const mature = [...node.node.chain.utxo.entries()].filter(([, c]) => c.coinbase && node.wallet.owns(c.script) && next - c.height >= 100).map(([k]) => k);
    expect(mature.length).toBeGreaterThanOrEqual(3);
    const inMempool = await node.wallet.send(node.wallet.address('p2tr'), 1_000_000n, { from: [mature[0]!] });
    const other = await node.wallet.send(node.wallet.address('p2pkh'), 1_000_000n, { from: [mature[1]!] });
    const raw = node.wallet.createTx(node.wallet.address('p2wpkh'), 2_000_000n, { from: [mature[2]!] });
    const { hash } = await rpcResult<{ hash: string }>(node, 'generateblock', [node.wallet.address('p2wpkh'), [inMempool, raw]]);
    const block = node.node.chain.get(hash)!.block;
    expect(block.txs.map((t) => Buffer.from(t.txid).reverse().toString('hex'))).toEqual([
      expect.any(String),
      inMempool,
      Buffer.from(decodeTx(hexToBytes(raw)).txid).reverse().toString('hex'),
    ]);
    expect(node.mempool()).toEqual([other]);
    const notThere = await rawRpc(node, 'generateblock', [node.wallet.address('p2wpkh'), ['ab'.repeat(32)]]);
    expect([notThere.status, notThere.body.error]).toEqual([500, { code: -5, message: `Transaction ${'ab'.repeat(32)} not in mempool.` }]);
    const unsubmitted = await rpcResult<{ hash: string; hex: string }>(node, 'generateblock', ['raw(51)', [], false]);
    expect(decodeBlock(hexToBytes(unsubmitted.hex)).txs).toHaveLength(1);
    expect(node.tip().hash).toBe(hash);
    const [d] = await rpcResult<string[]>(node, 'generatetodescriptor', [1, 'raw(51)']);
    expect(node.tip().hash).toBe(d);
    expect((await rawRpc(node, 'generatetoaddress', [1, 'notanaddress'])).body.error).toEqual({ code: -5, message: 'Error: Invalid address' });
  });

  it('submitblock answers null, duplicate, inconclusive and reject reasons as Core does', async () => {
    const payout = regtestScript(node.wallet.address('p2wpkh'))!;
    const next = assembleBlock(node.node, { payoutScript: payout, useMempool: false });
    expect(await rpcResult(node, 'submitblock', [bytesToHex(next.bytes)])).toBeNull();
    expect(await rpcResult(node, 'submitblock', [bytesToHex(next.bytes)])).toBe('duplicate');
    const sidePayout = regtestScript(node.wallet.address('p2pkh'))!;
    const side = assembleBlock(node.node, { payoutScript: sidePayout, useMempool: false, parent: node.node.chain.tip().prev! });
    expect(await rpcResult(node, 'submitblock', [bytesToHex(side.bytes)])).toBe('inconclusive');
    const bad = new Uint8Array(assembleBlock(node.node, { payoutScript: payout, useMempool: false }).bytes);
    bad[40]! ^= 1; // merkle root
    const answer = await rpcResult<string>(node, 'submitblock', [bytesToHex(bad)]);
    expect(['bad-txnmrklroot', 'high-hash']).toContain(answer);
    expect((await rawRpc(node, 'submitblock', ['00'])).body.error).toEqual({ code: -22, message: 'Block decode failed' });
  });

  it('reorg helper: a shorter branch after invalidateblock; a longer branch keeping transactions at their heights', async () => {
    await node.stop();
    node = await startDevnode({ initialBlocks: 101 });
    await node.mine(3);
    const before = node.tip().height;
    const short = await node.reorg(2, { newBlocks: 1, keepTxs: false });
    expect(node.tip()).toEqual({ height: before - 1, hash: short.connected[0] });
    const tips = await rpcResult<{ hash: string; status: string }[]>(node, 'getchaintips');
    expect(tips.find((t) => t.hash === short.disconnected[1])?.status).toBe('invalid');

    const txid = await node.wallet.send(node.wallet.address('p2sh-p2wpkh'), 3_000_000n);
    await node.mine(2);
    const { disconnected, connected } = await node.reorg(2);
    expect(disconnected).toHaveLength(2);
    expect(connected).toHaveLength(3);
    expect(node.tip().hash).toBe(connected[2]);
    expect((await rpcResult<{ blockhash: string }>(node, 'getrawtransaction', [txid, 1])).blockhash).toBe(connected[0]);
    expect((await rpcResult<{ hash: string; status: string }[]>(node, 'getchaintips')).find((t) => t.hash === disconnected[1])?.status).toBe('valid-fork');
  });
});
