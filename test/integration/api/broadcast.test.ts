/**
 * POST /transactions against the devnode (Core's codes and messages): accepted, resent
 * (idempotent), confirmed then resent (idempotent), conflicting, dust, unknown parent (that can
 * or cannot still appear), spent parent, undecodable, node down or warming up — each with the status, code and `retry` the
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

  it('an unknown parent that nothing says will come → 400 ERR_TX_INPUTS_UNKNOWN, retry false; one a reorg took out → 409 ERR_TX_INPUTS_MISSING, retry true', async () => {
    const parent = node.wallet.createTx(node.wallet.address('p2wpkh'), 300_000n);
    const parentId = hashToHex(decodeTx(Buffer.from(parent, 'hex')).txid);
    // A child of a signed transaction the node has never seen: a wallet payment whose first
    // outpoint is rewritten to the unbroadcast parent (inputs are looked up before scripts).
    const child = Buffer.from(node.wallet.createTx(node.wallet.address('p2wpkh'), 10_000n), 'hex');
    const tx = decodeTx(child);
    const at = Buffer.from(tx.bytes).indexOf(Buffer.from(tx.inputs[0]!.prevTxid));
    Buffer.from(parentId, 'hex').reverse().copy(child, at);
    const r = await post(child.toString('hex'));
    expect(r.statusCode).toBe(400);
    expect(r.json()).toMatchObject({ error_code: 'ERR_TX_INPUTS_UNKNOWN', retry: false });
    // The same parent, taken out of the chain by a reorg and not settled yet: it may come back.
    const parentKey = Buffer.from(parentId, 'hex').reverse();
    await h.t.db.insertInto('reorged_txs').values({ txid: parentKey, addr_key: '00000000-0000-0000-0000-000000000001', address: 'x', received: 1n, sent: 0n, spends: Buffer.alloc(0), since_height: 1 }).execute();
    try {
      const again = await post(child.toString('hex'));
      expect(again.statusCode).toBe(409);
      expect(again.json()).toMatchObject({ error_code: 'ERR_TX_INPUTS_MISSING', retry: true });
      expect(again.json().error_message).toContain('reorg');
    } finally {
      await h.t.db.deleteFrom('reorged_txs').where('txid', '=', parentKey).execute();
    }
  });

  it('a child sent while its parent is being sent through this API → 409 ERR_TX_INPUTS_MISSING, retry true', async () => {
    const parentHex = node.wallet.createTx(node.wallet.address('p2wpkh'), 400_000n);
    const parentId = hashToHex(decodeTx(Buffer.from(parentHex, 'hex')).txid);
    const child = Buffer.from(node.wallet.createTx(node.wallet.address('p2wpkh'), 10_000n), 'hex');
    const tx = decodeTx(child);
    Buffer.from(parentId, 'hex').reverse().copy(child, Buffer.from(tx.bytes).indexOf(Buffer.from(tx.inputs[0]!.prevTxid)));
    // The node holds the parent's broadcast until the child's answer is known.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let arrived!: () => void;
    const parentAtNode = new Promise<void>((r) => (arrived = r));
    const real = new BitcoindClient({ url: node.rpcUrl, timeoutMs: 2000 });
    const slow = await createApiHarness(
      {
        node: {
          getBlockchainInfo: () => real.getBlockchainInfo(),
          sendRawTransaction: async (hex: string) => {
            if (hex === parentHex) {
              arrived();
              await held;
            }
            return real.sendRawTransaction(hex);
          },
        },
      },
      h.t,
    );
    try {
      const sendParent = slow.app.inject({ method: 'POST', url: '/v1/transactions', headers: { apiKey: slow.key }, payload: { tx: parentHex } });
      await parentAtNode;
      const r = await slow.app.inject({ method: 'POST', url: '/v1/transactions', headers: { apiKey: slow.key }, payload: { tx: child.toString('hex') } });
      expect(r.statusCode).toBe(409);
      expect(r.json()).toMatchObject({ error_code: 'ERR_TX_INPUTS_MISSING', retry: true });
      release();
      expect((await sendParent).statusCode).toBe(200);
    } finally {
      release();
      await slow.close();
    }
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
