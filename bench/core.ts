/**
 * bench/core: the initial sync over RPC/REST and bench/live (4,000-transaction blocks, ZMQ
 * arrival → committed) on a real regtest Bitcoin Core and on the devnode, on the same blocks, in
 * one run and one table.
 * 1. A throwaway regtest bitcoind (BITCOIND_BIN or the Core build beside the project) mines
 *    120 blocks to a bare OP_1, then a block splitting the mature coinbases, then `--blocks`
 *    blocks of `--txs-per-block` transactions, each made by `generateblock` from transactions
 *    built here (bench/core-chain.ts: outputs spendable without signatures, so that building
 *    them costs no signing; Core still verifies every script).
 * 2. Core: the indexer role syncs that chain over RPC/REST into an empty database; then it
 *    follows Core while `generateblock` connects one small warm-up block, `--cold-blocks` and
 *    then `--live-blocks` blocks of `--live-txs` transactions, each timed from Core's ZMQ
 *    `hashblock` to the indexer's commit (the cold ones, the first full-size blocks the fresh
 *    follower meets, reported apart).
 * 3. Core's blocks (every one, via REST) are written as a corpus (Core block files and
 *    corpus.json); bitcoind stops; the devnode's corpus node serves them and step 2 runs again
 *    on it (`advancecorpus` instead of `generateblock`).
 * Differences that are the nodes' own: Core also publishes `rawtx`/`hashtx` for every
 * transaction of a connected block (the corpus node does not), and Core's RPC and REST are
 * Core's. Run: `node --import tsx bench/core.ts [--quick] [--blocks N] [--txs-per-block N]
 * [--cold-blocks N] [--live-blocks N] [--live-txs N] [--seed S] [--json FILE] [--cpu-prof DIR]
 * [--follower-log PREFIX]` (`--cpu-prof`: each node's follower writes a V8 CPU profile under
 * DIR/core and DIR/devnode; `--follower-log`: its log lines go to PREFIX-core.log and
 * PREFIX-devnode.log, with LOG_LEVEL=debug each block's apply phases).
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import { startCorpusNode } from '../devnode/corpus.js';
import { corpusBlocksDir, MANIFEST_FILE, type CorpusBlock, type CorpusManifest } from '../devnode/corpus-manifest.js';
import { bytesToHex } from '../src/bitcoin/hash.js';
import { bitcoindBin, startBitcoind, type Bitcoind } from '../test/support/bitcoind.js';
import { COINBASE_DESCRIPTOR, CoreChainBuilder, type BuiltTx } from './core-chain.js';
import { BlkWriter } from './corpus/generate.js';
import {
  cacheDir,
  machine,
  PG_SETTINGS,
  pgOverrides,
  round,
  say,
  startBenchPostgres,
  syncOverRpc,
  type BenchPostgres,
  type RpcSyncResult,
} from './harness.js';
import {
  corpusLiveNode,
  floorAfter,
  measureLive,
  startFollower,
  stopFollower,
  waitApplied,
  type LiveNode,
  type LiveResult,
} from './live.js';
import { floorLine, type FloorResult } from './live-floor.js';

/** Blocks mined before the chain: their first 20 coinbases are mature when it starts. */
const PREMINE = 120;
/** Weight a built block stays under (Core's limit is 4,000,000 with the coinbase). */
const MAX_WEIGHT = 3_900_000;

interface Size {
  blocks: number;
  txsPerBlock: number;
  liveBlocks: number;
  liveTxs: number;
  /** Full-size blocks the follower applies first, timed apart from the live figures (cold). */
  coldBlocks: number;
  seed: string;
}

interface NodeFigures {
  sync: RpcSyncResult & { txPerSec: number };
  /** The first full-size blocks after the follower started (null: none asked for). */
  cold: LiveResult | null;
  live: LiveResult;
  /** PostgreSQL's own write cost for the tip block's rows on this index (bench/live-floor.ts; null: no live blocks). */
  floor: FloorResult | null;
}

/** Transactions for one block: up to `n`, under the block weight limit. */
function blockTxs(b: CoreChainBuilder, n: number): BuiltTx[] {
  const txs: BuiltTx[] = [];
  let weight = 0;
  while (txs.length < n) {
    const tx = b.next();
    if (!tx) throw new Error(`the chain ran out of coins after ${b.built} transactions`);
    txs.push(tx);
    weight += tx.weight;
    if (weight > MAX_WEIGHT - 20_000) break;
  }
  return txs;
}

