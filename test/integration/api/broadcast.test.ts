/**
 * POST /transactions on a real Bitcoin Core 30 and on the devnode: each refusal the API maps is
 * triggered on the node itself, with Core's own code and reason, and answered with the status,
 * code and `retry` the API promises (retry only when sending the same bytes again can succeed —
 * and where it is true, the same bytes are sent again once the cause is gone and accepted):
 * accepted and resent, confirmed and resent (idempotent), a conflict, dust, no fee, a fee above
 * maxfeerate, a lock time or a BIP68 sequence lock not reached, too long an unconfirmed chain, an
 * unknown parent (that can or cannot still appear), a parent being sent through this API, a
 * parent the index holds as spent, a coin spent in a block the index has not indexed yet,
 * undecodable bytes, the node down. The node warming up (-28) is played on the devnode only:
 * Core cannot be held in its warm-up on demand.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { describeNodes, type TestNode } from '../../support/nodes.js';
import { testKey, type Coin, type TestKey } from '../../support/test-key.js';
import { createApiHarness, type ApiHarness } from './harness.js';

/** A payee that is not the test key (the devnode's and Core's regtest test vector). */
const PAYEE = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';
const COIN = 100_000_000n;
/** About what a one-input P2WPKH transaction with two outputs weighs, in vbytes. */
const VSIZE = 141n;

