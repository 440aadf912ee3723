/**
 * The Esplora dialect (/esplora/…) of a running Blockwire (test/support/stack.ts: node → indexer
 * → API on a real socket), once on a real Bitcoin Core 30 and once on the stand-in. Every route
 * of Esplora's API.md that Blockwire serves is asked over HTTP and compared with the node's own
 * answers: getrawtransaction (bytes, verbosity 2 for prevouts and fee), getblock (verbosity 1 and
 * the raw bytes), getblockheader, getblockhash, getbestblockhash, gettxout (what is unspent),
 * getrawmempool, getmempoolinfo, gettxoutproof (Core only: the stand-in has no such call; there
 * the proof's header and Merkle root are checked against getblockheader). Paging (25 confirmed
 * transactions after a txid, 25 of a block from a multiple of 25, 10 blocks), the base URLs
 * (key in the path, key in the header, none) and electrs's plain-text errors are checked too.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeNodes } from '../../support/nodes.js';
import { startStack, type Stack } from '../../support/stack.js';
import { testKey, type Coin, type TestKey } from '../../support/test-key.js';
import { waitFor } from '../../support/wait.js';
import { hexToHash, hashToHex } from '../../../src/bitcoin/hash.js';
import { merkleRootFromBranch } from '../../../src/bitcoin/merkle.js';
import { sha256 } from '../../../src/bitcoin/hash.js';
import { addressToScript } from '../../../src/bitcoin/address.js';
import type { NodeKind } from '../../support/nodes.js';

type CoreVout = { value: number; n: number; scriptPubKey: { hex: string; address?: string } };
type CoreVin = {
  txid?: string;
  vout?: number;
  coinbase?: string;
  scriptSig?: { hex: string };
  txinwitness?: string[];
  sequence: number;
  prevout?: { value: number; scriptPubKey: { hex: string; address?: string } };
};
type CoreTx = {
  txid: string;
  version: number;
  locktime: number;
  size: number;
  weight: number;
  fee?: number;
  vin: CoreVin[];
  vout: CoreVout[];
  blockhash?: string;
};
type CoreBlock = {
  hash: string;
  height: number;
  version: number;
  time: number;
  mediantime: number;
  nonce: number;
  bits: string;
  difficulty: number;
  merkleroot: string;
  nTx: number;
  size: number;
  weight: number;
  previousblockhash?: string;
  nextblockhash?: string;
  tx: string[];
};

type EOut = { scriptpubkey: string; scriptpubkey_asm: string; scriptpubkey_type: string; scriptpubkey_address?: string; value: number };
type EVin = {
  txid: string;
  vout: number;
  prevout: EOut | null;
  scriptsig: string;
  witness?: string[];
  is_coinbase: boolean;
  sequence: number;
};
type ETx = {
  txid: string;
  version: number;
  locktime: number;
  vin: EVin[];
  vout: EOut[];
  size: number;
  weight: number;
  fee: number;
  status: { confirmed: boolean; block_height?: number; block_hash?: string };
};

const sat = (btc: number) => Math.round(btc * 1e8);

describeNodes('the Esplora dialect', (entry) => {
  let s: Stack<NodeKind>;
  let base: string;
  let key: TestKey;
  /** 27 confirmed payments to the key, a spend of one of them confirmed, and one in the mempool. */
  let coins: Coin[] = [];
  let spend: { txid: string; hex: string };
  let pending: { txid: string; hex: string };

  const get = async (path: string, init?: RequestInit) => fetch(`${base}${path}`, init);
  const json = async <T = unknown>(path: string): Promise<T> => {
    const r = await get(path);
    expect(r.status, `${path}: ${r.status}`).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    return (await r.json()) as T;
  };
  const text = async (path: string): Promise<string> => {
    const r = await get(path);
    expect(r.status, `${path}: ${r.status}`).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    return r.text();
  };
  const call = <T>(method: string, params: unknown[] = []) => s.node.call<T>(method, params);
  const coreTx = async (txid: string, blockhash?: string) => {
    const tx = await call<CoreTx>('getrawtransaction', blockhash ? [txid, 2, blockhash] : [txid, 2]);
    // (the stand-in gives a mempool transaction's fee in its mempool entry only)
    if (tx.fee === undefined && !tx.blockhash) tx.fee = (await call<{ fees: { base: number } }>('getmempoolentry', [txid])).fees.base;
    // (a mempool transaction's prevouts: the coins it spends, as gettxout sees them without the mempool)
    for (const v of tx.vin)
      if (v.coinbase === undefined && !v.prevout) v.prevout = (await call<CoreVin['prevout']>('gettxout', [v.txid, v.vout, false]))!;
    return tx;
  };

  beforeAll(async () => {
    s = await startStack({ node: entry.name, stamping: false, worker: false });
    base = `${s.url}/esplora/${s.apiKey}`;
    key = testKey();
    // 27 payments in two blocks: more than one page of 25 confirmed transactions.
    coins = [
      ...(await key.fund(
        s.node,
        Array.from({ length: 14 }, (_, i) => 100_000n + BigInt(i)),
      )),
      ...(await key.fund(
        s.node,
        Array.from({ length: 13 }, (_, i) => 200_000n + BigInt(i)),
      )),
    ];
    spend = key.spend([coins[0]!], [{ address: key.address, sats: 90_000n }]);
    await s.node.call('sendrawtransaction', [spend.hex]);
    await s.mine(1);
    pending = key.spend(
      [coins[1]!, coins[2]!],
      [
        { address: key.address, sats: 150_000n },
        { script: new Uint8Array([0x6a, 0x02, 0xbe, 0xef]), sats: 0n },
      ],
    );
    await s.node.call('sendrawtransaction', [pending.hex]);
    await waitFor('the index holds the mempool transaction', async () => (await get(`/tx/${pending.txid}`)).status === 200, 30_000);
  }, 240_000);
  afterAll(async () => {
    await s?.stop();
  });

  /** Checks an Esplora transaction against Core's verbose answer. */
  const expectTx = (tx: ETx, core: CoreTx, block: CoreBlock | undefined) => {
    expect(tx.txid).toBe(core.txid);
    expect(tx.version).toBe(core.version);
    expect(tx.locktime).toBe(core.locktime);
    expect(tx.size).toBe(core.size);
    expect(tx.weight).toBe(core.weight);
    const coinbase = core.vin[0]!.coinbase !== undefined;
    expect(tx.fee).toBe(coinbase ? 0 : sat(core.fee!));
    expect(tx.vin).toHaveLength(core.vin.length);
    core.vin.forEach((v, i) => {
      const got = tx.vin[i]!;
      expect(got.is_coinbase).toBe(coinbase);
      expect(got.sequence).toBe(v.sequence);
      if (coinbase) {
        expect(got.txid).toBe('0'.repeat(64));
        expect(got.vout).toBe(0xffffffff);
        expect(got.prevout).toBeNull();
        expect(got.scriptsig).toBe(v.coinbase);
      } else {
        expect(got.txid).toBe(v.txid);
        expect(got.vout).toBe(v.vout);
        expect(got.scriptsig).toBe(v.scriptSig!.hex);
        expect(got.prevout!.value).toBe(sat(v.prevout!.value));
        expect(got.prevout!.scriptpubkey).toBe(v.prevout!.scriptPubKey.hex);
        expect(got.prevout!.scriptpubkey_address).toBe(v.prevout!.scriptPubKey.address);
      }
      if (v.txinwitness) expect(got.witness).toEqual(v.txinwitness);
      else expect(got).not.toHaveProperty('witness');
    });
    expect(tx.vout.map((o) => [o.scriptpubkey, o.value, o.scriptpubkey_address])).toEqual(
      core.vout.map((o) => [o.scriptPubKey.hex, sat(o.value), o.scriptPubKey.address]),
    );
    expect(tx.status).toEqual(
      block ? { confirmed: true, block_height: block.height, block_hash: block.hash, block_time: block.time } : { confirmed: false },
    );
  };

  it('GET /tx/:txid, /status, /hex, /raw of a confirmed and a mempool transaction, as getrawtransaction', async () => {
    const place = await coreTx(spend.txid, (await call<CoreBlock>('getblock', [await call<string>('getbestblockhash')])).hash);
    const block = await call<CoreBlock>('getblock', [place.blockhash!]);
    const tx = await json<ETx>(`/tx/${spend.txid}`);
    expectTx(tx, place, block);
    expect(tx.vin[0]!.witness).toHaveLength(2);
    expect(tx.vout[0]).toEqual({
      scriptpubkey: Buffer.from(key.script).toString('hex'),
      scriptpubkey_asm: `OP_0 OP_PUSHBYTES_20 ${Buffer.from(key.script.subarray(2)).toString('hex')}`,
      scriptpubkey_type: 'v0_p2wpkh',
      scriptpubkey_address: key.address,
      value: 90_000,
    });
    expect(Object.keys(tx)).toEqual(['txid', 'version', 'locktime', 'vin', 'vout', 'size', 'weight', 'fee', 'status']);
    expect(await json(`/tx/${spend.txid}/status`)).toEqual(tx.status);
    expect(await text(`/tx/${spend.txid}/hex`)).toBe(spend.hex);
    const raw = await get(`/tx/${spend.txid}/raw`);
    expect(raw.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await raw.arrayBuffer()).toString('hex')).toBe(spend.hex);

    const m = await json<ETx>(`/tx/${pending.txid}`);
    expectTx(m, await coreTx(pending.txid), undefined);
    expect(m.vout[1]).toEqual({
      scriptpubkey: '6a02beef',
      scriptpubkey_asm: 'OP_RETURN OP_PUSHBYTES_2 beef',
      scriptpubkey_type: 'op_return',
      value: 0,
    });
    expect(await json(`/tx/${pending.txid}/status`)).toEqual({ confirmed: false });
    expect(await text(`/tx/${pending.txid}/hex`)).toBe(await call<string>('getrawtransaction', [pending.txid]));
  });

  it("a coinbase transaction and a block's transactions by pages of 25, as getblock", async () => {
    const hash = await call<string>('getblockhash', [1]);
    const block = await call<CoreBlock>('getblock', [hash]);
    const cb = await json<ETx>(`/tx/${block.tx[0]}`);
    expectTx(cb, await coreTx(block.tx[0]!, hash), block);
    // The block of the 14 payments holds 15 transactions; the 27 payments' blocks are checked whole.
    const tipHeight = (await s.node.tip()).height;
    for (let h = tipHeight - 2; h <= tipHeight; h++) {
      const bh = await call<string>('getblockhash', [h]);
      const b = await call<CoreBlock>('getblock', [bh]);
      const listed: ETx[] = [];
      for (let start = 0; start < b.tx.length; start += 25)
        listed.push(...(await json<ETx[]>(start === 0 ? `/block/${bh}/txs` : `/block/${bh}/txs/${start}`)));
      expect(listed.map((t) => t.txid)).toEqual(b.tx);
      for (const t of listed) expectTx(t, await coreTx(t.txid, bh), b);
    }
  });

  it('GET /block/:hash, /header, /status, /txids, /txid/:index, /raw, /block-height, /blocks, tips, as getblock and getblockheader', async () => {
    const tip = await s.node.tip();
    expect(await text('/blocks/tip/height')).toBe(String(tip.height));
    expect(await text('/blocks/tip/hash')).toBe(await call<string>('getbestblockhash'));
    for (const height of [0, 1, tip.height]) {
      const hash = await text(`/block-height/${height}`);
      expect(hash).toBe(await call<string>('getblockhash', [height]));
      const b = await call<CoreBlock>('getblock', [hash]);
      const got = await json<Record<string, unknown>>(`/block/${hash}`);
      expect(got).toEqual({
        id: b.hash,
        height: b.height,
        version: b.version,
        timestamp: b.time,
        tx_count: b.nTx,
        size: b.size,
        weight: b.weight,
        merkle_root: b.merkleroot,
        previousblockhash: b.previousblockhash ?? null,
        mediantime: b.mediantime,
        nonce: b.nonce,
        bits: parseInt(b.bits, 16),
        difficulty: b.difficulty,
      });
      expect(Object.keys(got)).toEqual([
        'id',
        'height',
        'version',
        'timestamp',
        'tx_count',
        'size',
        'weight',
        'merkle_root',
        'previousblockhash',
        'mediantime',
        'nonce',
        'bits',
        'difficulty',
      ]);
      expect(await text(`/block/${hash}/header`)).toBe(await call<string>('getblockheader', [hash, false]));
      expect(await json(`/block/${hash}/status`)).toEqual({ in_best_chain: true, height, next_best: b.nextblockhash ?? null });
      expect(await json(`/block/${hash}/txids`)).toEqual(b.tx);
      expect(await text(`/block/${hash}/txid/${b.tx.length - 1}`)).toBe(b.tx[b.tx.length - 1]);
      const raw = await get(`/block/${hash}/raw`);
      expect(raw.headers.get('content-type')).toBe('application/octet-stream');
      expect(Buffer.from(await raw.arrayBuffer()).toString('hex')).toBe(await call<string>('getblock', [hash, 0]));
    }
    const recent = await json<{ id: string; height: number }[]>('/blocks');
    expect(recent.map((b) => b.height)).toEqual(Array.from({ length: 10 }, (_, i) => tip.height - i));
    expect(recent[0]!.id).toBe(tip.hash);
    const from5 = await json<{ id: string; height: number }[]>('/blocks/5');
    expect(from5.map((b) => b.height)).toEqual([5, 4, 3, 2, 1, 0]);
    expect(from5[5]!.id).toBe(await call<string>('getblockhash', [0]));
    // A block no chain holds: orphaned, as electrs answers it.
    expect(await json(`/block/${'00'.repeat(32)}/status`)).toEqual({ in_best_chain: false, height: null, next_best: null });
  });

  it("GET /tx/:txid/merkle-proof and /merkleblock-proof: the branch leads to the header's Merkle root; gettxoutproof's bytes", async () => {
    const place = await coreTx(coins[5]!.txid, undefined).catch(() => undefined);
    const blockhash = place?.blockhash ?? (await call<string>('getblockhash', [(await s.node.tip()).height - 2]));
    const header = await call<{ merkleroot: string; height: number }>('getblockheader', [blockhash]);
    const p = await json<{ block_height: number; merkle: string[]; pos: number }>(`/tx/${coins[5]!.txid}/merkle-proof`);
    expect(p.block_height).toBe(header.height);
    const root = merkleRootFromBranch(
      hexToHash(coins[5]!.txid),
      p.merkle.map((m) => hexToHash(m)),
      p.pos,
    );
    expect(hashToHex(root)).toBe(header.merkleroot);
    const mb = await text(`/tx/${coins[5]!.txid}/merkleblock-proof`);
    expect(mb.slice(0, 160)).toBe(await call<string>('getblockheader', [blockhash, false]));
    if (entry.name === 'bitcoind') expect(mb).toBe(await call<string>('gettxoutproof', [[coins[5]!.txid], blockhash]));
    const r = await get(`/tx/${pending.txid}/merkle-proof`);
    expect([r.status, await r.text()]).toEqual([404, 'Transaction not found or is unconfirmed']);
  });

  it("GET /tx/:txid/outspend/:vout and /outspends: the spends Core's blocks and mempool hold, the rest unspent as gettxout", async () => {
    const spendBlock = (await coreTx(spend.txid, await call<string>('getblockhash', [(await s.node.tip()).height]))).blockhash!;
    const sb = await call<CoreBlock>('getblock', [spendBlock]);
    expect(await json(`/tx/${coins[0]!.txid}/outspend/${coins[0]!.vout}`)).toEqual({
      spent: true,
      txid: spend.txid,
      vin: 0,
      status: { confirmed: true, block_height: sb.height, block_hash: sb.hash, block_time: sb.time },
    });
    expect(await json(`/tx/${coins[1]!.txid}/outspend/${coins[1]!.vout}`)).toEqual({
      spent: true,
      txid: pending.txid,
      vin: 0,
      status: { confirmed: false },
    });
    expect(await json(`/tx/${coins[2]!.txid}/outspend/${coins[2]!.vout}`)).toEqual({
      spent: true,
      txid: pending.txid,
      vin: 1,
      status: { confirmed: false },
    });
    const all = await json<{ spent: boolean }[]>(`/tx/${coins[3]!.txid}/outspends`);
    const core = await coreTx(coins[3]!.txid, undefined).catch(async () =>
      coreTx(
        coins[3]!.txid,
        (await call<CoreBlock>('getblock', [await call<string>('getblockhash', [(await s.node.tip()).height - 2])])).hash,
      ),
    );
    expect(all).toHaveLength(core.vout.length);
    for (const o of core.vout) {
      const unspent = (await call<unknown>('gettxout', [coins[3]!.txid, o.n, true])) !== null;
      expect(all[o.n]!.spent, `output ${o.n}`).toBe(!unspent);
    }
    // An output past the last, or of an unknown transaction: unspent, as electrs answers.
    expect(await json(`/tx/${coins[3]!.txid}/outspend/99`)).toEqual({ spent: false });
  });

  it('GET /address/:a, /txs, /txs/chain[/:last_seen], /txs/mempool, /utxo, and the same by /scripthash', async () => {
    const scripthash = Buffer.from(sha256(addressToScript(key.address, 'regtest'))).toString('hex');
    for (const [kind, id] of [
      ['address', key.address],
      ['scripthash', scripthash],
    ] as const) {
      const stats = await json<Record<string, unknown>>(`/${kind}/${id}`);
      // Chain: 27 payments and the 90,000 sat change funded, one spent; the mempool: 150,000 funded, two spent.
      const funded = coins.reduce((a, c) => a + Number(c.sats), 0) + 90_000;
      expect(stats).toEqual({
        [kind]: id,
        chain_stats: {
          tx_count: 28,
          funded_txo_count: 28,
          spent_txo_count: 1,
          funded_txo_sum: funded,
          spent_txo_sum: Number(coins[0]!.sats),
        },
        mempool_stats: {
          tx_count: 1,
          funded_txo_count: 1,
          spent_txo_count: 2,
          funded_txo_sum: 150_000,
          spent_txo_sum: Number(coins[1]!.sats + coins[2]!.sats),
        },
      });
      const first = await json<{ txid: string; status: { confirmed: boolean; block_height?: number } }[]>(`/${kind}/${id}/txs`);
      expect(first.map((t) => t.txid)[0]).toBe(pending.txid);
      expect(first).toHaveLength(1 + 25);
      expect(first[1]!.txid).toBe(spend.txid);
      const chain1 = await json<{ txid: string; status: { block_height: number } }[]>(`/${kind}/${id}/txs/chain`);
      expect(chain1.map((t) => t.txid)).toEqual(first.slice(1).map((t) => t.txid));
      const chain2 = await json<{ txid: string; status: { block_height: number } }[]>(`/${kind}/${id}/txs/chain/${chain1[24]!.txid}`);
      expect(chain2).toHaveLength(3);
      const all = [...chain1, ...chain2];
      expect(new Set(all.map((t) => t.txid))).toEqual(new Set([spend.txid, ...coins.map((c) => c.txid)]));
      // Newest first: heights never rise.
      expect(all.map((t) => t.status.block_height)).toEqual([...all.map((t) => t.status.block_height)].sort((a, b) => b - a));
      expect(await json(`/${kind}/${id}/txs/chain/${chain2[2]!.txid}`)).toEqual([]);
      expect((await json<{ txid: string }[]>(`/${kind}/${id}/txs/mempool`)).map((t) => t.txid)).toEqual([pending.txid]);

      const utxo = await json<{ txid: string; vout: number; value: number; status: { confirmed: boolean; block_hash?: string } }[]>(
        `/${kind}/${id}/utxo`,
      );
      // Unspent as gettxout with the mempool says: every coin but the three spent, the change, and the mempool output.
      const candidates = [...coins, { txid: spend.txid, vout: 0, sats: 90_000n }, { txid: pending.txid, vout: 0, sats: 150_000n }];
      const unspent: string[] = [];
      for (const c of candidates)
        if ((await call<unknown>('gettxout', [c.txid, c.vout, true])) !== null) unspent.push(`${c.txid}:${c.vout}:${c.sats}`);
      expect(unspent).toHaveLength(coins.length - 3 + 2);
      expect(utxo.map((u) => `${u.txid}:${u.vout}:${u.value}`).sort()).toEqual(unspent.sort());
      const mempoolOut = utxo.find((u) => u.txid === pending.txid)!;
      expect(mempoolOut.status).toEqual({ confirmed: false });
      const change = utxo.find((u) => u.txid === spend.txid)!;
      expect(change.status).toMatchObject({
        confirmed: true,
        block_hash: (await coreTx(spend.txid, await call<string>('getbestblockhash'))).blockhash,
      });
    }
  });

  it('GET /mempool, /mempool/txids, /mempool/recent, /fee-estimates, as getmempoolinfo and getrawmempool', async () => {
    const info = await call<{ size: number; bytes: number; total_fee: number }>('getmempoolinfo');
    const m = await json<{ count: number; vsize: number; total_fee: number; fee_histogram: unknown[] }>('/mempool');
    expect(m.count).toBe(info.size);
    expect(m.vsize).toBe(info.bytes);
    expect(m.total_fee).toBe(sat(info.total_fee));
    expect((await json<string[]>('/mempool/txids')).sort()).toEqual((await call<string[]>('getrawmempool')).sort());
    const recent = await json<{ txid: string; fee: number; vsize: number; value: number }[]>('/mempool/recent');
    const entry = recent.find((r) => r.txid === pending.txid)!;
    const core = await coreTx(pending.txid);
    expect(entry).toEqual({ txid: pending.txid, fee: sat(core.fee!), vsize: Math.ceil(core.weight / 4), value: 150_000 });
    const fees = await json<Record<string, number>>('/fee-estimates');
    expect(
      Object.keys(fees)
        .map(Number)
        .sort((a, b) => a - b),
    ).toEqual([...Array.from({ length: 25 }, (_, i) => i + 1), 144, 504, 1008]);
  });

  it("POST /tx: the hex as a text body, the txid as text; the node's refusal as electrs words it", async () => {
    const coin = coins[10]!;
    const tx = key.spend([coin], [{ address: key.address, sats: coin.sats - 500n }]);
    const r = await get('/tx', { method: 'POST', body: tx.hex, headers: { 'content-type': 'text/plain' } });
    expect([r.status, r.headers.get('content-type'), await r.text()]).toEqual([200, 'text/plain', tx.txid]);
    expect(await call<string[]>('getrawmempool')).toContain(tx.txid);
    // (axios sends a string as a form body: the type does not matter)
    const again = await get('/tx', { method: 'POST', body: tx.hex, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(again.status).toBe(200);
    const conflict = key.spend([coin], [{ address: key.address, sats: coin.sats - 400n }]);
    const refused = await get('/tx', { method: 'POST', body: conflict.hex });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/^sendrawtransaction RPC error: \{"code":-26,"message":"insufficient fee/);
    const junk = await get('/tx', { method: 'POST', body: 'zz' });
    expect([junk.status, await junk.text()]).toEqual([
      400,
      'sendrawtransaction RPC error: {"code":-22,"message":"TX decode failed. Make sure the tx has at least one input."}',
    ]);
  });

  // (the stand-in's wallet pays to P2WPKH only; Core's makes and signs the nested segwit spend)
  it.skipIf(entry.name !== 'bitcoind')(
    'a P2SH-P2WPKH spend: scriptsig, its assembly, the revealed redeem script and the witness, as Core signed them',
    async () => {
      const wallet = s.node.bitcoind!.wallet!;
      const nested = await s.node.call<string>('getnewaddress', ['', 'p2sh-segwit'], wallet);
      const funding = await s.node.pay(nested, 1_000_000n);
      const [hash] = await s.mine(1);
      const vout = (await coreTx(funding, hash)).vout.find((o) => o.scriptPubKey.address === nested)!.n;
      const to = await s.node.call<string>('getnewaddress', ['', 'bech32'], wallet);
      const raw = await s.node.call<string>('createrawtransaction', [[{ txid: funding, vout }], [{ [to]: 0.0099 }]]);
      const signed = await s.node.call<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', [raw], wallet);
      expect(signed.complete).toBe(true);
      const txid = await call<string>('sendrawtransaction', [signed.hex]);
      await waitFor('the index holds the nested segwit spend', async () => (await get(`/tx/${txid}`)).status === 200, 30_000);
      const core = await coreTx(txid);
      const tx = await json<
        ETx & { vin: (EVin & { scriptsig_asm: string; inner_redeemscript_asm?: string; inner_witnessscript_asm?: string })[] }
      >(`/tx/${txid}`);
      expectTx(tx, core, undefined);
      const redeem = core.vin[0]!.scriptSig!.hex.slice(2);
      expect(redeem).toMatch(/^0014[0-9a-f]{40}$/);
      expect(tx.vin[0]!.scriptsig_asm).toBe(`OP_PUSHBYTES_22 ${redeem}`);
      expect(tx.vin[0]!.inner_redeemscript_asm).toBe(`OP_0 OP_PUSHBYTES_20 ${redeem.slice(4)}`);
      expect(tx.vin[0]).not.toHaveProperty('inner_witnessscript_asm');
      expect(tx.vin[0]!.prevout!.scriptpubkey_type).toBe('p2sh');
      expect(tx.vin[0]!.prevout!.scriptpubkey_asm).toBe(
        `OP_HASH160 OP_PUSHBYTES_20 ${core.vin[0]!.prevout!.scriptPubKey.hex.slice(4, 44)} OP_EQUAL`,
      );
    },
  );

  it('errors in plain text as electrs answers them; what Blockwire does not serve is an unknown route', async () => {
    const cases: [string, number, string][] = [
      [`/tx/${'ab'.repeat(32)}`, 404, 'Transaction not found'],
      ['/tx/xyz', 400, 'Invalid hex string'],
      [`/block/${'ab'.repeat(32)}`, 404, 'Block not found'],
      ['/block-height/999999', 404, 'Block not found'],
      ['/block-height/x', 400, 'Invalid number'],
      [`/block/${await call<string>('getblockhash', [1])}/txid/5`, 404, 'tx index out of range'],
      [`/block/${await call<string>('getblockhash', [1])}/txs/25`, 404, 'start index out of range'],
      ['/address/notanaddress', 400, 'Invalid Bitcoin address'],
      ['/address/1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2', 400, 'Address on invalid network'],
      ['/scripthash/abcd', 400, 'Invalid scripthash'],
      [
        '/asset/6f0279e9ed041c3d710a9f57d0c02928416460c4b722ae3457a11eec381c526d',
        404,
        'endpoint does not exist "/asset/6f0279e9ed041c3d710a9f57d0c02928416460c4b722ae3457a11eec381c526d"',
      ],
      ['/address-prefix/bcrt1', 404, 'endpoint does not exist "/address-prefix/bcrt1"'],
      ['/nothing', 404, 'endpoint does not exist "/nothing"'],
    ];
    for (const [path, status, body] of cases) {
      const r = await get(path);
      expect([path, r.status, r.headers.get('content-type'), await r.text()]).toEqual([path, status, 'text/plain', body]);
    }
    // The block of the first 14 payments (15 transactions): a start within it but no multiple of 25.
    let funded: CoreBlock | undefined;
    for (let h = (await s.node.tip()).height; !funded; h--) {
      const b = await call<CoreBlock>('getblock', [await call<string>('getblockhash', [h])]);
      if (b.tx.includes(coins[0]!.txid)) funded = b;
    }
    expect(funded.nTx).toBe(15);
    const r = await get(`/block/${funded.hash}/txs/10`);
    expect([r.status, await r.text()]).toEqual([400, 'start index must be a multipication of 25']);
    // (electrs: a start that is no number counts as 0)
    expect((await json<ETx[]>(`/block/${funded.hash}/txs/x`)).map((t) => t.txid)).toEqual(funded.tx);
  });

  it('base URLs: the key in the path or in the apiKey header; none, or a wrong one, refused', async () => {
    const tipHash = await call<string>('getbestblockhash');
    const header = await fetch(`${s.url}/esplora/blocks/tip/hash`, { headers: { apiKey: s.apiKey } });
    expect([header.status, await header.text()]).toEqual([200, tipHash]);
    const none = await fetch(`${s.url}/esplora/blocks/tip/hash`);
    expect(none.status).toBe(401);
    expect(none.headers.get('content-type')).toBe('text/plain');
    const wrong = await fetch(`${s.url}/esplora/bw_${'A'.repeat(49)}/blocks/tip/hash`);
    expect(wrong.status).toBe(401);
  });
});
