/**
 * The indexer end to end on a real Bitcoin Core 30 (regtest): a seeded random scenario of Core's
 * own wallets paying each other — every address type, P2PK and bare multisig included — with
 * bumpfee replacements, CPFP, full-RBF replacements of transactions that did not signal,
 * transactions expired from the mempool (mock time jumped past -mempoolexpiry) and evicted from
 * a full one (the node runs with -maxmempool=5, its minimum; a last case fills it), reorgs of depth
 * 1–6 by invalidateblock/reconsiderblock (shorter, equal and longer branches, some with a double
 * spend, some while the indexer is down), kill -9 of bitcoind (its unflushed blocks are lost with
 * it) and of the indexer, and ZMQ lost by restarting bitcoind on another ZMQ port (and back).
 *
 * The indexer runs as a child process (killed with SIGKILL at random), the API and the stream
 * relay in this process, a WebSocket client subscribed to every address the scenario hands out.
 * After each step, once everything settled, the index must equal what Core says:
 * - blocks: the active chain (`getbestblockhash` and `getblock`), header fields;
 * - unspent outputs and balances of the receiving wallet's scripts: `scantxoutset`;
 * - per address, the transactions of the active chain (from `getblock` verbosity 3) and of the
 *   mempool (`getrawmempool`); the confirmed transactions of the subscribed addresses as a
 *   watch-only descriptor wallet importing those addresses lists them (`listsinceblock`);
 * - every event the relay streamed: for a transaction in the active chain, `tx.confirmed` in the
 *   block Core holds it in and confirmations up to the target; for one in the mempool,
 *   `tx.unconfirmed`; for one that is in neither, `tx.replaced` or `tx.dropped`; no
 *   `tx.confirmed` naming a block that does not hold the transaction, no confirmations out of
 *   that block's branch, amounts as the transaction moves them; the stream equals the outbox.
 *
 * BLOCKWIRE_CORE_STEPS sets the number of steps (default 24: every kind of step once, then the
 * seed's choice), BLOCKWIRE_CRASH_SEED the seed; BLOCKWIRE_CORE_DEBUG=1 logs each comparison.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { sql } from 'kysely';
import { sqlHasHistory } from '../../../src/db/history-reads.js';
import { BALANCE_ROWS } from '../../../src/db/balance-reads.js';
import { Subscriber } from 'zeromq';
import { Key } from '../../../client/keys.js';
import { addressToScript } from '../../../src/bitcoin/address.js';
import { encodeTx } from '../../../src/bitcoin/encode.js';
import { bytesToHex, hash160, hashToHex, hexToBytes } from '../../../src/bitcoin/hash.js';
import { addressKey } from '../../../src/db/address-key.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { testConfig } from '../../../src/config.js';
import { silentLogger } from '../../../src/log.js';
import { handleMessage, type SequenceHint } from '../../../indexer/notify.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { btcToSats } from '../../../src/rpc/types.js';
import { startApi, type ApiHandle } from '../../../api/main.js';
import { startStreams, type StreamsHandle } from '../../../streams/main.js';
import { describeBitcoind, startBitcoind, type Bitcoind } from '../../support/bitcoind.js';
import {
  checkBlockEvents,
  cleanupChildren,
  crashSeed,
  killChild,
  seededRandom,
  startChild,
  type Child,
} from '../../support/chain-crash.js';
import { readAddress } from '../../support/chain-snapshot.js';
import { CoreView, type TxView } from '../../support/core-view.js';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';
import { connectStream, type StreamClient } from '../streams/harness.js';

const STEPS = Number(process.env.BLOCKWIRE_CORE_STEPS ?? 24);
/** Confirmations the subscriptions ask for. */
const TARGET = 3;
/** Addresses of each of alice's ranged descriptors the comparisons cover (the scenario uses far fewer). */
const DERIVED = 300;
/** How long a reorged-out transaction may stay out of the mempool before tx.dropped (indexer setting). */
const GRACE_MS = 1000;

type StreamEvent = {
  id: number;
  type: string;
  address: string | null;
  transaction_hash: string | null;
  block: { hash: string; height: number } | null;
  confirmations: number | null;
  received: number | null;
  sent: number | null;
  replaced_by?: string;
};

const ADDRESS_TYPES = ['legacy', 'p2sh-segwit', 'bech32', 'bech32m'] as const;
type PayTo = (typeof ADDRESS_TYPES)[number] | 'sh-multi' | 'wsh-multi' | 'pk' | 'bare-multi';
const PAY_TO: readonly PayTo[] = [...ADDRESS_TYPES, 'sh-multi', 'wsh-multi', 'pk', 'bare-multi'];

/** Throws what `ours` has that `core` has not, and the reverse (entries of maps as `key → value`). */
function same(what: string, ours: Map<string, unknown> | Set<string>, core: Map<string, unknown> | Set<string>): void {
  const items = (x: Map<string, unknown> | Set<string>) => new Set(x instanceof Map ? [...x].map(([k, v]) => `${k} → ${String(v)}`) : x);
  const [a, b] = [items(ours), items(core)];
  const extra = [...a].filter((x) => !b.has(x));
  const missing = [...b].filter((x) => !a.has(x));
  if (extra.length || missing.length)
    throw new Error(
      `${what}: ${extra.length} not in Core's answer ${JSON.stringify(extra.slice(0, 5))}, ${missing.length} missing ${JSON.stringify(missing.slice(0, 5))}`,
    );
}

const btc = (sats: bigint) => Number(sats) / 1e8;
const scriptOf = (address: string) => bytesToHex(addressToScript(address, 'regtest'));
const keyOfScript = (script: string) => addressKey(Buffer.from(script, 'hex'));

/**
 * The index's keys for an output script (docs/schema.md "addr_key"): a P2PK output counts under
 * its key's P2PKH script; a bare multisig output is in the history of each of its keys' P2PKH
 * scripts and in no balance; any other script under itself.
 */