describeNodes('broadcast', (entry) => {
  let node: TestNode;
  let h: ApiHarness;
  let key: TestKey;
  let coins: Coin[];
  const post = (tx: string, k = h.key) =>
    h.app.inject({ method: 'POST', url: '/v1/transactions', headers: { apiKey: k }, payload: { tx } });
  /** Pays `sats` to PAYEE from `coin`, the rest back to the key less `fee`. */
  const payment = (coin: Coin, sats: bigint, fee = 2n * VSIZE, opts: { sequence?: number; lockTime?: number } = {}) =>
    key.spend(
      [coin],
      [
        { address: PAYEE, sats },
        { address: key.address, sats: coin.sats - sats - fee },
      ],
      opts,
    );
  const take = () => {
    const c = coins.shift();
    if (!c) throw new Error('out of test coins');
    return c;
  };
  const expectError = (
    r: { statusCode: number; json(): Record<string, unknown> },
    status: number,
    code: string,
    retry: boolean,
    cause?: string | RegExp,
  ) => {
    expect([r.statusCode, r.json().error_code, r.json().retry], JSON.stringify(r.json())).toEqual([status, code, retry]);
    if (typeof cause === 'string') expect(r.json().error_cause).toBe(cause);
    else if (cause) expect(r.json().error_cause).toMatch(cause);
  };

  beforeAll(async () => {
    node = await entry.start({ funded: true });
    key = testKey();
    coins = await key.fund(
      node,
      Array.from({ length: 17 }, () => COIN),
    );
    h = await createApiHarness({ node: new BitcoindClient({ url: node.rpcUrl, timeoutMs: 5000 }) });
  });
  afterAll(async () => {
    await h?.close();
    await node?.stop();
  });

  it('accepts a valid transaction and answers its txid; a resend is also 200', async () => {
    const tx = payment(take(), 100_000n);
    const r = await post(tx.hex);
    expect([r.statusCode, r.json()]).toEqual([200, { transaction_hash: tx.txid }]);
    expect(await node.call<string[]>('getrawmempool')).toContain(tx.txid);
    expect((await post(tx.hex.toUpperCase())).json()).toEqual({ transaction_hash: tx.txid });
  });

  it('a transaction already confirmed is answered 200 (idempotent resubmit; the node says -27)', async () => {
    const tx = payment(take(), 50_000n);
    expect((await post(tx.hex)).statusCode).toBe(200);
    await node.mine(1);
    await expect(node.call('sendrawtransaction', [tx.hex])).rejects.toMatchObject({
      code: -27,
      message: 'Transaction outputs already in utxo set',
    });
    const r = await post(tx.hex);
    expect([r.statusCode, r.json()]).toEqual([200, { transaction_hash: tx.txid }]);
  });

  it('a conflict with a mempool transaction it does not outbid → 409 ERR_TX_CONFLICT, retry false', async () => {
    const coin = take();
    expect((await post(payment(coin, 70_000n, 5n * VSIZE).hex)).statusCode).toBe(200);
    const r = await post(payment(coin, 60_000n, 2n * VSIZE).hex);
    expectError(r, 409, 'ERR_TX_CONFLICT', false, /^insufficient fee, rejecting replacement [0-9a-f]{64}; new feerate /);
  });

  it("dust → 400 ERR_TX_REJECTED with the node's reason, retry false", async () => {
    expectError(await post(payment(take(), 100n).hex), 400, 'ERR_TX_REJECTED', false, 'dust, tx with dust output must be 0-fee');
  });

  it('no fee → 400 ERR_TX_REJECTED "min relay fee not met", retry false', async () => {
    expectError(await post(payment(take(), 100_000n, 0n).hex), 400, 'ERR_TX_REJECTED', false, /^min relay fee not met, 0 < \d+$/);
  });

  it('a fee above maxfeerate → 400 ERR_TX_FEE_TOO_HIGH, retry false', async () => {
    expectError(
      await post(payment(take(), 100_000n, COIN / 2n).hex),
      400,
      'ERR_TX_FEE_TOO_HIGH',
      false,
      'Fee exceeds maximum configured by user (e.g. -maxtxfee, maxfeerate)',
    );
  });

  it('a lock time not reached → 409 ERR_TX_NOT_FINAL, retry true; the same bytes are accepted once it is', async () => {
    const { height } = await node.tip();
    const tx = payment(take(), 100_000n, 2n * VSIZE, { lockTime: height + 3, sequence: 0xfffffffe });
    expectError(await post(tx.hex), 409, 'ERR_TX_NOT_FINAL', true, 'non-final');
    // Final in a block of height above its lock time: the next block once the tip is there.
    await node.mine(3);
    expect((await post(tx.hex)).json()).toEqual({ transaction_hash: tx.txid });
  });

  it('a BIP68 sequence lock not reached → 409 ERR_TX_NOT_FINAL, retry true; the same bytes are accepted once it is', async () => {
    // The coin has a few confirmations; a relative lock of 20 blocks is not met yet.
    const tx = payment(take(), 100_000n, 2n * VSIZE, { sequence: 20 });
    expectError(await post(tx.hex), 409, 'ERR_TX_NOT_FINAL', true, 'non-BIP68-final');
    await node.mine(20);
    expect((await post(tx.hex)).json()).toEqual({ transaction_hash: tx.txid });
  });

  it('too long an unconfirmed chain → 503 ERR_TX_MEMPOOL_LIMIT, retry true; the same bytes are accepted after a block', async () => {
    let coin = take();
    for (let i = 0; i < 25; i++) {
      const tx = key.spend([coin], [{ address: key.address, sats: coin.sats - 2n * 110n }]);
      expect((await post(tx.hex)).statusCode, `chain link ${i}`).toBe(200);
      coin = tx.outputs[0]!;
    }
    const last = key.spend([coin], [{ address: key.address, sats: coin.sats - 2n * 110n }]);
    expectError(
      await post(last.hex),
      503,
      'ERR_TX_MEMPOOL_LIMIT',
      true,
      'too-long-mempool-chain, too many unconfirmed ancestors [limit: 25]',
    );
    await node.mine(1);
    expect((await post(last.hex)).json()).toEqual({ transaction_hash: last.txid });
  });

  it('an unknown parent that nothing says will come → 400 ERR_TX_INPUTS_UNKNOWN, retry false; one a reorg took out → 409 ERR_TX_INPUTS_MISSING, retry true', async () => {
    const parent = payment(take(), 300_000n);
    const child = key.spend([parent.outputs[1]!], [{ address: PAYEE, sats: parent.outputs[1]!.sats - 2n * 110n }]);
    expectError(await post(child.hex), 400, 'ERR_TX_INPUTS_UNKNOWN', false, 'bad-txns-inputs-missingorspent');
    // The same parent, taken out of the chain by a reorg and not settled yet: it may come back.
    const parentKey = Buffer.from(parent.txid, 'hex').reverse();
    await h.t.db
      .insertInto('reorged_txs')
      .values({
        txid: parentKey,
        addr_key: '00000000-0000-0000-0000-000000000001',
        address: 'x',
        received: 1n,
        sent: 0n,
        spends: Buffer.alloc(0),
        since_height: 1,
      })
      .execute();
    try {
      const again = await post(child.hex);
      expectError(again, 409, 'ERR_TX_INPUTS_MISSING', true);
      expect(again.json().error_message).toContain('reorg');
    } finally {
      await h.t.db.deleteFrom('reorged_txs').where('txid', '=', parentKey).execute();
    }
  });

  it('a child sent while its parent is being sent through this API → 409 ERR_TX_INPUTS_MISSING, retry true', async () => {
    const parent = payment(take(), 400_000n);
    const child = key.spend([parent.outputs[1]!], [{ address: PAYEE, sats: parent.outputs[1]!.sats - 2n * 110n }]);
    // The node holds the parent's broadcast until the child's answer is known.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let arrived!: () => void;
    const parentAtNode = new Promise<void>((r) => (arrived = r));
    const real = new BitcoindClient({ url: node.rpcUrl, timeoutMs: 5000 });
    const slow = await createApiHarness(
      {
        node: {
          getBlockchainInfo: () => real.getBlockchainInfo(),
          sendRawTransaction: async (hex: string) => {
            if (hex === parent.hex) {
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
      const sendParent = slow.app.inject({
        method: 'POST',
        url: '/v1/transactions',
        headers: { apiKey: slow.key },
        payload: { tx: parent.hex },
      });
      await parentAtNode;
      const r = await slow.app.inject({
        method: 'POST',
        url: '/v1/transactions',
        headers: { apiKey: slow.key },
        payload: { tx: child.hex },
      });
      expectError(r, 409, 'ERR_TX_INPUTS_MISSING', true);
      release();
      expect((await sendParent).statusCode).toBe(200);
      // Sent again now that the parent is in: accepted.
      expect((await post(child.hex)).json()).toEqual({ transaction_hash: child.txid });
    } finally {
      release();
      await slow.close();
    }
  });

  it('a parent the index holds as spent → 409 ERR_TX_CONFLICT, retry false', async () => {
    // A parent the node no longer has unspent (spent in a block) and the index knows as a
    // transaction whose output is not unspent.
    const coin = take();
    expect((await post(payment(coin, 20_000n).hex)).statusCode).toBe(200);
    await node.mine(1);
    const second = payment(coin, 30_000n);
    await h.t.db
      .insertInto('txs')
      .values({
        tx_num: 5n,
        txid: Buffer.from(coin.txid, 'hex').reverse(),
        outs: Buffer.from([0x01, 0x00]),
        ins: Buffer.alloc(0),
        first_seen: null,
      })
      .execute();
    try {
      expectError(await post(second.hex), 409, 'ERR_TX_CONFLICT', false, 'bad-txns-inputs-missingorspent');
    } finally {
      await h.t.db.deleteFrom('txs').where('tx_num', '=', 5n).execute();
    }
  });

  it('a coin the node has spent in a block the index has not indexed yet → 409 ERR_TX_CONFLICT, retry false; a coin both still hold unspent is not blamed', async () => {
    // The index a block behind the node: it still holds the coin unspent (utxos), the node
    // answers "missing or spent" and gettxout null for it.
    const coin = take();
    const fine = take();
    const internal = (c: Coin) => Buffer.from(c.txid, 'hex').reverse();
    const indexed = [coin, fine].map((c, n) => ({
      tx_num: 6n + BigInt(n),
      txid: internal(c),
      outs: Buffer.from([0x01, 0x00]),
      ins: Buffer.alloc(0),
      first_seen: null,
    }));
    await h.t.db.insertInto('txs').values(indexed).execute();
    await h.t.db
      .insertInto('utxos')
      .values(
        [coin, fine].map((c, n) => ({
          txid: internal(c),
          vout: c.vout,
          tx_num: 6n + BigInt(n),
          addr_key: null,
          value: c.sats,
          script: Buffer.from(key.script),
        })),
      )
      .execute();
    try {
      expect((await post(payment(coin, 20_000n).hex)).statusCode).toBe(200);
      await node.mine(1);
      const r = await post(payment(coin, 30_000n).hex);
      expectError(r, 409, 'ERR_TX_CONFLICT', false, 'bad-txns-inputs-missingorspent');
      expect(r.json().error_message).toContain(`${coin.txid}:${coin.vout} is already spent in a block the index has not indexed yet`);
      // A coin both hold unspent beside a parent nobody knows: the unknown parent is the cause.
      const orphan = payment(take(), 300_000n).outputs[1]!;
      const mixed = key.spend([fine, orphan], [{ address: PAYEE, sats: fine.sats + orphan.sats - 2n * 200n }]);
      expectError(await post(mixed.hex), 400, 'ERR_TX_INPUTS_UNKNOWN', false, 'bad-txns-inputs-missingorspent');
    } finally {
      await h.t.db.deleteFrom('utxos').where('tx_num', 'in', [6n, 7n]).execute();
      await h.t.db.deleteFrom('txs').where('tx_num', 'in', [6n, 7n]).execute();
    }
  });

  it('undecodable → 400 ERR_TX_DECODE without asking the node', async () => {
    for (const bad of ['00', 'abcd', '02000000']) expectError(await post(bad), 400, 'ERR_TX_DECODE', false);
  });

  it('node down → 503 ERR_NODE_UNAVAILABLE, retry true; accepted once it is back', async () => {
    const tx = payment(take(), 30_000n);
    // Core's chainstate is written first, so that the kill loses no block (the coin's included).
    if (node.bitcoind) await node.bitcoind.flush().then(() => node.bitcoind!.kill());
    else await node.devnode!.faults.down();
    try {
      expectError(await post(tx.hex), 503, 'ERR_NODE_UNAVAILABLE', true);
    } finally {
      if (node.bitcoind) await node.bitcoind.start();
      else await node.devnode!.faults.up();
    }
    expect((await post(tx.hex)).json()).toEqual({ transaction_hash: tx.txid });
  });

  it.runIf(entry.name === 'devnode')('node warming up (-28) → 503 ERR_NODE_UNAVAILABLE, retry true', async () => {
    const tx = payment(take(), 30_000n);
    node.devnode!.faults.warmup(true);
    try {
      expectError(await post(tx.hex), 503, 'ERR_NODE_UNAVAILABLE', true);
    } finally {
      node.devnode!.faults.warmup(false);
    }
    expect((await post(tx.hex)).json()).toEqual({ transaction_hash: tx.txid });
  });
});
