/**
 * bench/small: many small blocks indexed block by block (target: median ≤ 10 ms per block), on
 * the devnode and on a real regtest Bitcoin Core, on chains of the same shape: 101 blocks
 * mined to the node's wallet (on Core, plus one block splitting a coinbase into one coin per
 * payment: bench/small-chain.ts, built in bulk and cached), then `--blocks` blocks of 1–10
 * wallet payments each (block i carries 1 + i mod 10). The indexer role then starts on an
 * empty database with the bulk path off (every block through the per-block path, as after a
 * day offline or on signet) and catches up to the node's tip. Reported per node: the median and
 * p90 time per block while catching up (the whole per-block cost: the node's answers, the plan,
 * the fetch, the write transaction), the indexer's own plan → commit median per transaction
 * (`block applied` ms) and how much of it waited for the node (`waitMs`), blocks/s, and with
 * `--phases` the medians of the write transaction's phases per block.
 * Run: `node --import tsx bench/small.ts [--quick] [--blocks N] [--only devnode|core]
 * [--phases] [--catchup-blocks N] [--log PREFIX]` (INDEXER_CATCHUP_BLOCKS for the indexer; its
 * default else; `--log`: the indexer's log lines to PREFIX.<node>.log) (a bitcoind:
 * BITCOIND_BIN or the Core build beside the project).
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import { startDevnode } from '../devnode/start.js';
import { bitcoindBin, bitcoindPresent, startBitcoind } from '../test/support/bitcoind.js';
import { cacheDir, childrenCpuMs, logLines, machine, pct, round, say, startBenchPostgres, type BenchPostgres } from './harness.js';
import { startFollower, waitApplied } from './live.js';
import { CORE_SETUP_BLOCKS, paymentsIn, smallCoreChain } from './small-chain.js';

interface SmallNode {
  rpcUrl: string;
  zmqUrl: string;
  /** Blocks above genesis before the first block of payments (left out of the figures). */
  setup: number;
  tip(): Promise<{ height: number; hash: string }>;
  stop(): Promise<void>;
}

export interface SmallResult {
  blocks: number;
  txs: number;
  /** Per block while catching up: a commit's time since the previous one ÷ its blocks (ms). */
  perBlockP50: number;
  perBlockP90: number;
  /** The indexer's plan → commit of the transaction holding each block (ms). */
  commitP50: number;
  /** Of that, the time the turn waited for the node's hashes and blocks before writing (ms). */
  waitP50: number;
  blocksPerSec: number;
  /** Medians of the write transaction's phases (ms), with --phases. */
  phases: Record<string, number>;
  /**
   * CPU per block over the whole catch-up (setup blocks included; the indexer's start too): the
   * indexer process's and every PostgreSQL process's (ms). Unlike the times, hardly moved by
   * other work on the machine.
   */
  cpuMsPerBlock: { indexer: number; postgres: number };
}

const PREMINE = 101;

async function devnodeChain(blocks: number): Promise<SmallNode> {
  const d = await startDevnode({ initialBlocks: PREMINE, samplePayments: false });
  const to = d.wallet.address('p2wpkh');
  for (let i = 0; i < blocks; i++) {
    for (let k = 0; k < paymentsIn(i); k++) await d.wallet.send(to, 10_000n + BigInt(k));
    await d.mine(1);
    if ((i + 1) % 250 === 0) say(`  devnode: ${i + 1}/${blocks} blocks mined`);
  }
  return { rpcUrl: d.rpcUrl, zmqUrl: d.zmqUrl, setup: PREMINE, tip: async () => d.tip(), stop: () => d.stop() };
}

async function coreChain(blocks: number, cache: string): Promise<SmallNode> {
  const c = await startBitcoind({ copyDatadir: await smallCoreChain(cache, blocks, say) });
  return { rpcUrl: c.rpcUrl, zmqUrl: c.zmqUrl, setup: CORE_SETUP_BLOCKS, tip: () => c.tip(), stop: () => c.stop() };
}