function indexKeys(script: string): { keys: string[]; balance: boolean } {
  const p2pkh = (pk: string) => keyOfScript(`76a914${bytesToHex(hash160(hexToBytes(pk)))}88ac`);
  const pk = /^(?:21((?:02|03)[0-9a-f]{64})|41(04[0-9a-f]{128}))ac$/.exec(script);
  if (pk) return { keys: [p2pkh(pk[1] ?? pk[2]!)], balance: true };
  const multi = /^(5[1-9a-f]|60)((?:21(?:02|03)[0-9a-f]{64}|4104[0-9a-f]{128})+)(5[1-9a-f]|60)ae$/.exec(script);
  if (multi)
    return {
      keys: [...multi[2]!.matchAll(/21((?:02|03)[0-9a-f]{64})|41(04[0-9a-f]{128})/g)].map((m) => p2pkh(m[1] ?? m[2]!)),
      balance: false,
    };
  return { keys: [keyOfScript(script)], balance: true };
}

describeBitcoind('the indexer end to end on a real Bitcoin Core', () => {
  let node: Bitcoind;
  let view: CoreView;
  let t: TestDatabase;
  let child: Child | null = null;
  let api: ApiHandle;
  let streams: StreamsHandle;
  let stream: StreamClient;
  let apiKey: string;
  let childEnv: Record<string, string>;
  let zmqHome: number;
  /** Every script of the receiving wallet `alice` (ranged descriptors derived, multisig and P2PK). */
  const aliceScripts = new Set<string>();
  /** Subscribed address → its script. */
  const subscribed = new Map<string, string>();
  /** Fixed destinations of alice that have no ranged descriptor: script and, when it has one, address. */
  const fixed = {} as Record<'sh-multi' | 'wsh-multi' | 'pk' | 'bare-multi', { script: string; address: string | null }>;
  /** Payments from the miner wallet to alice (bumpfee and double-spend candidates). */
  const minerToAlice: string[] = [];
  /** Blocks whose header fields were compared with Core's already. */
  const headersChecked = new Set<string>();
  const done: Record<string, number> = {};
  const count = (what: string) => void (done[what] = (done[what] ?? 0) + 1);

  const miner = <T>(method: string, params: unknown[] = []) => node.call<T>(method, params, 'miner');
  const alice = <T>(method: string, params: unknown[] = []) => node.call<T>(method, params, 'alice');

  const post = async (path: string, body: unknown) => {
    const r = await fetch(`${api.url}${path}`, {
      method: 'POST',
      headers: { apiKey, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(r.status, `POST ${path}`).toBe(200);
  };
  /** Subscribes `address` through the API, and imports it (labelled) into the watch-only wallet. */
  const subscribe = async (address: string) => {
    if (subscribed.has(address)) return;
    await post('/v1/subscriptions', { address, confirmations: TARGET });
    subscribed.set(address, scriptOf(address));
    const desc = (await node.call<{ descriptor: string }>('getdescriptorinfo', [`addr(${address})`])).descriptor;
    // A label puts it in the address book: an output to it is a receipt, not change.
    const [r] = await node.call<{ success: boolean }[]>('importdescriptors', [[{ desc, timestamp: 'now', label: 'alice' }]], 'watch');
    expect(r!.success, `import ${address}`).toBe(true);
  };

  const startIndexerChild = async () => {
    child = await startChild(childEnv);
    if (!(await child.ready)) throw new Error(`indexer child did not start:\n${child.output.join('\n')}`);
  };
  const killIndexerChild = async () => {
    if (child) await killChild(child);
    child = null;
  };

  beforeAll(async () => {
    // The smallest mempool Core allows, so that the eviction case can fill it (the scenario's
    // mempool stays far below it).
    node = await startBitcoind({ funded: true, args: ['-maxmempool=5'] });
    // 30 more blocks: 31 mature coinbases to pay from.
    await node.mine(30);
    view = new CoreView(node);
    zmqHome = Number(new URL(node.zmqUrl.replace('tcp://', 'http://')).port);

    // alice receives (its own descriptors, plus imported multisig and P2PK keys it can sign for);
    // watch sees the same descriptors without keys.
    // Loaded again on every start (a kill -9 included): load_on_startup.
    await node.call('createwallet', ['alice', false, false, '', false, true, true]);
    await node.call('createwallet', ['watch', true, true, '', false, true, true]);
    const keys = Array.from({ length: 6 }, () => Key.random('regtest'));
    const [k1, k2, k3, k4, k5, k6] = keys.map((k) => k.toWif()) as [string, string, string, string, string, string];
    const [p1, p2, p3, p4, p5, p6] = keys.map((k) => bytesToHex(k.publicKey)) as [string, string, string, string, string, string];
    const privates = {
      'sh-multi': `sh(multi(2,${k1},${k2},${k3}))`,
      'wsh-multi': `wsh(multi(2,${k1},${k2},${k3}))`,
      pk: `pk(${k4})`,
      'bare-multi': `multi(1,${k5},${k6})`,
    };
    const withChecksum = async (d: string) => `${d}#${(await node.call<{ checksum: string }>('getdescriptorinfo', [d])).checksum}`;
    const imported = await alice<{ success: boolean }[]>('importdescriptors', [
      await Promise.all(Object.values(privates).map(async (d) => ({ desc: await withChecksum(d), timestamp: 'now' }))),
    ]);
    expect(imported.every((r) => r.success)).toBe(true);
    const aliceDescs = (await alice<{ descriptors: { desc: string; range?: [number, number] }[] }>('listdescriptors')).descriptors;
    for (const d of aliceDescs) {
      if (!d.range) continue;
      for (const a of await node.call<string[]>('deriveaddresses', [d.desc, [0, DERIVED - 1]])) aliceScripts.add(scriptOf(a));
    }
    fixed['sh-multi'] = {
      address: (
        await node.call<string[]>('deriveaddresses', [
          (await node.call<{ descriptor: string }>('getdescriptorinfo', [`sh(multi(2,${p1},${p2},${p3}))`])).descriptor,
        ])
      )[0]!,
      script: '',
    };
    fixed['wsh-multi'] = {
      address: (
        await node.call<string[]>('deriveaddresses', [
          (await node.call<{ descriptor: string }>('getdescriptorinfo', [`wsh(multi(2,${p1},${p2},${p3}))`])).descriptor,
        ])
      )[0]!,
      script: '',
    };
    fixed['sh-multi'].script = scriptOf(fixed['sh-multi'].address!);
    fixed['wsh-multi'].script = scriptOf(fixed['wsh-multi'].address!);
    fixed.pk = { address: null, script: `21${p4}ac` };
    fixed['bare-multi'] = { address: null, script: `5121${p5}21${p6}52ae` };
    for (const f of Object.values(fixed)) aliceScripts.add(f.script);
    expect(aliceScripts.size).toBe(8 * DERIVED + 4);

    t = await createMigratedDatabase('core');
    childEnv = {
      DATABASE_URL: t.url,
      BITCOIND_RPC_URL: node.rpcUrl,
      BITCOIND_ZMQ_URL: node.zmqUrl,
      LOG_LEVEL: 'silent',
      POLL_INTERVAL_MS: '200',
      MEMPOOL_CHECK_MS: '2000',
      MEMPOOL_RESYNC_MS: '5000',
      INDEXER_REORG_GRACE_MS: String(GRACE_MS),
    };
    await startIndexerChild();

    const redisUrl = inject('redisUrl');
    const config = testConfig({
      network: 'regtest',
      bitcoindRpcUrl: node.rpcUrl,
      bitcoindZmqUrl: node.zmqUrl,
      databaseUrl: t.url,
      redisUrl,
      host: '127.0.0.1',
      port: 0,
      relayPollMs: 20,
    });
    const log = silentLogger();
    api = await startApi({ config, log, db: t.db, node: new BitcoindClient({ url: node.rpcUrl }), network: 'regtest', tipPollMs: 200 });
    streams = await startStreams({ config, log, db: t.db, redisUrl, redisPrefix: uniqueRedisPrefix('core'), server: api.app.server });
    apiKey = (await createApiKey(t.db, { name: 'core-e2e' })).key;
    await post('/v1/subscriptions', { type: 'chain' });
    for (const f of [fixed['sh-multi'], fixed['wsh-multi']]) await subscribe(f.address!);
    // From the first event on: what the subscriptions got before the stream connected comes first.
    stream = await connectStream(`${api.url.replace(/^http/, 'ws')}/v1/stream`, apiKey, { after: 0 });
    await waitFor('the stream to be live', () => stream.messages.some((m) => m.type === 'stream.live'), 30_000);
  });

  afterAll(async () => {
    stream?.close();
    await streams?.stop();
    await api?.close();
    await killIndexerChild();
    await cleanupChildren();
    await node?.stop();
    await t?.drop();
  });

  // ---- the scenario's moves -------------------------------------------------------------------

  /** A new subscribed destination of alice of `type` (P2PK and bare multisig: a script, not subscribable). */
  const destination = async (type: PayTo): Promise<{ address: string | null; script: string }> => {
    if (type in fixed) return fixed[type as keyof typeof fixed];
    const address = await alice<string>('getnewaddress', ['', type]);
    await subscribe(address);
    return { address, script: scriptOf(address) };
  };

  /** Wallets hear of blocks and mempool transactions through a queue: wait until it is empty. */
  const walletsCaughtUp = () => node.call('syncwithvalidationinterfacequeue');

  const inMempool = async (txid: string) => (await node.call<string[]>('getrawmempool')).includes(txid);

  /** Locks the coins the transaction `hex` spends in the miner's wallet (those it still counts unspent: abandoning a send can bring it to see them spent). */
  const lockInputs = async (hex: string) => {
    const decoded = await node.call<{ vin: { txid: string; vout: number }[] }>('decoderawtransaction', [hex]);
    for (const i of decoded.vin) await miner('lockunspent', [false, [{ txid: i.txid, vout: i.vout }]]).catch(() => undefined);
  };

  /** The miner pays `sats` to `to`; returns the txid (a script-only destination goes through a funded raw transaction). */
  const pay = async (
    to: { address: string | null; script: string },
    sats: bigint,
    opts: { replaceable?: boolean; feeRate?: number } = {},
  ): Promise<string> => {
    const feeRate = opts.feeRate ?? 2;
    if (!to.address) {
      // createrawtransaction takes addresses only: the unfunded transaction is made here. The
      // wallet can fund it with coins a mempool transaction spends (below): sendrawtransaction
      // then refuses it, and it is funded again with those coins locked.
      const hex = bytesToHex(encodeTx({ version: 2, inputs: [], outputs: [{ value: sats, script: hexToBytes(to.script) }], locktime: 0 }));
      for (let attempt = 1; ; attempt++) {
        const funded = await miner<{ hex: string }>('fundrawtransaction', [
          hex,
          { fee_rate: feeRate, replaceable: opts.replaceable ?? true },
        ]);
        const signed = await miner<{ hex: string }>('signrawtransactionwithwallet', [funded.hex]);
        try {
          const txid = await node.call<string>('sendrawtransaction', [signed.hex]);
          minerToAlice.push(txid);
          await walletsCaughtUp();
          return txid;
        } catch (err) {
          if (attempt === 3 || !/conflict|replacement|insufficient fee/i.test((err as Error).message)) throw err;
          await lockInputs(signed.hex);
        }
      }
    }
    // The wallet's send returns a txid even when the mempool refuses the transaction. After the
    // steps' reorgs Core's wallet can hold a mempool transaction as conflicted by a block that is
    // gone, and pick the coins it spends again (seen about once in eight runs under load): the
    // refused send is abandoned, its coins locked while the wallet still counts them unspent, and
    // the payment made again.
    for (let attempt = 1; ; attempt++) {
      const txid = await miner<string>('sendtoaddress', [
        to.address,
        btc(sats),
        '',
        '',
        false,
        opts.replaceable ?? true,
        null,
        'unset',
        false,
        feeRate,
      ]);
      await walletsCaughtUp();
      if (await inMempool(txid)) {
        minerToAlice.push(txid);
        return txid;
      }
      const wtx = await miner<{ mempoolconflicts?: string[]; hex: string }>('gettransaction', [txid]);
      if (attempt === 3 || !wtx.mempoolconflicts?.length)
        throw new Error(`the miner's payment ${txid} is not in the mempool after its send: ${JSON.stringify(wtx)}`);
      await miner('abandontransaction', [txid]);
      await lockInputs(wtx.hex);
    }
  };

  const mine = async (n: number) => {
    const hashes = await node.mine(n);
    await view.remember(hashes);
    return hashes;
  };

  /** The new branch of a reorg whose first block Core just invalidated. */
  const branch = async (rand: () => number, depth: number, indexerDown: boolean): Promise<string> => {
    const newBlocks = Math.max(1, depth - 1 + Math.floor(rand() * 3));
    const hashes: string[] = [];
    // Sometimes the new branch confirms a double spend of a payment the old one confirmed.
    // The victim's inputs must be confirmed on the kept branch: one spending a parent that went
    // back to the mempool with it cannot be double spent by a block holding the spend alone.
    const back = new Set(await node.call<string[]>('getrawmempool'));
    let victim: string | undefined;
    for (const x of minerToAlice.filter((y) => back.has(y))) {
      const { vin } = await node.call<{ vin: { txid: string; vout: number }[] }>('getrawtransaction', [x, 1]);
      const kept = await Promise.all(vin.map((i) => node.call<unknown>('gettxout', [i.txid, i.vout, false])));
      if (kept.every((o) => o !== null)) {
        victim = x;
        break;
      }
    }
    let doubleSpend = false;
    if (victim && rand() < 0.5) {
      const tx = await node.call<{ vin: { txid: string; vout: number }[] }>('getrawtransaction', [victim, 1]);
      let total = 0n;
      for (const i of tx.vin)
        total += (
          view.prevOut({ ...i, prev: null }) ?? {
            value: btcToSats((await node.call<{ value: number }>('gettxout', [i.txid, i.vout, false])).value),
          }
        ).value;
      const raw = await node.call<string>('createrawtransaction', [
        tx.vin.map((i) => ({ txid: i.txid, vout: i.vout })),
        [{ [await miner<string>('getnewaddress')]: btc(total - 20_000n) }],
      ]);
      const signed = await miner<{ hex: string }>('signrawtransactionwithwallet', [raw]);
      hashes.push((await node.call<{ hash: string }>('generateblock', [await miner<string>('getnewaddress'), [signed.hex]])).hash);
      doubleSpend = true;
    }
    hashes.push(...(await node.mine(newBlocks - hashes.length)));
    await view.remember(hashes);
    return `depth ${depth}, ${newBlocks} new${doubleSpend ? ', double spend' : ''}${indexerDown ? ', indexer down' : ''}`;
  };

  const moves = {
    payments: async (rand: () => number) => {
      for (let i = 1 + Math.floor(rand() * 3); i > 0; i--) {
        const type = PAY_TO[Math.floor(rand() * PAY_TO.length)]!;
        await pay(await destination(type), 10_000n + BigInt(Math.floor(rand() * 50_000_000)));
      }
      if (rand() < 0.3) {
        const a = await destination(ADDRESS_TYPES[Math.floor(rand() * 4)]!);
        const b = await destination(ADDRESS_TYPES[Math.floor(rand() * 4)]!);
        minerToAlice.push(await miner<string>('sendmany', ['', { [a.address!]: 0.01, [b.address!]: 0.02 }]));
      }
    },
    aliceSpends: async (rand: () => number) => {
      await walletsCaughtUp();
      let coins = await alice<{ txid: string; vout: number; amount: number; desc: string; confirmations: number }[]>('listunspent', [1]);
      if (coins.length === 0) {
        await pay(await destination(PAY_TO[Math.floor(rand() * PAY_TO.length)]!), 5_000_000n);
        await mine(1);
        await walletsCaughtUp();
        coins = await alice('listunspent', [1]);
      }
      // A P2PK or bare multisig coin when there is one, so that those get spent too.
      const odd = coins.filter((c) => c.desc.startsWith('pk(') || c.desc.startsWith('multi('));
      const coin = odd.length && rand() < 0.6 ? odd[Math.floor(rand() * odd.length)]! : coins[Math.floor(rand() * coins.length)]!;
      const to = rand() < 0.5 ? await miner<string>('getnewaddress') : (await destination(PAY_TO[Math.floor(rand() * 4)]!)).address!;
      await alice('send', [
        { [to]: coin.amount },
        null,
        'unset',
        3,
        { inputs: [{ txid: coin.txid, vout: coin.vout }], add_inputs: false, subtract_fee_from_outputs: [0] },
      ]);
      return coin.desc.replace(/\(.*/, '');
    },
    mine: async (rand: () => number) => void (await mine(1 + Math.floor(rand() * 3))),
    bumpfee: async (rand: () => number) => {
      const pool = new Set(await node.call<string[]>('getrawmempool'));
      const candidates = minerToAlice.filter((x) => pool.has(x));
      if (!candidates.length) {
        await pay(await destination('bech32'), 1_000_000n);
        candidates.push(minerToAlice[minerToAlice.length - 1]!);
      }
      const txid = candidates[Math.floor(rand() * candidates.length)]!;
      try {
        minerToAlice.push((await miner<{ txid: string }>('bumpfee', [txid])).txid);
        return 'done';
      } catch (err) {
        // e.g. "Transaction has descendants in the wallet": Core refuses, nothing happened.
        return `refused (${(err as Error).message})`;
      }
    },
    cpfp: async () => {
      const parent = await pay(await destination('bech32'), 2_000_000n, { feeRate: 1 });
      await walletsCaughtUp();
      const coins = await alice<{ txid: string; vout: number; amount: number }[]>('listunspent', [0, 0]);
      const coin = coins.find((c) => c.txid === parent)!;
      expect(coin, 'the low-fee parent pays alice').toBeDefined();
      const r = await alice<{ txid: string }>('send', [
        { [await miner<string>('getnewaddress')]: coin.amount },
        null,
        'unset',
        50,
        { inputs: [{ txid: coin.txid, vout: coin.vout }], add_inputs: false, subtract_fee_from_outputs: [0] },
      ]);
      const entry = await node.call<{ ancestorcount: number }>('getmempoolentry', [r.txid]);
      expect(entry.ancestorcount).toBe(2);
    },
    fullRbf: async () => {
      const original = await pay(await destination('bech32m'), 3_000_000n, { replaceable: false });
      const tx = await node.call<{ vin: { txid: string; vout: number; sequence: number }[] }>('getrawtransaction', [original, 1]);
      expect(
        tx.vin.every((i) => i.sequence >= 0xfffffffe),
        'the original does not signal BIP125',
      ).toBe(true);
      let total = 0n;
      for (const i of tx.vin) total += btcToSats((await node.call<{ value: number }>('gettxout', [i.txid, i.vout, false])).value);
      const fee = btcToSats((await node.call<{ fees: { base: number } }>('getmempoolentry', [original])).fees.base);
      const to = await destination('p2sh-segwit');
      const raw = await node.call<string>('createrawtransaction', [
        tx.vin.map((i) => ({ txid: i.txid, vout: i.vout })),
        [{ [to.address!]: btc(total - fee - 10_000n) }],
      ]);
      const signed = await miner<{ hex: string }>('signrawtransactionwithwallet', [raw]);
      const replacement = await node.call<string>('sendrawtransaction', [signed.hex]);
      minerToAlice.push(replacement);
      expect(await inMempool(original)).toBe(false);
    },
    expire: async () => {
      if ((await node.call<string[]>('getrawmempool')).length === 0) await pay(await destination('legacy'), 500_000n);
      const before = await node.call<string[]>('getrawmempool');
      // Past -mempoolexpiry (336 h) after the newest entry: the next transaction accepted makes Core
      // expire the older ones. (An earlier expire step's resubmitted transactions entered at its
      // mocked time, 337 h ahead of the clock: counted from the clock they would not expire.)
      let now = Math.floor(Date.now() / 1000);
      for (const x of before)
        now = Math.max(now, (await node.call<{ time: number }>('getmempoolentry', [x]).catch(() => ({ time: 0 }))).time);
      await node.call('setmocktime', [now + 337 * 3600]);
      try {
        await pay(await destination('bech32'), 400_000n);
      } finally {
        await node.call('setmocktime', [0]);
      }
      const after = new Set(await node.call<string[]>('getrawmempool'));
      // An earlier transaction still there must have entered again after it expired (the wallet
      // resubmits its transactions when the mocked clock passes its resend time): its entry time
      // is the mocked one, not the old one.
      const kept: string[] = [];
      for (const x of before.filter((t) => after.has(t)))
        if ((await node.call<{ time: number }>('getmempoolentry', [x]).catch(() => ({ time: Infinity }))).time < now + 337 * 3600)
          kept.push(x);
      expect(kept, 'every earlier mempool transaction expired').toEqual([]);
      // The wallets still count the expired payments' inputs as spent until they are abandoned.
      await walletsCaughtUp();
      for (const w of ['miner', 'alice']) {
        for (const x of await node.call<{ txid: string; confirmations: number }[]>('listtransactions', ['*', 1000], w)) {
          if (x.confirmations === 0 && before.includes(x.txid)) await node.call('abandontransaction', [x.txid], w).catch(() => undefined);
        }
      }
    },
    reorg: async (rand: () => number, indexerDown: boolean) => {
      const chain = await view.activeChain();
      const tip = chain.length - 1;
      const depth = Math.min(1 + Math.floor(rand() * 6), tip - 102);
      if (depth < 1) return 'skipped';
      if (indexerDown) await killIndexerChild();
      const first = chain[tip - depth + 1]!;
      await node.call('invalidateblock', [first]);
      try {
        return await branch(rand, depth, indexerDown);
      } finally {
        // Whatever failed, Core's old branch comes back and the indexer runs again, so the
        // failure is this step's and not the next test's.
        await node.call('reconsiderblock', [first]).catch(() => undefined);
        if (indexerDown) await startIndexerChild();
      }
    },
    killBitcoind: async (rand: () => number) => {
      if (rand() < 0.5) await moves.payments(rand);
      if (rand() < 0.5) await mine(1);
      const before = await node.tip();
      await node.kill();
      await node.start();
      const after = await node.tip();
      // Blocks Core had not flushed are gone with it: its chain comes back shorter.
      return after.hash === before.hash ? 'chain kept' : `chain back from ${before.height} to ${after.height}`;
    },
    moveZmq: async () => {
      const home = node.zmqUrl.endsWith(`:${zmqHome}`);
      await node.restart(home ? { newPorts: 'zmq' } : { zmqPort: zmqHome });
      return home ? 'away' : 'home';
    },
    killIndexer: async (rand: () => number) => {
      const work = (async () => {
        await moves.payments(rand);
        await mine(1 + Math.floor(rand() * 2));
      })();
      await new Promise((r) => setTimeout(r, rand() * 400));
      await killIndexerChild();
      await work;
      await startIndexerChild();
    },
  };

  // ---- comparing the index with Core --------------------------------------------------------

  /** Throws what differs between the index (and the stream) and Core; returns when nothing does. */
  const compare = async (): Promise<true> => {
    const chain = await view.activeChain();
    const tipHash = chain[chain.length - 1]!;
    const mempool = await view.mempool();
    if (!(await node.call<string[]>('getrawmempool')).every((x) => view.txs.has(x))) throw new Error('mempool moved while reading it');

    // Blocks.
    const rows = (
      await sql<{ height: number; hash: Buffer; prev_hash: Buffer; time: number; tx_count: number; size: number; weight: number }>`
      SELECT height, hash, prev_hash, time, tx_count, size, weight FROM blocks ORDER BY height`.execute(t.db)
    ).rows;
    const indexed = rows.map((r) => hashToHex(r.hash));
    if (indexed[indexed.length - 1] !== tipHash)
      throw new Error(`index tip ${indexed.length - 1} ${indexed[indexed.length - 1]}, Core's ${chain.length - 1} ${tipHash}`);
    expect(indexed, "the indexed chain is Core's active chain").toEqual(chain);
    for (const r of rows) {
      const hash = hashToHex(r.hash);
      if (headersChecked.has(hash)) continue;
      const b = await view.block(hash);
      expect(
        { prev: r.height === 0 ? null : hashToHex(r.prev_hash), time: r.time, txs: r.tx_count, size: r.size, weight: r.weight },
        `block ${r.height} ${hash}`,
      ).toEqual({ prev: b.prev, time: b.time, txs: b.txs.length, size: b.size, weight: b.weight });
      headersChecked.add(hash);
    }

    // The mempool.
    const indexedPool = (await sql<{ txid: Buffer }>`SELECT txid FROM mempool_txs`.execute(t.db)).rows.map((r) => hashToHex(r.txid)).sort();
    if (indexedPool.join() !== [...mempool].sort().join())
      throw new Error(`indexed mempool (${indexedPool.length}) differs from Core's (${mempool.length})`);

    // Unspent outputs and balances: scantxoutset over alice's descriptors.
    // Only the addresses handed out so far (scanning the whole keypool costs seconds).
    const listed = (await alice<{ descriptors: { desc: string; range?: [number, number]; next_index?: number }[] }>('listdescriptors'))
      .descriptors;
    expect(Math.max(...listed.map((d) => d.next_index ?? 0)), 'addresses used within those compared').toBeLessThan(DERIVED);
    const descs = listed.map((d) => (d.range ? { desc: d.desc, range: [0, (d.next_index ?? 0) + 2] } : d.desc));
    const scan = await node.call<{
      success: boolean;
      height: number;
      unspents: { txid: string; vout: number; scriptPubKey: string; amount: number; height: number }[];
    }>('scantxoutset', ['start', descs]);
    expect(scan.success).toBe(true);
    expect(scan.height).toBe(chain.length - 1);
    const coreUtxos = scan.unspents.map((u) => `${u.txid}:${u.vout} ${u.scriptPubKey} ${btcToSats(u.amount)} ${u.height}`).sort();
    const allUtxos = (
      await sql<{
        txid: Buffer;
        vout: number;
        value: bigint;
        script: Buffer;
        tx_num: bigint;
      }>`SELECT txid, vout, value, script, tx_num FROM utxos`.execute(t.db)
    ).rows;
    const ourUtxos = allUtxos
      .filter((u) => aliceScripts.has(u.script.toString('hex')))
      .map((u) => `${hashToHex(u.txid)}:${u.vout} ${u.script.toString('hex')} ${u.value} ${Number(u.tx_num >> 20n)}`)
      .sort();
    same("unspent outputs of alice's scripts against scantxoutset", new Set(ourUtxos), new Set(coreUtxos));
    const coreBalance = new Map<string, bigint>();
    for (const u of scan.unspents) {
      const {
        keys: [k],
        balance,
      } = indexKeys(u.scriptPubKey);
      if (balance) coreBalance.set(k!, (coreBalance.get(k!) ?? 0n) + btcToSats(u.amount));
    }
    const keys = [...new Set([...aliceScripts].flatMap((x) => indexKeys(x).keys))];
    const balances = (
      await sql<{
        addr_key: string;
        balance: bigint;
      }>`SELECT addr_key::text, balance FROM ${sql.raw(BALANCE_ROWS)} b WHERE addr_key = ANY(${keys}::uuid[]) AND balance <> 0`.execute(
        t.db,
      )
    ).rows;
    same('balances against scantxoutset', new Map(balances.map((b) => [b.addr_key, b.balance])), coreBalance);

    // Per key: transactions of the active chain (getblock verbosity 3) and of the mempool.
    const keysTouched = (tx: TxView) =>
      new Set(
        [...tx.outs.map((o) => o.script), ...tx.ins.map((i) => view.prevOut(i)?.script ?? '')]
          .filter((x) => aliceScripts.has(x))
          .flatMap((x) => indexKeys(x).keys),
      );
    const truth = new Map<string, string[]>();
    for (const hash of chain) {
      for (const tx of (await view.block(hash)).txs) {
        const touched = keysTouched(tx);
        for (const k of touched) truth.set(k, [...(truth.get(k) ?? []), tx.txid]);
      }
    }
    const historyKeys = (
      await sql<{
        k: string;
      }>`SELECT DISTINCT q.k::text AS k FROM unnest(${keys}::uuid[]) AS q(k) WHERE ${sqlHasHistory(sql.ref('q.k'))}`.execute(t.db)
    ).rows.map((r) => r.k);
    same('keys with a history', new Set(historyKeys), new Set(truth.keys()));
    for (const [k, txids] of truth) expect((await readAddress(t.db, k)).history, `history of ${k}`).toEqual(txids);
    const poolTruth = new Set<string>();
    for (const txid of mempool) for (const k of keysTouched(view.txs.get(txid)!)) poolTruth.add(`${k} ${txid}`);
    const poolIndexed = (
      await sql<{
        addr_key: string;
        txid: Buffer;
      }>`SELECT addr_key::text, txid FROM mempool_addresses WHERE addr_key = ANY(${keys}::uuid[])`.execute(t.db)
    ).rows.map((r) => `${r.addr_key} ${hashToHex(r.txid)}`);
    same('mempool transactions per key', new Set(poolIndexed), poolTruth);

    // The watch-only wallet's confirmed transactions (it imported the subscribed addresses).
    await walletsCaughtUp();
    const since = await node.call<{ transactions: { txid: string; confirmations: number; blockhash?: string }[] }>(
      'listsinceblock',
      ['', 1, true],
      'watch',
    );
    const walletConfirmed = new Map(since.transactions.filter((x) => x.confirmations > 0).map((x) => [x.txid, x.blockhash!]));
    const subscribedKeys = new Set([...subscribed.values()].map(keyOfScript));
    const indexedConfirmed = new Map<string, string>();
    for (const k of subscribedKeys) {
      for (const txid of (await readAddress(t.db, k)).history) indexedConfirmed.set(txid, chainTx(chain, txid) ?? 'not in the chain');
    }
    same("confirmed transactions of the subscribed addresses against the watch-only wallet's", indexedConfirmed, walletConfirmed);

    await checkEvents(chain, new Set(mempool));
    return true;
  };

  /** The stream's events against what happened (see the module comment). */
  const checkEvents = async (chain: string[], mempool: Set<string>) => {
    // The stream carries exactly the outbox's events of our subscriptions.
    const outbox = (
      await sql<{ seq: string; type: string }>`
      SELECT o.seq::text, o.type FROM outbox o JOIN subscriptions s
        ON s.deleted_at IS NULL AND o.seq > s.start_seq AND ((s.kind = 'chain' AND o.type LIKE 'block.%') OR (s.kind = 'address' AND o.addr_key = s.addr_key AND o.type LIKE 'tx.%'))
      ORDER BY o.seq`.execute(t.db)
    ).rows;
    const events = stream.events() as unknown as StreamEvent[];
    if (events.length < outbox.length) throw new Error(`the stream has ${events.length} events of the outbox's ${outbox.length}`);
    expect(
      events.map((e) => `${e.id} ${e.type}`),
      'the stream = the outbox',
    ).toEqual(outbox.map((r) => `${r.seq} ${r.type}`));

    const heightOf = new Map(chain.map((h, i) => [h, i]));
    const tip = chain.length - 1;
    const groups = new Map<string, StreamEvent[]>();
    for (const e of events)
      if (e.type.startsWith('tx.'))
        groups.set(`${e.address} ${e.transaction_hash}`, [...(groups.get(`${e.address} ${e.transaction_hash}`) ?? []), e]);
    const isAncestor = (a: string, b: string) => {
      for (let h: string | null = b; h; h = view.blocks.get(h)?.prev ?? null) if (h === a) return true;
      return false;
    };
    for (const [k, evs] of groups) {
      const [address, txid] = k.split(' ') as [string, string];
      const script = subscribed.get(address)!;
      let confirmedIn: string | null = null;
      for (const e of evs) {
        const where = `${e.type} #${e.id} of ${txid} for ${address}`;
        if (e.type === 'tx.confirmed') {
          const b = view.blocks.get(e.block!.hash);
          expect(b, `${where}: a block Core made`).toBeDefined();
          const tx = b!.txs.find((x) => x.txid === txid);
          expect(tx, `${where}: the block holds it`).toBeDefined();
          expect(e.block!.height, where).toBe(b!.height);
          const { received, sent } = view.amounts(tx!, script);
          expect([BigInt(e.received!), BigInt(e.sent!)], `${where}: amounts`).toEqual([received, sent]);
          confirmedIn = b!.hash;
        } else if (e.type === 'tx.confirmations') {
          // `block` is the block holding the transaction; Core must have made a block c - 1 above it on its branch.
          expect(confirmedIn, `${where}: after a tx.confirmed`).not.toBeNull();
          expect(e.block, where).toEqual({ hash: confirmedIn, height: view.blocks.get(confirmedIn!)!.height });
          expect(e.confirmations!, where).toBeLessThanOrEqual(TARGET);
          const top = view.blocks.get(confirmedIn!)!.height + e.confirmations! - 1;
          expect(
            [...view.blocks.values()].some((b) => b.height === top && isAncestor(confirmedIn!, b.hash)),
            `${where}: Core made a block at ${top} on that branch`,
          ).toBe(true);
        } else if (e.type === 'tx.reorged') {
          expect(e.block?.hash, `${where}: the block it was confirmed in`).toBe(confirmedIn);
          confirmedIn = null;
        } else if (e.type === 'tx.unconfirmed' || e.type === 'tx.replaced' || e.type === 'tx.dropped') {
          expect(confirmedIn, `${where}: not while confirmed`).toBeNull();
          if (e.type === 'tx.replaced' && view.txs.has(e.replaced_by!) && view.txs.has(txid)) {
            const spends = new Set(view.txs.get(txid)!.ins.map((i) => `${i.txid}:${i.vout}`));
            expect(
              view.txs.get(e.replaced_by!)!.ins.some((i) => spends.has(`${i.txid}:${i.vout}`)),
              `${where}: replaced_by spends one of its inputs`,
            ).toBe(true);
          }
        } else throw new Error(`unexpected event ${where}`);
      }
      const last = evs.filter((e) => e.type !== 'tx.confirmations').at(-1)!;
      const blockNow = chainTx(chain, txid);
      if (blockNow) {
        if (last.type !== 'tx.confirmed' || last.block!.hash !== blockNow)
          throw new Error(`${txid} for ${address}: in block ${blockNow}, last event ${last.type} ${last.block?.hash ?? ''}`);
        // Every confirmation count due was announced (a reorg above the block may have taken back a later one).
        const want = Math.min(TARGET, tip - heightOf.get(blockNow)! + 1);
        const announced = new Set(evs.slice(evs.indexOf(last) + 1).map((e) => e.confirmations!));
        for (let c = 2; c <= want; c++)
          if (!announced.has(c)) throw new Error(`${txid} for ${address}: confirmation ${c} of ${want} not announced`);
      } else if (mempool.has(txid)) {
        if (last.type !== 'tx.unconfirmed') throw new Error(`${txid} for ${address}: in the mempool, last event ${last.type}`);
      } else if (last.type !== 'tx.replaced' && last.type !== 'tx.dropped') {
        throw new Error(`${txid} for ${address}: gone from chain and mempool, last event ${last.type}`);
      }
    }
    // Nothing missed: every transaction of a subscribed address in the chain or the mempool has its events.
    const subscribedScripts = new Map([...subscribed].map(([a, s]) => [s, a]));
    const touched = (tx: TxView) =>
      [...new Set([...tx.outs.map((o) => o.script), ...tx.ins.map((i) => view.prevOut(i)?.script ?? '')])].filter((s) =>
        subscribedScripts.has(s),
      );
    for (const hash of chain)
      for (const tx of view.blocks.get(hash)!.txs)
        for (const s of touched(tx))
          if (!groups.has(`${subscribedScripts.get(s)} ${tx.txid}`))
            throw new Error(`no events for ${tx.txid} (block ${hash}) for ${subscribedScripts.get(s)}`);
    for (const txid of mempool)
      for (const s of touched(view.txs.get(txid)!))
        if (!groups.has(`${subscribedScripts.get(s)} ${txid}`))
          throw new Error(`no events for mempool ${txid} for ${subscribedScripts.get(s)}`);
  };

  /** The active-chain block holding `txid`, if any. */
  const chainTx = (chain: string[], txid: string): string | null => {
    for (let h = chain.length - 1; h >= 0; h--) if (view.blocks.get(chain[h]!)!.txs.some((x) => x.txid === txid)) return chain[h]!;
    return null;
  };

  const settle = async (label: string) => {
    const tries: string[] = [];
    const timed = async () => {
      const t0 = performance.now();
      try {
        return await compare();
      } catch (err) {
        tries.push(`${Math.round(performance.now() - t0)}ms ${(err as Error).message.slice(0, 80)}`);
        throw err;
      } finally {
        if (process.env.BLOCKWIRE_CORE_DEBUG) tries.push(`${Math.round(performance.now() - t0)} ms`);
      }
    };
    await waitFor(`the index, the stream and Core to agree after ${label}`, timed, 120_000, 250);
    if (process.env.BLOCKWIRE_CORE_DEBUG) process.stderr.write(`${label}: ${tries.join(' | ')}\n`);
    // Core flushes its chainstate here (scantxoutset does), so a later kill -9 loses only what came after.
  };

  it(`equals Core's answers after each of ${STEPS} seeded random steps`, { timeout: 1_200_000 }, async () => {
    const rand = seededRandom(crashSeed('indexer on real Core'));
    await settle('the start');
    const plan: [number, string][] = [
      [0.3, 'payments'],
      [0.08, 'aliceSpends'],
      [0.17, 'mine'],
      [0.07, 'bumpfee'],
      [0.05, 'cpfp'],
      [0.05, 'fullRbf'],
      [0.03, 'expire'],
      [0.13, 'reorg'],
      [0.04, 'killBitcoind'],
      [0.03, 'moveZmq'],
      [0.05, 'killIndexer'],
    ];
    // The first steps cover every kind once (a reorg also while the indexer is down), then the seed decides.
    const order = [...plan.map(([, m]) => m), 'reorg-down'];
    for (let step = 0; step < STEPS; step++) {
      let move = order[step];
      if (!move) {
        let r = rand();
        move = plan.find(([w]) => (r -= w) < 0)?.[1] ?? 'mine';
      }
      const t0 = performance.now();
      const result = move.startsWith('reorg')
        ? await moves.reorg(rand, move === 'reorg-down' || rand() < 0.4)
        : await (moves as unknown as Record<string, (r: () => number) => Promise<unknown>>)[move]!(rand);
      count(move.replace('-down', ''));
      const t1 = performance.now();
      await settle(`step ${step} (${move})`);
      process.stderr.write(
        `core e2e step ${step}: ${move}${typeof result === 'string' ? ` (${result})` : ''}, ${Math.round(t1 - t0)} ms, settled in ${Math.round(performance.now() - t1)} ms\n`,
      );
    }
    // A last block confirms what waited, then the block events of the whole run replay to Core's chain.
    await mine(TARGET);
    await settle('the last blocks');
    await checkBlockEvents(t.db, await view.activeChain());
    process.stderr.write(`core e2e: ${JSON.stringify(done)}\n`);
    expect(Object.keys(done).length).toBe(plan.length);
  });

  it('evicts a low-fee payment from a full mempool: gone from the index, tx.dropped streamed', { timeout: 600_000 }, async () => {
    // Core's own `sequence` stream, parsed as the indexer parses it: the eviction must come as an R.
    const hints: SequenceHint[] = [];
    const sub = new Subscriber({ receiveHighWaterMark: 100_000, linger: 0 });
    sub.connect(node.zmqUrl);
    sub.subscribe('sequence');
    const counters = new Map<string, number>();
    const zmqStats = { messages: 0, invalid: 0, gaps: 0, resets: 0, lastMessageAt: null };
    const recording = (async () => {
      for await (const frames of sub)
        handleMessage(
          frames,
          counters,
          zmqStats,
          { wake: () => undefined, gap: () => undefined, reset: () => undefined, sequence: (h) => hints.push(h) },
          silentLogger(),
        );
    })().catch(() => undefined);
    try {
      // Coins for the fillers (one confirmed coin each), and an empty mempool: what is evicted is
      // then the victim and the cheapest fillers only.
      const coins: Record<string, number> = {};
      for (let i = 0; i < 60; i++) coins[await miner<string>('getnewaddress')] = 0.02;
      await miner('sendmany', ['', coins]);
      await mine(1);
      await settle('the block before the eviction');
      const relayFee = (await node.call<{ minrelaytxfee: number }>('getmempoolinfo')).minrelaytxfee;
      // The victim: 1 sat/vB to a subscribed address of alice.
      const victim = await pay(await destination('bech32'), 150_000n, { feeRate: 1 });
      await settle('the low-fee payment');
      const apiTx = async () => (await fetch(`${api.url}/v1/transactions/${victim}`, { headers: { apiKey } })).status;
      expect(await apiTx(), 'the API serves the victim').toBe(200);
      expect((await node.call<{ fees: { base: number }; vsize: number }>('getmempoolentry', [victim])).vsize).toBeGreaterThan(0);

      // Fillers: ~95 kvB each, 1,250 outputs to an uncompressed P2PK key nobody watches (76 vbytes
      // and ~145 bytes of Core's mempool memory: a script over 36 bytes is allocated apart), from
      // confirmed coins only (no chain of them hits the 101 kvB descendant limit), each at a
      // higher fee rate than the one before (Core evicts the cheapest first; on a tie the newest,
      // which would refuse the filler itself).
      const nobody = hexToBytes(`4104${randomBytes(64).toString('hex')}ac`);
      const outputs = Array.from({ length: 1250 }, () => ({ value: 700n, script: nobody }));
      const unfunded = bytesToHex(encodeTx({ version: 2, inputs: [], outputs, locktime: 0 }));
      let fillers = 0;
      while ((await node.call<string[]>('getrawmempool')).includes(victim)) {
        expect(fillers, 'fillers before Core evicted the victim').toBeLessThan(80);
        const funded = await miner<{ hex: string }>('fundrawtransaction', [unfunded, { fee_rate: 3 + fillers / 10, minconf: 1 }]);
        const signed = await miner<{ hex: string }>('signrawtransactionwithwallet', [funded.hex]);
        await node.call<string>('sendrawtransaction', [signed.hex]);
        fillers++;
        if (process.env.BLOCKWIRE_CORE_DEBUG)
          process.stderr.write(`filler ${fillers}: usage ${(await node.call<{ usage: number }>('getmempoolinfo')).usage}\n`);
      }
      await expect(node.call('getmempoolentry', [victim])).rejects.toMatchObject({ code: -5, message: 'Transaction not in mempool' });
      const info = await node.call<{ usage: number; maxmempool: number; mempoolminfee: number; minrelaytxfee: number }>('getmempoolinfo');
      expect(info.maxmempool).toBe(5_000_000);
      // The rolling minimum: the evicted fee rate plus the incremental relay fee, above the victim's.
      expect(info.mempoolminfee, 'mempoolminfee rose').toBeGreaterThan(relayFee);
      expect(info.mempoolminfee).toBeGreaterThan(0.00001);
      process.stderr.write(
        `core e2e eviction: ${fillers} fillers, usage ${info.usage}, mempoolminfee ${info.mempoolminfee} BTC/kvB (relay ${relayFee})\n`,
      );

      await waitFor("Core's R for the evicted payment", () => hints.some((h) => h.label === 'R' && h.hash === victim), 30_000);
      // The index and the stream against Core: the victim gone from the mempool rows, balances and
      // unspent outputs equal to scantxoutset, history to the watch-only wallet's, its events ending.
      await settle('the eviction');
      const events = (stream.events() as unknown as StreamEvent[]).filter((e) => e.transaction_hash === victim);
      expect(
        events.map((e) => e.type),
        "the victim's events",
      ).toEqual(['tx.unconfirmed', 'tx.dropped']);
      expect(events[1]!.address).toBe(events[0]!.address);
      expect(await apiTx(), 'the API no longer knows the victim').toBe(404);
    } finally {
      sub.close();
      await recording;
    }
  });
});