/** Mines `txs` in one block on Core; its hash. */
async function generate(core: Bitcoind, txs: BuiltTx[]): Promise<string> {
  const r = await core.call<{ hash: string }>('generateblock', [COINBASE_DESCRIPTOR, txs.map((t) => t.hex)]);
  return r.hash;
}

/** Writes Core's active chain 0..tip as a corpus the devnode serves (no xor, no stale blocks). */
async function exportCorpus(core: Bitcoind, dir: string, params: Size): Promise<CorpusManifest> {
  const blocksDir = corpusBlocksDir(dir);
  mkdirSync(blocksDir, { recursive: true });
  const key = new Uint8Array(8);
  writeFileSync(join(blocksDir, 'xor.dat'), key);
  const writer = new BlkWriter(blocksDir, key);
  const tip = await core.tip();
  const blocks: CorpusBlock[] = [];
  let txs = 0;
  let rawBytes = 0;
  try {
    for (let h = 0; h <= tip.height; h++) {
      const hash = await core.call<string>('getblockhash', [h]);
      const header = await core.call<{ nTx: number; previousblockhash?: string }>('getblockheader', [hash]);
      const res = await fetch(`${core.restUrl}/block/${hash}.bin`);
      if (!res.ok) throw new Error(`REST block ${hash}: HTTP ${res.status}`);
      const bytes = new Uint8Array(await res.arrayBuffer());
      const at = writer.write(bytes);
      blocks.push({
        height: h,
        hash,
        prev: header.previousblockhash ?? '00'.repeat(32),
        file: at.file,
        offset: at.offset,
        length: bytes.length,
        txs: header.nTx,
      });
      txs += header.nTx;
      rawBytes += bytes.length;
    }
  } finally {
    writer.close();
  }
  const m: CorpusManifest = {
    format: 1,
    network: 'regtest',
    params: { ...params, source: 'bitcoind' },
    key: `core-${params.seed}`,
    blocks,
    events: blocks.map((_, i) => ['C', i]),
    tip,
    txs,
    rawBytes,
    reorgs: 0,
    staleBlocks: 0,
    hot: [],
    xor: bytesToHex(key),
    generatedMs: 0,
  };
  writeFileSync(join(dir, MANIFEST_FILE), JSON.stringify(m));
  return m;
}

/** Where to look into the follower: a V8 CPU profile under `cpuProf`/LABEL, its log lines in `followerLog`-LABEL.log. */
interface NodeOptions {
  cpuProf?: string;
  followerLog?: string;
}

