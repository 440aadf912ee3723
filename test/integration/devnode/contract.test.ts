/**
 * The node contract: the recording of a real Bitcoin Core 30.0 regtest node
 * (../shared/fixtures/bitcoind) is played again step by step, once on a real bitcoind 30.0 and
 * once on the devnode (Core-wallet actions through Core's own wallet, or the devnode's built-in
 * one; everything else over RPC/REST), and every recorded node call is compared: HTTP status,
 * error code and message, result key order and types, and values where the chain is the same
 * (genesis, errors, mempool sequence numbers, chain tips, fee estimate). The ZMQ stream of the
 * whole session must have the recorded pattern: the same topics in the same order, the same
 * C/D/A/R labels and mempool sequences, 3 frames. Both nodes must pass: what the real node
 * passes shows the assertion states what Core does; what the devnode passes shows it does the same.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { encodeTx } from '../../../src/bitcoin/encode.js';
import { bytesToHex, hashToHex, hexToBytes, hexToHash } from '../../../src/bitcoin/hash.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { regtestScript } from '../../../devnode/address.js';
import type { Devnode } from '../../../devnode/index.js';
import { decodeSpentTxOuts } from '../../../indexer/node-rest.js';
import { fixturesPresent } from '../../support/fixtures.js';
import { describeNodes, type TestNode } from '../../support/nodes.js';
import { loadRecording, type RecordedRpc } from '../../unit/devnode/recording.js';
import { collectZmq, rawRpc, restGet, rpcResult, zmqPattern, type RawRpcReply } from './clients.js';

/** Recorded calls to Core's wallet: each node's wallet actor plays these parts, they are not compared. */
const WALLET_METHODS = new Set([
  'createwallet',
  'getnewaddress',
  'getaddressinfo',
  'sendtoaddress',
  'fundrawtransaction',
  'signrawtransactionwithwallet',
  'createmultisig',
  'sendmany',
  'bumpfee',
  'listunspent',
  'createrawtransaction',
  'gettransaction',
]);

/**
 * Where `actual` differs in shape from `recorded` (null when it does not): the same keys in the
 * same order and the same JSON types, recursively. Arrays of equal length match element for
 * element in any order (a block's transactions and a transaction's outputs come in the order of
 * fee rates and a random change position, which differ from chain to chain); otherwise both are
 * empty or both not, and their first elements match.
 */
function shapeDiff(actual: unknown, recorded: unknown, path = '$'): string | null {
  if (recorded === null || actual === null)
    return actual === recorded ? null : `${path}: ${JSON.stringify(actual)} where Core had ${JSON.stringify(recorded)}`;
  if (typeof actual !== typeof recorded) return `${path}: ${typeof actual} where Core had ${typeof recorded}`;
  if (Array.isArray(recorded)) {
    if (!Array.isArray(actual)) return `${path}: not an array`;
    if (actual.length !== recorded.length) {
      if (actual.length > 0 !== recorded.length > 0) return `${path}: ${actual.length} elements where Core had ${recorded.length}`;
      return actual.length ? shapeDiff(actual[0], recorded[0], `${path}[0]`) : null;
    }
    const unused = new Set(recorded.keys());
    for (let i = 0; i < actual.length; i++) {
      const match = [...unused].find((j) => shapeDiff(actual[i], recorded[j], `${path}[${i}]`) === null);
      if (match === undefined)
        return (
          shapeDiff(actual[i], recorded[unused.has(i) ? i : [...unused][0]!], `${path}[${i}]`) ??
          `${path}[${i}]: matches no element of Core's left`
        );
      unused.delete(match);
    }
    return null;
  }
  if (typeof recorded === 'object') {
    const [ka, kr] = [Object.keys(actual as object), Object.keys(recorded as object)];
    if (ka.join() !== kr.join()) return `${path}: keys ${JSON.stringify(ka)} where Core had ${JSON.stringify(kr)}`;
    for (const k of kr) {
      const d = shapeDiff((actual as Record<string, unknown>)[k], (recorded as Record<string, unknown>)[k], `${path}.${k}`);
      if (d) return d;
    }
  }
  return null;
}

