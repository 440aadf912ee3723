/**
 * Every Electrum protocol method of Blockwire's server, checked against what Bitcoin Core says:
 * headers, block hashes and Merkle roots (getblockheader, getblockhash, getblock), transactions
 * (getrawtransaction), balances and unspent outputs (scantxoutset), fees (getmempoolentry,
 * estimatesmartfee, getnetworkinfo), broadcasts (sendrawtransaction's own messages); statuses
 * computed here from the protocol's definition; notifications after new blocks, a reorg and a
 * replacement; P2PK and bare multisig outputs made by Core beside a P2PKH script of the same key,
 * read by script hash through Electrum and through the REST API (/v1/scripthash/…).
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitFor } from '../../support/wait.js';
import * as btc from '@scure/btc-signer';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describeBitcoind } from '../../support/bitcoind.js';
import { electrumScriptHash, ElectrumRpcError, type ElectrumTestClient } from '../../support/electrum-client.js';
import { hashToHex, hexToHash, sha256d } from '../../../src/bitcoin/hash.js';
import { merkleRoot } from '../../../src/bitcoin/merkle.js';
import { startElectrumStack, type ElectrumStack } from './harness.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { buildApi } from '../../../api/app.js';
import { encodeWif } from '../../../src/bitcoin/wif.js';

const W = 'miner';
const sat = (btcAmount: number) => Math.round(btcAmount * 1e8);

/** Status as the protocol defines it, computed here independently of the server. */
function expectedStatus(items: { tx_hash: string; height: number }[]): string | null {
  if (items.length === 0) return null;
  return createHash('sha256')
    .update(items.map((i) => `${i.tx_hash}:${i.height}:`).join(''))
    .digest('hex');
}

/** The root a Merkle branch (display hex, deepest first) leads to from `leaf` (display hex) at `pos`. */
function rootFromBranch(leaf: string, branch: string[], pos: number): string {
  let h = hexToHash(leaf);
  let i = pos;
  for (const b of branch) {
    const sib = hexToHash(b);
    h = sha256d(i & 1 ? Buffer.concat([sib, h]) : Buffer.concat([h, sib]));
    i >>= 1;
  }
  return hashToHex(h);
}

/** Core's error message for a call that must fail. */
async function coreRefusal(p: Promise<unknown>): Promise<string> {
  const r = await p.then(
    (v) => ({ ok: v }),
    (e: unknown) => ({ err: e as { rpcMessage?: string; message: string } }),
  );
  if (!('err' in r)) throw new Error(`Core accepted the call: ${JSON.stringify(r.ok)}`);
  return r.err.rpcMessage ?? r.err.message;
}

