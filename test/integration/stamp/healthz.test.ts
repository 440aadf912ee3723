/**
 * /healthz's `stamping` part on a real stack, composed as `blockwire start` composes it
 * (startBlockwire: indexer + API with the stamper, STAMP_WALLET_WIF set) on the devnode, asked
 * over HTTP: the wallet's addresses are those of the WIF's key (derived here with
 * @scure/btc-signer, not Blockwire's code); its balance is 0 until the devnode pays it, then what
 * the devnode paid (the devnode's UTXO set at those addresses); after a stamp is mined it has
 * fallen by the stamp transaction's fee, as the devnode's mempool entry gave it. Those details
 * are for a request with a valid apiKey: without one (or with a wrong one) /healthz says only
 * that stamping is on.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import * as btc from '@scure/btc-signer';
import { createApiKey } from '../../../src/auth/keys.js';
import { startBlockwire, type Blockwire } from '../../../cli/compose.js';
import { testConfig } from '../../../src/config.js';
import { getIndexTip } from '../../../api/queries/chain.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { createLogger, silentLogger } from '../../../src/log.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';
import { randomHash } from './harness.js';
import { waitFor, waitForProgress } from '../../support/wait.js';

const REGTEST = { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef };

type Stamping = {
  address: string;
  addresses: string[];
  balance: { confirmed: number; spendable: number; unconfirmed_change: number };
  can_pay: boolean;
  pending_txs: { signed: number; broadcast: number };
};

const privateKey = Uint8Array.from(randomBytes(32));
const publicKey = secp256k1.getPublicKey(privateKey, true);
const expected = {
  wif: btc.WIF(REGTEST).encode(privateKey),
  p2wpkh: btc.p2wpkh(publicKey, REGTEST).address!,
  p2pkh: btc.p2pkh(publicKey, REGTEST).address!,
};

let node: Devnode;
let t: TestDatabase;
let bw: Blockwire;
let apiKey: string;

beforeAll(async () => {
  const level = process.env.BLOCKWIRE_TEST_LOG as 'debug' | 'info' | undefined;
  const log = level ? createLogger({ level, name: 'healthz-test' }) : silentLogger();
  node = await startDevnode({ initialBlocks: 101 });
  t = await createMigratedDatabase('healthz');
  const config = testConfig({
    network: 'regtest',
    bitcoindRpcUrl: node.rpcUrl,
    bitcoindZmqUrl: node.zmqUrl,
    databaseUrl: t.url,
    redisUrl: inject('redisUrl'),
    host: '127.0.0.1',
    port: 0,
    pollIntervalMs: 100,
    stampWalletWif: expected.wif,
    stampBatchWindowMs: 200,
    stampPollMs: 100,
  });
  bw = await startBlockwire({
    config,
    log,
    roles: new Set(['indexer', 'api']),
    db: t.db,
    databaseUrl: t.url,
    redisUrl: config.redisUrl!,
    redisPrefix: uniqueRedisPrefix('healthz'),
  });
  apiKey = (await createApiKey(t.db, { name: 'healthz' })).key;
  await synced();
});
afterAll(async () => {
  await bw?.stop();
  await node?.stop();
  await t?.drop();
});

/** The index at the node's tip: fails when it has not moved for 60 s (a loaded machine is slow, not stuck). */
async function synced(): Promise<void> {
  let at = '';
  await waitForProgress(
    'the index at the node tip',
    async () => {
      const index = await getIndexTip(t.db);
      at = `${index.height}`;
      return index.hash !== null && hashToHex(index.hash) === node.tip().hash;
    },
    () => at,
  );
}

async function stamping(): Promise<Stamping> {
  const res = await fetch(`${bw.apiUrl}/healthz`, { headers: { apiKey } });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { stamping?: Stamping };
  expect(body.stamping, 'healthz has a stamping part').toBeDefined();
  return body.stamping!;
}

/** What the devnode's UTXO set holds at the wallet's two addresses (sat). */
function paidByDevnode(): number {
  const scripts = new Set(
    [expected.p2wpkh, expected.p2pkh].map((a) => Buffer.from(btc.OutScript.encode(btc.Address(REGTEST).decode(a))).toString('hex')),
  );
  let sum = 0n;
  for (const coin of node.node.chain.utxo.values()) if (scripts.has(Buffer.from(coin.script).toString('hex'))) sum += coin.value;
  return Number(sum);
}

describe('/healthz stamping on a started stack', () => {
  it('without a valid apiKey shows no wallet data: no address, balance or queue', async () => {
    for (const headers of [{}, { apiKey: 'bw_not_a_key' }] as Record<string, string>[]) {
      for (const path of ['/healthz', '/readyz']) {
        const res = await fetch(`${bw.apiUrl}${path}`, { headers });
        const text = await res.text();
        expect((JSON.parse(text) as { stamping?: unknown }).stamping, path).toEqual({ enabled: true });
        for (const secret of [expected.p2wpkh, expected.p2pkh, 'balance', 'address', 'can_pay'])
          expect(text, `${path} ${secret}`).not.toContain(secret);
      }
    }
  });

  it('shows the addresses of STAMP_WALLET_WIF and no balance before the wallet is funded', async () => {
    const s = await stamping();
    expect(s.address).toBe(expected.p2wpkh);
    expect(s.addresses).toEqual([expected.p2wpkh, expected.p2pkh]);
    expect(s.balance).toEqual({ confirmed: 0, spendable: 0, unconfirmed_change: 0 });
    expect(s.can_pay).toBe(false);
  });

  it('the balance is what the devnode paid to those addresses, then falls by the fee of a mined stamp', async () => {
    await node.wallet.send(expected.p2wpkh, 1_000_000n, {
      outputs: [
        { to: expected.p2wpkh, sats: 700_000n },
        { to: expected.p2pkh, sats: 450_000n },
      ],
    });
    await node.mine(1);
    await synced();
    const paid = paidByDevnode();
    expect(paid).toBe(2_150_000);
    const funded = await waitFor('the funded balance', async () => {
      const s = await stamping();
      return s.balance.confirmed === paid && s.can_pay && s;
    });
    expect(funded.balance).toEqual({ confirmed: paid, spendable: paid, unconfirmed_change: 0 });

    const res = await fetch(`${bw.apiUrl}/v1/stamps`, {
      method: 'POST',
      headers: { apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ hash: randomHash() }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const txid = ((await res.json()) as { stampid: string }).stampid.split('-')[0]!;
    expect(node.mempool()).toContain(txid);
    const fee = Math.round((await new BitcoindClient({ url: node.rpcUrl }).getMempoolEntry(txid)).fees.base * 1e8);
    expect(fee).toBeGreaterThan(0);

    await node.mine(1);
    await synced();
    expect(paidByDevnode()).toBe(paid - fee);
    const after = await waitFor('the balance after the stamp confirmed', async () => {
      const s = await stamping();
      return s.balance.confirmed === paid - fee && s.pending_txs.broadcast === 0 && s.pending_txs.signed === 0 && s;
    });
    expect(after.balance).toEqual({ confirmed: paid - fee, spendable: paid - fee, unconfirmed_change: 0 });
    expect(after.addresses).toEqual([expected.p2wpkh, expected.p2pkh]);
  });
});
