/**
 * The indexed mempool and Core's mempool sync protocol: after one seed
 * from getrawmempool(mempool_sequence), ZMQ A/R/C deltas alone keep it equal to the node's
 * mempool through payments, an RBF replacement (R then A) and a block that conflicts with a
 * mempool transaction (R before C); a dropped A shows as a counter gap and forces a reseed.
 * Mempool transactions appear in address history and unspent outputs with 0 confirmations.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressToScript, segwitAddress } from '../../../src/bitcoin/address.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { hashToHex, hexToHash } from '../../../src/bitcoin/hash.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import type { IndexerHandle } from '../../../indexer/main.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { startTestIndexer, waitMempoolSynced, waitSynced } from '../../support/chain-indexer.js';
import { keyOfAddress } from '../../support/chain-snapshot.js';
import { waitFor } from '../../support/wait.js';
import { txRowsByTxid } from '../../../src/db/tx-reads.js';
import { BALANCE_ROWS } from '../../../src/db/balance-reads.js';

describe('mempool sync', () => {
  let node: Devnode;
  let t: TestDatabase;
  let ix: IndexerHandle;

  const rawTx = async (txid: string) => Buffer.from(await (await fetch(`${node.restUrl}/tx/${txid}.bin`)).arrayBuffer());
  const ext = () => segwitAddress(0, randomBytes(20), 'regtest');

  beforeAll(async () => {
    node = await startDevnode({ initialBlocks: 101 });
    t = await createMigratedDatabase('mp');
    // A poll far slower than the test: only ZMQ deltas can keep the mempool current.
    ix = await startTestIndexer(t, node, { config: { pollIntervalMs: 60_000, mempoolResyncMs: 3_600_000 } });
    await waitSynced(t.db, node, 60_000);
    await waitFor('the seed from getrawmempool', () => ix.metrics().mempool.resyncs === 1);
    // Each ZMQ topic seen once, so that a later loss shows as a counter gap.
    await node.wallet.send(ext(), 10_000n);
    await node.mine(1);
    await waitSynced(t.db, node);
  });
  afterAll(async () => {
    await ix?.stop();
    await node?.stop();
    await t?.drop();
  });

  it('applies A/R/C deltas through payments, RBF and a conflicting block without reseeding', async () => {
    const resyncs = ix.metrics().mempool.resyncs;
    const paid = [await node.wallet.send(ext(), 20_000n), await node.wallet.send(ext(), 21_000n), await node.wallet.send(ext(), 22_000n)];
    await waitMempoolSynced(t.db, node);
    const replacement = await node.wallet.bumpFee(paid[0]!);
    await waitMempoolSynced(t.db, node);
    expect(node.mempool()).toContain(replacement);
    expect(node.mempool()).not.toContain(paid[0]);
    // A block with a transaction conflicting with paid[1]: the node removes paid[1] (R), then C.
    const coins = decodeTx(await rawTx(paid[1]!)).inputs.map((i) => `${hashToHex(i.prevTxid)}:${i.vout}`);
    const conflict = node.wallet.createTx(ext(), 15_000n, { from: coins });
    await node.mine(1, { txs: [conflict], includeMempool: false });
    await waitSynced(t.db, node);
    await waitMempoolSynced(t.db, node);
    expect(node.mempool()).not.toContain(paid[1]);
    await node.mine(1);
    await waitSynced(t.db, node);
    await waitMempoolSynced(t.db, node);
    expect(node.mempool()).toHaveLength(0);
    expect(ix.metrics().mempool.resyncs).toBe(resyncs);
    expect(ix.metrics().mempool.added).toBeGreaterThanOrEqual(4);
  });

  it('reseeds after a dropped A (a sequence counter gap)', async () => {
    const resyncs = ix.metrics().mempool.resyncs;
    node.faults.zmq.drop('sequence', 1);
    const lost = await node.wallet.send(ext(), 30_000n);
    const seen = await node.wallet.send(ext(), 31_000n);
    await waitFor('the reseed after the gap', () => ix.metrics().mempool.resyncs > resyncs);
    await waitMempoolSynced(t.db, node);
    const ours = (await sql<{ txid: Buffer }>`SELECT txid FROM mempool_txs`.execute(t.db)).rows.map((r) => hashToHex(r.txid));
    expect(ours).toEqual(expect.arrayContaining([lost, seen]));
  });

  it('shows mempool payments in 0-conf history and unspent outputs', async () => {
    const to = ext();
    const txid = await node.wallet.send(to, 40_000n);
    await waitMempoolSynced(t.db, node);
    const key = keyOfAddress(to, 'regtest');
    const hist = await sql<{
      txid: Buffer;
      received: bigint;
      sent: bigint;
    }>`SELECT txid, received, sent FROM mempool_addresses WHERE addr_key = ${key}::uuid`.execute(t.db);
    expect(hist.rows.map((r) => [hashToHex(r.txid), r.received, r.sent])).toEqual([[txid, 40_000n, 0n]]);
    const outs = await sql<{
      txid: Buffer;
      value: bigint;
      script: Buffer;
    }>`SELECT txid, value, script FROM mempool_outputs WHERE addr_key = ${key}::uuid`.execute(t.db);
    expect(outs.rows).toHaveLength(1);
    expect(outs.rows[0]!.value).toBe(40_000n);
    expect(Buffer.compare(outs.rows[0]!.script, Buffer.from(addressToScript(to, 'regtest')))).toBe(0);
    const entry = await sql<{
      fee: bigint;
      vsize: number;
    }>`SELECT fee, vsize FROM mempool_txs WHERE txid = ${Buffer.from(hexToHash(txid))}`.execute(t.db);
    expect(entry.rows[0]!.fee).toBeGreaterThan(0n);
    // Confirmation moves it to the chain tables in the block's transaction.
    await node.mine(1);
    await waitSynced(t.db, node);
    expect((await sql`SELECT 1 FROM mempool_addresses WHERE addr_key = ${key}::uuid`.execute(t.db)).rows).toHaveLength(0);
    expect(
      (await sql<{ balance: bigint }>`SELECT balance FROM ${sql.raw(BALANCE_ROWS)} b WHERE addr_key = ${key}::uuid`.execute(t.db)).rows[0]!
        .balance,
    ).toBe(40_000n);
    const first = await sql<{ first_seen: Date | null }>`SELECT first_seen FROM ${txRowsByTxid(Buffer.from(hexToHash(txid)))} t`.execute(
      t.db,
    );
    expect(first.rows[0]!.first_seen).toBeInstanceOf(Date);
  });
});