describeBitcoind('Electrum protocol methods against Bitcoin Core', () => {
  let s: ElectrumStack;
  let c: ElectrumTestClient;
  const addr: Record<string, { address: string; script: string; sh: string }> = {};
  let tx1 = '';
  let tx2 = '';
  let tx3 = '';
  let h1 = 0;
  const key = secp256k1.utils.randomSecretKey();
  const pub = secp256k1.getPublicKey(key, true);
  const pub2 = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);

  const call = <T>(method: string, params: unknown[] = [], wallet?: string) => s.node.call<T>(method, params, wallet);
  /** Pays `address` from the wallet and locks that output, so later payments of the wallet do not spend it. */
  const pay = async (address: string, amount: number): Promise<string> => {
    const txid = await call<string>('sendtoaddress', [address, amount], W);
    const tx = await call<{ vout: { n: number; scriptPubKey: { address?: string } }[] }>('getrawtransaction', [txid, true]);
    const outs = tx.vout.filter((o) => o.scriptPubKey.address === address).map((o) => ({ txid, vout: o.n }));
    await call('lockunspent', [false, outs, true], W);
    return txid;
  };

  beforeAll(async () => {
    s = await startElectrumStack();
    c = await s.connect();
    await c.request('server.version', ['test', '1.4']);
    for (const type of ['legacy', 'p2sh-segwit', 'bech32', 'bech32m']) {
      const address = await call<string>('getnewaddress', ['', type], W);
      const info = await call<{ scriptPubKey: string }>('getaddressinfo', [address], W);
      addr[type] = { address, script: info.scriptPubKey, sh: electrumScriptHash(info.scriptPubKey) };
    }
    tx1 = await pay(addr.legacy!.address, 1.0);
    tx2 = await pay(addr.bech32!.address, 0.5);
    await s.mine(1);
    h1 = (await s.node.tip()).height;
    tx3 = await pay(addr.bech32!.address, 0.25);
    await s.synced();
  }, 240_000);

  afterAll(async () => {
    await s?.stop();
  });

  it('server.version negotiates 1.4 … 1.6 (the highest both speak), once per connection, and closes on a version it does not speak', async () => {
    // (c negotiated 1.4 when the suite started) only the first server.version counts (ElectrumX: error 1); the connection stays
    await expect(c.request('server.version', ['x', ['1.4', '1.6']])).rejects.toMatchObject({
      code: 1,
      rpcMessage: 'server.version already sent',
    });
    expect(await c.request('server.ping')).toBeNull();
    const negotiated = async (params: unknown[]) => (await s.connect()).request('server.version', params);
    expect(await negotiated(['electrum/4.3.4', '1.4'])).toEqual(['blockwire/0.1', '1.4']);
    expect(await negotiated(['x', ['1.4', '1.4.2']])).toEqual(['blockwire/0.1', '1.4.2']);
    expect(await negotiated(['electrum/4.6.2', ['1.4', '1.6']])).toEqual(['blockwire/0.1', '1.6']);
    expect(await negotiated(['x', '1.6'])).toEqual(['blockwire/0.1', '1.6']);
    expect(await negotiated(['x', ['1.4', '1.5']])).toEqual(['blockwire/0.1', '1.4.2']);
    expect(await negotiated(['x', ['1.4', '1.7']])).toEqual(['blockwire/0.1', '1.6']);
    // 1.6: extraneous arguments are ignored
    expect(await negotiated(['electrum/4.6.2', ['1.4', '1.6'], 'trailing_garbage1', 9999.9, { dd: {} }])).toEqual(['blockwire/0.1', '1.6']);
    for (const v of ['1.2', '1.5', ['1.7', '1.8']]) {
      const other = await s.connect();
      const err = await other.request('server.version', ['old', v]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ElectrumRpcError);
      expect((err as ElectrumRpcError).code).toBe(1);
      await other.closed;
    }
  });

  it('protocol 1.6: block.headers as a list, mempool.get_info, estimatefee with a mode, relayfee removed; 1.4 keeps its own', async () => {
    const v16 = await s.connect();
    expect(await v16.request('server.version', ['x', ['1.4', '1.6']])).toEqual(['blockwire/0.1', '1.6']);
    const tip = await s.node.tip();
    const headers: string[] = [];
    for (let h = 3; h < 6; h++) headers.push(await call<string>('getblockheader', [await call<string>('getblockhash', [h]), false]));
    expect(await v16.request('blockchain.block.headers', [3, 3])).toEqual({ count: 3, headers, max: 2016 });
    expect(await c.request('blockchain.block.headers', [3, 3])).toEqual({ count: 3, hex: headers.join(''), max: 2016 });
    const cp = tip.height;
    const proved = await v16.request<{ headers: string[]; root: string; branch: string[] }>('blockchain.block.headers', [3, 3, cp]);
    expect(proved.headers).toEqual(headers);
    expect(proved.root).toBe((await c.request<{ root: string }>('blockchain.block.headers', [3, 3, cp])).root);
    const info = await call<{ mempoolminfee: number; minrelaytxfee: number; incrementalrelayfee: number }>('getmempoolinfo');
    expect(await v16.request('mempool.get_info')).toEqual({
      mempoolminfee: info.mempoolminfee,
      minrelaytxfee: info.minrelaytxfee,
      incrementalrelayfee: info.incrementalrelayfee,
    });
    for (const mode of ['ECONOMICAL', 'conservative']) {
      const est = await call<{ feerate?: number }>('estimatesmartfee', [2, mode.toUpperCase()]);
      expect(await v16.request('blockchain.estimatefee', [2, mode])).toBe(est.feerate ?? -1);
    }
    await expect(v16.request('blockchain.estimatefee', [2, 'FAST'])).rejects.toMatchObject({
      code: 1,
      rpcMessage: 'unknown estimatefee mode: FAST',
    });
    await expect(v16.request('blockchain.relayfee')).rejects.toMatchObject({ code: -32601 });
    // 1.4: relayfee is there, the 1.6 methods are not
    await expect(c.request('mempool.get_info')).rejects.toMatchObject({ code: -32601 });
    await expect(c.request('blockchain.transaction.broadcast_package', [[]])).rejects.toMatchObject({ code: -32601 });
    // a connection that never negotiated speaks 1.4
    await expect((await s.connect()).request('mempool.get_info')).rejects.toMatchObject({ code: -32601 });
  });

  it('protocol 1.6: broadcast_package submits a child with its parent through Core (submitpackage); a package Core refuses is error 1 with its message', async () => {
    const v16 = await s.connect();
    await v16.request('server.version', ['x', '1.6']);
    // a parent paying the wallet, and a child spending it, neither in the mempool
    const mid = await call<string>('getnewaddress', [], W);
    const parentRaw = await call<{ hex: string }>(
      'fundrawtransaction',
      [await call('createrawtransaction', [[], [{ [mid]: 0.5 }]]), { feeRate: 0.0002, changePosition: 1 }],
      W,
    );
    const parent = await call<{ hex: string }>('signrawtransactionwithwallet', [parentRaw.hex], W);
    const parentTxid = (await call<{ txid: string }>('decoderawtransaction', [parent.hex])).txid;
    const dest = await call<string>('getnewaddress', [], W);
    const childRaw = await call<string>('createrawtransaction', [[{ txid: parentTxid, vout: 0 }], [{ [dest]: 0.499 }]]);
    const child = await call<{ hex: string; complete: boolean }>(
      'signrawtransactionwithwallet',
      [
        childRaw,
        [
          {
            txid: parentTxid,
            vout: 0,
            scriptPubKey: (await call<{ scriptPubKey: string }>('getaddressinfo', [mid], W)).scriptPubKey,
            amount: 0.5,
          },
        ],
      ],
      W,
    );
    expect(child.complete).toBe(true);
    const childTxid = (await call<{ txid: string }>('decoderawtransaction', [child.hex])).txid;
    expect(await v16.request('blockchain.transaction.broadcast_package', [[parent.hex, child.hex]])).toEqual({ success: true });
    expect(await call<string[]>('getrawmempool')).toEqual(expect.arrayContaining([parentTxid, childTxid]));
    // verbose: Core's own answer
    const verbose = await v16.request<{ package_msg: string; 'tx-results': Record<string, { txid: string }> }>(
      'blockchain.transaction.broadcast_package',
      [[parent.hex, child.hex], true],
    );
    expect(verbose.package_msg).toBe('success');
    expect(
      Object.values(verbose['tx-results'])
        .map((r) => r.txid)
        .sort(),
    ).toEqual([parentTxid, childTxid].sort());
    // two unrelated transactions are no package: Core's refusal, ElectrumX's wording
    const coreMsg = await coreRefusal(call('submitpackage', [[child.hex, parent.hex]]));
    await expect(v16.request('blockchain.transaction.broadcast_package', [[child.hex, parent.hex]])).rejects.toMatchObject({
      code: 1,
      rpcMessage: `the tx package was rejected by network rules.\n\n${coreMsg}.`,
    });
    await expect(v16.request('blockchain.transaction.broadcast_package', ['00'])).rejects.toMatchObject({ code: 1 });
    await expect(v16.request('blockchain.transaction.broadcast_package', [['xyz']])).rejects.toMatchObject({ code: 1 });
    await s.synced();
  });

  it('server.features, banner, donation_address, ping and peers.subscribe', async () => {
    const f = await c.request<Record<string, unknown>>('server.features');
    expect(f.genesis_hash).toBe(await call<string>('getblockhash', [0]));
    expect(f).toMatchObject({
      hash_function: 'sha256',
      pruning: null,
      protocol_min: '1.4',
      protocol_max: '1.6',
      server_version: 'blockwire/0.1',
    });
    expect(f.hosts).toEqual({ '127.0.0.1': { tcp_port: s.electrum.tcpPort, ssl_port: s.electrum.tlsPort } });
    expect(await c.request('server.banner')).toBe(s.config.electrumBanner);
    expect(await c.request('server.donation_address')).toBe('');
    expect(await c.request('server.ping')).toBeNull();
    expect(await c.request('server.peers.subscribe')).toEqual([]);
  });

  it('headers: headers.subscribe, block.header and block.headers equal Core’s, with cp_height proofs to the root of Core’s block hashes', async () => {
    const tip = await s.node.tip();
    expect(await c.request('blockchain.headers.subscribe')).toEqual({
      hex: await call('getblockheader', [tip.hash, false]),
      height: tip.height,
    });
    const hashes: string[] = [];
    for (let h = 0; h <= tip.height; h++) hashes.push(await call<string>('getblockhash', [h]));
    for (const h of [0, 1, 57, tip.height])
      expect(await c.request('blockchain.block.header', [h])).toBe(await call('getblockheader', [hashes[h], false]));
    const headers = await c.request<{ count: number; hex: string; max: number }>('blockchain.block.headers', [10, 5]);
    let hex = '';
    for (let h = 10; h < 15; h++) hex += await call<string>('getblockheader', [hashes[h], false]);
    expect(headers).toEqual({ count: 5, hex, max: 2016 });
    // past the tip: only what exists
    expect((await c.request<{ count: number }>('blockchain.block.headers', [tip.height - 1, 10])).count).toBe(2);

    const cp = tip.height - 2;
    const root = hashToHex(merkleRoot(hashes.slice(0, cp + 1).map((h) => hexToHash(h))));
    for (const h of [0, 7, cp]) {
      const p = await c.request<{ header: string; branch: string[]; root: string }>('blockchain.block.header', [h, cp]);
      expect(p.header).toBe(await call('getblockheader', [hashes[h], false]));
      expect(p.root).toBe(root);
      expect(rootFromBranch(hashes[h]!, p.branch, h)).toBe(root);
    }
    const ph = await c.request<{ count: number; root: string; branch: string[] }>('blockchain.block.headers', [cp - 3, 4, cp]);
    expect(ph.count).toBe(4);
    expect(ph.root).toBe(root);
    expect(rootFromBranch(hashes[cp]!, ph.branch, cp)).toBe(root);
    await expect(c.request('blockchain.block.header', [5, 3])).rejects.toMatchObject({ code: 1 });
    await expect(c.request('blockchain.block.header', [tip.height + 1])).rejects.toMatchObject({ code: 1 });
    // malformed parameters are bad requests (error 1), as ElectrumX answers them
    await expect(c.request('blockchain.block.header', [-1])).rejects.toMatchObject({ code: 1 });
    await expect(c.request('blockchain.block.header', ['x'])).rejects.toMatchObject({ code: 1 });
    // a height no chain reaches: out of range, not an internal error
    await expect(c.request('blockchain.block.header', [10_000_000_000])).rejects.toMatchObject({
      code: 1,
      rpcMessage: 'height 10,000,000,000 out of range',
    });
    await expect(c.request('blockchain.block.headers', [10_000_000_000, 1])).rejects.toMatchObject({ code: 1 });
    await expect(c.request('blockchain.transaction.id_from_pos', [10_000_000_000, 0])).rejects.toMatchObject({ code: 1 });
  });

  it('estimatefee and relayfee are Core’s (BTC/kvB, -1 without an estimate)', async () => {
    const est = await call<{ feerate?: number }>('estimatesmartfee', [6]);
    expect(await c.request('blockchain.estimatefee', [6])).toBe(est.feerate ?? -1);
    expect(await c.request('blockchain.relayfee')).toBe((await call<{ relayfee: number }>('getnetworkinfo')).relayfee);
  });

  it('get_history, get_mempool and subscribe: chain order, then the mempool with Core’s fee; the status as the protocol defines it', async () => {
    const a = addr.bech32!;
    const fee3 = sat((await call<{ fees: { base: number } }>('getmempoolentry', [tx3])).fees.base);
    const expected = [
      { tx_hash: tx2, height: h1 },
      { tx_hash: tx3, height: 0, fee: fee3 },
    ];
    expect(await c.request('blockchain.scripthash.get_history', [a.sh])).toEqual(expected);
    expect(await c.request('blockchain.scripthash.get_mempool', [a.sh])).toEqual([{ tx_hash: tx3, height: 0, fee: fee3 }]);
    expect(await c.request('blockchain.scripthash.subscribe', [a.sh])).toBe(expectedStatus(expected));
    // never used: empty history, null status
    const unused = electrumScriptHash(
      (await call<{ scriptPubKey: string }>('getaddressinfo', [await call<string>('getnewaddress', [], W)], W)).scriptPubKey,
    );
    expect(await c.request('blockchain.scripthash.get_history', [unused])).toEqual([]);
    expect(await c.request('blockchain.scripthash.subscribe', [unused])).toBeNull();
    expect(await c.request('blockchain.scripthash.unsubscribe', [unused])).toBe(true);
    expect(await c.request('blockchain.scripthash.unsubscribe', [unused])).toBe(false);
    await expect(c.request('blockchain.scripthash.get_history', ['zz'])).rejects.toMatchObject({ code: 1 });
  });

  it('get_balance and listunspent equal Core’s UTXO set (scantxoutset) plus the mempool', async () => {
    for (const a of [addr.legacy!, addr.bech32!]) {
      const scan = await call<{ total_amount: number; unspents: { txid: string; vout: number; amount: number; height: number }[] }>(
        'scantxoutset',
        ['start', [`addr(${a.address})`]],
      );
      const bal = await c.request<{ confirmed: number; unconfirmed: number }>('blockchain.scripthash.get_balance', [a.sh]);
      expect(bal.confirmed).toBe(sat(scan.total_amount));
      const unspent = await c.request<{ tx_hash: string; tx_pos: number; height: number; value: number }[]>(
        'blockchain.scripthash.listunspent',
        [a.sh],
      );
      const confirmed = unspent.filter((u) => u.height > 0);
      expect(confirmed.sort((x, y) => x.tx_hash.localeCompare(y.tx_hash))).toEqual(
        scan.unspents
          .map((u) => ({ tx_hash: u.txid, tx_pos: u.vout, height: u.height, value: sat(u.amount) }))
          .sort((x, y) => x.tx_hash.localeCompare(y.tx_hash)),
      );
      if (a === addr.bech32) {
        expect(bal.unconfirmed).toBe(sat(0.25));
        expect(unspent.filter((u) => u.height === 0).map((u) => [u.tx_hash, u.value])).toEqual([[tx3, sat(0.25)]]);
      } else expect(bal.unconfirmed).toBe(0);
    }
  });

  it('transaction.get (raw and verbose), get_merkle and id_from_pos equal Core’s', async () => {
    const block = await call<{ hash: string; tx: string[]; merkleroot: string }>('getblock', [await call('getblockhash', [h1]), 1]);
    expect(await c.request('blockchain.transaction.get', [tx2])).toBe(await call('getrawtransaction', [tx2, false, block.hash]));
    expect(await c.request('blockchain.transaction.get', [tx3])).toBe(await call('getrawtransaction', [tx3, false]));
    const verbose = await c.request<Record<string, unknown>>('blockchain.transaction.get', [tx2, true]);
    const core = await call<Record<string, unknown>>('getrawtransaction', [tx2, true, block.hash]);
    expect({ ...verbose, confirmations: 0 }).toEqual({ ...core, confirmations: 0 });
    const pos = block.tx.indexOf(tx2);
    const m = await c.request<{ block_height: number; merkle: string[]; pos: number }>('blockchain.transaction.get_merkle', [tx2, h1]);
    expect(m.block_height).toBe(h1);
    expect(m.pos).toBe(pos);
    expect(rootFromBranch(tx2, m.merkle, pos)).toBe(block.merkleroot);
    expect(await c.request('blockchain.transaction.id_from_pos', [h1, pos])).toBe(tx2);
    expect(await c.request('blockchain.transaction.id_from_pos', [h1, pos, true])).toEqual({ tx_hash: tx2, merkle: m.merkle });
    expect(await c.request('blockchain.transaction.id_from_pos', [h1, 0])).toBe(block.tx[0]);
    await expect(c.request('blockchain.transaction.get_merkle', [tx2, h1 - 1])).rejects.toMatchObject({ code: 1 });
    await expect(c.request('blockchain.transaction.id_from_pos', [h1, block.tx.length])).rejects.toMatchObject({ code: 1 });
    const missing = randomBytes(32).toString('hex');
    const coreErr = await coreRefusal(call('getrawtransaction', [missing]));
    await expect(c.request('blockchain.transaction.get', [missing])).rejects.toMatchObject({ code: 2, rpcMessage: coreErr });
  });

  it('mempool.get_fee_histogram covers the mempool’s virtual size, highest fee rate first', async () => {
    const pool = await call<Record<string, { vsize: number; fees: { base: number } }>>('getrawmempool', [true]);
    const hist = await c.request<[number, number][]>('mempool.get_fee_histogram');
    expect(hist.reduce((n, [, v]) => n + v, 0)).toBe(Object.values(pool).reduce((n, e) => n + e.vsize, 0));
    for (let i = 1; i < hist.length; i++) expect(hist[i]![0]).toBeLessThanOrEqual(hist[i - 1]![0]);
  });

  it('transaction.broadcast relays through Core; Core’s refusal comes back as error 1 with its message, worded as ElectrumX words it', async () => {
    const dest = await call<string>('getnewaddress', [], W);
    const funded = await call<{ hex: string }>(
      'fundrawtransaction',
      [await call('createrawtransaction', [[], [{ [dest]: 0.1 }]]), { feeRate: 0.0002 }],
      W,
    );
    const signed = await call<{ hex: string }>('signrawtransactionwithwallet', [funded.hex], W);
    const txid = await c.request<string>('blockchain.transaction.broadcast', [signed.hex]);
    expect(txid).toBe((await call<{ txid: string }>('decoderawtransaction', [signed.hex])).txid);
    expect(await call<string[]>('getrawmempool')).toContain(txid);
    const coreMsg = await coreRefusal(call('sendrawtransaction', ['00']));
    await expect(c.request('blockchain.transaction.broadcast', ['00'])).rejects.toMatchObject({
      code: 1,
      rpcMessage: `the transaction was rejected by network rules.\n\n${coreMsg}\n[00]`,
    });
    await expect(c.request('blockchain.transaction.broadcast', ['xyz'])).rejects.toMatchObject({ code: 1 });
    await s.synced();
  });

  it('P2PK and bare multisig script hashes answer exactly their outputs as Bitcoin Core made, spent and reorged them (scantxoutset raw(…) the arbiter); the P2PKH script of the same key only its own', async () => {
    const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
    const scripts = { pk: hex(btc.p2pk(pub).script), ms: hex(btc.p2ms(1, [pub, pub2]).script), pkh: hex(btc.p2pkh(pub).script) };
    const kinds = ['pk', 'ms', 'pkh'] as const;
    const sh = { pk: electrumScriptHash(scripts.pk), ms: electrumScriptHash(scripts.ms), pkh: electrumScriptHash(scripts.pkh) };
    type Unspent = { tx_hash: string; tx_pos: number; height: number; value: number };
    const byOutpoint = (a: Unspent, b: Unspent) => a.tx_hash.localeCompare(b.tx_hash) || a.tx_pos - b.tx_pos;
    /** Core's UTXO set for one script: scantxoutset raw(…). */
    const coreUtxos = async (script: string) => {
      const r = await call<{ total_amount: number; unspents: { txid: string; vout: number; amount: number; height: number }[] }>(
        'scantxoutset',
        ['start', [`raw(${script})`]],
      );
      return {
        confirmed: sat(r.total_amount),
        unspent: r.unspents.map((u) => ({ tx_hash: u.txid, tx_pos: u.vout, height: u.height, value: sat(u.amount) })).sort(byOutpoint),
      };
    };
    /** Outpoints spent by the mempool at this point of the test. */
    let mempoolSpent = new Set<string>();
    /** Electrum's confirmed balance and confirmed unspent outputs equal Core's UTXO set for each script. */
    const expectCoreUtxos = async () => {
      for (const k of kinds) {
        const core = await coreUtxos(scripts[k]);
        expect((await c.request<{ confirmed: number }>('blockchain.scripthash.get_balance', [sh[k]])).confirmed, k).toBe(core.confirmed);
        // listunspent leaves out what the mempool spends; Core's UTXO set is the chain's.
        const listed = await c.request<Unspent[]>('blockchain.scripthash.listunspent', [sh[k]]);
        expect(listed.filter((u) => u.height > 0).sort(byOutpoint), k).toEqual(
          core.unspent.filter((u) => !mempoolSpent.has(`${u.tx_hash}:${u.tx_pos}`)),
        );
      }
    };

    // The same scripts through the REST API, by script hash alone (the alias followed) and with the
    // script itself: statistics as Core's transactions make them, the confirmed balance and
    // unspent outputs Core's UTXO set, the history Electrum's (checked against Core above).
    const api = await buildApi({ db: s.db.db, log: s.log, network: 'regtest' });
    const { key: apiKey } = await createApiKey(s.db.db, { name: 'rest-scripthash' });
    const rest = async <T>(url: string): Promise<T> => {
      const r = await api.inject({ method: 'GET', url, headers: { apiKey } });
      expect(r.statusCode, `${url}: ${r.body}`).toBe(200);
      return r.json() as T;
    };
    type Stats = { funded_txo_count: number; funded_txo_sum: number; spent_txo_count: number; spent_txo_sum: number; tx_count: number };
    const st = (funded: number, fundedSum: number, spent: number, spentSum: number, txs: number): Stats => ({
      funded_txo_count: funded,
      funded_txo_sum: fundedSum,
      spent_txo_count: spent,
      spent_txo_sum: spentSum,
      tx_count: txs,
    });
    const none = st(0, 0, 0, 0, 0);
    const expectRest = async (expected: Record<(typeof kinds)[number], { chain: Stats; mempool: Stats }>) => {
      for (const k of kinds) {
        const core = await coreUtxos(scripts[k]);
        const e = expected[k];
        expect(e.chain.funded_txo_sum - e.chain.spent_txo_sum, k).toBe(core.confirmed);
        const history = await c.request<{ tx_hash: string; height: number }[]>('blockchain.scripthash.get_history', [sh[k]]);
        const sha = createHash('sha256').update(Buffer.from(scripts[k], 'hex')).digest('hex');
        for (const q of ['', `?script=${scripts[k]}`]) {
          const base = `/v1/scripthash/${sha}`;
          expect(await rest(`${base}/stats${q}`), k + q).toEqual({ scripthash: sha, chain_stats: e.chain, mempool_stats: e.mempool });
          expect(await rest(`${base}/balance${q}`), k + q).toEqual({
            balance: core.confirmed + e.mempool.funded_txo_sum - e.mempool.spent_txo_sum,
            confirmed: core.confirmed,
            unconfirmed: e.mempool.funded_txo_sum - e.mempool.spent_txo_sum,
          });
          const unspent = await rest<{ transaction_hash: string; index: number; value: string; script: string; confirmations: number }[]>(
            `${base}/unspentoutputs${q}`,
          );
          expect(
            unspent
              .filter((u) => u.confirmations > 0)
              .map((u) => ({ tx_hash: u.transaction_hash, tx_pos: u.index, value: Number(u.value) })),
            k + q,
          ).toEqual(
            core.unspent
              .filter((u) => !mempoolSpent.has(`${u.tx_hash}:${u.tx_pos}`))
              .map((u) => ({ tx_hash: u.tx_hash, tx_pos: u.tx_pos, value: u.value })),
          );
          for (const u of unspent) expect(u.script, k + q).toBe(scripts[k]);
          expect(await rest(`${base}/history${q}`), k + q).toEqual([
            ...history
              .filter((x) => x.height <= 0)
              .map((x) => x.tx_hash)
              .sort(),
            ...history
              .filter((x) => x.height > 0)
              .map((x) => x.tx_hash)
              .reverse(),
          ]);
        }
      }
    };
    const v = { pk: 30_000_000, ms: 10_000_000, pkh: 20_000_000 };
    /** Every script paid once (`paid`: confirmed or in the mempool) and the P2PK and multisig outputs spent (`spent`: not, in the mempool, confirmed). */
    const stage = (paid: 'mempool' | 'chain', spent: 'no' | 'mempool' | 'chain') => {
      const out = {} as Record<(typeof kinds)[number], { chain: Stats; mempool: Stats }>;
      for (const k of kinds) {
        const spends = k !== 'pkh' ? spent : 'no';
        out[k] = {
          chain: paid === 'mempool' ? none : spends === 'chain' ? st(1, v[k], 1, v[k], 2) : st(1, v[k], 0, 0, 1),
          mempool: paid === 'mempool' ? st(1, v[k], 0, 0, 1) : spends === 'mempool' ? st(0, 0, 1, v[k], 1) : none,
        };
      }
      return out;
    };
    await expectRest({ pk: { chain: none, mempool: none }, ms: { chain: none, mempool: none }, pkh: { chain: none, mempool: none } });

    // Subscribed before any payment: null, then notified of the first one (the alias appears with it).
    const n = await s.connect();
    await n.request('server.version', ['aliases', '1.4']);
    for (const k of kinds) expect(await n.request('blockchain.scripthash.subscribe', [sh[k]]), k).toBeNull();
    const lastStatus = (k: (typeof kinds)[number]) =>
      [...n.notifications].reverse().find((x) => x.method === 'blockchain.scripthash.subscribe' && x.params[0] === sh[k])?.params[1];

    // Core funds and signs one transaction paying the three scripts (a raw transaction without
    // inputs takes outputs as scripts; fundrawtransaction adds inputs and change).
    const outs: [string, number][] = [
      [scripts.pk, v.pk],
      [scripts.ms, v.ms],
      [scripts.pkh, v.pkh],
    ];
    const outBytes = outs.map(([script, value]) => {
      const v = Buffer.alloc(8);
      v.writeBigUInt64LE(BigInt(value));
      const sc = Buffer.from(script, 'hex');
      return Buffer.concat([v, Buffer.from([sc.length]), sc]);
    });
    const unfunded = Buffer.concat([Buffer.from('02000000', 'hex'), Buffer.from([0, outs.length]), ...outBytes, Buffer.alloc(4)]).toString(
      'hex',
    );
    const funded = await call<{ hex: string }>('fundrawtransaction', [unfunded, { changePosition: 3 }, false], W);
    const signed = await call<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', [funded.hex], W);
    expect(signed.complete).toBe(true);
    const txP = await call<string>('sendrawtransaction', [signed.hex]);
    await s.synced();

    // In the mempool: each script hash has the payment, its output unconfirmed.
    const entryP = await call<{ fees: { base: number }; ancestorcount: number }>('getmempoolentry', [txP]);
    const mhP = entryP.ancestorcount === 1 ? 0 : -1;
    const feeP = sat(entryP.fees.base);
    for (const [i, k] of kinds.entries()) {
      expect(await c.request('blockchain.scripthash.get_history', [sh[k]]), k).toEqual([{ tx_hash: txP, height: mhP, fee: feeP }]);
      expect(await c.request('blockchain.scripthash.get_mempool', [sh[k]]), k).toEqual([{ tx_hash: txP, height: mhP, fee: feeP }]);
      expect(await c.request('blockchain.scripthash.get_balance', [sh[k]]), k).toEqual({ confirmed: 0, unconfirmed: outs[i]![1] });
      expect(await c.request('blockchain.scripthash.listunspent', [sh[k]]), k).toEqual([
        { tx_hash: txP, tx_pos: i, height: 0, value: outs[i]![1] },
      ]);
      await waitFor(
        `the ${k} status of the payment in the mempool`,
        () => lastStatus(k) === expectedStatus([{ tx_hash: txP, height: mhP }]),
        30_000,
      );
    }
    await expectRest(stage('mempool', 'no'));

    // Mined: the confirmed outputs are Core's UTXO set for each script.
    await s.mine(1);
    const hP = (await s.node.tip()).height;
    for (const [i, k] of kinds.entries()) {
      expect(await c.request('blockchain.scripthash.get_history', [sh[k]]), k).toEqual([{ tx_hash: txP, height: hP }]);
      expect(await c.request('blockchain.scripthash.listunspent', [sh[k]]), k).toEqual([
        { tx_hash: txP, tx_pos: i, height: hP, value: outs[i]![1] },
      ]);
      await waitFor(
        `the ${k} status of the confirmed payment`,
        () => lastStatus(k) === expectedStatus([{ tx_hash: txP, height: hP }]),
        30_000,
      );
    }
    await expectCoreUtxos();
    await expectRest(stage('chain', 'no'));

    // Core signs a spend of the P2PK and the bare multisig outputs with the key (not the P2PKH one).
    const dest = await call<string>('getnewaddress', [], W);
    const unsigned = await call<string>('createrawtransaction', [
      [
        { txid: txP, vout: 0 },
        { txid: txP, vout: 1 },
      ],
      [{ [dest]: 0.3999 }],
    ]);
    const spend = await call<{ hex: string; complete: boolean }>('signrawtransactionwithkey', [
      unsigned,
      [encodeWif(key, 'regtest')],
      [
        { txid: txP, vout: 0, scriptPubKey: scripts.pk, amount: 0.3 },
        { txid: txP, vout: 1, scriptPubKey: scripts.ms, amount: 0.1 },
      ],
    ]);
    expect(spend.complete).toBe(true);
    const txS = await call<string>('sendrawtransaction', [spend.hex]);
    await s.synced();
    mempoolSpent = new Set([`${txP}:0`, `${txP}:1`]);
    const entryS = await call<{ fees: { base: number } }>('getmempoolentry', [txS]);
    const inMempool = { tx_hash: txS, height: 0, fee: sat(entryS.fees.base) };
    for (const [i, k] of (['pk', 'ms'] as const).entries()) {
      expect(await c.request('blockchain.scripthash.get_history', [sh[k]]), k).toEqual([{ tx_hash: txP, height: hP }, inMempool]);
      expect(await c.request('blockchain.scripthash.get_balance', [sh[k]]), k).toEqual({
        confirmed: outs[i]![1],
        unconfirmed: -outs[i]![1],
      });
      expect(await c.request('blockchain.scripthash.listunspent', [sh[k]]), k).toEqual([]);
      await waitFor(
        `the ${k} status of the spend in the mempool`,
        () => lastStatus(k) === expectedStatus([{ tx_hash: txP, height: hP }, inMempool]),
        30_000,
      );
    }
    await expectCoreUtxos();
    await expectRest(stage('chain', 'mempool'));

    // The spend mined: nothing left of the P2PK and multisig outputs, as in Core's UTXO set.
    const [spendBlock] = await s.mine(1);
    const hS = (await s.node.tip()).height;
    mempoolSpent = new Set();
    for (const k of ['pk', 'ms'] as const) {
      expect(await c.request('blockchain.scripthash.get_history', [sh[k]]), k).toEqual([
        { tx_hash: txP, height: hP },
        { tx_hash: txS, height: hS },
      ]);
      expect(await c.request('blockchain.scripthash.get_balance', [sh[k]]), k).toEqual({ confirmed: 0, unconfirmed: 0 });
    }
    await expectCoreUtxos();
    // The P2PKH script of the same key: its own output only, never the spend of the others.
    expect(await c.request('blockchain.scripthash.get_history', [sh.pkh])).toEqual([{ tx_hash: txP, height: hP }]);
    expect(await c.request('blockchain.scripthash.get_balance', [sh.pkh])).toEqual({ confirmed: 20_000_000, unconfirmed: 0 });
    await expectRest(stage('chain', 'chain'));

    // A reorg takes the spend's block away: the spend is back in Core's mempool, the outputs in its UTXO set.
    await call('invalidateblock', [spendBlock]);
    await s.synced();
    expect(await call<string[]>('getrawmempool')).toContain(txS);
    mempoolSpent = new Set([`${txP}:0`, `${txP}:1`]);
    for (const k of ['pk', 'ms'] as const) {
      expect(await c.request('blockchain.scripthash.get_history', [sh[k]]), k).toMatchObject([
        { tx_hash: txP, height: hP },
        { tx_hash: txS, height: 0 },
      ]);
      await waitFor(
        `the ${k} status after the reorg`,
        () =>
          lastStatus(k) ===
          expectedStatus([
            { tx_hash: txP, height: hP },
            { tx_hash: txS, height: 0 },
          ]),
        30_000,
      );
    }
    await expectCoreUtxos();
    await expectRest(stage('chain', 'mempool'));
    await call('reconsiderblock', [spendBlock]);
    await s.synced();
    mempoolSpent = new Set();
    for (const k of ['pk', 'ms'] as const) {
      await waitFor(
        `the ${k} status after the block is back`,
        () =>
          lastStatus(k) ===
          expectedStatus([
            { tx_hash: txP, height: hP },
            { tx_hash: txS, height: hS },
          ]),
        30_000,
      );
    }
    await expectCoreUtxos();
    await expectRest(stage('chain', 'chain'));
    await api.close();
  });

  it('batches are answered as one array in request order', async () => {
    const before = c.loose.length;
    c.raw(
      `${JSON.stringify([
        { jsonrpc: '2.0', id: 'a', method: 'server.ping', params: [] },
        { jsonrpc: '2.0', id: 'b', method: 'blockchain.block.header', params: [0] },
        { jsonrpc: '2.0', id: 'c', method: 'no.such.method', params: [] },
      ])}\n`,
    );
    await waitFor('the batch reply', () => c.loose.length === before + 1, 10_000);
    const replies = c.loose[before] as { id: string; result?: unknown; error?: { code: number } }[];
    expect(replies.map((r) => r.id)).toEqual(['a', 'b', 'c']);
    expect(replies[1]!.result).toBe(await call('getblockheader', [await call('getblockhash', [0]), false]));
    expect(replies[2]!.error!.code).toBe(-32601);
    c.raw('{not json\n');
    await waitFor('the parse-error reply', () => c.loose.length === before + 2, 10_000);
    expect((c.loose[before + 1] as { error: { code: number } }).error.code).toBe(-32700);
  });

  it('over TLS too, with the self-signed certificate generated under the data directory', async () => {
    const t = await s.connect({ tls: true });
    expect(await t.request('server.version', ['tls', '1.4'])).toEqual(['blockwire/0.1', '1.4']);
    expect(await t.request('blockchain.block.header', [0])).toBe(await call('getblockheader', [await call('getblockhash', [0]), false]));
    expect(s.electrum.tlsCertFile).toContain(s.config.dataDir);
  });

  it('notifications: a header per new tip and the status of a changed script hash, after a payment, a block, a reorg and a replacement', async () => {
    const n = await s.connect();
    await n.request('server.version', ['notify', '1.4']);
    const a = addr['p2sh-segwit']!;
    expect(await n.request('blockchain.scripthash.subscribe', [a.sh])).toBeNull();
    await n.request('blockchain.headers.subscribe');
    const statusOf = async () =>
      expectedStatus(await n.request<{ tx_hash: string; height: number }[]>('blockchain.scripthash.get_history', [a.sh]));
    const lastStatus = () =>
      [...n.notifications].reverse().find((x) => x.method === 'blockchain.scripthash.subscribe' && x.params[0] === a.sh)?.params[1];
    const lastHeader = () =>
      [...n.notifications].reverse().find((x) => x.method === 'blockchain.headers.subscribe')?.params[0] as
        { hex: string; height: number } | undefined;

    // a payment enters the mempool
    const pay = await call<string>('sendtoaddress', [a.address, 0.3, '', '', false, true], W);
    await waitFor('the status of the payment in the mempool', () => lastStatus() === expectedStatus([{ tx_hash: pay, height: 0 }]), 30_000);
    // it is mined: a header notification with Core's header, and the new status
    const [hash] = await s.mine(1);
    const height = (await s.node.tip()).height;
    await waitFor('the header notification of the new block', () => lastHeader()?.height === height, 30_000);
    expect(lastHeader()!.hex).toBe(await call('getblockheader', [hash, false]));
    await waitFor('the status of the confirmed payment', () => lastStatus() === expectedStatus([{ tx_hash: pay, height }]), 30_000);
    expect(await statusOf()).toBe(lastStatus());

    // reorg: the block is invalidated, the payment returns to the mempool, the tip goes back
    await call('invalidateblock', [hash]);
    await s.synced();
    await waitFor('the header notification of the tip after the reorg', () => lastHeader()?.height === height - 1, 30_000);
    expect(lastHeader()!.hex).toBe(await call('getblockheader', [await call('getblockhash', [height - 1]), false]));
    await waitFor('the status of the payment in the mempool', () => lastStatus() === expectedStatus([{ tx_hash: pay, height: 0 }]), 30_000);

    // replacement: the payment is bumped (RBF); the status names the replacement only
    const bumped = (await call<{ txid: string }>('bumpfee', [pay], W)).txid;
    await s.synced();
    await waitFor('the status naming the replacement', () => lastStatus() === expectedStatus([{ tx_hash: bumped, height: 0 }]), 30_000);
    expect(await n.request('blockchain.scripthash.get_history', [a.sh])).toMatchObject([{ tx_hash: bumped, height: 0 }]);

    // a competing chain confirms the replacement
    const [h2] = await s.mine(2);
    await waitFor('the header notification of the competing chain', () => lastHeader()?.height === height + 1, 30_000);
    await waitFor('the status of the confirmed replacement', () => lastStatus() === expectedStatus([{ tx_hash: bumped, height }]), 30_000);
    expect(h2).toBeDefined();
  });

  it('mempool notifications come from the outbox’s mempool events: with the fingerprint safety net an hour apart, a payment and its replacement still notify (no fingerprint comparison in between)', async () => {
    const e = await s.electrumOn({ electrumTcpPort: 0, electrumMempoolPollMs: 3_600_000 });
    const n = await s.connect({ port: e.tcpPort! });
    await n.request('server.version', ['events', '1.4']);
    const address = await call<string>('getnewaddress', ['', 'bech32'], W);
    const info = await call<{ scriptPubKey: string }>('getaddressinfo', [address], W);
    const sh = electrumScriptHash(info.scriptPubKey);
    expect(await n.request('blockchain.scripthash.subscribe', [sh])).toBeNull();
    // The first turn after the subscription compares its fingerprint once; none after that while no block comes.
    await waitFor('the first fingerprint comparison', () => e.stats().fingerprintScans === 1, 30_000);
    const lastStatus = () =>
      [...n.notifications].reverse().find((x) => x.method === 'blockchain.scripthash.subscribe' && x.params[0] === sh)?.params[1];

    const pay = await call<string>('sendtoaddress', [address, 0.2, '', '', false, true], W);
    await waitFor('the status of the payment in the mempool', () => lastStatus() === expectedStatus([{ tx_hash: pay, height: 0 }]), 30_000);
    const bumped = (await call<{ txid: string }>('bumpfee', [pay], W)).txid;
    await waitFor('the status naming the replacement', () => lastStatus() === expectedStatus([{ tx_hash: bumped, height: 0 }]), 30_000);
    expect(n.notifications.filter((x) => x.method === 'blockchain.scripthash.subscribe').map((x) => x.params[1])).toEqual([
      expectedStatus([{ tx_hash: pay, height: 0 }]),
      expectedStatus([{ tx_hash: bumped, height: 0 }]),
    ]);
    expect(e.stats().fingerprintScans).toBe(1);
    // What the server followed: the outbox rows of the payment entering, leaving for its replacement, and the replacement entering.
    const rows = await s.db.db
      .selectFrom('outbox')
      .select(['type', 'txid', 'replaced_by'])
      .where('type', 'in', ['mempool.added', 'mempool.removed'])
      .where(
        'txid',
        'in',
        [hexToHash(pay), hexToHash(bumped)].map((h) => Buffer.from(h)),
      )
      .orderBy('seq')
      .execute();
    expect(rows.map((r) => [r.type, hashToHex(r.txid!), r.replaced_by ? hashToHex(r.replaced_by) : null])).toEqual([
      ['mempool.added', pay, null],
      ['mempool.removed', pay, bumped],
      ['mempool.added', bumped, null],
    ]);
    // The block that confirms it comes as a chain event (and compares every fingerprint once).
    const [hash] = await s.mine(1);
    const height = (await s.node.tip()).height;
    await waitFor('the status of the confirmed replacement', () => lastStatus() === expectedStatus([{ tx_hash: bumped, height }]), 30_000);
    expect(hash).toBeDefined();
  });

  it('a client that reconnects resyncs by status: the new status differs from the one it kept and matches the history', async () => {
    const a = addr.bech32m!;
    const first = await s.connect();
    const kept = await first.request<string | null>('blockchain.scripthash.subscribe', [a.sh]);
    first.close();
    const pay = await call<string>('sendtoaddress', [a.address, 0.1], W);
    await s.mine(1);
    const again = await s.connect();
    const now = await again.request<string | null>('blockchain.scripthash.subscribe', [a.sh]);
    expect(now).not.toBe(kept);
    const history = await again.request<{ tx_hash: string; height: number }[]>('blockchain.scripthash.get_history', [a.sh]);
    expect(history.map((h) => h.tx_hash)).toContain(pay);
    expect(now).toBe(expectedStatus(history));
  });

  it('limits: subscriptions per connection, history too large (error 1, as electrs), request size, rate, idle timeout', async () => {
    const a = addr.bech32!;
    const subs = await s.electrumOn({ electrumMaxSubscriptions: 2 });
    const cs = await s.connect({ port: subs.tcpPort! });
    await cs.request('blockchain.scripthash.subscribe', [addr.legacy!.sh]);
    await cs.request('blockchain.scripthash.subscribe', [addr['p2sh-segwit']!.sh]);
    await expect(cs.request('blockchain.scripthash.subscribe', [a.sh])).rejects.toMatchObject({
      code: 1,
      rpcMessage: 'too many subscriptions: this server allows 2 per connection',
    });
    expect(await cs.request('blockchain.scripthash.unsubscribe', [addr.legacy!.sh])).toBe(true);
    expect(await cs.request('blockchain.scripthash.subscribe', [a.sh])).toBe(
      expectedStatus(await cs.request('blockchain.scripthash.get_history', [a.sh])),
    );

    const small = await s.electrumOn({ electrumMaxHistory: 1 });
    const ch = await s.connect({ port: small.tcpPort! });
    for (const m of [
      'blockchain.scripthash.get_history',
      'blockchain.scripthash.get_mempool',
      'blockchain.scripthash.subscribe',
      'blockchain.scripthash.listunspent',
    ]) {
      await expect(ch.request(m, [a.sh]), m).rejects.toMatchObject({ code: 1, rpcMessage: expect.stringMatching(/^history too large/) });
    }
    expect(await ch.request('blockchain.scripthash.get_history', [addr.legacy!.sh])).toEqual([{ tx_hash: tx1, height: h1 }]);

    const sized = await s.electrumOn({ electrumMaxRequestBytes: 1024 });
    const cz = await s.connect({ port: sized.tcpPort! });
    expect(await cz.request('server.ping')).toBeNull();
    cz.raw(`${JSON.stringify({ id: 9, method: 'server.ping', params: ['x'.repeat(2000)] })}\n`);
    await cz.closed;
    expect(cz.loose).toContainEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'request larger than 1024 bytes' } });

    const rated = await s.electrumOn({ electrumRateLimit: 5, electrumRateWindowMs: 600_000 });
    const cr = await s.connect({ port: rated.tcpPort! });
    for (let i = 0; i < 5; i++) expect(await cr.request('server.ping')).toBeNull();
    await expect(cr.request('server.ping')).rejects.toMatchObject({
      code: -32000,
      rpcMessage: expect.stringMatching(/^rate limit exceeded: 5 requests per 600 s/),
    });

    const idle = await s.electrumOn({ electrumIdleTimeoutMs: 1000 });
    const ci = await s.connect({ port: idle.tcpPort! });
    const opened = Date.now();
    await ci.closed;
    expect(Date.now() - opened).toBeGreaterThanOrEqual(1000);
  });

  it('the optional API-key gate: only server.version/ping/features/banner before blockwire.authenticate with a valid key', async () => {
    const gated = await s.electrumOn({ electrumRequireApiKey: true });
    const g = await s.connect({ port: gated.tcpPort! });
    expect(await g.request('server.version', ['gate', '1.4'])).toEqual(['blockwire/0.1', '1.4']);
    await expect(g.request('blockchain.scripthash.get_balance', [addr.legacy!.sh])).rejects.toMatchObject({ code: -32001 });
    await expect(g.request('blockchain.headers.subscribe')).rejects.toMatchObject({ code: -32001 });
    await expect(g.request('blockwire.authenticate', ['bw_not_a_key'])).rejects.toMatchObject({
      code: -32001,
      rpcMessage: 'invalid API key',
    });
    const { key } = await createApiKey(s.db.db, { name: 'electrum-gate' });
    expect(await g.request('blockwire.authenticate', [key])).toBe(true);
    expect((await g.request<{ confirmed: number }>('blockchain.scripthash.get_balance', [addr.legacy!.sh])).confirmed).toBe(sat(1.0));
  });

  it('tx1 stays where Core put it (sanity of the fixture)', async () => {
    expect(await c.request('blockchain.scripthash.get_history', [addr.legacy!.sh])).toEqual([{ tx_hash: tx1, height: h1 }]);
  });
});
