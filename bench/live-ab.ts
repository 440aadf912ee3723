/**
 * bench/live-ab: the per-block writer of two versions of the code on the same live blocks, in
 * one run, alternated. An index of the corpus below its 4,000-transaction tail is imported once
 * (kept under `--keep DIR` for the next run); then for each of `--live-blocks` tail blocks: a first
 * apply (not counted), then `--rounds` times each version's `applyBlock` of the block after the
 * current writer's undo (the pages already logged since the last checkpoint, as consecutive live
 * blocks find them); at the end the live blocks are undone, so that the kept index gives the next
 * run the same blocks. Per version, medians: wall time of the apply, PostgreSQL CPU and this
 * process's CPU (the writer's JS). The baseline is `--baseline REF` checked out beside
 * (bench/baseline.ts); both versions write the same layout (no migration between them). The
 * current writer gets the recent transactions' tx_nums (indexer/writer/txid-cache.ts) of the
 * blocks below the tip, as a following indexer holds them (`--txid-cache N` transactions, default
 * INDEXER_TXID_CACHE_TXS's; 0: none).
 * With `--timeline`, each apply's line also gives how long PostgreSQL waited for the writer and how
 * long each side waited for a core (bench/pg-wait.ts). The index keeps its history in chunk rows
 * (HISTORY_BUSY=0, no fold); with `--parts`, in buckets with transaction parts on (TX_PARTS=1: the
 * import's finish folds every block, so the live blocks' inputs are looked up in the parts' txid
 * buckets), kept apart (`live-ab-N-parts`). With `--node-spent`, the current writer is given each
 * block's spent outputs as the node's `/rest/spenttxouts` would give them (the run loop's live
 * blocks: writer/apply.ts `BlockToApply.spent`). With `--catchup N`, the N blocks below the live
 * ones are applied block by block before them, once, when the index is made (kept apart,
 * `…-cN`): the index as a following indexer leaves it after catching up, as bench/sync's live
 * step finds it, rather than as the import's finish built it. With `--recent`, the current writer
 * writes a block's history chunk rows into `history_recent` and its balance changes into
 * `balances_recent`, as the run loop's live blocks do (writer/recent-blocks.ts), the tables moved
 * and vacuumed after each undo as the loop's idle move leaves them.
 * `node --import tsx bench/live-ab.ts [--blocks N] [--live-blocks N] [--rounds N] [--baseline REF] [--keep DIR] [--txid-cache N] [--baseline-txids] [--timeline] [--parts] [--node-spent] [--catchup N] [--recent]`
 * @module
 */
import { closeSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import { ensureCorpus } from './corpus/generate.js';
import { cacheDir, importCorpus, CHUNK_ROWS, pct, round, runSize, say, startBenchPostgres } from './harness.js';
import { checkoutBaseline } from './baseline.js';
import { ServerWaits, runQueueMs } from './pg-wait.js';
import { decodeBlock, type DecodedBlock } from '../src/bitcoin/block.js';
import { createDb } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { corpusMainChain, loadCorpusManifest, readCorpusBlock, type CorpusManifest } from '../devnode/corpus-manifest.js';
import { TxidCache } from '../indexer/writer/txid-cache.js';
import { moveRecentBlocks } from '../indexer/writer/recent-blocks.js';
import { loadConfig } from '../src/config.js';
import * as current from '../indexer/writer/apply.js';
import type { SpentOutput } from '../indexer/node-rest.js';
import { decodeOuts } from '../src/db/packed.js';

type Writer = Pick<typeof current, 'applyBlock' | 'undoBlock'>;

/**
 * The outputs each transaction of `block` spends, as `/rest/spenttxouts` gives them, from its
 * `block_undo` row (those of earlier blocks in input order; those of the block itself from it).
 */
function spentOf(block: DecodedBlock, undo: Buffer): SpentOutput[][] {
  const earlier = decodeOuts(undo);
  const own = new Map(block.txs.map((tx) => [hashToHex(tx.txid), tx.outputs]));
  let next = 0;
  return block.txs.map((tx, i) =>
    i === 0 && tx.isCoinbase
      ? []
      : tx.inputs.map((input) => {
          const o = own.get(hashToHex(input.prevTxid))?.[input.vout] ?? earlier[next++];
          if (o === undefined) throw new Error(`block_undo holds fewer outputs than block ${hashToHex(block.hash)} spends`);
          return { value: o.value, script: o.script };
        }),
  );
}

/** The corpus's block at `height` whose parent is `prev` (hex, RPC order), serialized. */
function readRawBlock(dir: string, m: CorpusManifest, height: number, prev: string): Buffer {
  const b = m.blocks.find((x) => x.height === height && x.prev === prev);
  if (!b) throw new Error(`corpus has no block ${height} on ${prev}`);
  return readCorpusBlock(dir, m, b);
}

/** Adds the main chain's transactions up to `tip` (the newest `cache.limit`) to `cache`, oldest first. */
function fillTxidCache(cache: TxidCache, dir: string, m: CorpusManifest, tip: number): void {
  const chain = corpusMainChain(m);
  let from = tip + 1;
  for (let n = 0; from > 0 && n + chain[from - 1]!.txs <= cache.limit;) n += chain[--from]!.txs;
  const files = new Map<number, number>();
  try {
    for (let h = from; h <= tip; h++)
      cache.addBlock(
        h,
        decodeBlock(readCorpusBlock(dir, m, chain[h]!, files)).txs.map((tx) => tx.txid),
      );
  } finally {
    for (const fd of files.values()) closeSync(fd);
  }
}

async function main(): Promise<void> {
  const { values } = benchArgs(import.meta.url, {
    options: {
      blocks: { type: 'string' },
      'live-blocks': { type: 'string' },
      rounds: { type: 'string' },
      baseline: { type: 'string' },
      keep: { type: 'string' },
      'node-spent': { type: 'boolean' },
      'txid-cache': { type: 'string' },
      timeline: { type: 'boolean' },
      'baseline-txids': { type: 'boolean' },
      parts: { type: 'boolean' },
      catchup: { type: 'string' },
      recent: { type: 'boolean' },
    },
  });
  const size = runSize({ blocks: values.blocks ?? '300', 'live-blocks': '40', 'catchup-blocks': '0' });
  const { dir } = ensureCorpus(cacheDir(), size.corpus, say);
  const manifest = await loadCorpusManifest(dir);
  const catchup = Number(values.catchup ?? 0);
  const root =
    values.keep ?? join(cacheDir(), `live-ab-${size.corpus.blocks}${values.parts ? '-parts' : ''}${catchup > 0 ? `-c${catchup}` : ''}`);
  const fresh = !existsSync(join(root, 'pg', 'PG_VERSION'));
  mkdirSync(root, { recursive: true });
  const pgs = await startBenchPostgres(root);
  const base = checkoutBaseline(values.baseline ?? 'main', say);
  try {
    const url = fresh ? await pgs.createDatabase('bw_ab') : pgs.url('bw_ab');
    if (fresh) {
      const imported = await importCorpus(dir, url, 40 + catchup, [], pgs, undefined, values.parts ? { TX_PARTS: '1' } : CHUNK_ROWS);
      say(`imported ${imported.blocks} blocks (${imported.txs} txs)`);
    }
    // Each version's writer runs on its own version's pool (its COPYs find their client there).
    const old = (await import(join(base.dir, 'indexer/writer/apply.ts'))) as Writer;
    const oldConnect = (await import(join(base.dir, 'src/db/connect.ts'))) as { createDb: typeof createDb };
    const db = createDb(url, { max: 1 });
    // (a kept index made by older code gets the current tables; the baseline writes none of them)
    await migrateToLatest(db);
    const oldDb = oldConnect.createDb(url, { max: 1 });
    const writers: [string, Writer, typeof db][] = [
      [`baseline ${base.commit.slice(0, 7)}`, old, oldDb],
      ['current', current, db],
    ];
    const tipNow = async () =>
      (await pgs.query<{ height: number; hash: Buffer }>('bw_ab', 'SELECT height, hash FROM chain_tip WHERE id = 1')).rows[0]!;
    if (fresh && catchup > 0) {
      // `--catchup N`: the N blocks below the live ones applied block by block, as a following
      // indexer catches up (their history in chunk rows, their rows where the per-block writer
      // puts them), before the first live block.
      const cc = new TxidCache(loadConfig({}).indexerTxidCacheTxs);
      fillTxidCache(cc, dir, manifest, (await tipNow()).height);
      const t0 = performance.now();
      for (let i = 0; i < catchup; i++) {
        const tip = await tipNow();
        const block = decodeBlock(readRawBlock(dir, manifest, tip.height + 1, hashToHex(tip.hash)));
        const r = await current.applyBlock(db, block, tip.height + 1, { txids: cc });
        if (r.kind !== 'applied') throw new Error(`catch-up block ${tip.height + 1}: ${r.kind}`);
      }
      say(`caught up ${catchup} blocks block by block in ${round((performance.now() - t0) / 1000, 1)} s`);
    }
    const samples = new Map<string, { ms: number; pg: number; js: number }[]>(writers.map(([n]) => [n, []]));
    const timeline = values.timeline ? new ServerWaits() : null;
    // With BENCH_PG_SETTINGS loading pg_stat_statements, the statements' own times are listed at the end.
    const stats =
      (
        await pgs.query(
          'bw_ab',
          "SELECT 1 FROM pg_settings WHERE name = 'shared_preload_libraries' AND setting LIKE '%pg_stat_statements%'",
        )
      ).rows.length > 0;
    if (stats) {
      await pgs.query('bw_ab', 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await pgs.query('bw_ab', 'SELECT pg_stat_statements_reset()');
    }
    // The current writer's recent transactions, as a following indexer that applied the blocks
    // below the tip holds them (INDEXER_TXID_CACHE_TXS; the baseline has none unless
    // `--baseline-txids`, for a baseline whose writer takes them).
    const txids = new TxidCache(Number(values['txid-cache'] ?? loadConfig({}).indexerTxidCacheTxs));
    fillTxidCache(txids, dir, manifest, (await tipNow()).height);
    say(`txid cache: ${txids.size} recent transactions`);
    const ctxOf = (w: Writer) => (w === current || values['baseline-txids'] ? { txids } : {});
    const rounds = Number(values.rounds ?? 2);
    const live = Number(values['live-blocks'] ?? 4);
    const applied: { height: number; raw: Buffer }[] = [];
    for (let i = 0; i < live; i++) {
      const tip = await tipNow();
      const height = tip.height + 1;
      const raw = readRawBlock(dir, manifest, height, hashToHex(tip.hash));
      const block: DecodedBlock = decodeBlock(raw);
      // (undo takes the block from its source: here the corpus, which has the block just applied)
      const source = { getBlock: async (hash: string) => (hash === hashToHex(block.hash) ? raw : null) };
      const first = await current.applyBlock(db, block, height, { txids });
      if (first.kind !== 'applied') throw new Error(`block ${height}: ${first.kind}`);
      applied.push({ height, raw });
      // With `--node-spent`, the current writer is given the outputs the block spends as a node's
      // /rest/spenttxouts gives them (here from the block's undo row, as the first apply wrote it).
      const spent = values['node-spent']
        ? spentOf(
            block,
            (await pgs.query<{ spent: Buffer }>('bw_ab', 'SELECT spent FROM block_undo WHERE height = $1', [height])).rows[0]!.spent,
          )
        : undefined;
      for (let r = 0; r < rounds; r++) {
        const order = (i + r) % 2 === 0 ? writers : [...writers].reverse();
        for (const [name, w, wdb] of order) {
          const u = await current.undoBlock(db, height, source, { txids });
          if (u.kind !== 'undone') throw new Error(`undo ${height}: ${u.kind}`);
          // (`--recent`: the tables as the run loop's idle move leaves them, emptied and vacuumed)
          if (values.recent) await moveRecentBlocks(db);
          timeline?.reset();
          const queued0 = timeline ? runQueueMs(join(root, 'pg')) : null;
          const pg0 = pgs.cpuMs();
          const js0 = process.cpuUsage();
          const t0 = performance.now();
          const phases: Record<string, number> = {};
          const wctx = {
            ...ctxOf(w),
            phases: (_path: string, phase: string, seconds: number) =>
              void (phases[phase] = round((phases[phase] ?? 0) + seconds * 1000, 0)),
          };
          const a =
            w === current && (spent || values.recent)
              ? (await current.applyBlocks(wdb, [{ block, height, ...(spent ? { spent } : {}), recent: values.recent === true }], wctx))[0]!
              : await w.applyBlock(wdb, block, height, wctx);
          const ms = performance.now() - t0;
          const js = process.cpuUsage(js0);
          // (the run loop adds the committed block's transactions to the cache once it is logged)
          txids.flush();
          if (a.kind !== 'applied') throw new Error(`${name} block ${height}: ${a.kind}`);
          samples.get(name)!.push({ ms, pg: pgs.cpuMs() - pg0, js: (js.user + js.system) / 1000 });
          say(
            `block ${height} (${block.txs.length} txs) ${name}: ${round(ms, 1)} ms, PostgreSQL CPU ${pgs.cpuMs() - pg0} ms, writer CPU ${round((js.user + js.system) / 1000, 0)} ms; ${JSON.stringify(phases)}${timeline && queued0 ? `; ${timeline.describe(queued0, runQueueMs(join(root, 'pg')))}` : ''}`,
          );
        }
      }
      // Whichever version applied it last, the next block finds it among the recent transactions,
      // as a following indexer's next block does (the undo before a baseline apply cut it).
      if (txids.get(block.txs[0]!.txid) === undefined)
        txids.addBlock(
          height,
          block.txs.map((tx) => tx.txid),
        );
    }
    // Back to the tip the run found: the kept index gives the next run the same blocks.
    for (const { height, raw } of applied.reverse()) {
      const hash = hashToHex(decodeBlock(raw).hash);
      const u = await current.undoBlock(db, height, { getBlock: async (h: string) => (h === hash ? raw : null) }, { txids });
      if (u.kind !== 'undone') throw new Error(`rewinding ${height}: ${u.kind}`);
    }
    if (values.recent) await moveRecentBlocks(db);
    await db.destroy();
    await oldDb.destroy();
    if (stats) {
      const top = await pgs.query<{ calls: string; ms: string; rows: string; blks: string; q: string }>(
        'bw_ab',
        `SELECT calls, round(total_exec_time)::text AS ms, rows, (shared_blks_hit + shared_blks_read)::text AS blks,
                left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS q
           FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25`,
      );
      for (const r of top.rows) say(`pgss ${r.ms} ms, ${r.calls} calls, ${r.rows} rows, ${r.blks} buffers: ${r.q}`);
    }
    say('| writer | samples | apply ms p50 | PostgreSQL CPU ms p50 | writer CPU ms p50 |\n|---|---|---|---|---|');
    for (const [name, xs] of samples) {
      const p = (f: (x: { ms: number; pg: number; js: number }) => number) => round(pct(xs.map(f), 50), 1);
      say(`| ${name} | ${xs.length} | ${p((x) => x.ms)} | ${p((x) => x.pg)} | ${p((x) => x.js)} |`);
    }
  } finally {
    base.remove();
    await pgs.stop();
  }
}

await main();
