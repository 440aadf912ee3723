/**
 * The SDK's wallets on a devnode stack: a wallet of four single-key descriptors (pkh, sh(wpkh),
 * wpkh, tr, each with its key origin) is created and read through `client.wallets`, funded on
 * every type, then pays from its unspent outputs: the PSBT is signed on the client from the
 * master key and the paths the server gives, the node accepts it, change goes to the wallet's
 * next change address (reserved: a second payment gets another), and the balances add up. An
 * xpub builds the same PSBT unsigned.
 */
import { HDKey } from '@scure/bip32';
import * as btc from '@scure/btc-signer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlockwireClient } from '../../../client/api.js';
import { parsePsbt } from '../../../client/psbt.js';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { startStack, type Stack } from '../../support/stack.js';
import { waitFor } from '../../support/wait.js';

const master = HDKey.fromMasterSeed(new Uint8Array(32).fill(21), bip32Versions('regtest'));
const fp = master.fingerprint.toString(16).padStart(8, '0');
const account = (purpose: number) => master.derive(`m/${purpose}'/1'/0'`).publicExtendedKey;
const DESCRIPTORS = [
  `pkh([${fp}/44h/1h/0h]${account(44)}/<0;1>/*)`,
  `sh(wpkh([${fp}/49h/1h/0h]${account(49)}/<0;1>/*))`,
  `wpkh([${fp}/84h/1h/0h]${account(84)}/<0;1>/*)`,
  `tr([${fp}/86h/1h/0h]${account(86)}/<0;1>/*)`,
];

describe('SDK wallets', () => {
  let s: Stack;
  let client: BlockwireClient;
  let id: string;

  beforeAll(async () => {
    s = await startStack({ stamping: false, worker: false });
    client = new BlockwireClient({ url: s.url, apiKey: s.apiKey, network: 'regtest' });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('creates and reads a wallet', async () => {
    const w = await client.wallets.create({ descriptors: DESCRIPTORS, gap_limit: 10 });
    id = w.id;
    expect(w.chains.map((c) => c.change)).toEqual([false, true, false, true, false, true, false, true]);
    expect((await client.wallets.get(id)).descriptors).toEqual(w.descriptors);
    expect((await client.wallets.list()).map((x) => x.id)).toEqual([id]);
    const receive = await client.wallets.addresses(id, { change: false });
    expect(receive.items).toHaveLength(40);
    // Fund the first receive address of each descriptor.
    for (const d of [0, 1, 2, 3]) {
      const a = receive.items.filter((x) => x.index === 0)[d]!;
      await s.devnode.wallet.send(a.address, 400_000n);
    }
    await s.mine(1);
    expect(await client.wallets.balance(id)).toEqual({ confirmed: 1_600_000n, unconfirmed: 0n });
    const utxos = await client.wallets.unspentOutputs(id);
    expect(utxos.map((u) => u.path).sort()).toEqual(['m/44h/1h/0h/0/0', 'm/49h/1h/0h/0/0', 'm/84h/1h/0h/0/0', 'm/86h/1h/0h/0/0']);
    // One naming across the SDK: a wallet's output is the address list's output (txid/vout) plus where the wallet derives it.
    for (const u of utxos) {
      expect(Object.keys(u).sort()).toEqual([
        'address',
        'address_index',
        'change',
        'confirmations',
        'path',
        'script',
        'txid',
        'value',
        'vout',
      ]);
      const { address, path, change, address_index, ...plain } = u;
      expect([address_index, change, path.endsWith(`/0/${address_index}`)]).toEqual([0, false, true]);
      expect(await client.listUnspentOutputs(address)).toEqual([plain]);
    }
  });

  it('pays from every output type, signed on the client, change to the reserved next change address', async () => {
    const dest = s.devnode.wallet.address('p2wpkh');
    const payment = await client.wallets.pay(id, { outputs: [{ address: dest, amount: 1_500_000n }], feeRate: 3n, key: master });
    expect(payment.signed).not.toBeNull();
    expect(payment.paths.sort()).toEqual(['m/44h/1h/0h/0/0', 'm/49h/1h/0h/0/0', 'm/84h/1h/0h/0/0', 'm/86h/1h/0h/0/0']);
    expect(payment.change).toMatchObject({ path: expect.stringMatching(/^m\/44h\/1h\/0h\/1\/0$/) });
    const txid = await client.sendTransaction(payment.signed!.hex);
    expect(txid).toBe(payment.signed!.txid);
    await waitFor('the payment in the wallet history', async () =>
      (await client.wallets.history(id)).items.some((e) => e.transaction_hash === txid),
    );
    const entry = (await client.wallets.history(id)).items.find((e) => e.transaction_hash === txid)!;
    expect(entry.net).toBe(-(1_500_000n + payment.signed!.fee));
    await s.mine(1);
    const b = await client.wallets.balance(id);
    expect(b).toEqual({ confirmed: 1_600_000n - 1_500_000n - payment.signed!.fee, unconfirmed: 0n });
    const left = await client.wallets.unspentOutputs(id);
    expect(left.map((u) => [u.path, u.change])).toEqual([[payment.change!.path, true]]);
    // The change address was reserved: the next change address is another one.
    expect((await client.wallets.nextAddress(id, { change: true })).path).toBe('m/44h/1h/0h/1/1');
  });

  it('an account xpub builds the same kind of PSBT, unsigned (absolute paths are taken from its depth on)', async () => {
    // (the only output left is the pkh change: the pkh account's xpub derives its key)
    const watch = HDKey.fromExtendedKey(account(44), bip32Versions('regtest'));
    const p = await client.wallets.pay(id, {
      outputs: [{ address: s.devnode.wallet.address('p2tr'), amount: 10_000n }],
      feeRate: 2n,
      key: watch,
    });
    expect(p.signed).toBeNull();
    const tx = parsePsbt(p.psbt);
    expect(tx.inputsLength).toBe(1);
    expect(tx.isFinal).toBe(false);
    // Signing that PSBT elsewhere with the child key works.
    const child = master.derive(p.paths[0]!.replace(/h/g, "'"));
    tx.sign(child.privateKey!);
    tx.finalize();
    expect(btc.Transaction.fromRaw(tx.extract()).id).toBe(tx.id);
  });
});
