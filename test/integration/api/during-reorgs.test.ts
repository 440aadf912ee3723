/**
 * Reads while the index moves: regtest-chain-a is applied in the node's connect/disconnect order
 * (7 reorgs, 17 blocks undone) while balance, history, unspent-output and transaction requests
 * run against it without pause. No request may fail with a 5xx or answer a malformed body;
 * an address or transaction that is momentarily absent is a clean 404.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { applyBlock, undoBlock } from '../../../indexer/apply.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { loadChainA } from '../../support/chain-fixture.js';
import { createApiHarness, type ApiHarness } from './harness.js';

describeFixtures('API reads during reorgs', () => {
  let t: TestDatabase;
  let h: ApiHarness;
  beforeAll(async () => {
    t = await createMigratedDatabase('apireorg');
    h = await createApiHarness({ settings: { rateLimit: 10_000_000 } }, t);
  });
  afterAll(async () => {
    await h?.close();
    await t?.drop();
  });

  it('never answers 5xx while blocks are applied and undone', async () => {
    const chain = loadChainA();
    const addresses = Object.keys(chain.expected.addresses).filter((_, i) => i % 97 === 0);
    const txids = [...new Set(addresses.flatMap((a) => chain.expected.addresses[a]!.history))];
    let done = false;
    const statuses = new Map<number, number>();
    const reader = async (seed: number) => {
      for (let i = seed; !done; i++) {
        const a = addresses[i % addresses.length]!;
        const urls = [`/v1/addresses/${a}/balance`, `/v1/addresses/${a}/history?limit=5`, `/v1/addresses/${a}/unspentoutputs?limit=5`, `/v1/transactions/${txids[i % txids.length]}`];
        const url = urls[i % urls.length]!;
        const r = await h.get(url);
        statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1);
        expect([200, 404], `${url} → ${r.statusCode} ${r.body.slice(0, 200)}`).toContain(r.statusCode);
        const body = r.json() as unknown;
        if (r.statusCode === 404) expect(body).toMatchObject({ error_type: 'not_found' });
        else if (url.includes('/history')) expect((body as string[]).every((x) => /^[0-9a-f]{64}$/.test(x))).toBe(true);
        else if (url.includes('/transactions/')) expect((body as { transaction_hash: string }).transaction_hash).toBe(txids[i % txids.length]);
      }
    };
    const readers = [0, 1, 2].map((s) => reader(s * 1000));
    try {
      expect((await applyBlock(t.db, decodeBlock(chain.blocks.get(chain.main[0]!)!.raw), 0)).kind).toBe('applied');
      for (const step of chain.steps) {
        const b = chain.blocks.get(step.hash)!;
        const r = step.label === 'C' ? await applyBlock(t.db, decodeBlock(b.raw), b.height) : await undoBlock(t.db, b.height);
        expect(r.kind).toBe(step.label === 'C' ? 'applied' : 'undone');
      }
    } finally {
      done = true;
      await Promise.all(readers);
    }
    expect((statuses.get(200) ?? 0) + (statuses.get(404) ?? 0)).toBeGreaterThan(200);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(0);
  });
});
