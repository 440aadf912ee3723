/**
 * Coinstack's own JavaScript SDK (coinstack-sdk-js 1.1.19 from npm, unmodified) against a
 * running Blockwire on a real regtest Bitcoin Core, at the bare paths, through every call it
 * has: it signs every request with HMAC (its only mode), reads the chain, pays from a P2PKH key
 * with its own TransactionBuilder (unspent outputs in its byte order, signed by the SDK, sent,
 * confirmed; its getHash() is the index's txid), writes a data output, stamps a document, and
 * meets each error path with its numeric code. Its browser mode (credentials in the query) too.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeBitcoind } from '../../support/bitcoind.js';
import { waitFor } from '../../support/wait.js';
import { Key } from '../../../client/keys.js';
import { startCoreStack, type CoreStack } from './core-stack.js';

type SdkError = Error & { errorType?: string; errorCode?: number; status?: number; retry?: boolean; cause?: string };
type SdkTx = { sign(wif: string): void; serialize(): string; getHash(): string };
type SdkBuilder = {
  setInput(a: string): void;
  addOutput(a: string, sats: number): SdkBuilder;
  setDataOutput(hex: string): SdkBuilder;
  setFee(sats: number): SdkBuilder;
  buildTransaction(): Promise<{ tx: SdkTx; balance: unknown }>;
};
type Sdk = {
  isBrowser: boolean;
  getBlockchainStatus(): Promise<{ best_block_hash: string; best_height: number }>;
  getBlock(id: string): Promise<Record<string, unknown>>;
  getTransaction(id: string): Promise<{
    transaction_hash: string;
    block_hash: { block_hash: string; block_height: number }[];
    inputs: Record<string, unknown>[];
    outputs: { index: number; value: string; script: string; used: boolean; address?: string[]; data?: string }[];
    time: string;
    coinbase: boolean;
    is_deleted: boolean;
    addresses: string[];
  }>;
  getBalance(address: string): Promise<number>;
  getTransactions(address: string, opts?: { limit?: number; skip?: number }): Promise<string[]>;
  getUnspentOutputs(
    address: string,
  ): Promise<{ transaction_hash: string; index: number; value: string; script: string; confirmations: number }[]>;
  sendTransaction(hex: string): Promise<{ status: string }>;
  stampDocument(hash: string): Promise<string>;
  getStamp(id: string): Promise<{ tx: string; vout: number; confirmations: number; timestamp: string | null }>;
  getContractStatus(id: string): Promise<unknown>;
  queryContract(id: string, type: string, query: string): Promise<unknown>;
  createTransactionBuilder(): SdkBuilder;
};
type BitcoinJs = {
  ECKey: { fromWIF(wif: string): unknown };
  TransactionBuilder: new () => {
    addInput(txid: string, vout: number): void;
    addOutput(address: string, sats: number): void;
    sign(i: number, key: unknown): void;
    build(): { toHex(): string };
  };
};
const require = createRequire(import.meta.url);
const CoinStack = require('coinstack-sdk-js') as (new (apiKey: string, secretKey: string, endpoint: string, protocol: string) => Sdk) & {
  Util: { bitcoin(): BitcoinJs };
};

/** A transaction spending `txid:vout` with `wif`, built with the bitcoinjs-lib the SDK ships. */
function spend(wif: string, txid: string, vout: number, to: string, sats: number): string {
  const bitcoin = CoinStack.Util.bitcoin();
  const b = new bitcoin.TransactionBuilder();
  b.addInput(txid, vout);
  b.addOutput(to, sats);
  b.sign(0, bitcoin.ECKey.fromWIF(wif));
  return b.build().toHex();
}

const reversed = (hex: string) => Buffer.from(hex, 'hex').reverse().toString('hex');

async function rejection(p: Promise<unknown>): Promise<SdkError> {
  try {
    await p;
  } catch (err) {
    return err as SdkError;
  }
  throw new Error('expected the call to fail');
}

