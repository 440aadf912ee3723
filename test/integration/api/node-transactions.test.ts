/**
 * Confirmed transactions' views take their outputs and the outputs their inputs spend from the
 * node (api/node-transactions.ts): with the node unreachable a confirmed transaction is 503
 * ERR_NODE_UNAVAILABLE, the genesis coinbase too (Core does not hand it out as a transaction:
 * it is read from the genesis block), while a mempool one (the index keeps its bytes) still
 * answers from the index. With the node up, on Core and on the stand-in, every confirmed
 * transaction's outputs and prevouts from the node, the genesis coinbase's included, are those
 * the `txs` rows keep the values and tags of (the dialects' answers: the contract suites).
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHarness, type ApiHarness } from './harness.js';
import { c0, insertMiniChain, m1, t1 } from './mini-chain.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { sql } from 'kysely';
import { describeNodes, type NodeKind } from '../../support/nodes.js';
import { startStack, type Stack } from '../../support/stack.js';
import { loadIndexedTx } from '../../../api/transaction-view.js';
import { decodeIns, decodeOutTag, decodeOutTags } from '../../../src/db/packed.js';
import { outTagOf, type OutTag } from '../../../src/db/out-tags.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { txRowsAtNums, txRowsFrom } from '../../../src/db/tx-reads.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** A port on 127.0.0.1 nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('transaction views with the node unreachable', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    const node = new BitcoindClient({ url: `http://u:p@127.0.0.1:${await closedPort()}`, timeoutMs: 5_000 });
    h = await createApiHarness({ node });
    await insertMiniChain(h.t.db);
  });
  afterAll(async () => h?.close());

  it('a confirmed transaction is 503 ERR_NODE_UNAVAILABLE in /v1 and Esplora', async () => {
    const r = await h.get(`/v1/transactions/${t1.hex}`);
    expect(r.statusCode).toBe(503);
    expect(r.json()).toMatchObject({ error_code: 'ERR_NODE_UNAVAILABLE', retry: true });
    const e = await h.get(`/esplora/tx/${t1.hex}`);
    expect(e.statusCode).toBe(503);
  });

  it('a mempool transaction answers from the index; the genesis coinbase, read from its block, is 503 too', async () => {
    const m = await h.get(`/v1/transactions/${m1.hex}`);
    expect(m.statusCode).toBe(200);
    expect(m.json()).toMatchObject({
      transaction_hash: m1.hex,
      inputs: [{ transaction_hash: t1.hex, output_index: 0, value: '3000000000' }],
    });
    const g = await h.get(`/v1/transactions/${c0.hex}`);
    expect(g.statusCode).toBe(503);
    expect(g.json()).toMatchObject({ error_code: 'ERR_NODE_UNAVAILABLE', retry: true });
  });
});

describeNodes('transaction views from the node equal those from the rows', (entry) => {
  let s: Stack<NodeKind>;
  beforeAll(async () => {
    s = await startStack({ node: entry.name, stamping: false, worker: false });
    // Outputs of every address type and an OP_RETURN, then a block spending some of them.
    const addresses = await Promise.all(
      ['legacy', 'p2sh-segwit', 'bech32', 'bech32m'].map((type) =>
        s.node.call<string>('getnewaddress', ['', type], s.node.bitcoind?.wallet ?? undefined),
      ),
    );
    await s.node.payMany(
      addresses.flatMap((address) => [
        { address, sats: 70_000n },
        { address, sats: 80_000n },
      ]),
    );
    await s.mine(1);
    for (const address of addresses) await s.node.pay(address, 50_000n);
    await s.mine(1);
    await s.synced();
  });
  afterAll(async () => s?.stop());

  it("every confirmed transaction, genesis included: the node's outputs and prevouts are those the rows tag", async () => {
    const node = new BitcoindClient({ url: s.node.rpcUrl });
    const rows = await sql<{
      txid: Buffer;
      ins: Buffer;
      outs: Buffer;
    }>`SELECT txid, ins, outs FROM ${txRowsFrom(0n, null)} t ORDER BY tx_num`.execute(s.db.db);
    const byNum = async (n: bigint) =>
      (await sql<{ txid: Buffer; outs: Buffer }>`SELECT txid, outs FROM ${txRowsAtNums([n])} t`.execute(s.db.db)).rows[0]!;
    const tag = (o: { value: bigint; tag: OutTag }) => ({ value: o.value, tag: { ...o.tag, script: o.tag.script && hex(o.tag.script) } });
    let spends = 0;
    for (const row of rows.rows) {
      const fromNode = (await loadIndexedTx(s.db.db, row.txid, node))!.tx;
      const ins = await Promise.all(
        decodeIns(row.ins).map(async (i) => {
          const prev = await byNum(i.txNum);
          return { prev: hex(prev.txid), vout: i.vout, out: tag(decodeOutTag(prev.outs, i.vout)!) };
        }),
      );
      expect(
        {
          inputs: fromNode.inputs.map((i) => ({
            prev: hex(i.prevTxid),
            vout: i.vout,
            out: tag({ value: i.prevout!.value, tag: outTagOf(i.prevout!.script) }),
          })),
          outputs: fromNode.outputs.map((o) => tag({ value: o.value, tag: outTagOf(o.script) })),
        },
        hashToHex(row.txid),
      ).toEqual({ inputs: ins, outputs: decodeOutTags(row.outs).map(tag) });
      spends += fromNode.inputs.length;
    }
    expect(rows.rows.length).toBeGreaterThan(100);
    expect(spends).toBeGreaterThanOrEqual(5);
  });
});
