/**
 * Random fork sequences against the running indexer (reorg property test): seeded
 * rounds of new blocks with payments, reorgs of depth 1–10 onto competing branches, blocks
 * announced twice or out of order (ZMQ reordered), ZMQ messages dropped, and node restarts.
 * The index ends equal to a fresh index of the final chain, and the outbox's block events
 * replay to exactly that chain (one connected or disconnected event per step, none twice).
 * Script aliases are the one exception, by design (indexer/writer/script-aliases.ts): a P2PK or bare
 * multisig payment seen only in the mempool or on a branch that lost leaves its alias, which
 * depends on the script alone and is never removed, so the index holds the fresh index's aliases
 * plus, at most, those of the scripts this test paid.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import type { IndexerHandle } from '../../../indexer/main.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { checkBlockEvents, crashSeed, seededRandom } from '../../support/chain-crash.js';
import { freshBulkIndexOf, startTestIndexer, waitMempoolSynced, waitSynced } from '../../support/chain-indexer.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';
import { aliasesOf } from '../../../indexer/writer/script-aliases.js';

const ROUNDS = Number(process.env.BLOCKWIRE_FORK_ROUNDS ?? 40);

let node: Devnode;
let t: TestDatabase;
let ix: IndexerHandle;
let ref: TestDatabase | undefined;

beforeAll(async () => {
  node = await startDevnode({ initialBlocks: 110 });
  t = await createMigratedDatabase('rf');
  ix = await startTestIndexer(t, node);
  await waitSynced(t.db, node, 60_000);
});
afterAll(async () => {
  await ix?.stop();
  await node?.stop();
  await Promise.all([t?.drop(), ref?.drop()]);
});

it(`ends equal to a fresh index after ${ROUNDS} random rounds of forks and faults`, { timeout: 600_000 }, async () => {
  const rand = seededRandom(crashSeed('random fork sequences'));
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const done: Record<string, number> = {};
  const paid: Uint8Array[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const r = rand();
    const count = (what: string) => void (done[what] = (done[what] ?? 0) + 1);
    let what: string;
    if (r < 0.1) {
      count('zmq-drop');
      node.faults.zmq.drop(pick(['hashblock', 'sequence', 'rawtx', '*'] as const), 1 + Math.floor(rand() * 3));
    } else if (r < 0.2) {
      count('zmq-reorder');
      node.faults.zmq.reorderNext(2 + Math.floor(rand() * 6), rand() < 0.5 ? 'reverse' : 'shuffle');
    } else if (r < 0.25) {
      count('node-restart');
      await node.faults.restart();
    }
    if (rand() < 0.35) {
      const depth = 1 + Math.floor(rand() * 10);
      what = 'reorg';
      await node.reorg(depth, { newBlocks: depth + 1 + Math.floor(rand() * 2), keepTxs: rand() < 0.7 });
    } else if (rand() < 0.08) {
      what = 'lower-height';
      await node.invalidate(node.tip().hash);
    } else {
      what = 'blocks';
      for (let i = Math.floor(rand() * 4); i > 0; i--) {
        const d = node.wallet.newAddress(pick(['p2pkh', 'p2sh-p2wpkh', 'p2wpkh', 'p2tr', 'p2pk', 'bare-multisig'] as const));
        paid.push(Buffer.from(d.script, 'hex'));
        await node.wallet.send(d.address ?? { script: d.script }, 10_000n + BigInt(Math.floor(rand() * 1e6)));
      }
      await node.mine(1 + Math.floor(rand() * 2));
    }
    count(what);
    // Sometimes let the indexer settle, sometimes pile the next change on top.
    if (rand() < 0.5) await waitSynced(t.db, node);
  }
  process.stderr.write(`random fork sequences: ${JSON.stringify(done)}\n`);
  await node.faults.zmq.flush();
  await waitSynced(t.db, node, 60_000);
  await waitMempoolSynced(t.db, node);
  ref = await freshBulkIndexOf(node);
  const got = await snapshotIndex(t.db);
  const want = await snapshotIndex(ref.db);
  expect({ ...got, mempool: [], aliases: [] }).toEqual({ ...want, aliases: [] });
  const uuid = (b: Buffer) => b.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-');
  const ours = new Set(aliasesOf(paid).map((a) => `${uuid(a.scriptKey)} ${uuid(a.addrKey)} ${a.keyed}`));
  expect(got.aliases.filter((a) => !want.aliases.includes(a) && !ours.has(a))).toEqual([]);
  expect(want.aliases.filter((a) => !got.aliases.includes(a))).toEqual([]);
  const tip = node.tip();
  await checkBlockEvents(
    t.db,
    Array.from({ length: tip.height + 1 }, (_, h) => node.blockHash(h)),
  );
});