describeBitcoind('coinstack-sdk-js 1.1.19, unmodified, against Blockwire on Bitcoin Core', () => {
  let s: CoreStack;
  let sdk: Sdk;
  const payer = Key.random('regtest');
  const payerAddress = payer.address('p2pkh');
  const payee = Key.random('regtest').address('p2pkh');
  const unused = Key.random('regtest').address('p2pkh');
  const funding: string[] = [];
  let paid: string;

  beforeAll(async () => {
    s = await startCoreStack();
    const k = await s.signingKey();
    sdk = new CoinStack(k.access, k.secret, s.endpoint, 'http');
    funding.push(await s.fund(payerAddress, 100_000_000n), await s.fund(payerAddress, 30_000_000n));
    await s.mine(1);
    funding.push(await s.fund(payerAddress, 5_000_000n));
    await s.inMempool(funding[2]!);
  }, 240_000);
  afterAll(async () => s?.stop());

  it('getBlockchainStatus and getBlock: the tip, with children below it and none at it', async () => {
    const status = await sdk.getBlockchainStatus();
    expect(status).toEqual({ best_block_hash: (await s.core.tip()).hash, best_height: (await s.core.tip()).height });
    const tip = await sdk.getBlock(status.best_block_hash);
    const core = await s.core.call<{ hash: string; height: number; time: number; previousblockhash: string; tx: string[] }>('getblock', [
      status.best_block_hash,
      1,
    ]);
    expect(tip).toEqual({
      block_hash: core.hash,
      height: core.height,
      confirmation_time: new Date(core.time * 1000).toISOString().replace('.000Z', 'Z'),
      parent: core.previousblockhash,
      transaction_list: core.tx,
    });
    expect((await sdk.getBlock(core.previousblockhash)).children).toEqual([core.hash]);
  });

  it('getBalance, getTransactions (with and without limit/skip), getUnspentOutputs of a used address', async () => {
    expect(await sdk.getBalance(payerAddress)).toBe(135_000_000);
    const history = await sdk.getTransactions(payerAddress);
    // mempool first, then the confirmed ones newest first
    expect(history[0]).toBe(funding[2]);
    expect(new Set(history)).toEqual(new Set(funding));
    expect(await sdk.getTransactions(payerAddress, { limit: 1 })).toEqual(history.slice(0, 1));
    expect(await sdk.getTransactions(payerAddress, { limit: 1, skip: 1 })).toEqual(history.slice(1, 2));
    expect(await sdk.getTransactions(payerAddress, { skip: 2 })).toEqual(history.slice(2));
    const utxos = await sdk.getUnspentOutputs(payerAddress);
    expect(utxos.map((u) => u.value).sort()).toEqual(['100000000', '30000000', '5000000']);
    for (const u of utxos) {
      // internal byte order: reversed, it is a txid Core knows, and the output pays the address
      const out = await s.core.call<{ vout: { n: number; scriptPubKey: { hex: string; address?: string } }[] }>('getrawtransaction', [
        reversed(u.transaction_hash),
        1,
      ]);
      expect(out.vout[u.index]!.scriptPubKey.address).toBe(payerAddress);
      expect(out.vout[u.index]!.scriptPubKey.hex).toBe(u.script);
    }
    expect(utxos[0]!.confirmations).toBe(0);
    expect(utxos.slice(1).every((u) => u.confirmations === 1)).toBe(true);
  });

  it('an address never used: balance 0, no history, no unspent outputs', async () => {
    expect(await sdk.getBalance(unused)).toBe(0);
    expect(await sdk.getTransactions(unused)).toEqual([]);
    expect(await sdk.getUnspentOutputs(unused)).toEqual([]);
  });

  it('its TransactionBuilder pays from the P2PKH key with a data output: signed, sent, confirmed, getHash() = the index txid', async () => {
    const builder = sdk.createTransactionBuilder();
    builder.setInput(payerAddress);
    builder.addOutput(payee, 120_000_000);
    builder.setDataOutput(Buffer.from('blockwire').toString('hex'));
    builder.setFee(20_000);
    const { tx } = await builder.buildTransaction();
    tx.sign(payer.toWif());
    expect(await sdk.sendTransaction(tx.serialize())).toEqual({ status: 'successful' });
    paid = tx.getHash();
    await s.inMempool(paid);
    expect(await s.core.call('getrawtransaction', [paid])).toBe(tx.serialize());
    const pending = await sdk.getTransaction(paid);
    expect(pending.block_hash).toEqual([]);
    expect(pending.is_deleted).toBe(false);
    expect(Date.parse(pending.time)).toBeGreaterThan(Date.now() - 3_600_000);
    await s.mine(1);
    const mined = await sdk.getTransaction(paid);
    expect(mined.transaction_hash).toBe(paid);
    expect(mined.block_hash).toEqual([{ block_hash: (await s.core.tip()).hash, block_height: (await s.core.tip()).height }]);
    const data = mined.outputs.find((o) => o.data !== undefined)!;
    expect(data).toMatchObject({ value: '0', data: Buffer.from('blockwire').toString('hex') });
    expect(data.address).toBeUndefined();
    expect(mined.outputs.find((o) => o.address?.[0] === payee)!.value).toBe('120000000');
    expect(mined.inputs.every((i) => Array.isArray(i.address) && (i.address as string[])[0] === payerAddress)).toBe(true);
    expect(await sdk.getTransactions(payee)).toEqual([paid]);
    expect(await sdk.getBalance(payee)).toBe(120_000_000);
    // the change came back to the payer: balance = what it had less what it paid
    expect(await sdk.getBalance(payerAddress)).toBe(135_000_000 - 120_000_000 - 20_000);
  });

  it('stampDocument and getStamp', async () => {
    const hash = createHash('sha256').update('a document').digest('hex');
    const id = await sdk.stampDocument(hash);
    expect(id).toMatch(/^[0-9a-f]{64}-\d+$/);
    const [txid, vout] = id.split('-') as [string, string];
    await s.inMempool(txid);
    await s.mine(1);
    const stamp = await waitFor('the stamp confirmed', async () => {
      const st = await sdk.getStamp(id);
      return st.confirmations >= 1 ? st : undefined;
    });
    expect(stamp).toMatchObject({ tx: txid, vout: Number(vout), confirmations: 1 });
    expect(Date.parse(stamp.timestamp!)).not.toBeNaN();
    const out = await s.core.call<{ vout: { scriptPubKey: { hex: string } }[] }>('getrawtransaction', [txid, 1]);
    expect(out.vout[Number(vout)]!.scriptPubKey.hex).toBe(`6a20${hash}`);
  });

  it('every error path reaches the application with its numeric code', async () => {
    const notFound = await rejection(sdk.getTransaction('ab'.repeat(32)));
    expect(notFound).toMatchObject({
      errorType: 'io.coinstack#ResourceNotFoundError',
      errorCode: 3003,
      status: 404,
      retry: false,
      cause: 'Requested transaction not found.',
    });
    expect(await rejection(sdk.getBlock('cd'.repeat(32)))).toMatchObject({
      errorCode: 3003,
      status: 404,
      cause: 'Requested block not found.',
    });
    expect(await rejection(sdk.getBlock('nothex'))).toMatchObject({ errorCode: 3003, status: 404 });
    expect(await rejection(sdk.getBalance('not-an-address'))).toMatchObject({
      errorType: 'io.coinstack#ValidationFailed',
      errorCode: 3004,
      status: 400,
      retry: false,
    });
    expect(await rejection(sdk.getStamp('bad-id'))).toMatchObject({ errorCode: 3004, status: 400 });
    expect(await rejection(sdk.getStamp(`${'00'.repeat(32)}-0`))).toMatchObject({ errorCode: 3003, status: 404 });
    expect(await rejection(sdk.stampDocument('xyz'))).toMatchObject({ errorCode: 3004, status: 400 });
    expect(await rejection(sdk.sendTransaction('zz'))).toMatchObject({ errorCode: 3004, status: 400, retry: false });
    expect(await rejection(sdk.sendTransaction('0100'))).toMatchObject({ errorCode: 3004, status: 400, retry: false });
    // an output `paid` spent, spent again: refused for good (the index knows it spent)
    const spentInput = (await sdk.getTransaction(paid)).inputs[0]!;
    const doubleSpend = await rejection(
      sdk.sendTransaction(spend(payer.toWif(), spentInput.transaction_hash as string, spentInput.output_index as number, unused, 1_000)),
    );
    expect(doubleSpend).toMatchObject({ errorCode: 3004, status: 400, retry: false });
    expect(doubleSpend.cause).toMatch(/missingorspent/);
    // an output of a transaction that exists nowhere: refused for good too
    const orphan = await rejection(sdk.sendTransaction(spend(payer.toWif(), 'ee'.repeat(32), 0, unused, 1_000)));
    expect(orphan).toMatchObject({ errorCode: 3004, status: 400, retry: false });
    // a script Core refuses (signed with a key that does not own the output)
    const builder = sdk.createTransactionBuilder();
    builder.setInput(payee);
    builder.addOutput(unused, 1_000);
    const { tx: again } = await builder.buildTransaction();
    again.sign(payer.toWif()); // the wrong key: Core refuses the script
    const bad = await rejection(sdk.sendTransaction(again.serialize()));
    expect(bad).toMatchObject({ errorCode: 3004, status: 400, retry: false });
    expect(bad.cause).toMatch(/script|signature/i);
    expect(await rejection(sdk.getContractStatus(payerAddress))).toMatchObject({
      errorType: 'io.coinstack#InternalServerError',
      errorCode: 4001,
      status: 500,
      cause: 'smart contract is not enabled',
    });
    expect(await rejection(sdk.queryContract(payerAddress, 'LSC', 'return 1'))).toMatchObject({ errorCode: 4001, status: 500 });
    // a wrong secret: coinstackd's 401 is text, so the SDK has only the status
    const k = await s.signingKey();
    const wrong = new CoinStack(k.access, 'not the secret', s.endpoint, 'http');
    const denied = await rejection(wrong.getBlockchainStatus());
    expect(denied.status).toBe(401);
    expect(denied.errorCode).toBeUndefined();
    // a read-only key on a write route, and a key over its rate limit
    const reader = await s.signingKey({ scopes: ['read'] });
    expect(await rejection(new CoinStack(reader.access, reader.secret, s.endpoint, 'http').sendTransaction('00'))).toMatchObject({
      errorType: 'io.coinstack#AccessDeniedError',
      errorCode: 3001,
      status: 400,
      retry: false,
    });
    const slow = await s.signingKey({ rateLimit: 1 });
    const limited = new CoinStack(slow.access, slow.secret, s.endpoint, 'http');
    await limited.getBlockchainStatus();
    expect(await rejection(limited.getBlockchainStatus())).toMatchObject({
      errorType: 'io.coinstack#ThroughputExceededError',
      errorCode: 3002,
      status: 400,
      retry: true,
    });
  });

  it('in browser mode (credentials in the query, the real Content-Type replaced) it reads and broadcasts the same', async () => {
    const k = await s.signingKey();
    const browser = new CoinStack(k.access, k.secret, s.endpoint, 'http');
    browser.isBrowser = true;
    expect(await browser.getBalance(payee)).toBe(120_000_000);
    expect(await browser.getTransactions(payee, { limit: 5 })).toEqual([paid]);
    expect(await rejection(browser.sendTransaction('0100'))).toMatchObject({ errorCode: 3004, status: 400 });
  });
});
