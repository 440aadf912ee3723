/**
 * Per-address events from the running indexer on the devnode (ZMQ, RPC, real Postgres), each
 * exactly once per change: tx.unconfirmed → tx.confirmed → tx.confirmations up to the target;
 * a reorg → tx.reorged then tx.confirmed in the new branch; RBF → tx.replaced with replaced_by;
 * a conflicting block → tx.replaced by the block's transaction and tx.dropped for its child.
 * The final index equals a fresh index of the same chain.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { randomBytes } from 'node:crypto';
import { addressToScript, segwitAddress } from '../../../src/bitcoin/address.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import type { IndexerHandle } from '../../../indexer/main.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import {
  freshIndexOf,
  readEvents,
  startTestIndexer,
  waitMempoolSynced,
  waitSynced,
  watchAddress,
  type EventRow,
} from '../../support/chain-indexer.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';
import { waitFor } from '../../support/wait.js';

describe('per-address events on the devnode', () => {
  let node: Devnode;
  let t: TestDatabase;
  let ix: IndexerHandle;
  /** Watched, not the wallet's (so no change comes back to it). */
  let addr: string;
  /** Watched and the wallet's (so the wallet can spend from it). */
  let own: string;
  const dbs: TestDatabase[] = [];

  const eventsOf = async (txid: string, who = addr): Promise<EventRow[]> =>
    (await readEvents(t.db)).filter((e) => e.txid === txid && e.address === who);
  const voutTo = async (txid: string, address: string) => {
    const raw = await fetchRaw(node, txid);
    const script = Buffer.from(addressToScript(address, 'regtest')).toString('hex');
    return decodeTx(raw).outputs.findIndex((o) => Buffer.from(o.script).toString('hex') === script);
  };

  beforeAll(async () => {
    node = await startDevnode({ initialBlocks: 101 });
    t = await createMigratedDatabase('ev');
    dbs.push(t);
    ix = await startTestIndexer(t, node);
    await waitSynced(t.db, node);
    addr = segwitAddress(0, randomBytes(20), 'regtest');
    own = node.wallet.newAddress('p2wpkh').address!;
    await watchAddress(t.db, addr, 3);
    await watchAddress(t.db, own, 3);
  });
  afterAll(async () => {
    await ix?.stop();
    await node?.stop();
    await Promise.all(dbs.map((d) => d.drop()));
  });

  it('emits unconfirmed, confirmed and confirmations up to the target, once each', async () => {
    const txid = await node.wallet.send(addr, 100_000n);
    await waitFor('tx.unconfirmed', async () => (await eventsOf(txid)).length === 1);
    const [unconf] = await eventsOf(txid);
    expect(unconf).toMatchObject({ type: 'tx.unconfirmed', confirmations: 0, received: 100_000n, sent: 0n, block: null });
    const [h1] = await node.mine(1);
    await waitSynced(t.db, node);
    await node.mine(3);
    await waitSynced(t.db, node);
    await waitFor('tx.confirmations', async () => (await eventsOf(txid)).length >= 4);
    const evs = await eventsOf(txid);
    expect(evs.map((e) => [e.type, e.confirmations])).toEqual([
      ['tx.unconfirmed', 0],
      ['tx.confirmed', 1],
      ['tx.confirmations', 2],
      ['tx.confirmations', 3],
    ]);
    expect(evs.slice(1).every((e) => e.block === h1 && e.received === 100_000n)).toBe(true);
  });

  it('reorg: tx.reorged for the disconnected block, then tx.confirmed in the new branch', async () => {
    const txid = await node.wallet.send(addr, 70_000n);
    await waitFor('tx.unconfirmed', async () => (await eventsOf(txid)).length === 1);
    await node.mine(1);
    await waitSynced(t.db, node);
    const before = await eventsOf(txid);
    expect(before.map((e) => e.type)).toEqual(['tx.unconfirmed', 'tx.confirmed']);
    const r = await node.reorg(1, { newBlocks: 2, keepTxs: true });
    await waitSynced(t.db, node);
    const after = await eventsOf(txid);
    expect(after.map((e) => e.type)).toEqual(['tx.unconfirmed', 'tx.confirmed', 'tx.reorged', 'tx.confirmed', 'tx.confirmations']);
    expect(after[2]!.block).toBe(r.disconnected[0]);
    expect(after[3]!.block).toBe(r.connected[0]);
    const blocks = await readEvents(t.db, ['block.connected', 'block.disconnected']);
    expect(blocks.filter((b) => b.type === 'block.disconnected').map((b) => b.block)).toEqual(r.disconnected);
    for (const h of r.connected) expect(blocks.filter((b) => b.type === 'block.connected' && b.block === h)).toHaveLength(1);
  });

  it('RBF: the replaced transaction gets tx.replaced naming its replacement', async () => {
    const txid = await node.wallet.send(addr, 50_000n, { rbf: true });
    await waitFor('tx.unconfirmed', async () => (await eventsOf(txid)).length === 1);
    const replacement = await node.wallet.bumpFee(txid);
    await waitFor('tx.replaced', async () => (await eventsOf(txid)).length === 2);
    const evs = await eventsOf(txid);
    expect(evs[1]).toMatchObject({ type: 'tx.replaced', replacedBy: replacement, received: 50_000n });
    await waitFor('tx.unconfirmed of the replacement', async () => (await eventsOf(replacement)).length === 1);
    await waitMempoolSynced(t.db, node);
  });

  it('a block with a conflicting transaction replaces the mempool one and drops its child', async () => {
    await node.mine(1);
    await waitSynced(t.db, node);
    const a = await node.wallet.send(own, 200_000n);
    const vout = await voutTo(a, own);
    const b = await node.wallet.send(node.wallet.newAddress('p2tr').address!, 150_000n, { from: [`${a}:${vout}`] });
    await waitFor('tx.unconfirmed of the child', async () => (await eventsOf(b, own)).length === 1);
    const aTx = decodeTx(await fetchRaw(node, a));
    const coin = aTx.inputs.map((i) => `${Buffer.from(i.prevTxid).reverse().toString('hex')}:${i.vout}`);
    const conflict = node.wallet.createTx(node.wallet.newAddress('p2pkh').address!, 10_000n, { from: coin });
    await node.mine(1, { txs: [conflict], includeMempool: false });
    await waitSynced(t.db, node);
    const c = Buffer.from(decodeTx(Buffer.from(conflict, 'hex')).txid)
      .reverse()
      .toString('hex');
    await waitFor('replaced and dropped', async () => (await eventsOf(a, own)).length === 2 && (await eventsOf(b, own)).length === 2);
    expect((await eventsOf(a, own)).map((e) => e.type)).toEqual(['tx.unconfirmed', 'tx.replaced']);
    expect((await eventsOf(a, own))[1]!.replacedBy).toBe(c);
    expect((await eventsOf(b, own)).map((e) => [e.type, e.replacedBy])).toEqual([
      ['tx.unconfirmed', null],
      ['tx.dropped', null],
    ]);
  });

  it('ends equal to a fresh index of the same chain and mempool', async () => {
    await node.mine(1);
    await waitSynced(t.db, node);
    await waitMempoolSynced(t.db, node);
    const ref = await freshIndexOf(node);
    dbs.push(ref);
    expect(await snapshotIndex(t.db)).toEqual(await snapshotIndex(ref.db));
  });
});

async function fetchRaw(node: Devnode, txid: string): Promise<Uint8Array> {
  const res = await fetch(`${node.restUrl}/tx/${txid}.bin`);
  if (res.status !== 200) throw new Error(`tx ${txid}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}
