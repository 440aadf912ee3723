/**
 * The SDK end to end against a whole Blockwire (test/support/stack.ts), once on a real regtest
 * bitcoind and once on the devnode: every feature builds, signs and broadcasts through the API,
 * sees its transaction confirmed in the index and the balances move exactly as expected; every
 * transaction the SDK built is the one the node holds, and the API's view of it matches
 * @scure/btc-signer's decoding of the bytes. The node is driven through calls both kinds answer
 * (its wallet pays, it mines, it reports its tip).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { BlockwireClient } from '../../../client/api.js';
import { ApiError, DustError } from '../../../client/errors.js';
import { ADDRESS_TYPES, Key } from '../../../client/keys.js';
import { MULTISIG_TYPES, createMultisig } from '../../../client/multisig.js';
import { combinePsbts, finalizePsbt, psbtStatus, signPsbt } from '../../../client/psbt.js';
import { keySource, multisigSource } from '../../../client/sources.js';
import type { WebSocketConstructor, WebSocketLike } from '../../../client/stream.js';
import type { StreamEvent } from '../../../client/types.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { describeNodes } from '../../support/nodes.js';
import { startStack, type Stack } from '../../support/stack.js';

describeNodes('the SDK end to end', (entry) => {
  let stack: Stack<typeof entry.name>;
  let client: BlockwireClient;
  let rpc: BitcoindClient;

  beforeAll(async () => {
    stack = await startStack({ node: entry.name });
    client = new BlockwireClient({ url: stack.url, apiKey: stack.apiKey, network: 'regtest', WebSocket });
    rpc = new BitcoindClient({ url: stack.node.rpcUrl });
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
  });

  /** Pays each address from the node's wallet (one transaction), mines it and waits for the index. */
  async function fund(payments: { address: string; sats: bigint }[]): Promise<string> {
    const txid = await stack.node.payMany(payments);
    await stack.mine(1);
    return txid;
  }

  /**
   * Mines, waits for the index, and checks the transaction: the block the index puts it in holds
   * exactly these bytes, and the API's JSON shows the inputs and outputs scure decodes from them.
   */
  async function confirm(built: { txid: string; hex: string }): Promise<void> {
    await stack.mine(1);
    const api = await client.waitForTransaction(built.txid, { confirmations: 1, timeoutMs: 30_000, intervalMs: 100 });
    // The block the index puts it in holds these bytes (Core finds a mined transaction by its block: no -txindex).
    expect(hex.encode(await rpc.getRawTransaction(built.txid, api.block_hash[0]!.block_hash))).toBe(built.hex);
    const decoded = btc.Transaction.fromRaw(hex.decode(built.hex), { allowUnknownOutputs: true });
    expect(decoded.id).toBe(built.txid);
    expect(api.inputs.map((i) => `${i.transaction_hash}:${i.output_index}`)).toEqual(
      Array.from({ length: decoded.inputsLength }, (_, i) => `${hex.encode(decoded.getInput(i).txid!)}:${decoded.getInput(i).index}`),
    );
    expect(api.outputs.map((o) => [o.script, o.value])).toEqual(
      Array.from({ length: decoded.outputsLength }, (_, i) => [hex.encode(decoded.getOutput(i).script!), decoded.getOutput(i).amount!]),
    );
  }

  const balance = (address: string) =>
    client.getBalance(address).catch((err: unknown) => (err instanceof ApiError && err.status === 404 ? 0n : Promise.reject(err)));

  describe('reading the index', () => {
    it('blockchain, blocks, transactions and paged address lists match the node', async () => {
      const tip = await client.getBlockchain();
      const nodeTip = await stack.node.tip();
      expect(tip).toEqual({ best_block_hash: nodeTip.hash, best_height: nodeTip.height });
      const block = await client.getBlock(tip.best_block_hash);
      expect(block.transaction_list).toEqual((await rpc.getBlock(tip.best_block_hash, 1)).tx);
      const key = Key.random('regtest');
      const address = key.address('p2wpkh');
      for (let i = 0; i < 3; i++) await fund([{ address, sats: BigInt(10_000 + i) }]);
      const pages: string[][] = [];
      let page = await client.getHistory(address, { limit: 2 });
      pages.push(page.items);
      while (page.next) pages.push((page = await client.historyPage(page.next)).items);
      expect(pages.map((p) => p.length)).toEqual([2, 1]);
      const all: string[] = [];
      for await (const h of client.history(address, { limit: 1 })) all.push(h);
      expect(all).toEqual(pages.flat());
      const unspent = await client.listUnspentOutputs(address, { limit: 1 });
      expect(unspent.map((u) => u.value).sort()).toEqual([10_000n, 10_001n, 10_002n]);
      expect(await client.getBalance(address)).toBe(30_003n);
      await expect(client.getTransaction('00'.repeat(32))).rejects.toMatchObject({ status: 404, code: 'ERR_TX_NOT_FOUND', retry: false });
      await expect(client.getBlock('zz')).rejects.toMatchObject({ status: 400 });
      await expect(client.getBalance(Key.random('main').address())).rejects.toMatchObject({ status: 400, code: 'ERR_WRONG_NETWORK' });
      await expect(new BlockwireClient({ url: stack.url, apiKey: 'bw_nope' }).getBlockchain()).rejects.toMatchObject({ status: 401 });
      expect(await client.listUnspentOutputs(Key.random('regtest').address())).toEqual([]);
    });
  });

  describe('payments', () => {
    it('spends all four single-key types; balances move by the amount and the fee exactly', async () => {
      const payer = Key.random('regtest');
      await fund(ADDRESS_TYPES.map((t) => ({ address: payer.address(t), sats: 40_000n })));
      const payee = Key.random('regtest').address('p2tr');
      const before = await Promise.all(ADDRESS_TYPES.map((t) => balance(payer.address(t))));
      expect(before).toEqual([40_000n, 40_000n, 40_000n, 40_000n]);
      const tx = await client.transaction({ feeRate: 3 }).to(payee, 130_000n).from(payer.toWif()).send();
      expect(new Set(tx.inputs.map((i) => i.address))).toEqual(new Set(ADDRESS_TYPES.map((t) => payer.address(t))));
      await confirm(tx);
      expect(await client.getBalance(payee)).toBe(130_000n);
      const after = (await Promise.all(ADDRESS_TYPES.map((t) => balance(payer.address(t))))).reduce((a, b) => a + b, 0n);
      expect(after).toBe(160_000n - 130_000n - tx.fee);
      expect(tx.fee).toBeGreaterThanOrEqual(3n * BigInt(tx.vsize));
    });

    it('refuses dust unless allowed; the node accepts an allowed 400-sat P2WPKH output; data outputs reach the index', async () => {
      const payer = Key.random('regtest');
      await fund([{ address: payer.address('p2wpkh'), sats: 50_000n }]);
      const small = Key.random('regtest').address('p2wpkh');
      await expect(client.transaction().to(small, 400n).from(payer, 'p2wpkh').build()).rejects.toThrow(DustError);
      const tx = await client
        .transaction({ allowDustyOutputs: true, shuffleOutputs: false })
        .to(small, 400n)
        .data('blockwire e2e')
        .from(payer, 'p2wpkh')
        .send();
      await confirm(tx);
      expect(await client.getBalance(small)).toBe(400n);
      const api = await client.getTransaction(tx.txid);
      expect(api.outputs[1]!.data).toBe(hex.encode(new TextEncoder().encode('blockwire e2e')));
      expect(api.outputs[1]!.value).toBe(0n);
    });

    it('concurrent builders of one client never share an input; all confirm', async () => {
      const payer = Key.random('regtest');
      await fund(Array.from({ length: 6 }, () => ({ address: payer.address('p2wpkh'), sats: 20_000n })));
      const payee = Key.random('regtest').address('p2wpkh');
      const txs = await Promise.all(
        Array.from({ length: 5 }, () => client.transaction({ feeRate: 1 }).to(payee, 15_000n).from(payer, 'p2wpkh').send()),
      );
      const inputs = txs.flatMap((t) => t.inputs.map((i) => `${i.txid}:${i.vout}`));
      expect(new Set(inputs).size).toBe(inputs.length);
      await stack.mine(1);
      for (const t of txs) await confirm(t);
      expect(await client.getBalance(payee)).toBe(75_000n);
    });

    it('sendTransaction resubmits while retry (not final yet) and never a faulty transaction (unknown parent, conflict)', async () => {
      const payer = Key.random('regtest');
      await fund([
        { address: payer.address('p2wpkh'), sats: 100_000n },
        { address: payer.address('p2wpkh'), sats: 50_000n },
      ]);
      const mid = Key.random('regtest');
      const parent = await client.transaction({ shuffleOutputs: false }).to(mid.address('p2wpkh'), 60_000n).from(payer, 'p2wpkh').build();
      const child = await client
        .transaction()
        .to(Key.random('regtest').address('p2wpkh'), 50_000n)
        .spend({ txid: parent.txid, vout: 0, value: 60_000n }, keySource(mid, 'p2wpkh', 'regtest'))
        .build();
      // A parent nothing says will come: refused once, never resent.
      let orphanAttempts = 0;
      await expect(client.sendTransaction(child, { initialDelayMs: 50, onRetry: () => orphanAttempts++ })).rejects.toMatchObject({
        status: 400,
        code: 'ERR_TX_INPUTS_UNKNOWN',
        retry: false,
      });
      expect(orphanAttempts).toBe(0);
      // Locked until the next block: resent until a block makes it final.
      const tip = (await stack.node.tip()).height;
      const locked = await client
        .transaction({ lockTime: tip + 1 })
        .to(Key.random('regtest').address('p2wpkh'), 10_000n)
        .from(payer, 'p2wpkh')
        .build();
      const retries: string[] = [];
      const lockedId = await client.sendTransaction(locked, {
        initialDelayMs: 50,
        onRetry: (err) => {
          retries.push(err.code);
          if (retries.length === 1) void stack.mine(1);
        },
      });
      expect(lockedId).toBe(locked.txid);
      expect(retries[0]).toBe('ERR_TX_NOT_FINAL');
      await confirm(locked);
      await parent.send();
      await client.sendTransaction(child);
      await confirm(parent);
      await confirm(child);

      // A second client, blind to the first one's reservations, spends a spent output: refused once, never resent.
      const other = new BlockwireClient({ url: stack.url, apiKey: stack.apiKey, network: 'regtest' });
      const spent = parent.inputs[0]!;
      const conflict = await other
        .transaction()
        .to(payer.address('p2tr'), 10_000n)
        .spend(spent, keySource(payer, 'p2wpkh', 'regtest'))
        .build();
      let attempts = 0;
      await expect(other.sendTransaction(conflict, { onRetry: () => attempts++ })).rejects.toMatchObject({
        status: 409,
        code: 'ERR_TX_CONFLICT',
        retry: false,
      });
      expect(attempts).toBe(0);
    });
  });

  describe.each(MULTISIG_TYPES)('2-of-3 %s multisig', (type) => {
    it('spends with all keys at once and through a PSBT passed between signers', async () => {
      const [a, b, c] = [Key.random('regtest'), Key.random('regtest'), Key.random('regtest')];
      const vault = createMultisig({ m: 2, publicKeys: [a.publicKey, b.publicKey, c.publicKey], type, network: 'regtest' });
      await fund([
        { address: vault.address, sats: 80_000n },
        { address: vault.address, sats: 80_000n },
      ]);
      const dest = Key.random('regtest').address('p2wpkh');
      const atOnce = await client.transaction().to(dest, 30_000n).fromMultisig(vault, [a, c]).send();
      await confirm(atOnce);

      const partial = await client.transaction().to(dest, 40_000n).fromMultisig(vault).buildPsbt();
      const byB = signPsbt(partial.psbt, b.toWif(), 'regtest');
      const byC = signPsbt(partial.psbt, c, 'regtest');
      expect(psbtStatus(byB).complete).toBe(false);
      const final = finalizePsbt(combinePsbts([byB, byC]));
      expect(finalizePsbt(signPsbt(byB, c, 'regtest')).txid).toBe(final.txid);
      await client.sendTransaction(final);
      partial.commit();
      await confirm(final);
      expect(await client.getBalance(dest)).toBe(70_000n);
      expect(await client.getBalance(vault.address)).toBe(160_000n - 70_000n - atOnce.fee - final.fee);
    });
  });

  describe('Open Assets', () => {
    it('issues, transfers and transfers from a multisig; balances read through the index', async () => {
      const issuer = Key.random('regtest');
      const alice = Key.random('regtest');
      const bob = Key.random('regtest').address('p2pkh');
      const [m1, m2] = [Key.random('regtest'), Key.random('regtest')];
      const vault = createMultisig({ m: 2, publicKeys: [m1.publicKey, m2.publicKey], type: 'p2sh', network: 'regtest' });
      await fund([
        { address: issuer.address('p2wpkh'), sats: 100_000n },
        { address: alice.address('p2tr'), sats: 30_000n },
        { address: vault.address, sats: 30_000n },
      ]);
      const assets = client.openAssets;
      const { assetId, tx: issue } = await assets.issue({
        issuer,
        quantity: 21_000n,
        to: alice.address('p2tr'),
        metadata: 'u=https://example.com/a.json',
      });
      await issue.send();
      await confirm(issue);
      expect((await assets.getBalances(alice.address('p2tr'))).map((x) => [x.assetId, x.quantity])).toEqual([[assetId, 21_000n]]);

      const t1 = await assets.transfer({ from: alice, type: 'p2tr', assetId, quantity: 5_000n, to: vault.address });
      await t1.send();
      await confirm(t1);
      const partial = await assets.transferPsbt({ from: multisigSource(vault, [m1]), assetId, quantity: 2_000n, to: bob });
      const final = finalizePsbt(signPsbt(partial.psbt, m2, 'regtest'));
      await client.sendTransaction(final);
      partial.commit();
      await confirm(final);

      const held = async (a: string) => (await assets.getBalances(a)).map((x) => x.quantity);
      expect(await held(alice.address('p2tr'))).toEqual([16_000n]);
      expect(await held(vault.address)).toEqual([3_000n]);
      expect(await held(bob)).toEqual([2_000n]);
      // A fresh engine walks the whole history back to the issuance through the API.
      const { ColoringEngine } = await import('../../../client/assets.js');
      const engine = new ColoringEngine({ source: client });
      expect((await engine.colorOutput(final.txid, 1)).quantity).toBe(2_000n);
      expect(engine.stats.fetched).toBeGreaterThanOrEqual(3);
    });
  });

  describe('stamps', () => {
    it('stamps a hash into an OP_RETURN output and reports its confirmations', async () => {
      const hash = randomBytes(32).toString('hex');
      const id = await client.createStamp(hash, { idempotencyKey: hash });
      expect(id).toMatch(/^[0-9a-f]{64}-\d+$/);
      expect(await client.createStamp(hash, { idempotencyKey: hash })).toBe(id);
      await stack.mine(1);
      const stamp = await client.getStamp(id);
      expect(stamp.confirmations).toBeGreaterThanOrEqual(1);
      expect((await client.getTransaction(stamp.tx)).outputs[stamp.vout]!.data).toBe(hash);
    });
  });

  describe('hooks, subscriptions and the stream', () => {
    let receiver: Server;
    let secret = '';
    const delivered: Record<string, unknown>[] = [];
    beforeAll(async () => {
      receiver = createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          const h = (n: string) => String(req.headers[n]);
          const mac = createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
            .update(`${h('webhook-id')}.${h('webhook-timestamp')}.${body}`)
            .digest('base64');
          const ok = h('webhook-signature').split(' ').includes(`v1,${mac}`);
          if (ok) delivered.push(JSON.parse(body) as Record<string, unknown>);
          res.writeHead(ok ? 204 : 401).end();
        });
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    });
    afterAll(() => new Promise<void>((r) => receiver.close(() => r())));

    it('delivers signed webhooks for a subscribed address and lists the deliveries', async () => {
      const hook = await client.createHook({ type: 'http', url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/in` });
      secret = hook.secret!;
      expect(secret).toMatch(/^whsec_/);
      expect((await client.listHooks()).map((h) => h.id)).toContain(hook.id);
      const watched = Key.random('regtest').address('p2wpkh');
      const sub = await client.createSubscription({ address: watched, action: hook.id, confirmations: 2 });
      expect((await client.listSubscriptions()).find((s) => s.id === sub)).toMatchObject({
        address: watched,
        action: hook.id,
        confirmations: 2,
      });
      const txid = await stack.node.pay(watched, 33_000n);
      await stack.mine(2);
      await expect
        .poll(() => delivered.filter((e) => e.transaction_hash === txid).map((e) => e.type), { timeout: 30_000 })
        .toContain('tx.confirmations');
      const mine = delivered.filter((e) => e.transaction_hash === txid);
      expect(mine.find((e) => e.type === 'tx.confirmed')).toMatchObject({
        address: watched,
        received: 33_000,
        subscription_id: sub,
        action: hook.id,
      });
      // The log shows an answered delivery as delivered once its outcome is written: up to the
      // batch outcome window (BLOCKWIRE_DELIVERY_BATCH_OUTCOME_WINDOW_MS) after the receiver got it.
      const log = async () => {
        const rows: string[] = [];
        for await (const d of client.hookDeliveries(hook.id, { limit: 1 })) rows.push(`${d.type}:${d.status}`);
        return rows;
      };
      await expect.poll(log, { timeout: 10_000 }).toContain('tx.confirmed:delivered');
      await expect(client.deleteHook(hook.id)).rejects.toMatchObject({ status: 409 });
      await client.deleteSubscription(sub);
      await client.deleteHook(hook.id);
      expect((await client.listSubscriptions()).map((s) => s.id)).not.toContain(sub);
    });

    it('streams events, survives a dropped connection and resumes without loss or repetition', async () => {
      const watched = Key.random('regtest').address('p2tr');
      await client.createSubscription({ address: watched, confirmations: 3 });
      // A WebSocket the test can cut, as a network failure would.
      const sockets: WebSocketLike[] = [];
      const Cuttable = function (url: string, protocols?: string | string[], options?: { headers?: Record<string, string> }) {
        const ws = new WebSocket(url, protocols, options);
        sockets.push(ws as unknown as WebSocketLike);
        return ws;
      } as unknown as WebSocketConstructor;
      const stream = client.stream({ WebSocket: Cuttable, reconnect: { initialDelayMs: 50 } });
      await stream.ready;
      const events: StreamEvent[] = [];
      const collecting = (async () => {
        for await (const e of stream) {
          if (e.address === watched) events.push(e);
          if (events.filter((x) => x.type === 'tx.confirmations' && x.confirmations === 3).length === 2) break;
        }
      })();
      const first = await stack.node.pay(watched, 10_000n);
      await stack.mine(1);
      await expect.poll(() => events.length, { timeout: 20_000 }).toBeGreaterThan(0);
      (sockets.at(-1) as unknown as WebSocket).terminate(); // cut the connection mid-stream
      const second = await stack.node.pay(watched, 20_000n);
      await stack.mine(3);
      await collecting;
      expect(sockets.length).toBeGreaterThan(1);
      const ids = events.map((e) => `${e.id}/${e.subscription_id}`);
      expect(new Set(ids).size).toBe(ids.length);
      expect(events.map((e) => BigInt(e.id))).toEqual([...events.map((e) => BigInt(e.id))].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
      for (const txid of [first, second]) {
        const kinds = events.filter((e) => e.transaction_hash === txid).map((e) => `${e.type}@${e.confirmations}`);
        expect(kinds).toContain('tx.confirmed@1');
        expect(kinds).toContain('tx.confirmations@2');
        expect(kinds).toContain('tx.confirmations@3');
      }
    });
  });
});
