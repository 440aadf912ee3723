/**
 * Mining over RPC as Core does it, on a real Bitcoin Core 30 and on the devnode: generateblock
 * with mempool txids and raw transactions (and its refusals), an unsubmitted generateblock,
 * generatetodescriptor, generatetoaddress of a bad address, submitblock answers (null,
 * duplicate, inconclusive for a side branch, the reject reason for a bad block, -22 for bytes
 * that are no block). Then the devnode handle's reorg helper (a tool of the stand-in).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { bytesToHex, hashToHex, hexToBytes } from '../../../src/bitcoin/hash.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { describeNodes, type TestNode } from '../../support/nodes.js';
import { testKey } from '../../support/test-key.js';
import { rawRpc, rpcResult } from './clients.js';

const PAYEE = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';

describeNodes('mining RPCs', (entry) => {
  let node: TestNode;
  beforeAll(async () => {
    node = await entry.start({ funded: true });
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('generateblock takes mempool txids and raw transactions, in order, and nothing else', async () => {
    const key = testKey();
    const coins = await key.fund(node, [2_000_000n, 2_000_000n, 3_000_000n]);
    const pay = (i: number) =>
      key.spend(
        [coins[i]!],
        [
          { address: PAYEE, sats: 1_000_000n },
          { address: key.address, sats: coins[i]!.sats - 1_000_000n - 400n },
        ],
      );
    const [inMempool, other, raw] = [pay(0), pay(1), pay(2)];
    for (const t of [inMempool, other]) await rpcResult(node, 'sendrawtransaction', [t.hex]);
    const { hash } = await rpcResult<{ hash: string }>(node, 'generateblock', [PAYEE, [inMempool.txid, raw.hex]]);
    const block = await rpcResult<{ tx: string[] }>(node, 'getblock', [hash, 1]);
    expect(block.tx).toEqual([expect.any(String), inMempool.txid, raw.txid]);
    expect(await rpcResult(node, 'getrawmempool')).toEqual([other.txid]);
    const notThere = await rawRpc(node, 'generateblock', [PAYEE, ['ab'.repeat(32)]]);
    expect([notThere.status, notThere.body.error]).toEqual([500, { code: -5, message: `Transaction ${'ab'.repeat(32)} not in mempool.` }]);
    const unsubmitted = await rpcResult<{ hash: string; hex: string }>(node, 'generateblock', ['raw(51)', [], false]);
    expect(decodeBlock(hexToBytes(unsubmitted.hex)).txs).toHaveLength(1);
    expect(hashToHex(decodeBlock(hexToBytes(unsubmitted.hex)).hash)).toBe(unsubmitted.hash);
    expect((await node.tip()).hash).toBe(hash);
    const [d] = await rpcResult<string[]>(node, 'generatetodescriptor', [1, 'raw(51)']);
    expect((await node.tip()).hash).toBe(d);
    expect((await rawRpc(node, 'generatetoaddress', [1, 'notanaddress'])).body.error).toEqual({
      code: -5,
      message: 'Error: Invalid address',
    });
  });

  it('submitblock answers null, duplicate, inconclusive and reject reasons as Core does', async () => {
    const next = await rpcResult<{ hex: string }>(node, 'generateblock', [PAYEE, [], false]);
    expect(await rpcResult(node, 'submitblock', [next.hex])).toBeNull();
    expect(await rpcResult(node, 'submitblock', [next.hex])).toBe('duplicate');
    // A block on the tip's parent: a side branch with no more work than the active chain.
    const tip = await node.tip();
    await rpcResult(node, 'invalidateblock', [tip.hash]);
    const side = await rpcResult<{ hex: string }>(node, 'generateblock', ['raw(51)', [], false]);
    await rpcResult(node, 'reconsiderblock', [tip.hash]);
    expect((await node.tip()).hash).toBe(tip.hash);
    expect(await rpcResult(node, 'submitblock', [side.hex])).toBe('inconclusive');
    expect((await node.tip()).hash).toBe(tip.hash);
    const bad = hexToBytes((await rpcResult<{ hex: string }>(node, 'generateblock', [PAYEE, [], false])).hex);
    bad[40]! ^= 1; // merkle root
    const answer = await rpcResult<string>(node, 'submitblock', [bytesToHex(bad)]);
    // The header's hash changes with the root: its proof of work may fail first.
    expect(['bad-txnmrklroot', 'high-hash']).toContain(answer);
    expect((await rawRpc(node, 'submitblock', ['00'])).body.error).toEqual({ code: -22, message: 'Block decode failed' });
  });
});

describe('devnode reorg helper', () => {
  let node: Devnode;
  afterAll(async () => {
    await node?.stop();
  });

  it('reorg helper: a shorter branch after invalidateblock; a longer branch keeping transactions at their heights', async () => {
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
    expect(
      (await rpcResult<{ hash: string; status: string }[]>(node, 'getchaintips')).find((t) => t.hash === disconnected[1])?.status,
    ).toBe('valid-fork');
  });
});
