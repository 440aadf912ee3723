/**
 * Reads while the index moves: regtest-chain-a is applied in the node's connect/disconnect order
 * (7 reorgs, 17 blocks undone) while balance, history, unspent-output and transaction requests
 * run against it without pause. No request may fail with a 5xx or answer a malformed body;
 * an address or transaction that is momentarily absent is a clean 404. And deep history pages
 * answered from chunks the API holds stay equal to those Postgres cuts as blocks are undone, and
 * transaction answers from transactions it holds equal to those built afresh — also when they
 * are answered without reading their row (chain notifications: src/db/chain-changes.ts), right
 * after a block is applied or undone or a mempool spend comes and goes.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { applyBlock, undoBlock } from '../../../indexer/writer/apply.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, fixtureNode, loadChainA } from '../../support/chain-fixture.js';
import { createApiHarness, walkPages, type ApiHarness } from './harness.js';
import { createMetrics } from '../../../cli/ops/metrics.js';
import { silentLogger } from '../../../src/log.js';
import { listenChainChanges } from '../../../api/cache/chain-changes.js';
import type { ChainChanges } from '../../../src/db/chain-changes.js';
import { waitFor } from '../../support/wait.js';

/** The node of the API's transaction views: every block of regtest-chain-a, disconnected ones too. */
const chainANode = () => fixtureNode(loadChainA().blocks.values());

