/**
 * One wallet, three views, on a real Bitcoin Core 30: Core's own descriptor wallet, a wallet
 * synced through Blockwire's Esplora dialect (bitcoinerlab's `EsploraExplorer`, unmodified) and
 * one synced through Blockwire's Electrum server (bitcoinerlab's `ElectrumExplorer`, unmodified),
 * for the same descriptors: a P2WPKH and a P2TR account, each with a receive and a change branch.
 * Core's wallet holds the private keys (and makes the payment); the two client wallets hold only
 * the account's public keys and find their addresses by gap-limit discovery (20 unused in a row,
 * per branch), by Electrum script hash on both protocols. At each step — coins received (some
 * unconfirmed), a payment from the wallet in the mempool, the payment confirmed, a 2-block reorg
 * that puts the wallet's transactions back in the mempool on a longer chain, and their
 * confirmation again — each client's balance (confirmed + unconfirmed) equals Core's
 * `getbalances`, the two clients' confirmed and unconfirmed parts are equal, and each client's
 * unspent outputs (outpoint, value, confirmed or not) are Core's `listunspent`. Where the wallet
 * has no unconfirmed spend of its own, the confirmed and unconfirmed parts are also Core's
 * `trusted` and `untrusted_pending` (with one, Core counts its own unconfirmed change as trusted,
 * and both protocols count the spent coins as confirmed until the spend confirms).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ElectrumExplorer, EsploraExplorer, type Explorer } from '@bitcoinerlab/explorer';
import * as btc from '@scure/btc-signer';
import { HDKey } from '@scure/bip32';
import { createHash, randomBytes } from 'node:crypto';
import { describeBitcoind } from '../../support/bitcoind.js';
import { startStack, type Stack } from '../../support/stack.js';
import { waitFor } from '../../support/wait.js';
import { silentLogger } from '../../../src/log.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { NETWORKS } from '../../../src/bitcoin/network.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { startElectrum, type ElectrumHandle } from '../../../electrum/main.js';

const sat = (btcAmount: number) => Math.round(btcAmount * 1e8);
const VERSIONS = { private: 0x04358394, public: 0x043587cf };
const GAP = 20;
const WALLET = 'parity';

type Kind = 'wpkh' | 'tr';
type Branch = { kind: Kind; change: 0 | 1 };
const BRANCHES: Branch[] = [
  { kind: 'wpkh', change: 0 },
  { kind: 'wpkh', change: 1 },
  { kind: 'tr', change: 0 },
  { kind: 'tr', change: 1 },
];
/** A client's view of the wallet: its balance parts and its unspent outputs (`txid:vout value confirmed`), sorted. */
type View = { confirmed: number; unconfirmed: number; utxos: string[] };
type CoreUnspent = { txid: string; vout: number; amount: number; confirmations: number };

