/**
 * REST `/rest/block/<hash>.hex` and `/rest/block/notxdetails/<hash>.hex`: 200, `text/plain` and
 * the block's bytes as lowercase hex with one trailing `\n` — what the recorded Core 30 node
 * answers for its REST `.hex` formats (headers, blockhashbyheight, tx) — equal to the `.bin`
 * answer. The recording has no `block/….hex` exchange itself, so the framing is taken from those.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesToHex } from '../../../src/bitcoin/hash.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { restGet } from './clients.js';

const GENESIS = '0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206';

describe('devnode REST block .hex', () => {
  let node: Devnode;
  let withTxs: string;

  beforeAll(async () => {
    node = await startDevnode({ initialBlocks: 101, walletSeed: '22'.repeat(32) });
    await node.wallet.send(node.wallet.address('p2tr'), 1_000_000n);
    await node.wallet.send(node.wallet.address('p2pkh'), 2_000_000n);
    withTxs = (await node.mine(1))[0]!;
  });

  afterAll(async () => {
    await node?.stop();
  });

  for (const prefix of ['/rest/block/', '/rest/block/notxdetails/']) {
    it(`${prefix}<hash>.hex is text/plain, the .bin bytes in hex and a newline`, async () => {
      expect(node.node.chain.get(withTxs)!.block.txs).toHaveLength(3);
      for (const hash of [GENESIS, withTxs]) {
        const bin = await restGet(node, `${prefix}${hash}.bin`);
        expect([bin.status, bin.type]).toEqual([200, 'application/octet-stream']);
        const hex = await restGet(node, `${prefix}${hash}.hex`);
        expect(hex.status, hash).toBe(200);
        expect(hex.type, hash).toBe('text/plain');
        expect(hex.text, hash).toMatch(/^[0-9a-f]+\n$/);
        expect(hex.text, hash).toBe(`${bytesToHex(bin.bytes)}\n`);
        expect(bin.bytes, hash).toEqual(node.node.chain.get(hash)!.block.bytes);
      }
    });
  }

  it('an unknown block .hex is 404 "<hash> not found\\r\\n" as for .bin', async () => {
    const unknown = 'ab'.repeat(32);
    const r = await restGet(node, `/rest/block/${unknown}.hex`);
    expect([r.status, r.type, r.text]).toEqual([404, 'text/plain', `${unknown} not found\r\n`]);
  });
});