describeFixtures('API reads during reorgs', () => {
  let t: TestDatabase;
  let h: ApiHarness;
  beforeAll(async () => {
    t = await createMigratedDatabase('apireorg');
    // (the node the transaction views read, serving every block of the fixture, as Core keeps disconnected ones)
    h = await createApiHarness({ node: chainANode(), settings: { rateLimit: 10_000_000 } }, t);
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
        const urls = [
          `/v1/addresses/${a}/balance`,
          `/v1/addresses/${a}/history?limit=5`,
          `/v1/addresses/${a}/unspentoutputs?limit=5`,
          `/v1/transactions/${txids[i % txids.length]}`,
        ];
        const url = urls[i % urls.length]!;
        const r = await h.get(url);
        statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1);
        expect([200, 404], `${url} → ${r.statusCode} ${r.body.slice(0, 200)}`).toContain(r.statusCode);
        const body = r.json() as unknown;
        if (r.statusCode === 404) expect(body).toMatchObject({ error_type: 'not_found' });
        else if (url.includes('/history')) expect((body as string[]).every((x) => /^[0-9a-f]{64}$/.test(x))).toBe(true);
        else if (url.includes('/transactions/'))
          expect((body as { transaction_hash: string }).transaction_hash).toBe(txids[i % txids.length]);
      }
    };
    const readers = [0, 1, 2].map((s) => reader(s * 1000));
    try {
      expect((await applyBlock(t.db, decodeBlock(chain.blocks.get(chain.main[0]!)!.raw), 0)).kind).toBe('applied');
      for (const step of chain.steps) {
        const b = chain.blocks.get(step.hash)!;
        const r =
          step.label === 'C'
            ? await applyBlock(t.db, decodeBlock(b.raw), b.height)
            : await undoBlock(t.db, b.height, new FixtureChain(chain.blocks.values()));
        expect(r.kind).toBe(step.label === 'C' ? 'applied' : 'undone');
      }
    } finally {
      done = true;
      await Promise.all(readers);
    }
    expect((statuses.get(200) ?? 0) + (statuses.get(404) ?? 0)).toBeGreaterThan(200);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(0);
    // The whole recorded chain applied under three request loops: past 120 s at load 30-60.
  }, 600_000);

  it('deep history pages from held chunks and held transactions stay those of the index across the undone blocks', async () => {
    // A fresh index; an API holding chunks and transactions (`cached`) and one that never does (`plain`).
    const t2 = await createMigratedDatabase('apireorg2');
    const metrics = createMetrics({ db: t2.db, log: silentLogger(), roles: ['api'], processMetrics: false });
    // (chain notifications as startApi has them: a held transaction is answered without its row while none came)
    const listener = await listenChainChanges({ databaseUrl: t2.url });
    let unread = 0;
    const changes: ChainChanges = {
      get generation() {
        return listener.generation;
      },
      settled: () => listener.settled(),
      // (counts the answers given without a statement)
      unchangedSince: async (generation) => {
        const ok = await listener.unchangedSince(generation);
        if (ok) unread++;
        return ok;
      },
    };
    // (its first connection may fail on a busy server: it retries every second)
    await waitFor('the chain notifications connection', () => listener.settled(), 120_000);
    const cached = await createApiHarness({ node: chainANode(), settings: { rateLimit: 10_000_000 }, metrics, chainChanges: changes }, t2);
    const plain = await createApiHarness(
      { node: chainANode(), settings: { rateLimit: 10_000_000, historyCacheBytes: 0, txCacheBytes: 0 } },
      t2,
    );
    try {
      const chain = loadChainA();
      const busiest = Object.entries(chain.expected.addresses)
        .sort((a, b) => b[1].history.length - a[1].history.length)
        .slice(0, 2)
        .map(([a]) => a);
      // Transactions of those addresses (their outputs get spent, their blocks undone and
      // replaced), in both dialects: the held answer must be byte for byte the one built afresh.
      const txids = [...new Set(busiest.flatMap((a) => chain.expected.addresses[a]!.history))].filter((_, i) => i % 4 === 0).slice(0, 8);
      let heldAnswers = 0;
      const compare = async () => {
        for (const a of busiest) {
          const first = `/v1/addresses/${a}/history?limit=2`;
          if ((await plain.get(first)).statusCode === 404) continue;
          const p = await walkPages(plain, first);
          const c = await walkPages(cached, first);
          expect(c, a).toEqual(p);
        }
        for (const txid of txids) {
          for (const url of [`/v1/transactions/${txid}`, `/transactions/${txid}`]) {
            const p = await plain.get(url);
            const c = await cached.get(url);
            expect({ status: c.statusCode, type: c.headers['content-type'], body: c.body }, url).toEqual({
              status: p.statusCode,
              type: p.headers['content-type'],
              body: p.body,
            });
            if (c.statusCode === 200) heldAnswers++;
          }
        }
      };
      expect((await applyBlock(t2.db, decodeBlock(chain.blocks.get(chain.main[0]!)!.raw), 0)).kind).toBe('applied');
      for (const [i, step] of chain.steps.entries()) {
        const b = chain.blocks.get(step.hash)!;
        const r =
          step.label === 'C'
            ? await applyBlock(t2.db, decodeBlock(b.raw), b.height)
            : await undoBlock(t2.db, b.height, new FixtureChain(chain.blocks.values()));
        expect(r.kind).toBe(step.label === 'C' ? 'applied' : 'undone');
        // Around every undone block, and every 25th step.
        if (step.label === 'D' || chain.steps[i + 1]?.label === 'D' || i % 25 === 0) await compare();
      }
      await compare();
      // A mempool spend of a held transaction's output, and its end: each seen on the next lookup.
      const u = await t2.db.selectFrom('utxos').select(['txid', 'vout']).orderBy('tx_num', 'desc').limit(1).executeTakeFirstOrThrow();
      const unspent = { txid: Buffer.from(u.txid).reverse().toString('hex'), vout: u.vout };
      txids.push(unspent.txid);
      await compare();
      expect((await cached.get(`/v1/transactions/${unspent.txid}`)).json().outputs[unspent.vout].used).toBe(false);
      await t2.db
        .insertInto('mempool_spends')
        .values({ prev_txid: u.txid, prev_vout: u.vout, txid: Buffer.alloc(32, 9) })
        .execute();
      await compare();
      expect((await cached.get(`/v1/transactions/${unspent.txid}`)).json().outputs[unspent.vout].used).toBe(true);
      await t2.db.deleteFrom('mempool_spends').execute();
      await compare();
      // (expected.json lists history oldest first)
      for (const a of busiest)
        expect((await walkPages(cached, `/v1/addresses/${a}/history?limit=2`)).items.reverse(), a).toEqual(
          chain.expected.addresses[a]!.history,
        );
      const held = Number(/^blockwire_api_history_pages_total\{source="held"\} (\d+)$/m.exec(await metrics.render())![1]);
      expect(held).toBeGreaterThan(0);
      expect(heldAnswers).toBeGreaterThan(0);
      expect(unread).toBeGreaterThan(0);
    } finally {
      await listener.close();
      await cached.close();
      await plain.close();
      await t2.drop();
    }
    // ~11,000 page requests and the whole chain applied: 120 s ran out at load 19, where the
    // work itself takes that long. A limit is no speed target.
  }, 600_000);
});
