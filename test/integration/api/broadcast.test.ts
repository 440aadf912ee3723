/**
 * POST /transactions against the devnode (Core's codes and messages): accepted, resent
 * (idempotent), confirmed then resent (idempotent), conflicting, dust, unknown parent, spent
 * parent, undecodable, node down or warming up — each with the status, code and `retry` the
 * API promises (retry only when sending the same bytes again can succeed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { createApiHarness, type ApiHarness } from './harness.js';

describe('broadcast through the devnode', () => {
  let node: Devnode;
  let h: ApiHarness;
  const post = (tx: string, key = h.key) => h.app.inject({ method: 'POST', url: '/v1/transactions', headers: { apiKey: key }, payload: { tx } });

  beforeAll(async () => {
    node = await startDevnode({ initialBlocks: 110 });
    h = await createApiHarness({ node: new BitcoindClient({ url: node.rpcUrl, timeoutMs: 2000 }) });
  });
  afterAll(async () => {
    await h?.close();
    await node?.stop();
  });

  it('accepts a valid transaction and answers its txid; a resend is also 200', async () => {
    const hex = node.wallet.createTx(node.wallet.address('p2wpkh'), 100_000n);
    const txid = hashToHex(decodeTx(Buffer.from(hex, 'hex')).txid);
    const r = await post(hex);
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ transaction_hash: txid });
    expect(node.mempool()).toContain(txid);
    expect((await post(hex.toUpperCase())).json()).toEqual({ transaction_hash: txid });
  });

  it('a transaction already confirmed is answered 200 (idempotent resubmit)', async () => {
    const hex = node.wallet.createTx(node.wallet.address('p2tr'), 50_000n);
    const txid = hashToHex(decodeTx(Buffer.from(hex, 'hex')).txid);
    expect((await post(hex)).statusCode).toBe(200);
    await node.mine(1);
    const r = await post(hex);
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ transaction_hash: txid });
  });

  it('a conflict with a mempool transaction → 409 ERR_TX_CONFLICT, retry false', async () => {
    const first = decodeTx(Buffer.from(node.wallet.createTx(node.wallet.address('p2pkh'), 70_000n), 'hex'));
    const coin = `${hashToHex(first.inputs[0]!.prevTxid)}:${first.inputs[0]!.vout}`;
    expect((await post(Buffer.from(first.bytes).toString('hex'))).statusCode).toBe(200);
    const rival = node.wallet.createTx(node.wallet.address('p2wpkh'), 60_000n, { from: [coin] });
    const r = await post(rival);
    expect(r.statusCode).toBe(409);
    expect(r.json()).toMatchObject({ error_code: 'ERR_TX_CONFLICT', retry: false, error_type: 'conflict' });
    expect(typeof r.json().error_cause).toBe('string');
  });

  it('dust → 400 ERR_TX_REJECTED with the node\'s reason, retry false', async () => {
    const r = await post(node.wallet.createTx(node.wallet.address('p2wpkh'), 100n));
    expect(r.statusCode).toBe(400);
    expect(r.json()).toMatchObject({ error_code: 'ERR_TX_REJECTED', retry: false, error_cause: 'dust, tx with dust output must be 0-fee' });
  });

  it('an unknown parent → 409 ERR_TX_INPUTS_MISSING, retry true (the parent may still come)', async () => {
    const parent = node.wallet.createTx(node.wallet.address('p2wpkh'), 300_000n);
    const parentId = hashToHex(decodeTx(Buffer.from(parent, 'hex')).txid);
    // A child of a signed transaction the node has never seen: a wallet payment whose first
    // outpoint is rewritten to the unbroadcast parent (inputs are looked up before scripts).
    const child = Buffer.from(node.wallet.createTx(node.wallet.address('p2wpkh'), 10_000n), 'hex');
    const tx = decodeTx(child);
    const at = Buffer.from(tx.bytes).indexOf(Buffer.from(tx.inputs[0]!.prevTxid));
    Buffer.from(parentId, 'hex').reverse().copy(child, at);
    const r = await post(child.toString('hex'));
    expect(r.statusCode).toBe(409);
    expect(r.json()).toMatchObject({ error_code: 'ERR_TX_INPUTS_MISSING', retry: true });
  });

  it('a parent the index holds as spent → 409 ERR_TX_CONFLICT, retry false', async () => {
    const hex = node.wallet.createTx(node.wallet.address('p2wpkh'), 20_000n);
    const child = Buffer.from(hex, 'hex');
    const tx = decodeTx(child);
    const fakeParent = Buffer.alloc(32, 0x5a);
    Buffer.from(fakeParent).copy(child, Buffer.from(tx.bytes).indexOf(Buffer.from(tx.inputs[0]!.prevTxid)));
    // The index knows this parent (a txs row) but not its output as unspent: spent in a block.
    await h.t.db.insertInto('txs').values({ tx_num: 5n, txid: fakeParent, outs: Buffer.from([0x01, 0x00]), ins: Buffer.alloc(0), first_seen: null }).execute();
    const r = await post(child.toString('hex'));
    expect(r.statusCode).toBe(409);
    expect(r.json()).toMatchObject({ error_code: 'ERR_TX_CONFLICT', retry: false });
  });

  it('undecodable → 400 ERR_TX_DECODE without asking the node', async () => {
    for (const bad of ['00', 'abcd', '02000000']) {
      const r = await post(bad);
      expect(r.statusCode).toBe(400);
      expect(r.json()).toMatchObject({ error_code: 'ERR_TX_DECODE', retry: false });
    }
  });

  it('node warming up or down → 503 ERR_NODE_UNAVAILABLE, retry true', async () => {
    const hex = node.wallet.createTx(node.wallet.address('p2wpkh'), 30_000n);
    node.faults.warmup(true);
    try {
      const r = await post(hex);
      expect(r.statusCode).toBe(503);
      expect(r.json()).toMatchObject({ error_code: 'ERR_NODE_UNAVAILABLE', retry: true });
    } finally {
      node.faults.warmup(false);
    }
    await node.faults.down();
    try {
      const r = await post(hex);
      expect(r.statusCode).toBe(503);
      expect(r.json()).toMatchObject({ error_code: 'ERR_NODE_UNAVAILABLE', retry: true });
    } finally {
      await node.faults.up();
    }
    expect((await post(hex)).statusCode).toBe(200);
  });
});
