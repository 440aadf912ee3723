/**
 * Confirmed transactions' views take their outputs and the outputs their inputs spend from the
 * node (api/node-transactions.ts): with the node unreachable a confirmed transaction is 503
 * ERR_NODE_UNAVAILABLE, while a mempool one (the index keeps its bytes) and the
 * genesis coinbase (which Core does not hand out) still answer from the index. Answers with the
 * node up are the contract suites' (core-reads, esplora, coinstack on Core and the stand-in).
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHarness, type ApiHarness } from './harness.js';
import { c0, insertMiniChain, m1, t1 } from './mini-chain.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';

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

  it('a mempool transaction and the genesis coinbase answer from the index', async () => {
    const m = await h.get(`/v1/transactions/${m1.hex}`);
    expect(m.statusCode).toBe(200);
    expect(m.json()).toMatchObject({
      transaction_hash: m1.hex,
      inputs: [{ transaction_hash: t1.hex, output_index: 0, value: '3000000000' }],
    });
    const g = await h.get(`/v1/transactions/${c0.hex}`);
    expect(g.statusCode).toBe(200);
    expect(g.json()).toMatchObject({ transaction_hash: c0.hex, coinbase: true, outputs: [{ index: 0, value: '5000000000' }] });
  });
});