async function measure(
  name: string,
  pgs: BenchPostgres,
  start: (blocks: number) => Promise<SmallNode>,
  blocks: number,
  env: Record<string, string>,
  logTo?: string,
): Promise<SmallResult> {
  const node = await start(blocks);
  try {
    const tip = await node.tip();
    const url = await pgs.createDatabase(`small_${name}`);
    const cpu0 = { indexer: childrenCpuMs(), postgres: pgs.cpuMs() };
    const follower = startFollower(url, node, env);
    try {
      const at: number[] = [];
      follower.onLine((line, t) => {
        if (line.includes('"block applied"')) at.push(t);
      });
      await waitApplied(follower, tip.hash, 1_800_000);
      if (logTo) writeFileSync(`${logTo}.${name}.log`, follower.lines.join('\n'));
      const applied = logLines(follower.lines, 'block applied');
      // Steady state: from the first commit above the premine (the indexer is warm by then).
      // Blocks applied in one transaction log `batch: n` each; a commit's time since the
      // previous commit is shared by its blocks.
      // Commits are grouped from the first line (a commit's lines are consecutive); a commit
      // holding setup blocks is left out whole (its time is not the measured blocks' alone).
      const perBlock: number[] = [];
      let from = -1;
      let start = 0;
      for (let i = 0, prev: number | undefined; i < applied.length;) {
        const n = Math.min(Number(applied[i]!.batch ?? 1), applied.length - i);
        const end = at[i + n - 1]!;
        if (i > node.setup && prev !== undefined) {
          if (from < 0) [from, start] = [i, prev];
          for (let k = 0; k < n; k++) perBlock.push((end - prev) / n);
        }
        prev = end;
        i += n;
      }
      if (from < 0) from = applied.length; // every block committed with setup blocks (a short chain)
      const span = (at[at.length - 1]! - start) / 1000;
      // The indexer's CPU is its children's once it exited; its backends' once they closed.
      follower.proc.kill('SIGTERM');
      await follower.exited;
      await new Promise((r) => setTimeout(r, 500));
      const cpuMsPerBlock = {
        indexer: round((childrenCpuMs() - cpu0.indexer) / at.length, 2),
        postgres: round((pgs.cpuMs() - cpu0.postgres) / at.length, 2),
      };
      const byPhase = new Map<string, number[]>();
      // A line per block applied alone, or per turn of blocks written together (`blocks`: its share per block).
      for (const l of logLines(follower.lines, 'apply phases').filter((x) => Number(x.height) >= from)) {
        const n = Number(l.blocks ?? 1);
        for (const [k, v] of Object.entries(l.ms as Record<string, number>))
          byPhase.set(k, [...(byPhase.get(k) ?? []), ...Array<number>(n).fill(v / n)]);
      }
      return {
        blocks: perBlock.length,
        txs: applied.slice(from).reduce((s, l) => s + Number(l.txs), 0),
        perBlockP50: round(pct(perBlock, 50), 2),
        perBlockP90: round(pct(perBlock, 90), 2),
        commitP50: pct(
          applied.slice(from).map((l) => Number(l.ms)),
          50,
        ),
        waitP50: pct(
          applied.slice(from).map((l) => Number(l.waitMs ?? 0)),
          50,
        ),
        blocksPerSec: round(perBlock.length / span, 1),
        phases: Object.fromEntries([...byPhase].map(([k, v]) => [k, pct(v, 50)])),
        cpuMsPerBlock,
      };
    } finally {
      follower.proc.kill('SIGTERM');
      await follower.exited;
    }
  } finally {
    await node.stop();
  }
}

async function main(): Promise<void> {
  const { values } = benchArgs(import.meta.url, {
    options: {
      quick: { type: 'boolean' },
      blocks: { type: 'string' },
      only: { type: 'string' },
      phases: { type: 'boolean' },
      'catchup-blocks': { type: 'string' },
      'cache-dir': { type: 'string' },
      log: { type: 'string' },
    },
  });
  // The quick run's 30 blocks would all commit in the turn that holds the setup blocks (a turn
  // takes up to INDEXER_CATCHUP_BLOCKS), leaving no commit to measure: it takes 5 a turn.
  const catchupBlocks = values['catchup-blocks'] ?? (values.quick ? '5' : undefined);
  const env = {
    ...(values.phases ? { LOG_LEVEL: 'debug' } : {}),
    ...(catchupBlocks ? { INDEXER_CATCHUP_BLOCKS: catchupBlocks } : {}),
  };
  const blocks = values.blocks !== undefined ? Number(values.blocks) : values.quick ? 30 : 1_000;
  // Core is left out without a bitcoind (a notice; the Results row then shows '—').
  const only = values.only?.split(',') ?? (bitcoindPresent ? ['devnode', 'core'] : ['devnode']);
  if (!bitcoindPresent && only.includes('core'))
    throw new Error(`bench/small: no bitcoind (${bitcoindBin}); set BITCOIND_BIN or --only devnode`);
  if (!bitcoindPresent) say('notice: bench/small without Bitcoin Core: bitcoind not found (set BITCOIND_BIN)');
  const m0 = machine();
  say(
    `bench/small: ${blocks} blocks of 1–10 payments indexed block by block, on ${only.join(' and ')}${only.includes('core') ? ` (${bitcoindBin})` : ''}; load ${m0.loadavg.join(' ')}`,
  );
  mkdirSync(cacheDir(values['cache-dir']), { recursive: true });
  const root = mkdtempSync(join(cacheDir(values['cache-dir']), 'small-'));
  const pgs = await startBenchPostgres(root);
  const results: Record<string, SmallResult> = {};
  try {
    if (only.includes('devnode')) results.devnode = await measure('devnode', pgs, devnodeChain, blocks, env, values.log);
    if (results.devnode) say(`  devnode: ${JSON.stringify(results.devnode)}`);
    if (only.includes('core'))
      results.core = await measure('core', pgs, (n) => coreChain(n, cacheDir(values['cache-dir'])), blocks, env, values.log);
  } finally {
    await pgs.stop();
    rmSync(root, { recursive: true, force: true });
  }
  const names = Object.keys(results);
  const row = (label: string, f: (r: SmallResult) => string) => `| ${label} | ${names.map((n) => f(results[n]!)).join(' | ')} |`;
  say('');
  say(`| small blocks, block by block | ${names.join(' | ')} |`);
  say(`|---|${names.map(() => '---:').join('|')}|`);
  say(row('blocks (txs)', (r) => `${r.blocks} (${r.txs})`));
  say(row('ms per block p50', (r) => String(r.perBlockP50)));
  say(row('ms per block p90', (r) => String(r.perBlockP90)));
  say(row('plan → commit p50 ms (per transaction)', (r) => String(r.commitP50)));
  say(row('of which waiting for the node p50 ms', (r) => String(r.waitP50)));
  say(row('blocks/s', (r) => String(r.blocksPerSec)));
  say(row('CPU ms per block: indexer + PostgreSQL', (r) => `${r.cpuMsPerBlock.indexer} + ${r.cpuMsPerBlock.postgres}`));
  for (const k of new Set(names.flatMap((n) => Object.keys(results[n]!.phases))))
    say(row(`phase ${k} p50 ms`, (r) => String(r.phases[k] ?? '—')));
  say(`RESULT ${JSON.stringify({ blocks, ...results, machineStart: m0, machineEnd: machine() })}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
