/**
 * Wallets against Bitcoin Core's own wallet: the indexer follows a real regtest bitcoind; the
 * same descriptors are tracked by Blockwire and by Core — a Core wallet with keys ("alice": its
 * eight pkh / sh(wpkh) / wpkh / tr receive and change descriptors, as `listdescriptors` prints
 * them) and a watch-only Core wallet given a 2-of-2 wsh(sortedmulti) by `importdescriptors`.
 * After payments in and out, a replacement (bumpfee) and a reorg (invalidateblock, then a longer
 * branch), Blockwire's answers equal Core's: unspent outputs (listunspent, mempool included),
 * balance (its sum; getbalances' trusted once the mempool is empty; the summary kept on the
 * wallet's row equal to the sums recomputed from the index), the transaction set
 * (listtransactions, without replaced or conflicted ones) and each transaction's net amount
 * (gettransaction amount + fee). The SDK's `wallets.pay` spends multisig outputs of every
 * wrapping with the cosigners' keys (one here and one elsewhere through the PSBT, or two at
 * once): Core's testmempoolaccept takes them, and its watch-only wallet sees the 2-of-2 spent.
 */
import { HDKey } from '@scure/bip32';
import { BlockwireClient } from '../../../client/api.js';
import { finalizePsbt, psbtStatus, signPsbt } from '../../../client/psbt.js';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { withChecksum } from '../../../src/bitcoin/descriptor.js';
import { walletSumsFromIndex } from '../../../indexer/wallet-balances.js';
import { btcToSats } from '../../../src/rpc/types.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { startIndexer, type IndexerHandle } from '../../../indexer/main.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { silentLogger } from '../../../src/log.js';
import { indexerConfig } from '../../support/chain-indexer.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeBitcoind, startBitcoind, type Bitcoind } from '../../support/bitcoind.js';
import { waitFor } from '../../support/wait.js';
import { createApiHarness, type ApiHarness } from '../api/harness.js';

type Unspent = { txid: string; vout: number; amount: number; confirmations: number };
type ListTx = { txid: string; confirmations: number };
type Tracked = { core: string; blockwire: string };

