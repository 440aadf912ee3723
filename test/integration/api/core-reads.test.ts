/**
 * The /v1 block and transaction reads against a real Bitcoin Core holding the same chain: the
 * index is built from regtest-chain-a's final chain and from mainnet blocks 0–599 (real blocks,
 * fed to a bitcoind on mainnet with `submitblock`), the API reads confirmed transactions' bytes
 * from that bitcoind, and every answer is compared with Core's own: `getblockheader` and
 * `getblock` for the block view and the recent list, `getblock` verbosity 2 for each
 * transaction's fee, size, vsize, weight and hex, `gettxoutproof` byte for byte and
 * `verifytxoutproof` for the proofs, the header's merkleroot for Esplora's branch; every answer's
 * tip headers are getblockcount and getbestblockhash.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { hexToHash, hashToHex } from '../../../src/bitcoin/hash.js';
import { merkleRootFromBranch } from '../../../src/bitcoin/merkle.js';
import { btcToSats } from '../../../src/rpc/types.js';
import { applyBlock } from '../../../indexer/writer/apply.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { loadChainA, loadMainnet600 } from '../../support/chain-fixture.js';
import { startCoreWithBlocks, type CoreChain } from '../../support/core-chain.js';
import { describeBitcoind } from '../../support/bitcoind.js';
import { createApiHarness, walkPages, type ApiHarness } from './harness.js';

type CoreHeader = {
  hash: string;
  height: number;
  version: number;
  merkleroot: string;
  time: number;
  mediantime: number;
  nonce: number;
  bits: string;
  difficulty: number;
  nTx: number;
  previousblockhash?: string;
  nextblockhash?: string;
};
type CoreTx = { txid: string; hex: string; size: number; vsize: number; weight: number; fee?: number };
type CoreBlock2 = CoreHeader & { size: number; weight: number; tx: CoreTx[] };

function suite(
  name: string,
  chain: 'main' | 'regtest',
  load: () => Uint8Array[],
  network: 'main' | 'regtest',
  sampleBlocks: (tip: number) => number[],
) {
  describeBitcoind(name, () => {
    let t: TestDatabase;
    let h: ApiHarness;
    let core: CoreChain;
    let tip = 0;

    beforeAll(async () => {
      const blocks = load();
      core = await startCoreWithBlocks(chain, blocks);
      t = await createMigratedDatabase('corereads');
      for (let i = 0; i < blocks.length; i++) expect((await applyBlock(t.db, decodeBlock(blocks[i]!), i)).kind).toBe('applied');
      tip = blocks.length - 1;
      h = await createApiHarness({ network, node: core.rpc, settings: { rateLimit: 10_000_000 } }, t);
    });
    afterAll(async () => {
      await h?.close();
      await t?.drop();
      await core?.stop();
    });

    it('every block by height and by hash: the header fields getblockheader and getblock give', async () => {
      const hashes = await core.rpc.batch<string>(Array.from({ length: tip + 1 }, (_, i) => ({ method: 'getblockhash', params: [i] })));
      // every answer carries the tip it was read at: Core's
      const atTip = [String(await core.rpc.call<number>('getblockcount')), await core.rpc.call<string>('getbestblockhash')];
      const tipOf = (r: { headers: Record<string, unknown> }) => [r.headers['blockwire-tip-height'], r.headers['blockwire-tip-hash']];
      const headers = await core.rpc.batch<CoreHeader>(hashes.map((hash) => ({ method: 'getblockheader', params: [hash, true] })));
      const blocks = await core.rpc.batch<CoreHeader & { size: number; weight: number; tx: string[] }>(
        hashes.map((hash) => ({ method: 'getblock', params: [hash, 1] })),
      );
      for (let i = 0; i <= tip; i++) {
        const c = headers[i] as CoreHeader;
        const b = blocks[i] as CoreHeader & { size: number; weight: number; tx: string[] };
        const r = await h.get(`/v1/blocks/height/${i}`);
        expect(r.statusCode).toBe(200);
        const v = r.json();
        expect(v, `height ${i}`).toEqual({
          block_hash: c.hash,
          height: c.height,
          confirmation_time: new Date(c.time * 1000).toISOString().replace('.000Z', 'Z'),
          parent: c.previousblockhash ?? '0'.repeat(64),
          children: c.nextblockhash ? [c.nextblockhash] : [],
          version: c.version,
          timestamp: c.time,
          mediantime: c.mediantime,
          bits: parseInt(c.bits, 16),
          nonce: c.nonce,
          difficulty: c.difficulty,
          merkle_root: c.merkleroot,
          tx_count: c.nTx,
          size: b.size,
          weight: b.weight,
          transaction_list: b.tx,
        });
        expect(tipOf(r)).toEqual(atTip);
        if (i % 50 === 0) {
          const byHash = await h.get(`/v1/blocks/${c.hash}`);
          expect(byHash.json()).toEqual(v);
          expect(tipOf(byHash)).toEqual(atTip);
        }
      }
      const recentAnswer = await h.get('/v1/blocks?limit=15');
      expect(tipOf(recentAnswer)).toEqual(atTip);
      const recent = recentAnswer.json() as { block_hash: string; height: number }[];
      expect(recent.map((b) => b.block_hash)).toEqual(hashes.slice(tip - 14).reverse());
      const older = (await h.get(`/v1/blocks?limit=3&start_height=${tip - 20}`)).json() as { height: number; transaction_list?: unknown }[];
      expect(older.map((b) => b.height)).toEqual([tip - 20, tip - 21, tip - 22]);
      expect(older[0]!.transaction_list).toBeUndefined();
      expect((await h.get(`/v1/blocks/height/${tip + 1}`)).statusCode).toBe(404);
    });

    it("transactions: fee, sizes and hex as getblock verbosity 2; proofs as gettxoutproof; pages as the block's list", async () => {
      let checked = 0;
      const tipHash = await core.rpc.call<string>('getbestblockhash');
      const atTip = [String(tip), tipHash];
      const tipOf = (r: { headers: Record<string, unknown> }) => [r.headers['blockwire-tip-height'], r.headers['blockwire-tip-hash']];
      for (const height of sampleBlocks(tip)) {
        const hash = await core.rpc.call<string>('getblockhash', [height]);
        const block = await core.rpc.call<CoreBlock2>('getblock', [hash, 2]);
        const page = (await walkPages(h, `/v1/blocks/${hash}/txs?limit=7`)).items as { transaction_hash: string; fee: number }[];
        expect(page.map((x) => x.transaction_hash)).toEqual(block.tx.map((x) => x.txid));
        expect(tipOf(await h.get(`/v1/blocks/${hash}/txs?limit=7`))).toEqual(atTip);
        for (const [pos, c] of block.tx.entries()) {
          const answer = await h.get(`/v1/transactions/${c.txid}`);
          expect(tipOf(answer)).toEqual(atTip);
          const v = answer.json();
          const fee = c.fee === undefined ? 0 : Number(btcToSats(c.fee));
          expect(v, c.txid).toMatchObject({
            transaction_hash: c.txid,
            fee,
            size: c.size,
            vsize: c.vsize,
            weight: c.weight,
            replaceable: false,
            bip125_replaceable: false,
          });
          expect(v.fee_rate).toBe(Math.round((fee / c.vsize) * 100) / 100);
          expect(page[pos]).toEqual(v);
          const hex = await h.get(`/v1/transactions/${c.txid}/hex`);
          expect(hex.headers['content-type']).toMatch(/^text\/plain/);
          expect(hex.body).toBe(c.hex);
          expect(tipOf(hex)).toEqual(atTip);
          const raw = await h.get(`/v1/transactions/${c.txid}/raw`);
          expect(raw.rawPayload).toEqual(Buffer.from(c.hex, 'hex'));
          expect(tipOf(raw)).toEqual(atTip);
          const proofAnswer = await h.get(`/v1/transactions/${c.txid}/merkle-proof`);
          expect([proofAnswer.headers['blockwire-tip-height'], proofAnswer.headers['blockwire-tip-hash']]).toEqual([String(tip), tipHash]);
          const proof = proofAnswer.json() as { block_height: number; merkle: string[]; pos: number };
          expect(proof.block_height).toBe(height);
          expect(proof.pos).toBe(pos);
          expect(hashToHex(merkleRootFromBranch(hexToHash(c.txid), proof.merkle.map(hexToHash), proof.pos))).toBe(block.merkleroot);
          const mbAnswer = await h.get(`/v1/transactions/${c.txid}/merkleblock-proof`);
          expect(mbAnswer.headers['blockwire-tip-height']).toBe(String(tip));
          const mb = mbAnswer.body;
          expect(mb).toBe(await core.rpc.call<string>('gettxoutproof', [[c.txid], hash]));
          expect(await core.rpc.call<string[]>('verifytxoutproof', [mb])).toEqual([c.txid]);
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(10);
    });
  });
}

describeFixtures('/v1 reads against Bitcoin Core', () => {
  // regtest-chain-a's final chain: payments of every address type, RBF, OP_RETURN, spends.
  suite(
    'regtest-chain-a',
    'regtest',
    () => {
      const c = loadChainA();
      return c.main.map((hash) => c.blocks.get(hash)!.raw);
    },
    'regtest',
    (tip) => [0, 1, 111, 112, 150, 200, tip - 1, tip],
  );
  // Real mainnet blocks from genesis (block 170: the first spend; P2PK coinbases throughout).
  suite(
    'mainnet blocks 0–599',
    'main',
    () => loadMainnet600().map((b) => b.raw),
    'main',
    () => [0, 1, 170, 181, 182, 183, 248, 496, 546],
  );
});
