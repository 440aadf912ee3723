/**
 * The phases of the indexer's writes are read from /metrics: blocks applied (and a block undone
 * by a reorg) on a real indexer following the devnode leave counts in
 * `blockwire_indexer_phase_seconds{path, phase}` (src/ops/phases.ts, cli/ops/metrics.ts), one
 * per block and phase.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { silentLogger } from '../../../src/log.js';
import { createMetrics, type Metrics } from '../../../cli/ops/metrics.js';
import type { IndexerHandle } from '../../../indexer/main.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { startTestIndexer, waitSynced } from '../../support/chain-indexer.js';

const APPLY_PHASES = [
  'spend',
  'derive',
  'txs',
  'assets',
  'utxos',
  'balances',
  'history',
  'wallets',
  'watches',
  'confirmations',
  'mempool',
  'events',
];
const UNDO_PHASES = ['derive', 'utxos', 'balances', 'history', 'txs', 'events'];

let node: Devnode;
let t: TestDatabase;
let indexer: IndexerHandle;
let metrics: Metrics;

beforeAll(async () => {
  node = await startDevnode({ initialBlocks: 101 });
  t = await createMigratedDatabase('phases');
  indexer = await startTestIndexer(t, node);
  await waitSynced(t.db, node);
  metrics = createMetrics({ db: t.db, log: silentLogger(), roles: ['indexer'], processMetrics: false });
  metrics.track({ indexer });
});
afterAll(async () => {
  await indexer?.stop();
  await node?.stop();
  await t?.drop();
});

/** The count of `blockwire_indexer_phase_seconds` for a path and phase (0 when absent). */
async function count(path: string, phase: string): Promise<number> {
  const m = (await metrics.render()).match(
    new RegExp(`^blockwire_indexer_phase_seconds_count\\{path="${path}",phase="${phase}"\\} (\\d+)$`, 'm'),
  );
  return m ? Number(m[1]) : 0;
}

it('every phase of every block applied after tracking is counted', async () => {
  for (const p of APPLY_PHASES) expect(await count('apply', p), p).toBe(0);
  const applied = indexer.metrics().blocksApplied;
  await node.wallet.send(node.wallet.newAddress('p2wpkh').address!, 50_000n);
  await node.mine(3);
  await waitSynced(t.db, node);
  const blocks = indexer.metrics().blocksApplied - applied;
  expect(blocks).toBe(3);
  for (const p of APPLY_PHASES) expect(await count('apply', p), p).toBe(blocks);
  expect(await metrics.render()).toMatch(/^blockwire_indexer_phase_seconds_sum\{path="apply",phase="utxos"\} [0-9.e-]+$/m);
});

it('a block undone by a reorg counts in the undo path', async () => {
  await node.reorg(1, { newBlocks: 2 });
  await waitSynced(t.db, node);
  for (const p of UNDO_PHASES) expect(await count('undo', p), p).toBe(1);
});
