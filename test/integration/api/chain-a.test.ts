/**
 * regtest-chain-a (real Bitcoin Core 30 chain with 7 reorgs) indexed by the indexer's
 * applyBlock/undoBlock in the node's own connect/disconnect order, then read through the REST
 * API: for EVERY address of expected.json, balance, history (our order: newest first, so
 * Core's chain order reversed; also compared as sets) and unspent outputs (as sets, with
 * confirmations from the recorded heights) equal what Bitcoin Core computed. Paging follows the
 * Link header so long lists are read whole.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { indexChainA, loadChainA } from '../../support/chain-fixture.js';
import { createApiHarness, type ApiHarness } from './harness.js';

type Unspent = { transaction_hash: string; index: number; value: string; script: string; confirmations: number };

async function readAll<T>(h: ApiHarness, first: string): Promise<T[]> {
  const out: T[] = [];
  let url: string | undefined = first;
  while (url) {
    const r = await h.get(url);
    expect(r.statusCode, `${url} ${r.body.slice(0, 200)}`).toBe(200);
    out.push(...(r.json() as T[]));
    const link = r.headers.link as string | undefined;
    url = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
  }
  return out;
}

describeFixtures('REST API over regtest-chain-a', () => {
  let t: TestDatabase;
  let h: ApiHarness;

  beforeAll(async () => {
    t = await createMigratedDatabase('apichain');
    await indexChainA(t.db);
    h = await createApiHarness({ settings: { rateLimit: 10_000_000 } }, t);
  });
  afterAll(async () => {
    await h?.close();
    await t?.drop();
  });

  it('GET /blockchain is the expected tip', async () => {
    const { expected } = loadChainA();
    expect((await h.get('/v1/blockchain')).json()).toEqual({
      best_block_hash: expected.best_block_hash,
      best_height: expected.best_height,
    });
  });

  it("every address: balance, history and unspent outputs equal Bitcoin Core's", async () => {
    const { expected } = loadChainA();
    const tip = expected.best_height;
    const entries = Object.entries(expected.addresses);
    expect(entries.length).toBe(5301);
    let checked = 0;
    const check = async ([address, want]: (typeof entries)[number]) => {
      const balance = await h.get(`/v1/addresses/${address}/balance`);
      expect(balance.json(), address).toEqual({ balance: want.balance });
      const history = await readAll<string>(h, `/v1/addresses/${address}/history?limit=50`);
      expect(new Set(history), address).toEqual(new Set(want.history));
      expect([...history].reverse(), address).toEqual(want.history);
      const unspent = await readAll<Unspent>(h, `/v1/addresses/${address}/unspentoutputs?limit=50`);
      const key = (u: { transaction_hash: string; index: number }) => `${u.transaction_hash}:${u.index}`;
      const got = unspent.map((u) => ({ ...u })).sort((a, b) => key(a).localeCompare(key(b)));
      const exp = want.unspent
        .map((u) => ({
          transaction_hash: u.transaction_hash,
          index: u.index,
          value: u.value,
          script: u.script,
          confirmations: tip - u.height + 1,
        }))
        .sort((a, b) => key(a).localeCompare(key(b)));
      expect(got, address).toEqual(exp);
      expect(
        unspent.reduce((s, u) => s + BigInt(u.value), 0n),
        address,
      ).toBe(BigInt(want.balance));
      checked++;
    };
    for (let i = 0; i < entries.length; i += 8) await Promise.all(entries.slice(i, i + 8).map(check));
    expect(checked).toBe(5301);
    // ~16,000 requests through the whole API stack: 71 s at load 19, over 120 s at load 25-30.
    // A limit is no speed target.
  }, 600_000);
});
