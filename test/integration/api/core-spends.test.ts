/**
 * GET /v1/transactions/{txid}/outspends and /outspend/{vout} of confirmed transactions against a
 * real Bitcoin Core holding the same chain. The index of regtest-chain-a is built through the
 * node's own connect/disconnect order (its 7 reorgs applied and undone), the mainnet one from
 * blocks 0–599. Expected values are Core's: `getblock` verbosity 2 of every block gives each
 * input's outpoint, so who spends what, with which input and in which block; `gettxout` (without
 * the mempool) says which outputs are unspent. Then the top blocks are undone in the index and
 * invalidated in Core: the outputs their transactions spent are unspent again in both, their
 * own transactions are gone; after reconnecting, both agree again. On a live node followed by
 * the indexer (its first 101 blocks loaded by the bulk path, which builds the index at its end):
 * mempool spends as `gettxspendingprevout` names them, through a BIP125 replacement, a child of
 * a mempool transaction, the block that confirms them and that block's disconnection.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { applyBlock, undoBlock } from '../../../indexer/writer/apply.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { indexChainA, loadMainnet600 } from '../../support/chain-fixture.js';
import { startCoreWithBlocks, type CoreChain } from '../../support/core-chain.js';
import { describeBitcoind } from '../../support/bitcoind.js';
import { createApiHarness, type ApiHarness } from './harness.js';
import { sql } from 'kysely';
import { startIndexer, type IndexerHandle } from '../../../indexer/main.js';
import { indexerConfig } from '../../support/chain-indexer.js';
import { startBitcoind, type Bitcoind } from '../../support/bitcoind.js';
import { waitFor } from '../../support/wait.js';
import { silentLogger } from '../../../src/log.js';
import { BlockwireClient } from '../../../client/index.js';
import { createNodeSource } from '../../../indexer/chain-source.js';
import { BitcoindRest } from '../../../indexer/node-rest.js';

type CoreTx = { txid: string; vin: { txid?: string; vout?: number; coinbase?: string }[]; vout: unknown[] };
type CoreBlock = { hash: string; height: number; time: number; tx: CoreTx[] };
type Outspend = {
  spent: boolean;
  txid?: string;
  vin?: number;
  status?: { confirmed: boolean; block_height?: number; block_hash?: string; block_time?: number };
};

/** Each transaction's outspends as Core's blocks say (every block from genesis to the tip). */
async function expectedFromCore(core: CoreChain): Promise<{ blocks: CoreBlock[]; outspends: Map<string, Outspend[]> }> {
  const tip = await core.rpc.call<number>('getblockcount');
  const hashes = await core.rpc.batch<string>(Array.from({ length: tip + 1 }, (_, i) => ({ method: 'getblockhash', params: [i] })));
  const blocks: CoreBlock[] = [];
  for (let i = 0; i < hashes.length; i += 50)
    blocks.push(
      ...((await core.rpc.batch<CoreBlock>(hashes.slice(i, i + 50).map((h) => ({ method: 'getblock', params: [h, 2] })))) as CoreBlock[]),
    );
  const outspends = new Map<string, Outspend[]>();
  for (const b of blocks)
    for (const tx of b.tx)
      outspends.set(
        tx.txid,
        tx.vout.map(() => ({ spent: false })),
      );
  for (const b of blocks) {
    for (const tx of b.tx) {
      tx.vin.forEach((input, vin) => {
        if (input.coinbase !== undefined) return;
        outspends.get(input.txid!)![input.vout!] = {
          spent: true,
          txid: tx.txid,
          vin,
          status: { confirmed: true, block_height: b.height, block_hash: b.hash, block_time: b.time },
        };
      });
    }
  }
  return { blocks, outspends };
}