describeBitcoind("Esplora and Electrum wallets see Core's wallet for the same descriptors (Core 30)", () => {
  let s: Stack<'bitcoind'>;
  let electrum: ElectrumHandle;
  let esplora: EsploraExplorer;
  let electrumClient: ElectrumExplorer;
  const call = <T>(method: string, params: unknown[] = [], wallet?: string) => s.node.call<T>(method, params, wallet);

  // The accounts: Core gets their private descriptors, the clients their public keys only.
  const master = HDKey.fromMasterSeed(randomBytes(32), VERSIONS);
  const accounts = { wpkh: master.derive("m/84'/1'/0'"), tr: master.derive("m/86'/1'/0'") };
  const watch = {
    wpkh: HDKey.fromExtendedKey(accounts.wpkh.publicExtendedKey, VERSIONS),
    tr: HDKey.fromExtendedKey(accounts.tr.publicExtendedKey, VERSIONS),
  };
  const outputAt = (b: Branch, i: number) => {
    const pub = watch[b.kind].deriveChild(b.change).deriveChild(i).publicKey!;
    return b.kind === 'wpkh' ? btc.p2wpkh(pub, NETWORKS.regtest) : btc.p2tr(pub.slice(1), undefined, NETWORKS.regtest);
  };
  const scriptAt = (b: Branch, i: number) => outputAt(b, i).script;
  const addressAt = (b: Branch, i: number) => outputAt(b, i).address!;
  const electrumHash = (script: Uint8Array) => Buffer.from(createHash('sha256').update(script).digest()).reverse().toString('hex');

  beforeAll(async () => {
    s = await startStack({ node: 'bitcoind', stamping: false, worker: false });
    const log = silentLogger();
    electrum = await startElectrum({
      config: { ...s.config, electrumTcpPort: 0, electrumTlsPort: undefined, electrumPollMs: 50 },
      log,
      db: s.db.db,
      node: new BitcoindClient({ url: s.node.rpcUrl, log }),
    });
    esplora = new EsploraExplorer({ url: `${s.url}/esplora/${s.apiKey}` });
    await esplora.connect();
    electrumClient = new ElectrumExplorer({ host: '127.0.0.1', port: electrum.tcpPort!, protocol: 'tcp' });
    await electrumClient.connect();

    // Core's descriptor wallet for the same descriptors, with their private keys.
    await call('createwallet', [WALLET, false, true]);
    const requests = [];
    for (const b of BRANCHES) {
      const desc = `${b.kind}(${accounts[b.kind].privateExtendedKey}/${b.change}/*)`;
      const { checksum } = await call<{ checksum: string }>('getdescriptorinfo', [desc]);
      requests.push({ desc: `${desc}#${checksum}`, range: [0, 60], timestamp: 'now', active: true, internal: b.change === 1 });
    }
    const imported = await call<{ success: boolean }[]>('importdescriptors', [requests], WALLET);
    expect(imported.map((r) => r.success)).toEqual(BRANCHES.map(() => true));
  }, 240_000);
  afterAll(async () => {
    if (electrumClient && !electrumClient.isClosed()) electrumClient.close();
    await esplora?.close();
    await electrum?.stop();
    await s?.stop();
  });

  /** Waits until the index holds Core's tip and exactly Core's mempool, and Core's wallet has caught up with both. */
  const settled = async () => {
    await waitFor(
      "the index at Core's tip and mempool",
      async () => {
        const [tip, pool] = await Promise.all([s.node.tip(), call<string[]>('getrawmempool')]);
        const ours = (await (await fetch(`${s.url}/esplora/${s.apiKey}/mempool/txids`)).json()) as string[];
        const hash = await (await fetch(`${s.url}/esplora/${s.apiKey}/blocks/tip/hash`)).text();
        return hash === tip.hash && ours.length === pool.length && pool.every((t) => ours.includes(t));
      },
      60_000,
    );
    await call('syncwithvalidationinterfacequeue');
  };

  /**
   * The wallet as one client finds it: each branch scanned for used scripts by windows of GAP
   * script hashes asked at once (a wallet's batched discovery), until GAP unused follow the last
   * used one; balances from the server; unspent outputs from the transactions of the history.
   */
  const sync = async (client: Explorer): Promise<View> => {
    const found = await Promise.all(
      BRANCHES.map(async (b) => {
        const used: { script: Uint8Array; hash: string; info: Awaited<ReturnType<Explorer['fetchScriptHash']>> }[] = [];
        for (let next = 0, last = -1; next - last - 1 < GAP; next += GAP) {
          const window = Array.from({ length: GAP }, (_, k) => next + k).map((i) => ({
            i,
            script: scriptAt(b, i),
            hash: electrumHash(scriptAt(b, i)),
          }));
          const infos = await Promise.all(window.map((w) => client.fetchScriptHash(w.hash)));
          infos.forEach((info, k) => {
            if (info.txCount + info.unconfirmedTxCount === 0) return;
            last = window[k]!.i;
            used.push({ ...window[k]!, info });
          });
        }
        return used;
      }),
    );
    const used = found.flat();
    const mine = new Set(used.map((u) => Buffer.from(u.script).toString('hex')));
    const heights = new Map<string, number>();
    for (const history of await Promise.all(used.map((u) => client.fetchTxHistory({ scriptHash: u.hash }))))
      for (const h of history) heights.set(h.txId, h.blockHeight);
    const txs = await Promise.all([...heights.keys()].map(async (t) => decodeTx(Buffer.from(await client.fetchTx(t), 'hex'))));
    const spent = new Set(txs.flatMap((t) => t.inputs.map((i) => `${hashToHex(i.prevTxid)}:${i.vout}`)));
    const utxos = txs.flatMap((t) => {
      const txid = hashToHex(t.txid);
      return t.outputs.flatMap((o, vout) =>
        mine.has(Buffer.from(o.script).toString('hex')) && !spent.has(`${txid}:${vout}`)
          ? [`${txid}:${vout} ${o.value} ${heights.get(txid)! > 0}`]
          : [],
      );
    });
    return {
      confirmed: used.reduce((a, u) => a + u.info.balance, 0),
      unconfirmed: used.reduce((a, u) => a + u.info.unconfirmedBalance, 0),
      utxos: utxos.sort(),
    };
  };

  /** Core's wallet: its balances and its unspent outputs in the clients' form. */
  const core = async () => {
    const b = await call<{ mine: { trusted: number; untrusted_pending: number; immature: number } }>('getbalances', [], WALLET);
    const unspent = await call<CoreUnspent[]>('listunspent', [0], WALLET);
    return {
      trusted: sat(b.mine.trusted),
      pending: sat(b.mine.untrusted_pending),
      total: sat(b.mine.trusted) + sat(b.mine.untrusted_pending) + sat(b.mine.immature),
      utxos: unspent.map((u) => `${u.txid}:${u.vout} ${sat(u.amount)} ${u.confirmations > 0}`).sort(),
    };
  };

  /** Both clients against Core; `split`: the wallet has no unconfirmed spend, so the parts are Core's trusted and pending. */
  const compare = async (step: string, split: boolean) => {
    await settled();
    const want = await core();
    const byEsplora = await sync(esplora);
    const byElectrum = await sync(electrumClient);
    expect(want.utxos.length, `${step}: Core's wallet has coins`).toBeGreaterThan(0);
    for (const [name, view] of [
      ['Esplora', byEsplora],
      ['Electrum', byElectrum],
    ] as const) {
      expect(view.utxos, `${step}: ${name}'s unspent outputs`).toEqual(want.utxos);
      expect(view.confirmed + view.unconfirmed, `${step}: ${name}'s balance`).toBe(want.total);
      if (split)
        expect({ confirmed: view.confirmed, unconfirmed: view.unconfirmed }, `${step}: ${name}'s parts`).toEqual({
          confirmed: want.trusted,
          unconfirmed: want.pending,
        });
    }
    expect(byElectrum, `${step}: Electrum's view is Esplora's`).toEqual(byEsplora);
    return want;
  };

  it("received, paid, confirmed, reorganised, confirmed again: the same balance and coins as Core's wallet", async () => {
    // Coins at receive indexes within the gap limit of both accounts; one left unconfirmed.
    await s.node.pay(addressAt({ kind: 'wpkh', change: 0 }, 0), 1_000_000n);
    await s.node.pay(addressAt({ kind: 'wpkh', change: 0 }, 6), 2_000_000n);
    await s.node.pay(addressAt({ kind: 'tr', change: 0 }, 3), 1_500_000n);
    await s.mine(1);
    await s.node.pay(addressAt({ kind: 'tr', change: 0 }, 11), 700_000n);
    const received = await compare('received', true);
    expect(received.pending, 'an unconfirmed receipt').toBeGreaterThan(0);

    // A payment from the wallet (Core's, which holds the keys), its change on a change branch.
    const to = await call<string>('getnewaddress', [], 'miner');
    const payment = await call<string>('sendtoaddress', [to, 0.022], WALLET);
    await compare('payment in the mempool', false);
    const paymentTx = await call<{ decoded: { vout: { scriptPubKey: { address: string } }[] } }>(
      'gettransaction',
      [payment, false, true],
      WALLET,
    );
    const change = paymentTx.decoded.vout.map((o) => o.scriptPubKey.address).filter((a) => a !== to);
    const changeAddresses = BRANCHES.filter((b) => b.change === 1).flatMap((b) => [0, 1, 2].map((i) => addressAt(b, i)));
    expect(change.length, 'the payment has change').toBe(1);
    expect(changeAddresses, 'its change on a change branch the clients discover').toContain(change[0]);

    await s.mine(1);
    const confirmedBlock = (await s.node.tip()).hash;
    await s.node.pay(addressAt({ kind: 'wpkh', change: 0 }, 2), 900_000n);
    await s.mine(1);
    await compare('payment confirmed', true);

    // A 2-block reorg: the blocks with the payment and the receipts are replaced by three empty
    // ones; their transactions go back to the mempool, on a longer chain.
    const before = await s.node.tip();
    await call('invalidateblock', [confirmedBlock]);
    for (let i = 0; i < 3; i++) await call('generateblock', [to, []]);
    const after = await s.node.tip();
    expect(after.height).toBe(before.height + 1);
    expect(await call<string[]>('getrawmempool')).toContain(payment);
    await compare('after the reorg', false);

    await s.mine(1);
    const final = await compare('confirmed again', true);
    expect(final.pending, 'nothing left unconfirmed').toBe(0);
  });
});