/** Initial sync over RPC/REST to `target`, then the live blocks, on one node. */
async function measureNode(
  label: string,
  pgs: BenchPostgres,
  node: LiveNode,
  target: number,
  syncTxs: number,
  warmUp: () => Promise<string>,
  liveBlocks: number,
  coldBlocks: number,
  opts: NodeOptions,
): Promise<NodeFigures> {
  const db = await pgs.createDatabase(`bw_${label}`);
  const s = await syncOverRpc(pgs, db, node, target, label);
  const sync = { ...s, txPerSec: Math.round(syncTxs / (s.ms / 1000)) };
  say(`${label}: sync over RPC/REST: ${syncTxs} txs in ${round(s.ms / 1000, 1)} s = ${sync.txPerSec} tx/s`);
  const follower = startFollower(db, node, {}, opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(opts.cpuProf, label)}`] : []);
  let figures: Omit<NodeFigures, 'floor'>;
  let floor: FloorResult | null = null;
  try {
    // A small block first: the follower is subscribed and at the tip before anything is timed.
    await waitApplied(follower, await warmUp());
    // The first full-size blocks a fresh follower applies run code V8 has not optimized for them
    // yet, and write the first changes to pages since the sync's last checkpoint: timed, but apart
    // (bench/sync's follower meets its live blocks after 200 blocks of catch-up).
    const cold = coldBlocks > 0 ? await measureLive(node, follower, coldBlocks, { pgs, db: `bw_${label}` }) : null;
    if (cold) say(`${label}: the first ${coldBlocks} full-size blocks after the follower started (cold): ${cold.latencies.join(', ')} ms`);
    const live = await measureLive(node, follower, liveBlocks, { pgs, db: `bw_${label}` });
    say(
      `${label}: live: ${live.blocks} blocks of ${live.txsPerBlock} txs: ZMQ arrival → committed p50 ${live.p50} ms, p99 ${live.p99} ms, max ${live.max} ms`,
    );
    figures = { sync, cold, live };
    if (liveBlocks > 0) floor = await floorAfter(follower, pgs, `bw_${label}`, node.rpcUrl);
  } finally {
    await stopFollower(follower);
    if (opts.followerLog) writeFileSync(`${opts.followerLog}-${label}.log`, `${follower.lines.join('\n')}\n`);
  }
  if (floor) say(`${label}: ${floorLine(floor)}`);
  return { ...figures, floor };
}

/** The side-by-side table. */
export function nodesTable(
  size: Size,
  chain: { blocks: number; txs: number; syncTxs: number },
  devnode: NodeFigures,
  core: NodeFigures,
): string {
  const f = (x: number, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  const row = (what: string, a: string, b: string) => `| ${what} | ${a} | ${b} |`;
  return [
    '| measure | devnode (corpus node) | Bitcoin Core 30.0 (regtest) |',
    '|---|---|---|',
    row('chain', `${f(chain.blocks)} blocks, ${f(chain.txs)} txs (the same blocks)`, `${f(chain.blocks)} blocks, ${f(chain.txs)} txs`),
    row('sync over RPC/REST tx/s', f(devnode.sync.txPerSec), f(core.sync.txPerSec)),
    row('sync over RPC/REST s', f(devnode.sync.ms / 1000, 1), f(core.sync.ms / 1000, 1)),
    row(`live p50 ms (${f(size.liveTxs)}-tx blocks, ZMQ arrival → committed)`, f(devnode.live.p50), f(core.live.p50)),
    row('live p99 ms', f(devnode.live.p99), f(core.live.p99)),
    row('live max ms', f(devnode.live.max), f(core.live.max)),
    row('live txs per block', f(devnode.live.txsPerBlock), f(core.live.txsPerBlock)),
    ...(devnode.cold && core.cold
      ? [
          row(
            `first ${f(size.coldBlocks)} full-size blocks after the follower started (cold, not in the live rows), ms`,
            devnode.cold.latencies.map((x) => f(x)).join(', '),
            core.cold.latencies.map((x) => f(x)).join(', '),
          ),
        ]
      : []),
    row('indexer fetch → commit p50 ms', f(devnode.live.applyP50), f(core.live.applyP50)),
    row(
      "floor: PostgreSQL's own write cost for the tip block's rows, pages already logged (binary COPY, p50 ms)",
      devnode.floor ? f(devnode.floor.floor.logged.ms) : '—',
      core.floor ? f(core.floor.floor.logged.ms) : '—',
    ),
    row('live WAL MB per block (p50)', f(devnode.live.walMbP50 ?? 0, 1), f(core.live.walMbP50 ?? 0, 1)),
    row('live PostgreSQL CPU ms per block (p50)', f(devnode.live.postgresCpuMsP50 ?? 0), f(core.live.postgresCpuMsP50 ?? 0)),
    row('live indexer CPU ms per block (p50)', f(devnode.live.indexerCpuMsP50), f(core.live.indexerCpuMsP50)),
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = benchArgs(import.meta.url, {
    options: {
      quick: { type: 'boolean' },
      blocks: { type: 'string' },
      'txs-per-block': { type: 'string' },
      'live-blocks': { type: 'string' },
      'live-txs': { type: 'string' },
      'cold-blocks': { type: 'string' },
      seed: { type: 'string' },
      'cache-dir': { type: 'string' },
      json: { type: 'string' },
      'cpu-prof': { type: 'string' },
      'follower-log': { type: 'string' },
    },
  });
  const q = values.quick === true;
  const look: NodeOptions = { cpuProf: values['cpu-prof'], followerLog: values['follower-log'] };
  const num = (v: string | undefined, d: number) => (v === undefined ? d : Number(v));
  const size: Size = {
    blocks: num(values.blocks, q ? 3 : 50),
    txsPerBlock: num(values['txs-per-block'], q ? 150 : 2_000),
    liveBlocks: num(values['live-blocks'], q ? 2 : 10),
    liveTxs: num(values['live-txs'], q ? 300 : 4_000),
    coldBlocks: num(values['cold-blocks'], q ? 1 : 2),
    seed: values.seed ?? 'core',
  };
  const startMachine = machine();
  say(
    `bench/core: ${size.blocks} blocks × ${size.txsPerBlock} txs, then ${size.coldBlocks} + ${size.liveBlocks} live blocks × ${size.liveTxs} txs, on ${bitcoindBin} and the devnode; load ${startMachine.loadavg.join(' ')}`,
  );
  const root = mkdtempSync(join(cacheDir(values['cache-dir']), 'core-'));
  const pgs = await startBenchPostgres(root);
  let core: Bitcoind | null = await startBitcoind();
  try {
    // 1. The chain on Core.
    const b = new CoreChainBuilder(size.seed);
    const t0 = performance.now();
    const pre = await core.call<string[]>('generatetodescriptor', [PREMINE, COINBASE_DESCRIPTOR]);
    for (const hash of pre.slice(0, PREMINE - 100)) {
      const blk = await core.call<{ tx: { txid: string; vout: { value: number }[] }[] }>('getblock', [hash, 2]);
      b.addCoinbase(blk.tx[0]!.txid, Math.round(blk.tx[0]!.vout[0]!.value * 1e8));
    }
    await generate(core, b.fanOut(Math.min(1_000, Math.max(200, Math.ceil((size.txsPerBlock * 2) / (PREMINE - 100))))));
    let syncTxs = 0;
    for (let i = 0; i < size.blocks; i++) {
      const txs = blockTxs(b, size.txsPerBlock);
      await generate(core, txs);
      if ((i + 1) % 10 === 0) say(`  chain: ${i + 1}/${size.blocks} blocks on Core, ${b.built} txs`);
    }
    const target = (await core.tip()).height;
    for (let h = 0; h <= target; h++)
      syncTxs += (await core.call<{ nTx: number }>('getblockheader', [await core.call<string>('getblockhash', [h])])).nTx;
    const buildMs = performance.now() - t0;
    say(
      `chain: ${target + 1} blocks, ${syncTxs} txs built and mined on Core in ${round(buildMs / 1000, 1)} s (${Math.round((b.built * 1000) / buildMs)} tx/s with generateblock)`,
    );
    const warm = blockTxs(b, 20);
    const live = Array.from({ length: size.coldBlocks + size.liveBlocks }, () => blockTxs(b, size.liveTxs));

    // 2. Core.
    const c = core;
    let next = 0;
    const coreNode: LiveNode = {
      rpcUrl: c.rpcUrl,
      zmqUrl: c.zmqUrl,
      advance: async () => {
        const i = next++;
        return { height: target + 2 + i, hash: await generate(c, live[i]!) };
      },
    };
    const coreFigures = await measureNode(
      'core',
      pgs,
      coreNode,
      target,
      syncTxs,
      () => generate(c, warm),
      size.liveBlocks,
      size.coldBlocks,
      look,
    );

    // 3. The same blocks on the devnode.
    const dir = join(root, 'corpus');
    const m = await exportCorpus(c, dir, size);
    await c.stop();
    core = null;
    const corpus = await startCorpusNode({ dir, tip: target });
    let devFigures: NodeFigures;
    try {
      const node = corpusLiveNode(corpus);
      devFigures = await measureNode(
        'devnode',
        pgs,
        node,
        target,
        syncTxs,
        async () => (await corpus.advance(1)).hash,
        size.liveBlocks,
        size.coldBlocks,
        look,
      );
    } finally {
      await corpus.stop();
    }
    const chain = { blocks: target + 1, txs: syncTxs, syncTxs };
    say('');
    say(nodesTable(size, chain, devFigures, coreFigures));
    const result = {
      size,
      chain: { ...chain, totalTxs: m.txs, rawBytes: m.rawBytes, buildMs: round(buildMs) },
      devnode: devFigures,
      core: coreFigures,
      machineStart: startMachine,
      machineEnd: machine(),
      postgres: { ...PG_SETTINGS, ...pgOverrides() },
    };
    if (values.json) writeFileSync(values.json, JSON.stringify(result, null, 2));
    say(`RESULT ${JSON.stringify(result)}`);
  } finally {
    if (core) await core.stop();
    await pgs.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