/** `undo`: how many top blocks to undo (enough for them to spend earlier outputs). */
function suite(
  name: string,
  chain: 'main' | 'regtest',
  network: 'main' | 'regtest',
  undo: number,
  build: (t: TestDatabase) => Promise<Uint8Array[]>,
) {
  describeBitcoind(name, () => {
    let t: TestDatabase;
    let h: ApiHarness;
    let core: CoreChain;
    let main: Uint8Array[] = [];

    beforeAll(async () => {
      t = await createMigratedDatabase('corespends');
      main = await build(t);
      core = await startCoreWithBlocks(chain, main);
      h = await createApiHarness({ network, settings: { rateLimit: 10_000_000 } }, t);
    });
    afterAll(async () => {
      await h?.close();
      await t?.drop();
      await core?.stop();
    });

    it("every transaction: outspends as Core's blocks give them, unspent outputs as gettxout", async () => {
      const { blocks, outspends } = await expectedFromCore(core);
      const tip = blocks.length - 1;
      let spent = 0;
      let checked = 0;
      const check = async ([txid, want]: [string, Outspend[]]) => {
        const r = await h.get(`/v1/transactions/${txid}/outspends`);
        expect(r.statusCode, txid).toBe(200);
        expect(r.json(), txid).toEqual(want);
        expect(r.headers['blockwire-tip-height']).toBe(String(tip));
        expect(r.headers['blockwire-tip-hash']).toBe(blocks[tip]!.hash);
        spent += want.filter((o) => o.spent).length;
        checked++;
      };
      const entries = [...outspends.entries()];
      for (let i = 0; i < entries.length; i += 8) await Promise.all(entries.slice(i, i + 8).map(check));
      expect(checked).toBe(blocks.reduce((s, b) => s + b.tx.length, 0));
      expect(spent).toBeGreaterThan(10);
      // gettxout: an output Core holds as unspent is {spent: false} here, one it does not (spent) is spent here
      // (the genesis coinbase is in no UTXO set, and neither are OP_RETURN outputs: both unspent for both APIs).
      let compared = 0;
      for (const b of blocks.filter((_, i) => i > 0 && i % 7 === 0)) {
        for (const tx of b.tx.slice(0, 4)) {
          for (let vout = 0; vout < tx.vout.length; vout++) {
            const utxo = await core.rpc.call<unknown>('gettxout', [tx.txid, vout, false]);
            const one = (await h.get(`/v1/transactions/${tx.txid}/outspend/${vout}`)).json() as Outspend;
            const data = (tx.vout[vout] as { scriptPubKey: { type: string } }).scriptPubKey.type === 'nulldata';
            expect(one.spent, `${tx.txid}:${vout}`).toBe(utxo === null && !data);
            compared++;
          }
        }
      }
      expect(compared).toBeGreaterThan(20);
    });

    it('undone blocks take their spends with them (as invalidateblock does in Core); reconnected, they are back', async () => {
      const tip = await core.rpc.call<number>('getblockcount');
      const heights = Array.from({ length: undo }, (_, i) => tip - i);
      const top = await Promise.all(
        heights.map((height) =>
          core.rpc.call<string>('getblockhash', [height]).then((hash) => core.rpc.call<CoreBlock>('getblock', [hash, 2])),
        ),
      );
      const inTop = new Set(top.flatMap((b) => b.tx.map((tx) => tx.txid)));
      const spentInTop = top.flatMap((b) =>
        b.tx.flatMap((tx) =>
          tx.vin.filter((i) => i.coinbase === undefined && !inTop.has(i.txid!)).map((i) => ({ txid: i.txid!, vout: i.vout! })),
        ),
      );
      expect(spentInTop.length).toBeGreaterThan(0);
      const node = createNodeSource({ rpc: core.rpc, rest: new BitcoindRest({ url: core.rpcUrl }), restMode: 'on' });
      for (const height of heights) expect((await undoBlock(t.db, height, node)).kind).toBe('undone');
      const lowest = top[top.length - 1]!;
      await core.rpc.call('invalidateblock', [lowest.hash]);
      for (const o of spentInTop.slice(0, 40)) {
        const r = (await h.get(`/v1/transactions/${o.txid}/outspend/${o.vout}`)).json() as Outspend;
        expect(r, `${o.txid}:${o.vout}`).toEqual({ spent: false });
        expect(await core.rpc.call('gettxout', [o.txid, o.vout, false]), `${o.txid}:${o.vout}`).not.toBeNull();
      }
      for (const tx of top[0]!.tx.slice(0, 5)) expect((await h.get(`/v1/transactions/${tx.txid}/outspends`)).statusCode).toBe(404);
      expect((await h.get(`/v1/transactions/${spentInTop[0]!.txid}/outspends`)).headers['blockwire-tip-height']).toBe(String(tip - undo));

      await core.rpc.call('reconsiderblock', [lowest.hash]);
      for (const height of [...heights].reverse())
        expect((await applyBlock(t.db, decodeBlock(main[height]!), height)).kind).toBe('applied');
      const { outspends } = await expectedFromCore(core);
      for (const o of spentInTop.slice(0, 40)) {
        const r = (await h.get(`/v1/transactions/${o.txid}/outspend/${o.vout}`)).json() as Outspend;
        expect(r, `${o.txid}:${o.vout}`).toEqual(outspends.get(o.txid)![o.vout]);
        expect(r.spent).toBe(true);
      }
    });

    it('errors: an unknown transaction is 404, an output index past the last is 404, a bad hash 400', async () => {
      expect((await h.get(`/v1/transactions/${'ab'.repeat(32)}/outspends`)).json().error_code).toBe('ERR_TX_NOT_FOUND');
      const { blocks } = await expectedFromCore(core);
      const tx = blocks[1]!.tx[0]!;
      const r = await h.get(`/v1/transactions/${tx.txid}/outspend/${tx.vout.length}`);
      expect(r.statusCode).toBe(404);
      expect(r.json().error_code).toBe('ERR_OUTPUT_NOT_FOUND');
      expect((await h.get('/v1/transactions/xyz/outspends')).statusCode).toBe(400);
      expect((await h.get(`/v1/transactions/${tx.txid}/outspend/-1`)).statusCode).toBe(400);
    });
  });
}

