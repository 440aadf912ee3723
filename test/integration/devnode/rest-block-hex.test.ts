/**
 * REST `/rest/block/<hash>.hex` and `/rest/block/notxdetails/<hash>.hex`: 200, `text/plain` and
 * the block's bytes as lowercase hex with one trailing `\n`, equal to the `.bin` answer and to
 * `getblock <hash> 0`; an unknown block is a 404 as for `.bin`. Run on a real bitcoind and on the
 * devnode (the recording has no `block/….hex` exchange).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bytesToHex } from '../../../src/bitcoin/hash.js';
import { describeNodes, type TestNode } from '../../support/nodes.js';
import { restGet } from './clients.js';

const GENESIS = '0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206';

describeNodes('REST block .hex', (entry) => {
  let node: TestNode;
  let withTxs: string;

  beforeAll(async () => {
    node = await entry.start({ funded: true, devnode: { walletSeed: '22'.repeat(32) } });
    const wallet = node.kind === 'bitcoind' ? 'miner' : undefined;
    for (const type of ['bech32m', 'legacy'])
      await node.call('sendtoaddress', [await node.call<string>('getnewaddress', ['', type], wallet), 0.01], wallet);
    withTxs = (await node.mine(1))[0]!;
  });

  afterAll(async () => {
    await node?.stop();
  });

  for (const prefix of ['/rest/block/', '/rest/block/notxdetails/']) {
    it(`${prefix}<hash>.hex is text/plain, the .bin bytes in hex and a newline`, async () => {
      expect((await node.call<{ nTx: number }>('getblock', [withTxs, 1])).nTx).toBe(3);
      for (const hash of [GENESIS, withTxs]) {
        const bin = await restGet(node, `${prefix}${hash}.bin`);
        expect([bin.status, bin.type]).toEqual([200, 'application/octet-stream']);
        const hex = await restGet(node, `${prefix}${hash}.hex`);
        expect(hex.status, hash).toBe(200);
        expect(hex.type, hash).toBe('text/plain');
        expect(hex.text, hash).toMatch(/^[0-9a-f]+\n$/);
        expect(hex.text, hash).toBe(`${bytesToHex(bin.bytes)}\n`);
        expect(bytesToHex(bin.bytes), hash).toBe(await node.call<string>('getblock', [hash, 0]));
      }
    });
  }

  it('an unknown block .hex is 404 "<hash> not found\\r\\n" as for .bin', async () => {
    const unknown = 'ab'.repeat(32);
    for (const ext of ['hex', 'bin']) {
      const r = await restGet(node, `/rest/block/${unknown}.${ext}`);
      expect([r.status, r.type, r.text]).toEqual([404, 'text/plain', `${unknown} not found\r\n`]);
    }
  });
});