function sameShape(actual: unknown, recorded: unknown, path = '$'): void {
  expect(shapeDiff(actual, recorded, path), path).toBeNull();
}

/** For maps keyed by txid: same number of entries, the values matching the recorded ones' shapes in any order. */
function sameMapShape(actual: unknown, recorded: unknown, path: string): void {
  sameShape(Object.values(actual as object), Object.values(recorded as object), path);
}

const EXT = {
  legacy: 'mqj6Syx4Fy9Z61KmMWcEfcr8g7LjcwT29s',
  p2shSegwit: '2N4VL7YQzJHwMipz3yjAFy2FYcbmuVRMRU9',
  bech32: 'bcrt1qn5fgugamhunv64rhjllz90dgqulruh8dk32q08',
  bech32m: 'bcrt1ptl4lwxqswkvht82c0wlkfd45v8k849263k8mnc2wd23n0rttx8tqfs3q6q',
  p2shMulti: '2NBaG4feh6qf8JQDmtjsJcn7rVy9BJHZgop',
  p2wshMulti: 'bcrt1qaaxwj2kdpv8cz8gngswxpcume7q3n9vqy0rg0rhdh5092madpm8qps8x3y',
  p2pk: '2102e2df18d80052665b8251269a0fa0e0dd5655ce750e9e31995e25878cbc7b72c7ac',
  bareMulti:
    '512102e2df18d80052665b8251269a0fa0e0dd5655ce750e9e31995e25878cbc7b72c72103415d2f0d221833c2c6ffa70bcc57cac3b8b30aa60578fc7536fe69262c7be92452ae',
};

type MiningType = 'p2wpkh' | 'p2pkh' | 'p2sh-p2wpkh';

/**
 * The recorded Core-wallet actions (which the contract does not compare) as each node makes
 * them: bitcoind with its own descriptor wallet `w`, calling what the recording called; the
 * devnode with its built-in wallet, choosing the coins Core's wallet chose.
 */
type WalletActor = {
  setup(): Promise<void>;
  address(type: MiningType): string;
  /** The four chained payments (legacy, p2sh-segwit, bech32, bech32m): their txids. */
  payments(): Promise<string[]>;
  /** A signed, unbroadcast transaction with two OP_RETURN outputs, spending the last payment's change. */
  dataTx(payloads: string[]): Promise<string>;
  /** One transaction paying the P2SH and the P2WSH multisig addresses. */
  multisig(): Promise<string>;
  /** A signed, unbroadcast transaction paying a P2PK and a bare multisig output. */
  pkTx(): Promise<string>;
  send(to: string, sats: bigint): Promise<string>;
  /** A payment whose locktime is the tip height (final in the next block only). */
  sendLocked(to: string, sats: bigint): Promise<string>;
  bump(txid: string): Promise<string>;
  /** A signed transaction paying 100 sat (dust) from the wallet's output of `txid`. */
  dustTx(txid: string): Promise<string>;
  /** A signed transaction spending the first input of mempool transaction `txid` again, paying almost all to fee. */
  conflictTx(txid: string, to: string): Promise<string>;
  /** Resolves once every ZMQ message of what happened so far is on the socket. */
  flushZmq(): Promise<void>;
};

const btc = (sats: bigint) => Number(sats) / 1e8;

/** A transaction without inputs paying `outputs`, for fundrawtransaction (as the recording built them). */
const unfunded = (outputs: { value: bigint; script: Uint8Array }[]) =>
  bytesToHex(encodeTx({ version: 2, inputs: [], outputs, locktime: 0 }));

