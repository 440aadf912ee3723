/**
 * /v1/mempool, /v1/mempool/recent, /v1/fee-estimates and a mempool transaction's view against a
 * real Bitcoin Core: the indexer follows a funded regtest bitcoind whose wallet sends payments
 * at several fee rates (one opting out of BIP125), and every answer is compared with Core's
 * own: getmempoolinfo (size, bytes, total_fee), getmempoolentry (fees.base, vsize,
 * bip125-replaceable), getmempoolinfo.fullrbf, and estimatesmartfee / mempoolminfee; each
 * address's and script's mempool_stats from getrawtransaction and gettxout.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { btcToSats } from '../../../src/rpc/types.js';
import { startIndexer, type IndexerHandle } from '../../../indexer/main.js';
import { indexerConfig } from '../../support/chain-indexer.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeBitcoind, startBitcoind, type Bitcoind } from '../../support/bitcoind.js';
import { waitFor } from '../../support/wait.js';
import { silentLogger } from '../../../src/log.js';
import { FEE_TARGETS, feeEstimates } from '../../../api/routes/fees.js';
import { createApiHarness, type ApiHarness } from './harness.js';
import { BlockwireClient, Key } from '../../../client/index.js';

type Entry = { vsize: number; fees: { base: number }; 'bip125-replaceable': boolean };

describeBitcoind('/v1 mempool and fee reads against Bitcoin Core', () => {
  let core: Bitcoind;
  let t: TestDatabase;
  let indexer: IndexerHandle;
  let h: ApiHarness;
  let mempool: string[] = [];

  beforeAll(async () => {
    core = await startBitcoind({ funded: true });
    t = await createMigratedDatabase('coremempool');
    indexer = await startIndexer({ config: indexerConfig(), log: silentLogger(), db: t.db, databaseUrl: t.url, rpcUrl: core.rpcUrl, zmqUrl: core.zmqUrl });
    h = await createApiHarness({ node: new BitcoindClient({ url: core.rpcUrl, timeoutMs: 10_000 }), settings: { rateLimit: 10_000_000 } }, t);
    const wallet = core.wallet!;
    for (const [i, rate] of [1, 2, 5, 12, 30, 75].entries()) {
      const address = await core.call<string>('getnewaddress', [], wallet);
      // the first payment (spending confirmed coins) does not signal BIP125: only full-RBF makes it replaceable
      await core.call('sendtoaddress', [address, Number((0.1 + i / 100).toFixed(2)), '', '', false, i > 0, null, 'unset', null, rate], wallet);
    }
    mempool = await core.call<string[]>('getrawmempool');
    expect(mempool.length).toBe(6);
    await waitFor('the indexed mempool to hold the node\'s', async () => {
      const r = await sql<{ n: number }>`SELECT count(*)::int4 AS n FROM mempool_txs`.execute(t.db);
      return r.rows[0]!.n === mempool.length;
    });
  });
  afterAll(async () => {
    await h?.close();
    await indexer?.stop();
    await t?.drop();
    await core?.stop();
  });

  it('GET /v1/mempool: count, vsize and total fee of getmempoolinfo; the histogram covers every vbyte', async () => {
    const info = await core.call<{ size: number; bytes: number; total_fee: number }>('getmempoolinfo');
    const m = (await h.get('/v1/mempool')).json() as { count: number; vsize: number; total_fee: number; fee_histogram: [number, number][] };
    expect({ count: m.count, vsize: m.vsize, total_fee: m.total_fee }).toEqual({ count: info.size, vsize: info.bytes, total_fee: Number(btcToSats(info.total_fee)) });
    expect(m.fee_histogram.reduce((s, [, v]) => s + v, 0)).toBe(info.bytes);
    const recent = (await h.get('/v1/mempool/recent?limit=3')).json() as { txid: string; fee: number; vsize: number }[];
    expect(recent).toHaveLength(3);
    for (const r of recent) {
      const e = await core.call<Entry>('getmempoolentry', [r.txid]);
      expect({ fee: r.fee, vsize: r.vsize }).toEqual({ fee: Number(btcToSats(e.fees.base)), vsize: e.vsize });
    }
  });

  it("mempool_stats of every address and script the mempool touches, as getrawtransaction and gettxout give its outputs and the outputs it spends", async () => {
    type Out = { value: number; scriptPubKey: { hex: string; address?: string } };
    type RawTx = { txid: string; vin: { txid: string; vout: number }[]; vout: Out[] };
    const txs = new Map<string, RawTx>();
    for (const txid of mempool) txs.set(txid, await core.call<RawTx>('getrawtransaction', [txid, 1]));
    type Tally = { fc: number; fs: number; sc: number; ss: number; txs: Set<string>; address?: string };
    const byScript = new Map<string, Tally>();
    const tally = (o: Out) => {
      let t = byScript.get(o.scriptPubKey.hex);
      if (!t) byScript.set(o.scriptPubKey.hex, (t = { fc: 0, fs: 0, sc: 0, ss: 0, txs: new Set(), ...(o.scriptPubKey.address ? { address: o.scriptPubKey.address } : {}) }));
      return t;
    };
    for (const tx of txs.values()) {
      for (const vin of tx.vin) {
        // (a mempool parent's output from the mempool, else the chain's view of the coin)
        const prev = txs.get(vin.txid)?.vout[vin.vout] ?? (await core.call<Out>('gettxout', [vin.txid, vin.vout, false]));
        const t = tally(prev);
        t.sc++;
        t.ss += Number(btcToSats(prev.value));
        t.txs.add(tx.txid);
      }
      for (const o of tx.vout) {
        const t = tally(o);
        t.fc++;
        t.fs += Number(btcToSats(o.value));
        t.txs.add(tx.txid);
      }
    }
    const expected = (t: Tally) => ({ funded_txo_count: t.fc, funded_txo_sum: t.fs, spent_txo_count: t.sc, spent_txo_sum: t.ss, tx_count: t.txs.size });
    const withAddress = [...byScript.values()].filter((t) => t.address !== undefined);
    expect(withAddress.some((t) => t.sc > 0) && withAddress.some((t) => t.fc > 0)).toBe(true);
    const r = await h.app.inject({ method: 'POST', url: '/v1/addresses/batch', headers: { apiKey: h.key }, payload: { addresses: withAddress.map((t) => t.address), include: ['stats', 'balance'] } });
    const got = r.json() as { address: string; balance: number; stats: { chain_stats: { funded_txo_sum: number; spent_txo_sum: number }; mempool_stats: unknown } }[];
    for (const [i, t] of withAddress.entries()) {
      expect(got[i]!.stats.mempool_stats, t.address).toEqual(expected(t));
      const c = got[i]!.stats.chain_stats;
      expect(got[i]!.balance).toBe(c.funded_txo_sum - c.spent_txo_sum + t.fs - t.ss);
    }
    for (const [script, t] of byScript) {
      if (t.address === undefined) continue;
      const sha = createHash('sha256').update(Buffer.from(script, 'hex')).digest('hex');
      expect(((await h.get(`/v1/scripthash/${sha}/stats`)).json() as { mempool_stats: unknown }).mempool_stats).toEqual(expected(t));
      const history = (await h.get(`/v1/scripthash/${sha}/history`)).json() as string[];
      expect(history.slice(0, t.txs.size).sort()).toEqual([...t.txs].sort());
    }
  });

  it('a mempool transaction: fee, vsize and BIP125 flag as getmempoolentry; replaceable by full-RBF as getmempoolinfo says', async () => {
    const { fullrbf } = await core.call<{ fullrbf: boolean }>('getmempoolinfo');
    let signalling = 0;
    for (const txid of mempool) {
      const e = await core.call<Entry>('getmempoolentry', [txid]);
      const v = (await h.get(`/v1/transactions/${txid}`)).json();
      const fee = Number(btcToSats(e.fees.base));
      expect(v, txid).toMatchObject({ fee, vsize: e.vsize, bip125_replaceable: e['bip125-replaceable'], replaceable: fullrbf || e['bip125-replaceable'], fee_rate: Math.round((fee / e.vsize) * 100) / 100 });
      if (e['bip125-replaceable']) signalling++;
    }
    // both kinds were compared
    expect(signalling).toBeGreaterThan(0);
    expect(signalling).toBeLessThan(mempool.length);
  });

  it('GET /v1/fee-estimates: estimatesmartfee per target in each mode, floored at mempoolminfee', async () => {
    const { mempoolminfee } = await core.call<{ mempoolminfee: number }>('getmempoolinfo');
    for (const mode of ['economical', 'conservative'] as const) {
      const answers = await Promise.all(FEE_TARGETS.map((n) => core.call<{ feerate?: number }>('estimatesmartfee', [n, mode])));
      const got = (await h.get(`/v1/fee-estimates?mode=${mode}`)).json() as Record<string, number>;
      expect(Object.keys(got).map(Number).sort((a, b) => a - b)).toEqual([...FEE_TARGETS]);
      expect(got).toEqual(feeEstimates(answers, mempoolminfee));
      // regtest with six transactions gives Core no data: every target falls back to the minimum fee
      if (answers.every((a) => a.feerate === undefined)) for (const v of Object.values(got)) expect(v).toBe(Math.round(mempoolminfee * 1e8) / 1e3);
    }
    expect((await h.get('/v1/fee-estimates?mode=fast')).statusCode).toBe(400);
  });

  it("the SDK: fee estimates, and a builder given no rate pays the server's estimate for 6 blocks (not its old fixed 2 sat/vB)", async () => {
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = h.app.server.address() as { port: number };
    const client = new BlockwireClient({ url: `http://127.0.0.1:${port}`, apiKey: h.key, network: 'regtest' });
    const estimates = await client.getFeeEstimates();
    expect(estimates).toEqual((await h.get('/v1/fee-estimates')).json());
    expect((await client.getMempool()).count).toBe(mempool.length);
    const payer = Key.random('regtest');
    await core.call('sendtoaddress', [payer.address('p2wpkh'), 0.5], core.wallet!);
    await core.mine(1);
    await waitFor('the payment to be indexed', async () => (await client.getBalance(payer.address('p2wpkh'), { minConf: 1 })) === 50_000_000n);
    const rate = BigInt(Math.ceil(estimates['6']!));
    expect(rate).toBeLessThan(2n);
    const tx = await client.transaction().to(Key.random('regtest').address('p2tr'), 10_000n).from(payer, 'p2wpkh').build();
    expect(tx.fee).toBeGreaterThanOrEqual(rate * BigInt(tx.vsize));
    expect(tx.fee).toBeLessThan((rate + 1n) * BigInt(tx.vsize));
    tx.release?.();
  });

  it('the SDK gives a P2PKH input its previous transaction as PSBT non_witness_utxo: Core decodes it and accepts the signed transaction; a P2WPKH input goes without', async () => {
    const { port } = h.app.server.address() as { port: number };
    const client = new BlockwireClient({ url: `http://127.0.0.1:${port}`, apiKey: h.key, network: 'regtest' });
    const payer = Key.random('regtest');
    const legacyFunding = await core.call<string>('sendtoaddress', [payer.address('p2pkh'), 0.2], core.wallet!);
    await core.call('sendtoaddress', [payer.address('p2wpkh'), 0.2], core.wallet!);
    await core.mine(1);
    await waitFor('the payments to be indexed', async () => (await client.getBalance(payer.address('p2pkh'), { minConf: 1 })) === 20_000_000n && (await client.getBalance(payer.address('p2wpkh'), { minConf: 1 })) === 20_000_000n);
    const to = Key.random('regtest').address('p2tr');
    const partial = await client.transaction().to(to, 30_000_000n).from(payer, ['p2pkh', 'p2wpkh']).buildPsbt();
    type Decoded = { tx: { vin: { txid: string }[] }; inputs: { non_witness_utxo?: { txid: string }; witness_utxo?: unknown }[] };
    const d = await core.call<Decoded>('decodepsbt', [partial.psbt]);
    expect(d.tx.vin).toHaveLength(2);
    for (const [i, vin] of d.tx.vin.entries()) {
      if (vin.txid === legacyFunding) expect(d.inputs[i]!.non_witness_utxo?.txid).toBe(legacyFunding);
      else expect(d.inputs[i]!.non_witness_utxo).toBeUndefined();
    }
    partial.release();
    const built = await client.transaction().to(to, 30_000_000n).from(payer, ['p2pkh', 'p2wpkh']).build();
    const [accept] = await core.call<{ allowed: boolean; 'reject-reason'?: string }[]>('testmempoolaccept', [[built.hex]]);
    expect(accept!.allowed, accept!['reject-reason']).toBe(true);
    built.release?.();
  });
});
