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
import { createEventPoll, type EventPoll } from '../../../streams/poll.js';
import { getIndexTip } from '../../../api/queries/chain.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';

type Entry = { vsize: number; fees: { base: number }; 'bip125-replaceable': boolean };

describeBitcoind('/v1 mempool and fee reads against Bitcoin Core', () => {
  let core: Bitcoind;
  let t: TestDatabase;
  let indexer: IndexerHandle;
  let h: ApiHarness;
  let events: EventPoll;
  let mempool: string[] = [];

  beforeAll(async () => {
    core = await startBitcoind({ funded: true });
    t = await createMigratedDatabase('coremempool');
    indexer = await startIndexer({
      config: indexerConfig(),
      log: silentLogger(),
      db: t.db,
      databaseUrl: t.url,
      rpcUrl: core.rpcUrl,
      zmqUrl: core.zmqUrl,
    });
    events = createEventPoll({ db: t.db, log: silentLogger() });
    h = await createApiHarness(
      { node: new BitcoindClient({ url: core.rpcUrl, timeoutMs: 10_000 }), events, settings: { rateLimit: 10_000_000 } },
      t,
    );
    const wallet = core.wallet!;
    for (const [i, rate] of [1, 2, 5, 12, 30, 75].entries()) {
      const address = await core.call<string>('getnewaddress', [], wallet);
      // the first payment (spending confirmed coins) does not signal BIP125: only full-RBF makes it replaceable
      await core.call(
        'sendtoaddress',
        [address, Number((0.1 + i / 100).toFixed(2)), '', '', false, i > 0, null, 'unset', null, rate],
        wallet,
      );
    }
    mempool = await core.call<string[]>('getrawmempool');
    expect(mempool.length).toBe(6);
    await waitFor("the indexed mempool to hold the node's", async () => {
      const r = await sql<{ n: number }>`SELECT count(*)::int4 AS n FROM mempool_txs`.execute(t.db);
      return r.rows[0]!.n === mempool.length;
    });
  });
  afterAll(async () => {
    events?.stop();
    await h?.close();
    await indexer?.stop();
    await t?.drop();
    await core?.stop();
  });

  it('GET /v1/mempool: count, vsize and total fee of getmempoolinfo; the histogram covers every vbyte', async () => {
    const info = await core.call<{ size: number; bytes: number; total_fee: number }>('getmempoolinfo');
    const m = (await h.get('/v1/mempool')).json() as { count: number; vsize: number; total_fee: number; fee_histogram: [number, number][] };
    expect({ count: m.count, vsize: m.vsize, total_fee: m.total_fee }).toEqual({
      count: info.size,
      vsize: info.bytes,
      total_fee: Number(btcToSats(info.total_fee)),
    });
    expect(m.fee_histogram.reduce((s, [, v]) => s + v, 0)).toBe(info.bytes);
    const recent = (await h.get('/v1/mempool/recent?limit=3')).json() as { txid: string; fee: number; vsize: number }[];
    expect(recent).toHaveLength(3);
    for (const r of recent) {
      const e = await core.call<Entry>('getmempoolentry', [r.txid]);
      expect({ fee: r.fee, vsize: r.vsize }).toEqual({ fee: Number(btcToSats(e.fees.base)), vsize: e.vsize });
    }
  });

  it('mempool_stats of every address and script the mempool touches, as getrawtransaction and gettxout give its outputs and the outputs it spends', async () => {
    type Out = { value: number; scriptPubKey: { hex: string; address?: string } };
    type RawTx = { txid: string; vin: { txid: string; vout: number }[]; vout: Out[] };
    const txs = new Map<string, RawTx>();
    for (const txid of mempool) txs.set(txid, await core.call<RawTx>('getrawtransaction', [txid, 1]));
    type Tally = { fc: number; fs: number; sc: number; ss: number; txs: Set<string>; address?: string };
    const byScript = new Map<string, Tally>();
    const tally = (o: Out) => {
      let t = byScript.get(o.scriptPubKey.hex);
      if (!t)
        byScript.set(
          o.scriptPubKey.hex,
          (t = { fc: 0, fs: 0, sc: 0, ss: 0, txs: new Set(), ...(o.scriptPubKey.address ? { address: o.scriptPubKey.address } : {}) }),
        );
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
    const expected = (t: Tally) => ({
      funded_txo_count: t.fc,
      funded_txo_sum: t.fs,
      spent_txo_count: t.sc,
      spent_txo_sum: t.ss,
      tx_count: t.txs.size,
    });
    const withAddress = [...byScript.values()].filter((t) => t.address !== undefined);
    expect(withAddress.some((t) => t.sc > 0) && withAddress.some((t) => t.fc > 0)).toBe(true);
    const r = await h.app.inject({
      method: 'POST',
      url: '/v1/addresses/batch',
      headers: { apiKey: h.key },
      payload: { addresses: withAddress.map((t) => t.address), include: ['stats', 'balance'] },
    });
    const got = r.json() as {
      address: string;
      balance: number;
      stats: { chain_stats: { funded_txo_sum: number; spent_txo_sum: number }; mempool_stats: unknown };
    }[];
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
      expect(v, txid).toMatchObject({
        fee,
        vsize: e.vsize,
        bip125_replaceable: e['bip125-replaceable'],
        replaceable: fullrbf || e['bip125-replaceable'],
        fee_rate: Math.round((fee / e.vsize) * 100) / 100,
      });
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
      expect(
        Object.keys(got)
          .map(Number)
          .sort((a, b) => a - b),
      ).toEqual([...FEE_TARGETS]);
      expect(got).toEqual(feeEstimates(answers, mempoolminfee));
      // regtest with six transactions gives Core no data: every target falls back to the minimum fee
      if (answers.every((a) => a.feerate === undefined))
        for (const v of Object.values(got)) expect(v).toBe(Math.round(mempoolminfee * 1e8) / 1e3);
    }
    expect((await h.get('/v1/fee-estimates?mode=fast')).statusCode).toBe(400);
  });

  it('every /v1 GET chain route of /openapi.json declares the tip headers and answers with the indexed tip, which is getbestblockhash', async () => {
    const best = await core.call<string>('getbestblockhash');
    await waitFor(
      "the index to reach the node's tip",
      async () => hashToHex((await getIndexTip(t.db)).hash ?? new Uint8Array(32)) === best,
    );
    const height = await core.call<number>('getblockcount');
    const block = await core.call<{ tx: string[] }>('getblock', [best, 1]);
    const confirmed = block.tx[0]!;
    const paid = await core.call<{ vout: { scriptPubKey: { address?: string; hex: string } }[] }>('getrawtransaction', [mempool[0], 1]);
    const out = paid.vout.find((o) => o.scriptPubKey.address !== undefined)!.scriptPubKey;
    const sha = createHash('sha256').update(Buffer.from(out.hex, 'hex')).digest('hex');
    const sample: Record<string, string> = {
      '/v1/blockchain': '/v1/blockchain',
      '/v1/blocks/{hash}': `/v1/blocks/${best}`,
      '/v1/blocks/height/{height}': `/v1/blocks/height/${height}`,
      '/v1/blocks': '/v1/blocks?limit=3',
      '/v1/blocks/{hash}/txs': `/v1/blocks/${best}/txs?limit=1`,
      '/v1/transactions/{hash}': `/v1/transactions/${confirmed}`,
      '/v1/transactions/{hash}/hex': `/v1/transactions/${mempool[0]}/hex`,
      '/v1/transactions/{hash}/raw': `/v1/transactions/${confirmed}/raw`,
      '/v1/transactions/{hash}/merkle-proof': `/v1/transactions/${confirmed}/merkle-proof`,
      '/v1/transactions/{hash}/merkleblock-proof': `/v1/transactions/${confirmed}/merkleblock-proof`,
      '/v1/transactions/{hash}/outspends': `/v1/transactions/${confirmed}/outspends`,
      '/v1/transactions/{hash}/outspend/{vout}': `/v1/transactions/${confirmed}/outspend/0`,
      '/v1/addresses/{address}/balance': `/v1/addresses/${out.address}/balance`,
      '/v1/addresses/{address}/history': `/v1/addresses/${out.address}/history`,
      '/v1/addresses/{address}/unspentoutputs': `/v1/addresses/${out.address}/unspentoutputs`,
      '/v1/addresses/{address}/stats': `/v1/addresses/${out.address}/stats`,
      '/v1/scripthash/{hash}/balance': `/v1/scripthash/${sha}/balance`,
      '/v1/scripthash/{hash}/history': `/v1/scripthash/${sha}/history`,
      '/v1/scripthash/{hash}/unspentoutputs': `/v1/scripthash/${sha}/unspentoutputs`,
      '/v1/scripthash/{hash}/stats': `/v1/scripthash/${sha}/stats`,
      '/v1/mempool': '/v1/mempool',
      '/v1/mempool/recent': '/v1/mempool/recent',
      '/v1/fee-estimates': '/v1/fee-estimates?mode=conservative',
      '/v1/events': '/v1/events?wait=0',
    };
    // (not walked: a key's own records; a stamp's answer is walked by the stamping test, which runs a stamper)
    const notWalked = /^\/v1\/(hooks|subscriptions|wallets)(\/|$)/;
    const doc = (await h.get('/openapi.json', null)).json() as {
      paths: Record<string, { get?: { responses: Record<string, { headers?: Record<string, unknown> }> } }>;
    };
    const gets = Object.entries(doc.paths).filter(([p, ops]) => p.startsWith('/v1/') && ops.get !== undefined);
    const walked: string[] = [];
    for (const [path, ops] of gets) {
      const stamp = path === '/v1/stamps/{id}';
      if (notWalked.test(path)) continue;
      expect(Object.keys(ops.get!.responses['200']!.headers ?? {}), path).toEqual(
        expect.arrayContaining(['Blockwire-Tip-Height', 'Blockwire-Tip-Hash']),
      );
      if (stamp) continue;
      const url = sample[path];
      expect(url, `a request for ${path}`).toBeDefined();
      const r = await h.get(url!);
      expect(r.statusCode, `${url}: ${r.body.slice(0, 200)}`).toBe(200);
      expect([r.headers['blockwire-tip-height'], r.headers['blockwire-tip-hash']], url).toEqual([String(height), best]);
      walked.push(path);
    }
    expect(walked.sort()).toEqual(Object.keys(sample).sort());
    // (what is not JSON is described as what it is)
    const media = (p: string) => Object.keys((doc.paths[p]!.get!.responses['200'] as { content: object }).content);
    expect([media('/v1/transactions/{hash}/hex'), media('/v1/transactions/{hash}/raw'), media('/v1/blocks/{hash}')]).toEqual([
      ['text/plain'],
      ['application/octet-stream'],
      ['application/json'],
    ]);
    const batch = await h.app.inject({
      method: 'POST',
      url: '/v1/addresses/batch',
      headers: { apiKey: h.key },
      payload: { addresses: [out.address] },
    });
    expect([batch.headers['blockwire-tip-height'], batch.headers['blockwire-tip-hash']]).toEqual([String(height), best]);
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
    await waitFor(
      'the payment to be indexed',
      async () => (await client.getBalance(payer.address('p2wpkh'), { minConf: 1 })) === 50_000_000n,
    );
    const rate = BigInt(Math.ceil(estimates['6']!));
    expect(rate).toBeLessThan(2n);
    const tx = await client.transaction().to(Key.random('regtest').address('p2tr'), 10_000n).from(payer, 'p2wpkh').build();
    expect(tx.fee).toBeGreaterThanOrEqual(rate * BigInt(tx.vsize));
    expect(tx.fee).toBeLessThan((rate + 1n) * BigInt(tx.vsize));
    tx.release?.();
  });

  it("the SDK's block transactions (paged and iterated), recent mempool and raw bytes: as getblock, getmempoolentry and getrawtransaction give them", async () => {
    const { port } = h.app.server.address() as { port: number };
    const client = new BlockwireClient({ url: `http://127.0.0.1:${port}`, apiKey: h.key, network: 'regtest' });
    // a block with several transactions: the SDK test before mined the payment and the mempool into one
    const best = await core.call<string>('getbestblockhash');
    await waitFor("the index to reach the node's tip", async () => (await client.getBlockchain()).best_block_hash === best);
    const block = await core.call<{ tx: { txid: string; hex: string; vsize: number; weight: number; fee?: number }[] }>('getblock', [
      best,
      2,
    ]);
    expect(block.tx.length).toBeGreaterThan(2);
    const first = await client.getBlockTransactions(best, { limit: 2 });
    expect(first.items.map((x) => x.transaction_hash)).toEqual(block.tx.slice(0, 2).map((x) => x.txid));
    expect(first.next).not.toBeNull();
    expect((await client.blockTransactionsPage(first.next!)).items[0]!.transaction_hash).toBe(block.tx[2]!.txid);
    const all = [];
    for await (const x of client.blockTransactions(best, { limit: 2 })) all.push(x);
    expect(all.map((x) => ({ txid: x.transaction_hash, vsize: x.vsize, weight: x.weight, fee: x.fee }))).toEqual(
      block.tx.map((c) => ({ txid: c.txid, vsize: c.vsize, weight: c.weight, fee: c.fee === undefined ? 0 : Number(btcToSats(c.fee)) })),
    );
    for (const c of block.tx.slice(0, 3)) expect(Buffer.from(await client.getTransactionRaw(c.txid)).toString('hex')).toBe(c.hex);
    // the mempool: a fresh payment is the newest
    const txid = await core.call<string>('sendtoaddress', [Key.random('regtest').address('p2wpkh'), 0.01], core.wallet!);
    await waitFor('the payment to reach the indexed mempool', async () => (await client.getRecentMempool({ limit: 1 }))[0]?.txid === txid);
    const entry = await core.call<Entry>('getmempoolentry', [txid]);
    const raw = await core.call<{ vout: { value: number }[] }>('getrawtransaction', [txid, 1]);
    expect((await client.getRecentMempool({ limit: 5 }))[0]).toEqual({
      txid,
      fee: Number(btcToSats(entry.fees.base)),
      vsize: entry.vsize,
      value: raw.vout.reduce((sum, o) => sum + Number(btcToSats(o.value)), 0),
    });
    expect(Buffer.from(await client.getTransactionRaw(txid)).toString('hex')).toBe(await core.call<string>('getrawtransaction', [txid]));
    await expect(client.getTransactionRaw('00'.repeat(32))).rejects.toMatchObject({ status: 404, code: 'ERR_TX_NOT_FOUND' });
  });

  it('the SDK gives a P2PKH input its previous transaction as PSBT non_witness_utxo: Core decodes it and accepts the signed transaction; a P2WPKH input goes without', async () => {
    const { port } = h.app.server.address() as { port: number };
    const client = new BlockwireClient({ url: `http://127.0.0.1:${port}`, apiKey: h.key, network: 'regtest' });
    const payer = Key.random('regtest');
    const legacyFunding = await core.call<string>('sendtoaddress', [payer.address('p2pkh'), 0.2], core.wallet!);
    await core.call('sendtoaddress', [payer.address('p2wpkh'), 0.2], core.wallet!);
    await core.mine(1);
    await waitFor(
      'the payments to be indexed',
      async () =>
        (await client.getBalance(payer.address('p2pkh'), { minConf: 1 })) === 20_000_000n &&
        (await client.getBalance(payer.address('p2wpkh'), { minConf: 1 })) === 20_000_000n,
    );
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