describeFixtures('/v1 outspends against Bitcoin Core', () => {
  // Built through the node's own history: every reorg of the recording applied and undone.
  suite('regtest-chain-a, reorgs included', 'regtest', 'regtest', 3, async (t) => {
    const c = await indexChainA(t.db);
    return c.main.map((hash) => c.blocks.get(hash)!.raw);
  });
  // Real mainnet blocks from genesis (block 170: the first spend, of a P2PK coinbase; the last
  // spend of the 600 is in block 546, so 54 blocks are undone).
  suite('mainnet blocks 0–599', 'main', 'main', 54, async (t) => {
    const blocks = loadMainnet600().map((b) => b.raw);
    for (let i = 0; i < blocks.length; i++) expect((await applyBlock(t.db, decodeBlock(blocks[i]!), i)).kind).toBe('applied');
    return blocks;
  });
});

describeBitcoind('/v1 outspends on a live Bitcoin Core: mempool, replacement, confirmation, reorg', () => {
  let core: Bitcoind;
  let t: TestDatabase;
  let indexer: IndexerHandle;
  let h: ApiHarness;

  beforeAll(async () => {
    core = await startBitcoind({ funded: true });
    t = await createMigratedDatabase('livespends');
    indexer = await startIndexer({
      config: indexerConfig(),
      log: silentLogger(),
      db: t.db,
      databaseUrl: t.url,
      rpcUrl: core.rpcUrl,
      zmqUrl: core.zmqUrl,
    });
    h = await createApiHarness({ settings: { rateLimit: 10_000_000 } }, t);
  });
  afterAll(async () => {
    await h?.close();
    await indexer?.stop();
    await t?.drop();
    await core?.stop();
  });

  const inMempool = (txid: string) =>
    sql<{ n: number }>`SELECT count(*)::int4 AS n FROM mempool_txs WHERE txid = ${Buffer.from(txid, 'hex').reverse()}`
      .execute(t.db)
      .then((r) => r.rows[0]!.n === 1);
  const indexedTip = () => sql<{ height: number }>`SELECT height FROM chain_tip WHERE id = 1`.execute(t.db).then((r) => r.rows[0]!.height);
  type Vin = { txid: string; vout: number };
  /** Every input of `txid`, checked against Core's gettxspendingprevout and this API. */
  async function expectMempoolSpends(txid: string): Promise<Vin[]> {
    const tx = await core.call<{ vin: Vin[] }>('getrawtransaction', [txid, true]);
    const core_ = await core.call<{ txid: string; vout: number; spendingtxid?: string }[]>('gettxspendingprevout', [
      tx.vin.map((i) => ({ txid: i.txid, vout: i.vout })),
    ]);
    for (const [vin, input] of tx.vin.entries()) {
      expect(core_[vin]!.spendingtxid).toBe(txid);
      const r = await h.get(`/v1/transactions/${input.txid}/outspend/${input.vout}`);
      expect(r.json(), `${input.txid}:${input.vout}`).toEqual({ spent: true, txid, vin, status: { confirmed: false } });
    }
    return tx.vin;
  }

  it('a payment in the mempool, its replacement, a child, the confirming block and its undoing', async () => {
    const wallet = core.wallet!;
    await waitFor("the index at the node's tip", async () => (await indexedTip()) === (await core.call<number>('getblockcount')));
    const a = await core.call<string>(
      'sendtoaddress',
      [await core.call<string>('getnewaddress', [], wallet), 1.5, '', '', false, true],
      wallet,
    );
    await waitFor('the payment in the indexed mempool', () => inMempool(a));
    const spentByA = await expectMempoolSpends(a);

    // BIP125 replacement: the same outpoints now name the replacement
    const { txid: b } = await core.call<{ txid: string }>('bumpfee', [a], wallet);
    await waitFor('the replacement indexed', async () => (await inMempool(b)) && !(await inMempool(a)));
    expect((await expectMempoolSpends(b)).map((i) => `${i.txid}:${i.vout}`).sort()).toEqual(
      spentByA.map((i) => `${i.txid}:${i.vout}`).sort(),
    );
    expect((await h.get(`/v1/transactions/${a}/outspends`)).statusCode).toBe(404);

    // a child spending the replacement's output 0 (a mempool transaction's outspends)
    const bTx = await core.call<{ vout: { value: number }[] }>('getrawtransaction', [b, true]);
    const raw = await core.call<string>('createrawtransaction', [
      [{ txid: b, vout: 0 }],
      [{ [await core.call<string>('getnewaddress', [], wallet)]: Number((bTx.vout[0]!.value - 0.0001).toFixed(8)) }],
    ]);
    const signed = await core.call<{ hex: string }>('signrawtransactionwithwallet', [raw], wallet);
    const c = await core.call<string>('sendrawtransaction', [signed.hex]);
    await waitFor('the child indexed', () => inMempool(c));
    const outs = (await h.get(`/v1/transactions/${b}/outspends`)).json() as Outspend[];
    expect(outs).toHaveLength(bTx.vout.length);
    expect(outs[0]).toEqual({ spent: true, txid: c, vin: 0, status: { confirmed: false } });
    for (const o of outs.slice(1)) expect(o).toEqual({ spent: false });

    // confirmed: status from the block Core mined
    const [block] = await core.mine(1);
    const mined = await core.call<{ hash: string; height: number; time: number; tx: string[] }>('getblock', [block, 1]);
    expect(mined.tx).toEqual(expect.arrayContaining([b, c]));
    await waitFor('the block indexed', async () => (await indexedTip()) === mined.height);
    const status = { confirmed: true, block_height: mined.height, block_hash: mined.hash, block_time: mined.time };
    const bIn = await core.call<{ vin: Vin[] }>('getrawtransaction', [b, true, mined.hash]);
    for (const [vin, i] of bIn.vin.entries())
      expect((await h.get(`/v1/transactions/${i.txid}/outspend/${i.vout}`)).json()).toEqual({ spent: true, txid: b, vin, status });
    const confirmed = await h.get(`/v1/transactions/${b}/outspend/0`);
    expect(confirmed.json()).toEqual({ spent: true, txid: c, vin: 0, status });
    expect(confirmed.headers['blockwire-tip-hash']).toBe(mined.hash);

    // the block disconnected: Core puts both back in its mempool, and so does the index
    await core.call('invalidateblock', [mined.hash]);
    await waitFor(
      'the undo and the mempool indexed again',
      async () => (await indexedTip()) === mined.height - 1 && (await inMempool(b)) && (await inMempool(c)),
    );
    await expectMempoolSpends(b);
    await expectMempoolSpends(c);

    // the SDK reads the same answers
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = h.app.server.address() as { port: number };
    const client = new BlockwireClient({ url: `http://127.0.0.1:${port}`, apiKey: h.key, network: 'regtest' });
    expect(await client.getOutspends(b)).toEqual((await h.get(`/v1/transactions/${b}/outspends`)).json());
    expect(await client.getOutspend(b, 0)).toEqual({ spent: true, txid: c, vin: 0, status: { confirmed: false } });
  });
});
