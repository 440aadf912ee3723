/**
 * Stamping when a coin leaves the chain, on the devnode and on a real bitcoind: a reorg takes
 * away the block that paid the wallet (its coinbase) after a stamp spent it. The spender's change
 * is no coin for a new stamp; the tracker abandons the spender once the node says its inputs are
 * missing and the index agrees, the stamp (accepted, so never dropped) goes into a transaction of
 * good coins, and nothing is refused again. When the block comes back, the batcher signs the very
 * same transaction again and stores it without a duplicate key. A transaction the node keeps
 * refusing (a conflicting spend of its coin in the node's mempool) makes the stamper report that
 * it cannot make progress: /healthz, `blockwire status`, /metrics.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { hashToHex, hexToHash } from '../../../src/bitcoin/hash.js';
import { buildApi } from '../../../api/app.js';
import { assessHealth } from '../../../cli/status.js';
import { readDeploymentState } from '../../../src/ops/state.js';
import { buildStampTx } from '../../../stamp/build.js';
import { loadFreeCoins } from '../../../stamp/coins.js';
import { stampDb } from '../../../stamp/tables.js';
import { loadStampWallet } from '../../../stamp/wallet.js';
import { describeBitcoind } from '../../support/bitcoind.js';
import { waitFor } from '../../support/wait.js';
import { createStampHarness, randomHash, type StampHarness } from './harness.js';
import { txRowsByTxid } from '../../../src/db/tx-reads.js';

type TxRow = { txid: Buffer; status: string; last_error: string | null; refusals: number };

for (const core of [false, true]) {
  (core ? describeBitcoind : describe)(`stamping after coins leave the chain, on ${core ? 'a real bitcoind' : 'the devnode'}`, () => {
    let h: StampHarness;
    afterEach(async () => {
      await h?.close();
    });

    const tx = async (txid: Buffer): Promise<TxRow> =>
      (await sql<TxRow>`SELECT txid, status, last_error, refusals FROM stamp_txs WHERE txid = ${txid}`.execute(h.t.db)).rows[0]!;
    const stampRow = async (id: string) =>
      (
        await sql<{
          status: string;
          txid: Buffer | null;
        }>`SELECT s.status, s.txid FROM stamps s JOIN stamp_outputs o ON o.stamp_id = s.id WHERE o.txid = ${Buffer.from(hexToHash(id.split('-')[0]!))} AND o.vout = ${Number(id.split('-')[1])}`.execute(
          h.t.db,
        )
      ).rows[0];
    const inputsOf = async (txid: Buffer) =>
      (
        await sql<{
          prev_txid: Buffer;
          prev_vout: number;
          value: bigint;
          script: Buffer;
        }>`SELECT prev_txid, prev_vout, value, script FROM stamp_tx_inputs WHERE txid = ${txid} ORDER BY vin`.execute(h.t.db)
      ).rows;
    const wallet = () => loadStampWallet({ wif: h.wif }, 'regtest');
    const tipHeight = async () =>
      (await sql<{ height: number }>`SELECT height FROM chain_tip WHERE id = 1`.execute(h.t.db)).rows[0]!.height;
    /** Another process leads the tracker (the stamper's own tracker sits out) until `release`. */
    const holdTracker = () =>
      sql`UPDATE stamp_leader SET owner = gen_random_uuid(), until = now() + interval '1 hour' WHERE id = 1`.execute(h.t.db);
    const releaseTracker = () => sql`UPDATE stamp_leader SET owner = NULL, until = NULL WHERE id = 1`.execute(h.t.db);

    /** A coinbase paying the stamping wallet, matured by 100 blocks; returns its block hash. */
    async function coinbaseToWallet(): Promise<string> {
      const address = h.stamper!.addresses[0]!;
      const [hash] = core ? await h.core!.mine(1, address) : await h.node.mine(1, { address });
      await h.mine(100);
      return hash!;
    }
    const invalidate = (hash: string) => (core ? h.core!.call('invalidateblock', [hash]) : h.node.invalidate(hash));
    const reconsider = (hash: string) => (core ? h.core!.call('reconsiderblock', [hash]) : h.node.reconsider(hash));
    const blockHash = async (height: number) => h.rpc.call<string>('getblockhash', [height]);

    /** Takes away the coinbase block `hash` and the 100 above it for 102 empty blocks; returns the first of them. */
    async function reorgAway(hash: string): Promise<string> {
      const height = (await h.rpc.call<{ height: number }>('getblockheader', [hash])).height;
      await invalidate(hash);
      const [first] = await h.mine(102, { includeMempool: false });
      expect((await h.rpc.call<{ height: number }>('getblockheader', [first!])).height).toBe(height);
      return first!;
    }

    /** A stamper whose only coin is a coinbase, and a stamp spending it (transaction `t1`). */
    async function stampOnCoinbase(): Promise<{ cb: string; id: string; t1: Buffer }> {
      h = await createStampHarness({}, { core });
      await h.startStamper();
      const cb = await coinbaseToWallet();
      const res = await h.post(randomHash());
      expect(res.statusCode, res.body).toBe(200);
      const id: string = res.json().stampid;
      return { cb, id, t1: Buffer.from(hexToHash(id.split('-')[0]!)) };
    }

    it('a stamp on a coin a reorg took away: its change is no coin, the stamp moves to good coins, nothing is refused again', async () => {
      const { cb, id, t1 } = await stampOnCoinbase();
      const cbTxid = (await h.rpc.call<{ tx: string[] }>('getblock', [cb])).tx[0]!;
      expect((await inputsOf(t1)).map((i) => hashToHex(i.prev_txid))).toEqual([cbTxid]);

      await holdTracker();
      await reorgAway(cb);
      expect(await h.mempool()).not.toContain(hashToHex(t1));
      // No coin is left: the coinbase left the chain, and the change of its spender can never confirm.
      expect(await loadFreeCoins(stampDb(h.t.db), wallet(), await tipHeight())).toEqual([]);

      await releaseTracker();
      await waitFor('the spender abandoned', async () => (await tx(t1)).status === 'abandoned');
      expect((await stampRow(id))?.status).toBe('queued'); // accepted earlier: waits for coins, never dropped

      await h.fund(2, 100_000n);
      const moved = await waitFor('the stamp in a transaction of good coins', async () => {
        const s = await stampRow(id);
        return s?.status === 'placed' && s.txid && (await h.mempool()).includes(hashToHex(s.txid)) ? s.txid : null;
      });
      expect(moved.equals(t1)).toBe(false);
      // Its coins are confirmed outputs of the chain the node follows now.
      for (const i of await inputsOf(moved)) {
        const inChain = await sql`SELECT 1 FROM ${txRowsByTxid(i.prev_txid)} t`.execute(h.t.db);
        expect(inChain.rows).toHaveLength(1);
      }
      const found = await h.get(id);
      expect(found.json()).toMatchObject({ tx: hashToHex(moved), confirmations: 0 });

      // Turns later, nothing is refused and every live transaction is in the node's mempool.
      for (let i = 0; i < 3; i++) expect(await h.stamper!.track()).toBe(true);
      const live = (
        await sql<TxRow>`SELECT txid, status, last_error, refusals FROM stamp_txs WHERE status IN ('signed', 'broadcast')`.execute(h.t.db)
      ).rows;
      expect(live.map((r) => [hashToHex(r.txid), r.last_error, r.refusals])).toEqual([[hashToHex(moved), null, 0]]);
      expect((await h.stamper!.status()).stuck).toBeNull();
    });

    it('when the block comes back, the same signed transaction is stored and sent again', async () => {
      const { cb, id, t1 } = await stampOnCoinbase();
      const firstNew = await reorgAway(cb);
      await waitFor('the spender abandoned', async () => (await tx(t1)).status === 'abandoned');

      // The old branch again: the coinbase is back, the stamp's only coin; the batcher signs the same bytes.
      await invalidate(firstNew);
      await reconsider(cb);
      await h.synced();
      expect(await blockHash((await h.rpc.call<{ height: number }>('getblockheader', [cb])).height)).toBe(cb);
      await waitFor(
        'the same transaction in the mempool again',
        async () => (await tx(t1)).status === 'broadcast' && (await h.mempool()).includes(hashToHex(t1)),
      );
      expect(await stampRow(id)).toEqual({ status: 'placed', txid: t1 });
    });

    it('a transaction the node keeps refusing makes the stamper say it cannot make progress', async () => {
      h = await createStampHarness({}, { core });
      await h.startStamper();
      await h.fund(1, 500_000n);
      const res = await h.post(randomHash());
      expect(res.statusCode, res.body).toBe(200);
      const t1 = Buffer.from(hexToHash((res.json().stampid as string).split('-')[0]!));
      // Another holder of the wallet key spends the same coin, paying more: the node replaces ours.
      const [coin] = await inputsOf(t1);
      const other = buildStampTx({
        wallet: wallet(),
        inputs: [{ txid: coin!.prev_txid, vout: coin!.prev_vout, value: coin!.value, script: coin!.script, depth: 0 }],
        payloads: [Buffer.from(randomHash(), 'hex')],
        feeRatePerKvB: 100_000n,
        maxFee: 100_000n,
      });
      await h.rpc.call('sendrawtransaction', [other.raw.toString('hex')]);
      await h.synced();
      expect(await h.mempool()).not.toContain(hashToHex(t1));

      const stuck = await waitFor('the stamper to report it is stuck', async () => (await h.stamper!.status()).stuck);
      // The count and the time grow while it stays stuck; the rest of the reason does not.
      const reason = new RegExp(
        `^the stamper cannot make progress: the node refused stamp transaction ${hashToHex(t1)} \\d+ times in a row over \\d+ s \\(.+\\)$`,
      );
      expect(stuck).toMatch(reason);
      expect((await tx(t1)).refusals).toBeGreaterThanOrEqual(5);
      const state = await readDeploymentState(h.t.db);
      expect(state.stamps.stuck?.txid).toBe(hashToHex(t1));
      expect(
        assessHealth(state, { maxLag: 6, maxRelayDelaySeconds: 60, maxHeartbeatAgeSeconds: 60, failOnDead: false }).problems.filter((p) =>
          reason.test(p),
        ),
      ).toHaveLength(1);
      const app = await buildApi({
        db: h.t.db,
        log: h.log,
        network: 'regtest',
        stamps: h.stamper!.service,
        stampStatus: h.stamper!.status,
      });
      try {
        const health = await app.inject({ method: 'GET', url: '/healthz', headers: { apiKey: h.key } });
        expect(health.json().stamping.stuck).toMatch(reason);
      } finally {
        await app.close();
      }

      // Once the other spend is mined the coin is gone: the transaction is abandoned and the report clears.
      await h.mine(1);
      await waitFor('the refused transaction abandoned', async () => (await tx(t1)).status === 'abandoned');
      expect((await h.stamper!.status()).stuck).toBeNull();
    });
  });
}
