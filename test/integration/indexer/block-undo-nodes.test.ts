/**
 * The undo store against the node's own undo data, on Bitcoin Core 30 and on the stand-in: each
 * `block_undo` row holds, in input order, the prevouts `getblock <hash> 3` gives for the inputs
 * spending earlier blocks' outputs, then those of the inputs spending the block's own; after a real reorg (invalidateblock of three blocks with
 * payments, then a longer branch mining them again) the undone blocks' rows are gone and the new
 * branch's rows again equal the node's prevouts.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { decodeOuts } from '../../../src/db/packed.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { segwitAddress } from '../../../src/bitcoin/address.js';
import { describeNodes, type NodeKind } from '../../support/nodes.js';
import { startStack, type Stack } from '../../support/stack.js';
import { waitFor } from '../../support/wait.js';

type Prevout = { value: number; scriptPubKey: { hex: string } };
type BlockV3 = { hash: string; height: number; tx: { txid: string; vin: { txid?: string; prevout?: Prevout }[] }[] };

describeNodes('the undo store on a real reorg', (entry) => {
  let s: Stack<NodeKind>;
  const address = (i: number) => segwitAddress(0, new Uint8Array(20).fill(i + 1), 'regtest');

  /** Per block of the index, its block_undo row against the node's prevouts; the number of outputs compared. */
  const compareWithNode = async (): Promise<number> => {
    const rows = await sql<{ height: number; spent: Buffer; hash: Buffer }>`
      SELECT u.height, u.spent, b.hash FROM block_undo u JOIN blocks b USING (height) ORDER BY u.height`.execute(s.db.db);
    let compared = 0;
    for (const r of rows.rows) {
      const block = await s.node.call<BlockV3>('getblock', [hashToHex(r.hash), 3]);
      const own = new Set(block.tx.map((t) => t.txid));
      const vins = block.tx.slice(1).flatMap((t) => t.vin);
      const want = [...vins.filter((v) => !own.has(v.txid!)), ...vins.filter((v) => own.has(v.txid!))].map((v) => ({
        value: BigInt(Math.round(v.prevout!.value * 1e8)),
        script: v.prevout!.scriptPubKey.hex,
      }));
      const got = decodeOuts(r.spent).map((o) => ({ value: o.value, script: Buffer.from(o.script).toString('hex') }));
      expect(got, `block ${r.height}`).toEqual(want);
      compared += got.length;
    }
    return compared;
  };

  /** Payments from the node's wallet (which spend its earlier outputs), one block of them per round. */
  const payAndMine = async (rounds: number, from: number) => {
    for (let i = 0; i < rounds; i++) {
      for (let j = 0; j < 3; j++) await s.node.pay(address(from + i * 3 + j), 20_000n + BigInt(j));
      await s.mine(1);
    }
  };

  beforeAll(async () => {
    s = await startStack({ node: entry.name, stamping: false, worker: false });
    await payAndMine(4, 0);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("keeps, per block, the node's prevouts of the inputs spending earlier blocks, then its own", async () => {
    expect(await compareWithNode()).toBeGreaterThanOrEqual(4);
  });

  it('after a reorg, holds the new branch rows only', async () => {
    const tip = await s.node.tip();
    const forkHash = await s.node.call<string>('getblockhash', [tip.height - 2]);
    const undone = new Set<string>();
    for (let h = tip.height - 2; h <= tip.height; h++) undone.add(await s.node.call<string>('getblockhash', [h]));
    await s.node.call('invalidateblock', [forkHash]);
    // The payments go back to the mempool; a longer branch mines them again, then new ones.
    await s.mine(3);
    await payAndMine(1, 100);
    const newTip = await s.node.tip();
    expect(newTip.height).toBe(tip.height + 1);
    await waitFor('the index to follow the new branch', async () => {
      const r = await sql<{ hash: Buffer }>`SELECT hash FROM blocks WHERE height = ${newTip.height}`.execute(s.db.db);
      return r.rows[0] !== undefined && hashToHex(r.rows[0].hash) === newTip.hash;
    });
    const hashes = await sql<{ hash: Buffer }>`SELECT b.hash FROM block_undo JOIN blocks b USING (height)`.execute(s.db.db);
    expect(hashes.rows.map((r) => hashToHex(r.hash)).filter((h) => undone.has(h))).toEqual([]);
    expect(await compareWithNode()).toBeGreaterThanOrEqual(4);
  });
});