describeBitcoind('wallets against Bitcoin Core descriptor wallets', () => {
  let core: Bitcoind;
  let t: TestDatabase;
  let indexer: IndexerHandle;
  let h: ApiHarness;
  const wallets: Tracked[] = [];
  let alice: Tracked;
  let multi: Tracked;
  const miner = () => core.wallet!;

  const json = async (url: string) => {
    const r = await h.get(url);
    expect(r.statusCode, url).toBe(200);
    return r.json();
  };
  const post = async (url: string, body: unknown) =>
    h.app.inject({ method: 'POST', url, headers: { apiKey: h.key }, payload: body as object });

  /** The index has Core's tip and exactly Core's mempool. */
  async function synced(): Promise<void> {
    await waitFor(
      "the index to have Core's tip and mempool",
      async () => {
        const [best, pool] = await Promise.all([core.call<string>('getbestblockhash'), core.call<string[]>('getrawmempool')]);
        const tip = await readTip(t.db);
        if (tip.hash === null || hashToHex(tip.hash) !== best) return false;
        const ours = (await sql<{ txid: Buffer }>`SELECT txid FROM mempool_txs`.execute(t.db)).rows.map((r) => hashToHex(r.txid)).sort();
        return JSON.stringify(ours) === JSON.stringify([...pool].sort());
      },
      60_000,
    );
  }

  /** Every comparison, for every tracked wallet. */
  async function compare(what: string): Promise<void> {
    await synced();
    for (const w of wallets) {
      const label = `${what} (${w.core})`;
      const coreUtxos = await core.call<Unspent[]>('listunspent', [0, 9_999_999, [], true], w.core);
      const ours = (await json(`/v1/wallets/${w.blockwire}/unspentoutputs?limit=10000`)) as {
        transaction_hash: string;
        index: number;
        value: number;
        confirmations: number;
      }[];
      expect(ours.map((u) => `${u.transaction_hash}:${u.index}=${u.value}/${u.confirmations}`).sort(), label).toEqual(
        coreUtxos.map((u) => `${u.txid}:${u.vout}=${btcToSats(u.amount)}/${u.confirmations}`).sort(),
      );
      const balance = (await json(`/v1/wallets/${w.blockwire}/balance`)) as { confirmed: number; unconfirmed: number };
      expect(balance.confirmed + balance.unconfirmed, label).toBe(coreUtxos.reduce((s, u) => s + Number(btcToSats(u.amount)), 0));
      // The balance is the summary the indexer keeps on the wallet's row: equal to the sums over
      // the wallet's addresses recomputed from the index, after every block, undo and mempool change.
      const sums = await walletSumsFromIndex(t.db, w.blockwire);
      expect(balance, `${label}: summary vs index`).toEqual({ confirmed: Number(sums.confirmed), unconfirmed: Number(sums.unconfirmed) });
      if ((await core.call<string[]>('getrawmempool')).length === 0) {
        const b = await core.call<{ mine: { trusted: number; untrusted_pending: number } }>('getbalances', [], w.core);
        expect(balance, label).toEqual({ confirmed: Number(btcToSats(b.mine.trusted)), unconfirmed: 0 });
      }
      const listed = await core.call<ListTx[]>('listtransactions', ['*', 100_000, 0, true], w.core);
      const pool = new Set(await core.call<string[]>('getrawmempool'));
      // Core keeps replaced and conflicted transactions listed (0 or negative confirmations): count
      // the confirmed ones and the unconfirmed ones still in its mempool.
      const expected = [
        ...new Set(listed.filter((x) => x.confirmations > 0 || (x.confirmations === 0 && pool.has(x.txid))).map((x) => x.txid)),
      ].sort();
      const history = (await json(`/v1/wallets/${w.blockwire}/history?limit=1000`)) as {
        transaction_hash: string;
        net: number;
        confirmations: number;
      }[];
      expect(history.map((e) => e.transaction_hash).sort(), label).toEqual(expected);
      for (const e of history) {
        const tx = await core.call<{ amount: number; fee?: number; confirmations: number }>(
          'gettransaction',
          [e.transaction_hash, true],
          w.core,
        );
        expect(e.net, `${label} net of ${e.transaction_hash}`).toBe(Number(btcToSats(tx.amount + (tx.fee ?? 0))));
        expect(e.confirmations, `${label} confirmations of ${e.transaction_hash}`).toBe(tx.confirmations);
      }
    }
  }

  beforeAll(async () => {
    core = await startBitcoind({ funded: true });
    t = await createMigratedDatabase('corewallet');
    indexer = await startIndexer({
      config: indexerConfig(),
      log: silentLogger(),
      db: t.db,
      databaseUrl: t.url,
      rpcUrl: core.rpcUrl,
      zmqUrl: core.zmqUrl,
    });
    h = await createApiHarness({ settings: { rateLimit: 10_000_000 } }, t);

    // alice: a Core wallet with keys; Blockwire tracks its public descriptors.
    await core.call('createwallet', ['alice']);
    const listed = await core.call<{ descriptors: { desc: string; internal: boolean }[] }>('listdescriptors', [], 'alice');
    expect(listed.descriptors.length).toBe(8);
    const created = await post('/v1/wallets', { descriptors: listed.descriptors.map((d) => d.desc), gap_limit: 20 });
    expect(created.statusCode).toBe(201);
    // Core's own descriptors come back unchanged (normalized form, same checksum) with Core's internal flags.
    const view = created.json() as { id: string; descriptors: string[]; chains: { descriptor: string; change: boolean }[] };
    expect(view.descriptors).toEqual(listed.descriptors.map((d) => d.desc));
    expect(view.chains.map((c) => [c.descriptor, c.change])).toEqual(listed.descriptors.map((d) => [d.desc, d.internal]));
    alice = { core: 'alice', blockwire: view.id };

    // a 2-of-2 multisig watched by a watch-only Core wallet (importdescriptors) and by Blockwire.
    const v = bip32Versions('regtest');
    const keys = [1, 2].map((n) => HDKey.fromMasterSeed(new Uint8Array(32).fill(40 + n), v).derive("m/48'/1'/0'/2'").publicExtendedKey);
    const branch = (b: number) => withChecksum(`wsh(sortedmulti(2,${keys[0]}/${b}/*,${keys[1]}/${b}/*))`);
    await core.call('createwallet', ['multi', true, true]);
    const imported = await core.call<{ success: boolean }[]>(
      'importdescriptors',
      [
        [
          { desc: branch(0), timestamp: 'now', range: [0, 19], active: true, internal: false },
          { desc: branch(1), timestamp: 'now', range: [0, 19], active: true, internal: true },
        ],
      ],
      'multi',
    );
    expect(imported.every((r) => r.success)).toBe(true);
    const m = await post('/v1/wallets', { descriptors: [`wsh(sortedmulti(2,${keys[0]}/<0;1>/*,${keys[1]}/<0;1>/*))`] });
    expect(m.statusCode).toBe(201);
    multi = { core: 'multi', blockwire: (m.json() as { id: string }).id };
    wallets.push(alice, multi);
  });
  afterAll(async () => {
    await h?.close();
    await indexer?.stop();
    await t?.drop();
    await core?.stop();
  });

  it('payments in: to every address type of alice and to the multisig, in the mempool and then confirmed', async () => {
    const outputs: Record<string, number> = {};
    for (const type of ['legacy', 'p2sh-segwit', 'bech32', 'bech32m', 'bech32', 'bech32'])
      outputs[await core.call<string>('getnewaddress', ['', type], 'alice')] = 1.25;
    const multiAddresses = await core.call<string[]>('deriveaddresses', [
      (await core.call<{ descriptors: { desc: string; internal: boolean }[] }>('listdescriptors', [], 'multi')).descriptors.find(
        (d) => !d.internal,
      )!.desc,
      [0, 2],
    ]);
    for (const a of multiAddresses) outputs[a] = 0.5;
    await core.call('sendmany', ['', outputs], miner());
    await compare('payments in the mempool');
    await core.mine(1);
    await compare('payments confirmed');
    // (the comparisons above were not of empty lists)
    expect(((await json(`/v1/wallets/${alice.blockwire}/unspentoutputs`)) as unknown[]).length).toBe(6);
    expect(((await json(`/v1/wallets/${multi.blockwire}/unspentoutputs`)) as unknown[]).length).toBe(3);
    expect(await json(`/v1/wallets/${multi.blockwire}/balance`)).toEqual({ confirmed: 150_000_000, unconfirmed: 0 });
  });

  it('payments out: alice pays with change to her change chain; the multisig balance stays', async () => {
    const dest = await core.call<string>('getnewaddress', [], miner());
    await core.call('sendtoaddress', [dest, 2.1], 'alice');
    await core.call('sendtoaddress', [dest, 0.3], 'alice');
    await compare('spends in the mempool');
    const used = (await json(`/v1/wallets/${alice.blockwire}/addresses?used=true&change=true`)) as unknown[];
    expect(used.length).toBeGreaterThan(0);
    await core.mine(1);
    await compare('spends confirmed');
  });

  it("a replacement: bumpfee replaces alice's payment; the replaced one leaves", async () => {
    const dest = await core.call<string>('getnewaddress', [], miner());
    const txid = await core.call<string>('sendtoaddress', [dest, 0.7], 'alice');
    await compare('before the bump');
    const bumped = await core.call<{ txid: string }>('bumpfee', [txid], 'alice');
    expect(bumped.txid).not.toBe(txid);
    await compare('after the bump');
    await core.mine(1);
    await compare('replacement confirmed');
  });

  it("a reorg: the block holding alice's payments is invalidated (they return to the mempool), then a longer branch confirms them again", async () => {
    const dest = await core.call<string>('getnewaddress', [], miner());
    await core.call('sendtoaddress', [dest, 0.4], 'alice');
    const incoming = await core.call<string>('getnewaddress', ['', 'bech32m'], 'alice');
    await core.call('sendtoaddress', [incoming, 0.9], miner());
    const [hash] = await core.mine(1);
    await compare('before the reorg');
    await core.call('invalidateblock', [hash]);
    await compare('block invalidated: its transactions back in the mempool');
    await core.mine(2);
    await compare('after the longer branch');
  });

  it("the SDK pays from multisig wallets (wsh(multi), sh(wsh(sortedmulti)), sh(multi), and the 2-of-2 Core watches), signed with the cosigners' keys; Core accepts the transactions", async () => {
    const address = h.app.server.address();
    if (address === null || typeof address !== 'object') await h.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (h.app.server.address() as { port: number }).port;
    const client = new BlockwireClient({ url: `http://127.0.0.1:${port}`, apiKey: h.key, network: 'regtest' });
    const accept = async (hex: string) =>
      (await core.call<{ allowed: boolean; 'reject-reason'?: string }[]>('testmempoolaccept', [[hex]]))[0]!;

    // A 2-of-3 wallet of the three wrappings, each key with its origin (signed from the master keys).
    const v = bip32Versions('regtest');
    const masters = [61, 62, 63].map((n) => HDKey.fromMasterSeed(new Uint8Array(32).fill(n), v));
    const cosigners = masters
      .map((m) => `[${m.fingerprint.toString(16).padStart(8, '0')}/48h/1h/0h/2h]${m.derive("m/48'/1'/0'/2'").publicExtendedKey}/<0;1>/*`)
      .join(',');
    const created = await post('/v1/wallets', {
      descriptors: [`wsh(multi(2,${cosigners}))`, `sh(wsh(sortedmulti(2,${cosigners})))`, `sh(multi(2,${cosigners}))`],
      gap_limit: 5,
    });
    expect(created.statusCode).toBe(201);
    const id = (created.json() as { id: string }).id;
    const receive = ((await json(`/v1/wallets/${id}/addresses?change=false&limit=100`)) as { address: string; index: number }[]).filter(
      (a) => a.index === 0,
    );
    expect(receive).toHaveLength(3);
    for (const a of receive) await core.call('sendtoaddress', [a.address, 0.5], miner());
    await core.mine(1);
    await synced();
    expect(await client.wallets.balance(id)).toEqual({ confirmed: 150_000_000n, unconfirmed: 0n });
    const dest = await core.call<string>('getnewaddress', [], miner());

    // One cosigner here: the PSBT carries its signature on every input; the second signs it elsewhere.
    const partial = await client.wallets.pay(id, { outputs: [{ address: dest, amount: 120_000_000n }], feeRate: 2n, key: [masters[0]!] });
    expect(partial.signed).toBeNull();
    expect(psbtStatus(partial.psbt).inputs.map((i) => [i.present, i.required])).toEqual([
      [1, 2],
      [1, 2],
      [1, 2],
    ]);
    const second = [...new Set(partial.paths)].map((p) => masters[1]!.derive(p.replace(/h/g, "'")).privateKey!);
    const cosigned = finalizePsbt(signPsbt(partial.psbt, second, 'regtest'));
    expect(await accept(cosigned.hex)).toMatchObject({ allowed: true });

    // Two cosigners here: signed and finalized at once; Core takes it, and the balance follows.
    const payment = await client.wallets.pay(id, {
      outputs: [{ address: dest, amount: 120_000_000n }],
      feeRate: 2n,
      key: [masters[1]!, masters[2]!],
    });
    expect(payment.signed).not.toBeNull();
    expect(await accept(payment.signed!.hex)).toMatchObject({ allowed: true });
    expect(await core.call<string>('sendrawtransaction', [payment.signed!.hex])).toBe(payment.signed!.txid);
    await core.mine(1);
    await synced();
    expect(await client.wallets.balance(id)).toEqual({ confirmed: 150_000_000n - 120_000_000n - payment.signed!.fee, unconfirmed: 0n });

    // The 2-of-2 that Core's watch-only wallet tracks, spent from the account keys (no key origin):
    // Core's wallet sees the spend and the change exactly as Blockwire does.
    const accounts = [1, 2].map((n) => HDKey.fromMasterSeed(new Uint8Array(32).fill(40 + n), v).derive("m/48'/1'/0'/2'"));
    const spend = await client.wallets.pay(multi.blockwire, {
      outputs: [{ address: dest, amount: 50_000_000n }],
      feeRate: 2n,
      key: accounts,
    });
    expect(spend.signed).not.toBeNull();
    expect(spend.change).not.toBeNull();
    expect(await core.call<string>('sendrawtransaction', [spend.signed!.hex])).toBe(spend.signed!.txid);
    await compare('multisig spent by the SDK, in the mempool');
    await core.mine(1);
    await compare('multisig spent by the SDK, confirmed');
  });
});
