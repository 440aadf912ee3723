/**
 * Real Esplora clients, unmodified, against Blockwire's Esplora dialect on a real Bitcoin Core 30
 * (test/support/stack.ts): mempool.space's `@mempool/mempool.js` (its base URL set through the
 * axios config it takes) and bitcoinerlab's `EsploraExplorer`, both given the base URL with the
 * key in it. Every call of theirs that Esplora's API serves is made and its answer compared with
 * Core's (mempool.js's `/v1/…` calls are mempool.space's own backend, not Esplora: not served).
 * Then a descriptor wallet is synced through the explorer alone (gap-limit scan, history, the
 * transactions' bytes), pays Core from its coins — built and signed here with @scure/btc-signer,
 * broadcast through the explorer — and its balance is compared, before and after the payment
 * confirms, with Core's own watch-only wallet for the same descriptors.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import mempoolJS from '@mempool/mempool.js';
import { EsploraExplorer } from '@bitcoinerlab/explorer';
import * as btc from '@scure/btc-signer';
import { HDKey } from '@scure/bip32';
import { randomBytes } from 'node:crypto';
import { describeBitcoind } from '../../support/bitcoind.js';
import { startStack, type Stack } from '../../support/stack.js';
import { testKey, type Coin, type TestKey } from '../../support/test-key.js';
import { waitFor } from '../../support/wait.js';
import { NETWORKS } from '../../../src/bitcoin/network.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { hashToHex, sha256 } from '../../../src/bitcoin/hash.js';

const sat = (v: number) => Math.round(v * 1e8);
type CoreBlock = { hash: string; height: number; time: number; nTx: number; tx: string[]; nextblockhash?: string; merkleroot: string };
type CoreTx = {
  txid: string;
  size: number;
  weight: number;
  fee?: number;
  vout: { value: number; n: number; scriptPubKey: { hex: string; address?: string } }[];
  blockhash?: string;
};

describeBitcoind('real Esplora clients on Blockwire (Core 30)', () => {
  let s: Stack<'bitcoind'>;
  let base: string;
  let key: TestKey;
  let coins: Coin[];
  const call = <T>(method: string, params: unknown[] = [], wallet?: string) => s.node.call<T>(method, params, wallet);

  beforeAll(async () => {
    s = await startStack({ node: 'bitcoind', stamping: false, worker: false });
    base = `${s.url}/esplora/${s.apiKey}`;
    key = testKey();
    coins = await key.fund(s.node, [300_000n, 400_000n, 500_000n]);
    await s.synced();
  }, 240_000);
  afterAll(async () => {
    await s?.stop();
  });

  it('mempool.js: every Esplora call it offers, answered as Core answers', async () => {
    const { bitcoin } = mempoolJS({ config: { baseURL: `${base}/` } });
    const { addresses, blocks, mempool, transactions } = bitcoin;
    // A payment in the mempool, sent through the client.
    const pay = key.spend([coins[0]!], [{ address: key.address, sats: 299_000n }]);
    expect(await transactions.postTx({ txhex: pay.hex })).toBe(pay.txid);
    expect(await call<string[]>('getrawmempool')).toContain(pay.txid);
    await waitFor('the index holds the payment', async () => (await fetch(`${base}/tx/${pay.txid}`)).status === 200, 30_000);

    const tip = await s.node.tip();
    expect(await blocks.getBlocksTipHeight()).toBe(tip.height);
    expect(await blocks.getBlocksTipHash()).toBe(tip.hash);
    const fundHash = await call<string>('getblockhash', [tip.height]);
    const fundBlock = await call<CoreBlock>('getblock', [fundHash]);
    expect(await blocks.getBlockHeight({ height: tip.height })).toBe(fundHash);
    expect(await blocks.getBlockStatus({ hash: fundHash })).toEqual({ in_best_chain: true, height: tip.height, next_best: null });
    expect(await blocks.getBlockTxids({ hash: fundHash })).toEqual(fundBlock.tx);
    expect(await blocks.getBlockTxid({ hash: fundHash, index: 1 })).toBe(fundBlock.tx[1]);
    // (its type says one transaction; the answer is the list)
    expect(((await blocks.getBlockTxs({ hash: fundHash, start_index: 0 })) as unknown as { txid: string }[]).map((t) => t.txid)).toEqual(
      fundBlock.tx,
    );
    expect(await blocks.getBlockHeader({ hash: fundHash })).toBe(await call<string>('getblockheader', [fundHash, false]));
    // (axios decodes the bytes as UTF-8 text: compared as Core's bytes decoded alike)
    expect(await blocks.getBlockRaw({ hash: fundHash })).toBe(
      Buffer.from(await call<string>('getblock', [fundHash, 0]), 'hex').toString('utf8'),
    );

    const funding = coins[1]!.txid;
    const core = await call<CoreTx>('getrawtransaction', [funding, 1, fundHash]);
    const tx = await transactions.getTx({ txid: funding });
    expect([tx.txid, tx.size, tx.weight]).toEqual([core.txid, core.size, core.weight]);
    expect(tx.vout.map((o) => [o.scriptpubkey, o.value])).toEqual(core.vout.map((o) => [o.scriptPubKey.hex, sat(o.value)]));
    expect(await transactions.getTxStatus({ txid: funding })).toEqual({
      confirmed: true,
      block_height: fundBlock.height,
      block_hash: fundHash,
      block_time: fundBlock.time,
    });
    expect(await transactions.getTxHex({ txid: funding })).toBe(await call<string>('getrawtransaction', [funding, 0, fundHash]));
    expect(await transactions.getTxRaw({ txid: funding })).toBe(
      Buffer.from(await call<string>('getrawtransaction', [funding, 0, fundHash]), 'hex').toString('utf8'),
    );
    expect(await transactions.getTxMerkleBlockProof({ txid: funding })).toBe(await call<string>('gettxoutproof', [[funding], fundHash]));
    const proof = await transactions.getTxMerkleProof({ txid: funding });
    expect([proof.block_height, proof.pos]).toEqual([fundBlock.height, fundBlock.tx.indexOf(funding)]);
    expect(await transactions.getTxOutspend({ txid: coins[0]!.txid, vout: coins[0]!.vout })).toEqual({
      spent: true,
      txid: pay.txid,
      vin: 0,
      status: { confirmed: false },
    });
    const outspends = await transactions.getTxOutspends({ txid: funding });
    for (const o of core.vout)
      expect(outspends[o.n]!.spent, `output ${o.n}`).toBe((await call<unknown>('gettxout', [funding, o.n, true])) === null);

    const stats = await addresses.getAddress({ address: key.address });
    expect(stats.chain_stats.funded_txo_sum).toBe(1_200_000);
    expect(stats.mempool_stats).toEqual({
      tx_count: 1,
      funded_txo_count: 1,
      spent_txo_count: 1,
      funded_txo_sum: 299_000,
      spent_txo_sum: 300_000,
    });
    const txs = await addresses.getAddressTxs({ address: key.address });
    expect(txs.map((t) => t.txid)).toEqual([
      pay.txid,
      ...[...coins]
        .reverse()
        .map((c) => c.txid)
        .sort((a, b) => fundBlock.tx.indexOf(b) - fundBlock.tx.indexOf(a)),
    ]);
    expect(await addresses.getAddressTxs({ address: key.address, after_txid: txs[1]!.txid })).toHaveLength(2);
    expect((await addresses.getAddressTxsChain({ address: key.address })).map((t) => t.txid)).toEqual(txs.slice(1).map((t) => t.txid));
    expect((await addresses.getAddressTxsMempool({ address: key.address })).map((t) => t.txid)).toEqual([pay.txid]);
    const utxo = await addresses.getAddressTxsUtxo({ address: key.address });
    const unspent = [];
    for (const c of [...coins, { txid: pay.txid, vout: 0, sats: 299_000n }])
      if ((await call<unknown>('gettxout', [c.txid, c.vout, true])) !== null) unspent.push(`${c.txid}:${c.vout}`);
    expect(utxo.map((u) => `${u.txid}:${u.vout}`).sort()).toEqual(unspent.sort());

    const info = await call<{ size: number; bytes: number }>('getmempoolinfo');
    const m = (await mempool.getMempool()) as unknown as { count: number; vsize: number };
    expect([m.count, m.vsize]).toEqual([info.size, info.bytes]);
    expect((await mempool.getMempoolTxids()).sort()).toEqual((await call<string[]>('getrawmempool')).sort());
    expect((await mempool.getMempoolRecent()).map((r) => r.txid)).toContain(pay.txid);
  });

  it("bitcoinerlab's EsploraExplorer: height, block status, address and script-hash stats, history, transaction hex, fee estimates", async () => {
    const explorer = new EsploraExplorer({ url: base, irrevConfThresh: 3 });
    await explorer.connect();
    expect(await explorer.isConnected()).toBe(true);
    const tip = await s.node.tip();
    expect(await explorer.fetchBlockHeight()).toBe(tip.height);
    const header = await call<{ hash: string; time: number }>('getblockheader', [await call<string>('getblockhash', [tip.height - 1])]);
    expect(await explorer.fetchBlockStatus(tip.height - 1)).toMatchObject({
      blockHeight: tip.height - 1,
      blockHash: header.hash,
      blockTime: header.time,
    });
    const byAddress = await explorer.fetchAddress(key.address);
    // (Electrum's script hash: the script's SHA-256 reversed)
    const electrumHash = Buffer.from(sha256(key.script)).reverse().toString('hex');
    expect(await explorer.fetchScriptHash(electrumHash)).toEqual(byAddress);
    const history = await explorer.fetchTxHistory({ address: key.address });
    expect(history.map((h) => h.txId).sort()).toEqual(
      ((await (await fetch(`${base}/address/${key.address}/txs`)).json()) as { txid: string }[]).map((t) => t.txid).sort(),
    );
    for (const h of history) {
      const hex = await explorer.fetchTx(h.txId);
      expect(hashToHex(decodeTx(Buffer.from(hex, 'hex')).txid)).toBe(h.txId);
    }
    const fees = await explorer.fetchFeeEstimates();
    expect(Object.keys(fees)).toHaveLength(28);
    await explorer.close();
  });

  it("a descriptor wallet synced through the explorer pays Core; its balance is Core's wallet's for the same descriptors", async () => {
    const VERSIONS = { private: 0x04358394, public: 0x043587cf };
    const account = HDKey.fromMasterSeed(randomBytes(32), VERSIONS).derive("m/84'/1'/0'");
    const branch = (change: 0 | 1) => account.deriveChild(change);
    const addressAt = (change: 0 | 1, i: number) => btc.p2wpkh(branch(change).deriveChild(i).publicKey!, NETWORKS.regtest);
    // Core's own wallet for the same descriptors, watch-only.
    await call('createwallet', ['esplora_watch', true, true]);
    const descs = [];
    for (const change of [0, 1] as const) {
      const desc = (await call<{ descriptor: string }>('getdescriptorinfo', [`wpkh(${account.publicExtendedKey}/${change}/*)`])).descriptor;
      descs.push({ desc, range: [0, 40], timestamp: 0, active: true, internal: change === 1 });
    }
    const imported = await call<{ success: boolean }[]>('importdescriptors', [descs], 'esplora_watch');
    expect(imported.every((r) => r.success)).toBe(true);

    // Funds at receive indexes 0, 3 and 7 (within the gap limit), two confirmed, one not.
    await s.node.pay(addressAt(0, 0).address!, 1_000_000n);
    await s.node.pay(addressAt(0, 3).address!, 2_000_000n);
    await s.mine(1);
    const unconfirmed = await s.node.pay(addressAt(0, 7).address!, 500_000n);
    await waitFor('the index holds the unconfirmed payment', async () => (await fetch(`${base}/tx/${unconfirmed}`)).status === 200, 30_000);

    const explorer = new EsploraExplorer({ url: base });
    await explorer.connect();
    /** The wallet as the explorer shows it: balances by gap-limit scan, and its unspent outputs from its transactions. */
    const sync = async () => {
      let confirmed = 0;
      let pending = 0;
      const mine = new Map<string, { change: 0 | 1; index: number }>();
      const txids = new Set<string>();
      for (const change of [0, 1] as const) {
        for (let i = 0, gap = 0; gap < 20; i++) {
          const a = addressAt(change, i).address!;
          const info = await explorer.fetchAddress(a);
          if (info.txCount + info.unconfirmedTxCount === 0) {
            gap++;
            continue;
          }
          gap = 0;
          confirmed += info.balance;
          pending += info.unconfirmedBalance;
          mine.set(Buffer.from(addressAt(change, i).script).toString('hex'), { change, index: i });
          for (const h of await explorer.fetchTxHistory({ address: a })) txids.add(h.txId);
        }
      }
      const txs = await Promise.all([...txids].map(async (t) => decodeTx(Buffer.from(await explorer.fetchTx(t), 'hex'))));
      const spent = new Set(txs.flatMap((t) => t.inputs.map((i) => `${hashToHex(i.prevTxid)}:${i.vout}`)));
      const utxos = txs.flatMap((t) =>
        t.outputs.flatMap((o, vout) => {
          const owner = mine.get(Buffer.from(o.script).toString('hex'));
          const id = `${hashToHex(t.txid)}:${vout}`;
          return owner && !spent.has(id) ? [{ txid: hashToHex(t.txid), vout, value: o.value, script: o.script, ...owner }] : [];
        }),
      );
      return { confirmed, pending, utxos };
    };
    const coreBalance = async () => {
      const b = await call<{ mine: { trusted: number; untrusted_pending: number; immature: number } }>('getbalances', [], 'esplora_watch');
      return { confirmed: sat(b.mine.trusted), pending: sat(b.mine.untrusted_pending) };
    };

    const before = await sync();
    expect({ confirmed: before.confirmed, pending: before.pending }).toEqual(await coreBalance());
    expect(before.utxos.reduce((a, u) => a + u.value, 0n)).toBe(3_500_000n);

    // Pay Core from every coin, change to the change branch.
    const to = await call<string>('getnewaddress', [], 'miner');
    const tx = new btc.Transaction({ version: 2 });
    for (const u of before.utxos) tx.addInput({ txid: u.txid, index: u.vout, witnessUtxo: { script: u.script, amount: u.value } });
    tx.addOutputAddress(to, 1_200_000n, NETWORKS.regtest);
    tx.addOutputAddress(addressAt(1, 0).address!, 3_500_000n - 1_200_000n - 2_000n, NETWORKS.regtest);
    before.utxos.forEach((u, i) => tx.signIdx(branch(u.change).deriveChild(u.index).privateKey!, i));
    tx.finalize();
    expect(await explorer.push(tx.hex)).toBe(tx.id);
    expect(await call<string[]>('getrawmempool')).toContain(tx.id);
    await waitFor('the index holds the payment', async () => (await fetch(`${base}/tx/${tx.id}`)).status === 200, 30_000);
    await waitFor(
      "Core's wallet sees the payment",
      async () => (await call<{ txid: string }[]>('listtransactions', ['*', 100, 0, true], 'esplora_watch')).some((t) => t.txid === tx.id),
      30_000,
    );

    const sent = await sync();
    expect(sent.confirmed + sent.pending).toBe(3_500_000 - 1_200_000 - 2_000);
    const coreSent = await coreBalance();
    expect(sent.confirmed + sent.pending).toBe(coreSent.confirmed + coreSent.pending);
    expect(sent.utxos.map((u) => `${u.txid}:${u.vout}`)).toEqual([`${tx.id}:1`]);

    await s.mine(1);
    const after = await sync();
    expect({ confirmed: after.confirmed, pending: after.pending }).toEqual(await coreBalance());
    expect(after).toMatchObject({ confirmed: 2_298_000, pending: 0 });
    await explorer.close();
  });
});