function coreActor(node: TestNode): WalletActor {
  const w = <T>(method: string, params: unknown[] = []) => node.call<T>(method, params, 'w');
  const addr = {} as Record<MiningType, string>;
  const fundAndSign = async (raw: string, options: Record<string, unknown> = {}) => {
    const funded = await w<{ hex: string }>('fundrawtransaction', [raw, options]);
    return (await w<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', [funded.hex])).hex;
  };
  const signed = async (raw: string) => (await w<{ hex: string }>('signrawtransactionwithwallet', [raw])).hex;
  return {
    setup: async () => {
      await node.call('createwallet', ['w']);
      addr.p2pkh = await w<string>('getnewaddress', ['', 'legacy']);
      addr['p2sh-p2wpkh'] = await w<string>('getnewaddress', ['', 'p2sh-segwit']);
      addr.p2wpkh = await w<string>('getnewaddress', ['', 'bech32']);
    },
    address: (type) => addr[type],
    payments: async () => {
      const out: string[] = [];
      for (const [to, sats] of [
        [EXT.legacy, 50_000_000n],
        [EXT.p2shSegwit, 60_000_000n],
        [EXT.bech32, 70_000_000n],
        [EXT.bech32m, 80_000_000n],
      ] as const)
        out.push(await w<string>('sendtoaddress', [to, btc(sats)]));
      return out;
    },
    // createrawtransaction takes one `data` output at most: the recording funded a hand-made transaction.
    dataTx: async (payloads) =>
      fundAndSign(
        unfunded(payloads.map((p) => ({ value: 0n, script: hexToBytes(`6a${(p.length / 2).toString(16).padStart(2, '0')}${p}`) }))),
      ),
    multisig: () => w<string>('sendmany', ['', { [EXT.p2shMulti]: 0.2, [EXT.p2wshMulti]: 0.3 }]),
    pkTx: () =>
      fundAndSign(
        unfunded([
          { value: 100_000n, script: hexToBytes(EXT.p2pk) },
          { value: 100_000n, script: hexToBytes(EXT.bareMulti) },
        ]),
      ),
    send: (to, sats) => w<string>('sendtoaddress', [to, btc(sats)]),
    sendLocked: async (to, sats) => {
      // sendtoaddress sets the tip height as locktime, but one time in ten an earlier one (fee
      // sniping cover): set it here, so the reorg that follows makes it non-final for sure.
      const height = await node.call<number>('getblockcount');
      const hex = await fundAndSign(await node.call<string>('createrawtransaction', [[], [{ [to]: btc(sats) }], height, true]));
      return node.call<string>('sendrawtransaction', [hex]);
    },
    bump: async (txid) => (await w<{ txid: string }>('bumpfee', [txid])).txid,
    dustTx: async (txid) => {
      const coins = await w<{ txid: string; vout: number }[]>('listunspent', [0]);
      const coin = coins.find((c) => c.txid === txid);
      expect(coin, `a wallet output of ${txid}`).toBeDefined();
      return signed(await node.call<string>('createrawtransaction', [[{ txid, vout: coin!.vout }], [{ [EXT.bech32]: btc(100n) }]]));
    },
    conflictTx: async (txid, to) => {
      const tx = await node.call<{ vin: { txid: string; vout: number }[] }>('getrawtransaction', [txid, true]);
      const input = tx.vin[0]!;
      return signed(
        await node.call<string>('createrawtransaction', [
          [{ txid: input.txid, vout: input.vout, sequence: 0xfffffffd }],
          [{ [to]: btc(10_000n) }],
        ]),
      );
    },
    // bitcoind publishes as it goes; the collector's settle() waits for the quiet that follows.
    flushZmq: async () => undefined,
  };
}

function devnodeActor(node: Devnode): WalletActor {
  const w = node.wallet;
  /** `txid:vout` of the wallet's change output in a transaction. */
  const changeOf = (txid: string): string => {
    const n = node.node;
    const t = n.mempool.get(txid)?.tx ?? n.chain.get(n.chain.txIndex.get(txid)!)!.block.txs.find((x) => hashToHex(x.txid) === txid)!;
    const vout = t.outputs.findIndex((o) => w.owns(o.script));
    expect(vout).toBeGreaterThanOrEqual(0);
    return `${txid}:${vout}`;
  };
  // The chained payments spend each other's change, as Core's wallet chained them.
  let last = '';
  const chain = async (txid: Promise<string>) => (last = await txid);
  return {
    setup: async () => undefined,
    address: (type) => w.address(type),
    payments: async () => [
      await chain(w.send(EXT.legacy, 50_000_000n)),
      await chain(w.send(EXT.p2shSegwit, 60_000_000n, { from: [changeOf(last)] })),
      await chain(w.send(EXT.bech32, 70_000_000n, { from: [changeOf(last)] })),
      await chain(w.send(EXT.bech32m, 80_000_000n, { from: [changeOf(last)] })),
    ],
    dataTx: async (payloads) => {
      const hex = w.createTx(null, 0n, { data: payloads, from: [changeOf(last)] });
      last = hashToHex(decodeTx(hexToBytes(hex)).txid);
      return hex;
    },
    multisig: () =>
      chain(w.send(EXT.p2wshMulti, 30_000_000n, { outputs: [{ to: EXT.p2shMulti, sats: 20_000_000n }], from: [changeOf(last)] })),
    pkTx: async () =>
      w.createTx({ script: EXT.p2pk }, 100_000n, {
        outputs: [{ to: { script: EXT.bareMulti }, sats: 100_000n }],
        from: [changeOf(last)],
        changePosition: 1,
      }),
    send: (to, sats) => w.send(to, sats),
    sendLocked: (to, sats) => w.send(to, sats),
    bump: (txid) => w.bumpFee(txid),
    dustTx: async (txid) => w.createTx(EXT.bech32, 100n, { from: [changeOf(txid)] }),
    conflictTx: async (txid, to) => {
      const input = decodeTx(hexToBytes(await rpcResult<string>(node, 'getrawtransaction', [txid, 0]))).inputs[0]!;
      return w.createTx(to, 10_000n, { from: [`${hashToHex(input.prevTxid)}:${input.vout}`], feeRate: 20_000 });
    },
    flushZmq: () => node.faults.zmq.flush(),
  };
}

/** Both nodes run the recorded session only where the recording is; under CI its absence fails. */
function describeContract(name: string, fn: Parameters<typeof describeNodes>[1]): void {
  if (!fixturesPresent && !process.env.CI) {
    process.stderr.write(`notice: skipping '${name}': shared fixtures not found\n`);
    return;
  }
  describeNodes(name, fn);
}

describeContract('node contract: the recorded Bitcoin Core 30.0 session', (entry) => {
  let rec: Awaited<ReturnType<typeof loadRecording>>;
  let node: TestNode;
  let wallet: WalletActor;
  let zmq: Awaited<ReturnType<typeof collectZmq>>;
  const compared = new Map<number, 'exact' | 'shape'>();
  /** Recorded REST paths compared so far (the last test checks none was left out). */
  const restCompared = new Set<string>();
  const tx = {} as Record<
    'p1' | 'p2' | 'p3' | 'p4' | 'data' | 'multi' | 'pk' | 'rbf' | 'rbf2' | 'r1' | 'r1b' | 'r3' | 'late' | 'last',
    string
  >;
  const blk = {} as Record<'data' | 'stale', string>;

  /** Sends the devnode the equivalent of recorded call `id` and compares the answer. */
  async function replay(id: number, params: unknown[] | null, mode: 'exact' | 'shape' | 'map'): Promise<RawRpcReply> {
    const r: RecordedRpc = rec.call(id);
    const got = await rawRpc(node, r.request.method, params ?? r.request.params, id);
    const what = `call ${id} ${r.request.method}`;
    expect(got.status, `${what}: HTTP status`).toBe(r.http_status);
    if (mode === 'exact') expect(got.body, what).toEqual(r.response);
    else {
      expect(got.body.error, what).toEqual(r.response.error);
      expect(Object.keys(got.body), what).toEqual(Object.keys(r.response));
      if (mode === 'map') sameMapShape(got.body.result, r.response.result, what);
      else sameShape(got.body.result, r.response.result, what);
    }
    compared.set(id, mode === 'exact' ? 'exact' : 'shape');
    return got;
  }
  const resultOf = <T>(r: RawRpcReply) => r.body.result as T;
  const recorded = <T>(id: number) => rec.call(id).response.result as T;

  /** Compares a REST answer with the recorded one for `recordedPath` (shape for JSON). */
  async function restLike(recordedPath: string, path: string, mode: 'exact' | 'shape' | 'status'): Promise<Uint8Array> {
    const want = rec.restCall(recordedPath);
    restCompared.add(recordedPath);
    const got = await restGet(node, path);
    expect(got.status, path).toBe(want.http_status);
    expect(got.type, path).toBe(want.content_type);
    if (mode === 'exact')
      expect(want.body.hex !== undefined ? bytesToHex(got.bytes) : got.text, path).toBe(want.body.hex ?? want.body.text);
    if (mode === 'shape') {
      expect(got.text.endsWith('\n'), path).toBe(true);
      sameShape(JSON.parse(got.text), JSON.parse(want.body.text!), path);
    }
    return got.bytes;
  }

  beforeAll(async () => {
    rec = await loadRecording();
    // The recorded node ran with -txindex (getrawtransaction of confirmed transactions by txid).
    node = await entry.start({ bitcoind: { txindex: true }, devnode: { walletSeed: '11'.repeat(32) } });
    wallet = node.devnode ? devnodeActor(node.devnode) : coreActor(node);
    zmq = await collectZmq(node.zmqUrl);
    await wallet.setup();
  });

  afterAll(async () => {
    zmq?.close();
    await node?.stop();
  });

  it('fresh node: chain state and genesis lookups as Core answers them', async () => {
    const got = resultOf<Record<string, unknown>>(await replay(1, null, 'shape'));
    const want = recorded<Record<string, unknown>>(1);
    for (const k of Object.keys(want)) if (k !== 'verificationprogress') expect(got[k], k).toEqual(want[k]);
    expect(got.verificationprogress as number).toBeLessThan(1e-3);
    for (const id of [2, 3, 6, 7, 8, 9, 10, 11, 12]) await replay(id, null, 'exact');
    const net = resultOf<Record<string, unknown>>(await replay(4, null, 'shape'));
    expect([net.version, net.relayfee, net.incrementalfee]).toEqual([300000, 1e-6, 1e-6]);
    const zmqs = resultOf<{ type: string; address: string; hwm: number }[]>(await replay(5, null, 'shape'));
    expect(zmqs.map((z) => z.type)).toEqual(recorded<{ type: string }[]>(5).map((z) => z.type));
    expect(zmqs.every((z) => z.address === node.zmqUrl && z.hwm === 1000)).toBe(true);

    const genesis = '0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206';
    for (const p of [
      `/rest/block/${genesis}.bin`,
      `/rest/block/${genesis}.json`,
      '/rest/blockhashbyheight/0.hex',
      `/rest/headers/1/${genesis}.hex`,
    ])
      await restLike(p, p, 'exact');
    await restLike('/rest/chaininfo.json', '/rest/chaininfo.json', 'shape');
  });

  it('lookups of unknown or malformed things: same codes, messages and HTTP statuses', async () => {
    for (const id of [13, 14, 15, 16, 17, 18, 19]) await replay(id, null, 'exact');
    for (const p of [
      '/rest/block/abababababababababababababababababababababababababababababababab.bin',
      '/rest/tx/abababababababababababababababababababababababababababababababab.hex',
      '/rest/blockhashbyheight/999.hex',
    ])
      await restLike(p, p, 'exact');
  });

  it('wallet step: 101 blocks to a wallet address', async () => {
    const hashes = resultOf<string[]>(await replay(28, [101, wallet.address('p2wpkh')], 'shape'));
    expect(hashes).toHaveLength(101);
    await replay(29, [hashes[0], 2], 'shape');
    await replay(30, [hashes[100], 1], 'shape');
  });

  it('payments to each address type (chained as the Core wallet chained them) and the mempool views', async () => {
    [tx.p1, tx.p2, tx.p3, tx.p4] = (await wallet.payments()) as [string, string, string, string];
    expect(resultOf<string[]>(await replay(40, null, 'shape'))).toEqual([tx.p1, tx.p2, tx.p3, tx.p4]);
    await replay(41, null, 'map');
    const seq = resultOf<{ txids: string[]; mempool_sequence: number }>(await replay(42, null, 'shape'));
    expect(seq.mempool_sequence).toBe(recorded<{ mempool_sequence: number }>(42).mempool_sequence);
    const info = resultOf<Record<string, unknown>>(await replay(43, null, 'shape'));
    expect([info.size, info.unbroadcastcount, info.fullrbf]).toEqual([4, 4, true]);
    const entry = resultOf<Record<string, unknown>>(await replay(44, [tx.p1], 'shape'));
    expect([entry.descendantcount, entry.ancestorcount, entry['bip125-replaceable']]).toEqual([4, 1, true]);
    await replay(45, [tx.p1, true], 'shape');
    await replay(46, [tx.p1, 0], 'shape');
    await restLike(`/rest/tx/${'0aa44a665de50c682c786f813babef8fda4850d8da611198bc12a65376a40164'}.hex`, `/rest/tx/${tx.p1}.hex`, 'status');
    await restLike('/rest/mempool/info.json', '/rest/mempool/info.json', 'shape');
    const contents = await restGet(node, '/rest/mempool/contents.json');
    sameMapShape(JSON.parse(contents.text), JSON.parse(rec.restCall('/rest/mempool/contents.json').body.text!), 'mempool contents');
    restCompared.add('/rest/mempool/contents.json');
  });

  it('OP_RETURN, multisig, P2PK and bare multisig outputs; the block that mines them in every format', async () => {
    const dataHex = await wallet.dataTx([
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      '5354414d50000000000000000000000000000000000000000000000000000000',
    ]);
    const accept = resultOf<{ allowed: boolean }[]>(await replay(49, [[dataHex]], 'shape'));
    expect(accept[0]!.allowed).toBe(true);
    tx.data = resultOf<string>(await replay(50, [dataHex], 'shape'));
    tx.multi = await wallet.multisig();
    const pkHex = await wallet.pkTx();
    tx.pk = resultOf<string>(await replay(58, [pkHex], 'shape'));
    const [hash] = resultOf<string[]>(await replay(59, [1, wallet.address('p2wpkh')], 'shape'));
    blk.data = hash!;
    expect(resultOf<string>(await replay(60, [hash, 0], 'shape'))).toMatch(/^[0-9a-f]+$/);
    for (const [id, v] of [
      [61, 1],
      [62, 2],
      [63, 3],
    ] as const)
      await replay(id, [hash, v], 'shape');
    const pairs: [number, string][] = [
      [64, tx.data],
      [66, tx.multi],
      [68, tx.pk],
      [70, tx.p2],
    ];
    for (const [id, txid] of pairs) {
      await replay(id, [txid, true], 'shape');
      const v2 = resultOf<{ fee: number; vin: { prevout?: unknown }[] }>(await replay(id + 1, [txid, 2, hash], 'shape'));
      expect(v2.fee).toBeGreaterThan(0);
    }
    const recHash = '1d5d111ad5001e7a2f0ed162bec7d18d83f625ffeec4f17492957dd636851c41';
    const raw = await restLike(`/rest/block/${recHash}.bin`, `/rest/block/${hash}.bin`, 'status');
    const block = decodeBlock(raw);
    expect(block.txs.length).toBe(8);
    await restLike(`/rest/block/${recHash}.json`, `/rest/block/${hash}.json`, 'shape');
    await restLike(`/rest/block/notxdetails/${recHash}.json`, `/rest/block/notxdetails/${hash}.json`, 'shape');
    const undo = decodeSpentTxOuts(await restLike(`/rest/spenttxouts/${recHash}.bin`, `/rest/spenttxouts/${hash}.bin`, 'status'));
    expect(undo.map((l) => l.length)).toEqual(block.txs.map((t) => (t.isCoinbase ? 0 : t.inputs.length)));
    await restLike(`/rest/spenttxouts/${recHash}.json`, `/rest/spenttxouts/${hash}.json`, 'shape');
    const utxos = rec.rest.find((r) => r.path.includes('getutxos'))!;
    await restLike(utxos.path, utxos.path, 'exact');
  });

  it('RBF: replacement, the mempool sequence shows the removal, the replaced tx is gone', async () => {
    tx.rbf = await wallet.send(EXT.bech32m, 25_000_000n);
    expect(resultOf<{ mempool_sequence: number }>(await replay(73, null, 'shape')).mempool_sequence).toBe(
      recorded<{ mempool_sequence: number }>(73).mempool_sequence,
    );
    tx.rbf2 = await wallet.bump(tx.rbf);
    expect(resultOf<{ mempool_sequence: number }>(await replay(75, null, 'shape')).mempool_sequence).toBe(
      recorded<{ mempool_sequence: number }>(75).mempool_sequence,
    );
    const r = await replay(76, [tx.rbf], 'shape');
    expect(r.body.error).toEqual({ code: -5, message: 'Transaction not in mempool' });
    await replay(77, [1, wallet.address('p2wpkh')], 'shape');
  });

  it('1-block reorg: invalidate, competing blocks, reconsider; stale block and transaction lookups', async () => {
    tx.r1 = await wallet.send(EXT.legacy, 33_000_000n);
    const [stale] = resultOf<string[]>(await replay(79, [1, wallet.address('p2wpkh')], 'shape'));
    blk.stale = stale!;
    await replay(80, [stale], 'exact');
    expect(resultOf<{ mempool_sequence: number; txids: string[] }>(await replay(81, null, 'shape'))).toEqual({
      txids: [tx.r1],
      mempool_sequence: recorded<{ mempool_sequence: number }>(81).mempool_sequence,
    });
    tx.r1b = await wallet.bump(tx.r1);
    const [n1] = resultOf<string[]>(await replay(83, [2, wallet.address('p2pkh')], 'shape'));
    await replay(84, [stale], 'exact');
    const tips = resultOf<{ height: number; branchlen: number; status: string }[]>(await replay(85, null, 'shape'));
    expect(tips.map((t) => [t.height, t.branchlen, t.status])).toEqual(
      recorded<{ height: number; branchlen: number; status: string }[]>(85).map((t) => [t.height, t.branchlen, t.status]),
    );
    expect(resultOf<{ confirmations: number }>(await replay(86, [stale, 1], 'shape')).confirmations).toBe(-1);
    await replay(87, [stale, true], 'shape');
    expect(resultOf<{ confirmations: number; blockhash: string }>(await replay(88, [tx.r1, true], 'shape'))).toMatchObject({
      confirmations: 0,
      blockhash: stale,
    });
    expect(resultOf<{ in_active_chain: boolean }>(await replay(89, [tx.r1, true, stale], 'shape')).in_active_chain).toBe(false);
    await replay(90, [n1, 1], 'shape');
  });

  it('3-block reorg: a transaction that is no longer final leaves the mempool; four replacement blocks', async () => {
    tx.r3 = await wallet.send(EXT.p2shSegwit, 11_000_000n);
    const three = resultOf<string[]>(await replay(92, [3, wallet.address('p2wpkh')], 'shape'));
    tx.late = await wallet.sendLocked(EXT.p2shSegwit, 12_000_000n);
    await replay(94, [three[0]], 'exact');
    expect(resultOf<{ mempool_sequence: number; txids: string[] }>(await replay(95, null, 'shape'))).toEqual({
      txids: [tx.r3],
      mempool_sequence: recorded<{ mempool_sequence: number }>(95).mempool_sequence,
    });
    await replay(96, [4, wallet.address('p2sh-p2wpkh')], 'shape');
    const tips = resultOf<{ height: number; branchlen: number; status: string }[]>(await replay(97, null, 'shape'));
    expect(tips.map((t) => [t.height, t.branchlen, t.status])).toEqual(
      recorded<{ height: number; branchlen: number; status: string }[]>(97).map((t) => [t.height, t.branchlen, t.status]),
    );
    const info = resultOf<Record<string, unknown>>(await replay(98, null, 'shape'));
    const want = recorded<Record<string, unknown>>(98);
    for (const k of [
      'chain',
      'blocks',
      'headers',
      'bits',
      'target',
      'difficulty',
      'verificationprogress',
      'initialblockdownload',
      'chainwork',
      'pruned',
      'warnings',
    ])
      expect(info[k], k).toEqual(want[k]);
  });

  it('broadcast failures: confirmed, undecodable, dust, missing inputs, fee above maxfeerate; resubmission; fee estimate', async () => {
    const confirmed = resultOf<string>(await replay(99, [tx.p3, 0], 'shape'));
    await replay(100, [confirmed], 'exact');
    await replay(101, null, 'exact');
    await replay(102, null, 'exact');
    const dust = await wallet.dustTx(tx.r1b);
    await replay(106, [dust], 'exact');
    const test = resultOf<Record<string, unknown>[]>(await replay(107, [[dust]], 'shape'));
    const wantTest = recorded<Record<string, unknown>[]>(107)[0]!;
    expect({ ...test[0], txid: 0, wtxid: 0 }).toEqual({ ...wantTest, txid: 0, wtxid: 0 });
    const missing = bytesToHex(
      encodeTx({
        version: 2,
        inputs: [{ prevTxid: hexToHash('ab'.repeat(32)), vout: 0, scriptSig: new Uint8Array(0), sequence: 0xfffffffd }],
        outputs: [{ value: 10_000_000n, script: regtestScript(EXT.bech32)! }],
        locktime: 0,
      }),
    );
    await replay(109, [missing], 'exact');
    tx.last = await wallet.send(EXT.bech32, 40_000_000n);
    await replay(112, [tx.last, true], 'shape');
    const conflict = await wallet.conflictTx(tx.last, EXT.bech32);
    await replay(115, [conflict], 'exact');
    const again = resultOf<string>(await replay(116, [resultOf<string>(await rawRpc(node, 'getrawtransaction', [tx.last, 0]))], 'shape'));
    expect(again).toBe(tx.last);
    await replay(117, null, 'exact');
    await replay(118, [1, wallet.address('p2wpkh')], 'shape');
    const info = resultOf<{ blocks: number }>(await replay(119, null, 'shape'));
    expect(info.blocks).toBe(recorded<{ blocks: number }>(119).blocks);
    await replay(120, null, 'shape');
  });

  it('compared every recorded node call; only Core-wallet calls were played by the wallet actor', () => {
    const notCompared = rec.rpc.filter((r) => !compared.has(r.request.id));
    expect(notCompared.filter((r) => !WALLET_METHODS.has(r.request.method)).map((r) => `${r.request.id} ${r.request.method}`)).toEqual([]);
    expect(notCompared.every((r) => WALLET_METHODS.has(r.request.method))).toBe(true);
    expect(compared.size).toBe(rec.rpc.length - notCompared.length);
  });

  it('compared every recorded REST exchange', () => {
    expect(rec.rest.length).toBeGreaterThan(0);
    expect(rec.rest.map((r) => r.path).filter((p) => !restCompared.has(p))).toEqual([]);
  });

  it('published the recorded ZMQ stream: same topics, order, labels, mempool sequences and framing', async () => {
    await wallet.flushZmq();
    await zmq.settle(node.kind === 'bitcoind' ? 1000 : 300);
    const got = zmq.messages;
    const want = rec.zmq;
    expect(got.map(zmqPattern)).toEqual(want.map((m) => zmqPattern({ topic: m.topic, body: hexToBytes(m.body_hex) })));
    expect(got.every((m) => m.frames === 3)).toBe(true);
    // Counters as recorded: hashblock and rawblock from 0; hashtx, rawtx and sequence from 1,
    // their 0 taken by the genesis block's connection while the new datadir was set up.
    got.forEach((m, i) => expect(m.seq, `message ${i} ${m.topic}`).toBe(want[i]!.seq));
    // Bodies: display-order hashes, raw transactions whose txid is the preceding hashtx.
    for (let i = 0; i < got.length; i++) {
      const m = got[i]!;
      expect(m.body.length, m.topic).toBe(
        hexToBytes(want[i]!.body_hex).length > 100 ? m.body.length : hexToBytes(want[i]!.body_hex).length,
      );
      if (m.topic === 'rawtx') expect(hashToHex(decodeTx(m.body).txid)).toBe(bytesToHex(got[i - 1]!.body));
      if (m.topic === 'rawblock') expect(hashToHex(decodeBlock(m.body).hash)).toBe(bytesToHex(got[i - 1]!.body));
    }
  });
});
