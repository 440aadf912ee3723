/**
 * bench/sync: initial sync of the synthetic corpus (bench/corpus) against this machine's own
 * limits, measured in the same run:
 * 1. `blockwire import --blocks-dir` of the corpus up to its catch-up and live blocks (tx/s,
 *    blocks/s; load and index-build phases; CPU of the importer and of PostgreSQL);
 * 2. database size after VACUUM and CHECKPOINT against the raw bytes of the imported blocks
 *    (history buckets on, the default: the finish folds the history into them), and the same
 *    import with them off (HISTORY_BUSY=0), its size and the finish's history step (the merge)
 *    against the fold;
 * 3. the physical limit: the rows the import left in blocks, txs, utxos and history written to
 *    files, then loaded with server-side `COPY … FROM 'file'` into the same tables without
 *    indexes, in the same PostgreSQL; reported as a ratio to the import's load phase;
 * 4. catch-up with every index live: the next blocks through the per-block path;
 * 5. bench/live on that index (4,000-transaction blocks, ZMQ arrival → committed);
 * 6. the same initial sync over RPC/REST from the corpus node (the indexer role's bulk path).
 * After step 1, the same import by a baseline commit (`--baseline REF`, default the code of the
 * first round's figures, bench/baseline.ts; `none` skips it, and `--quick` skips it unless
 * asked) into a fresh database of the same PostgreSQL: the ratio of the two.
 * Run: `node --import tsx bench/sync.ts [--quick] [--blocks N] [--txs-per-block N]
 * [--catchup-blocks N] [--live-blocks N] [--skip-rpc] [--import-only] [--baseline REF|none]
 * [--cpu-prof DIR] [--json FILE]`.
 * @module
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import { createDb } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { startCorpusNode } from '../devnode/corpus.js';
import { corpusMainChain, loadCorpusManifest } from '../devnode/corpus-manifest.js';
import { ensureCorpus } from './corpus/generate.js';
import {
  cacheDir,
  importCorpus,
  logLines,
  machine,
  PG_SETTINGS,
  pgOverrides,
  round,
  runSize,
  say,
  startBenchPostgres,
  CHUNK_ROWS,
  syncOverRpc,
  type BenchPostgres,
} from './harness.js';
import { checkoutBaseline, DEFAULT_BASELINE } from './baseline.js';
import { corpusLiveNode, floorAfter, measureLive, phaseLine, startFollower, stopFollower, waitApplied } from './live.js';
import { floorLine } from './live-floor.js';
import { foldHistoryWhenDue } from '../indexer/writer/history-build.js';

/** Mainnet today: transactions to project a full sync to. */
const MAINNET_TXS = 1.43e9;

/** The txs columns the physical limit copies (the spends key included: the load writes it too). */
const TXS_COLS = 'tx_num, txid, outs, ins, spent_group';

/**
 * Tables the sync writes with COPY (balances are computed in the finish step; with transaction
 * parts on, the default, `txs` is empty after the finish and the transactions are in `tx_parts`
 * and `txid_buckets`).
 */
const COPY_TABLES = ['blocks', 'txs', 'tx_parts', 'txid_buckets', 'utxos', 'history', 'history_buckets'] as const;

export interface SizeResult {
  databaseBytes: number;
  emptyDatabaseBytes: number;
  tables: Record<string, number>;
  rawBlockBytes: number;
  ratio: number;
}

/** pg_database_size after VACUUM ANALYZE and CHECKPOINT, against the raw bytes of blocks 0..tip. */
export async function measureSize(pgs: BenchPostgres, db: string, rawBlockBytes: number): Promise<SizeResult> {
  await pgs.query(db, 'VACUUM ANALYZE');
  await pgs.query('postgres', 'CHECKPOINT');
  const size = Number((await pgs.query<{ n: string }>(db, 'SELECT pg_database_size(current_database())::text AS n')).rows[0]!.n);
  const t = await pgs.query<{ name: string; n: string }>(
    db,
    `SELECT c.relname AS name, pg_total_relation_size(c.oid)::text AS n FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
    WHERE s.nspname = 'public' AND c.relkind = 'r' ORDER BY pg_total_relation_size(c.oid) DESC`,
  );
  const tables: Record<string, number> = {};
  for (const r of t.rows) if (Number(r.n) > 64 * 1024) tables[r.name] = Number(r.n);
  // A freshly migrated database, for reference (catalogs and empty tables).
  const emptyUrl = await pgs.createDatabase('bw_empty');
  const edb = createDb(emptyUrl);
  await migrateToLatest(edb);
  await edb.destroy();
  const empty = Number((await pgs.query<{ n: string }>('bw_empty', 'SELECT pg_database_size(current_database())::text AS n')).rows[0]!.n);
  await pgs.query('postgres', 'DROP DATABASE bw_empty');
  return { databaseBytes: size, emptyDatabaseBytes: empty, tables, rawBlockBytes, ratio: round(size / rawBlockBytes, 3) };
}

/** One fold of step 5b: the blocks it folded, its wall time and PostgreSQL's CPU. */
export type FoldRun = { blocks: number; ms: number; postgresCpuMs: number };

/** Step 5b's result (`result.steady`): the index after the catch-up and live blocks, folded. */
export type SteadyResult = { blocks: number; tip: number; folds: FoldRun[]; unfolded: number; size: SizeResult };

/**
 * Folds the index in database `name` as the idle indexer does (`foldHistoryWhenDue` until it is not due):
 * each fold's blocks, wall time and PostgreSQL CPU, and the blocks left in chunk rows.
 */
async function foldAsIdle(pgs: BenchPostgres, name: string): Promise<{ folds: FoldRun[]; unfolded: number }> {
  const db = createDb(pgs.url(name), { max: 1 });
  try {
    const place = async () =>
      (
        await pgs.query<{ f: number; h: number }>(
          name,
          'SELECT folded AS f, (SELECT height FROM chain_tip WHERE id = 1) AS h FROM history_bucket_params',
        )
      ).rows[0]!;
    const folds: FoldRun[] = [];
    let at = await place();
    for (;;) {
      const cpu0 = pgs.cpuMs();
      const t0 = performance.now();
      if (!(await foldHistoryWhenDue(db))) break;
      const ms = round(performance.now() - t0);
      const postgresCpuMs = pgs.cpuMs() - cpu0;
      const before = at.f;
      at = await place();
      folds.push({ blocks: at.f - before, ms, postgresCpuMs });
    }
    return { folds, unfolded: at.h + 1 - at.f };
  } finally {
    await db.destroy();
  }
}

export interface CopyLimitResult {
  rows: number;
  fileBytes: number;
  ms: number;
  rowsPerSec: number;
  perTable: Record<string, { rows: number; ms: number }>;
}

/**
 * The physical limit: the rows the sync left in `db` written to files, then one transaction of
 * server-side `COPY … FROM 'file' (FORMAT binary)` into the same tables, created and committed
 * beforehand without any index or key (so the load is WAL-logged as the sync's is).
 */
export async function measureCopyLimit(pgs: BenchPostgres, db: string): Promise<CopyLimitResult> {
  const files: Record<string, string> = {};
  for (const t of COPY_TABLES) {
    files[t] = join(pgs.copyDir, `${t}.bin`);
    const cols = t === 'txs' ? TXS_COLS : '*';
    await pgs.query(db, `COPY (SELECT ${cols} FROM ${t}) TO '${files[t]}' (FORMAT binary)`);
  }
  const url = await pgs.createDatabase('bw_limit');
  const ldb = createDb(url);
  await migrateToLatest(ldb);
  await ldb.destroy();
  await pgs.query(
    'bw_limit',
    `
    ALTER TABLE blocks DROP CONSTRAINT blocks_pkey; DROP INDEX blocks_hash;
    ALTER TABLE txs DROP CONSTRAINT txs_pkey; DROP INDEX txs_txid_key; DROP INDEX txs_spent_groups;
    ALTER TABLE tx_parts DROP CONSTRAINT tx_parts_pkey; DROP INDEX tx_parts_spent_groups;
    ALTER TABLE txid_buckets DROP CONSTRAINT txid_buckets_pkey;
    ALTER TABLE utxos DROP CONSTRAINT utxos_pkey; DROP INDEX utxos_addr;
    ALTER TABLE history DROP CONSTRAINT history_pkey; ALTER TABLE history_buckets DROP CONSTRAINT history_buckets_pkey;`,
  );
  await pgs.query('postgres', 'CHECKPOINT');
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const perTable: Record<string, { rows: number; ms: number }> = {};
  let rows = 0;
  const t0 = performance.now();
  await c.query('BEGIN');
  for (const t of COPY_TABLES) {
    const s = performance.now();
    const r = await c.query(`COPY ${t} ${t === 'txs' ? `(${TXS_COLS})` : ''} FROM '${files[t]}' (FORMAT binary)`);
    perTable[t] = { rows: r.rowCount ?? 0, ms: round(performance.now() - s) };
    rows += r.rowCount ?? 0;
  }
  await c.query('COMMIT');
  const ms = performance.now() - t0;
  await c.end();
  const fileBytes = Object.values(files).reduce((s, f) => s + statSync(f).size, 0);
  for (const f of readdirSync(pgs.copyDir)) rmSync(join(pgs.copyDir, f), { force: true });
  await pgs.query('postgres', 'DROP DATABASE bw_limit');
  return { rows, fileBytes, ms: round(ms), rowsPerSec: Math.round((rows * 1000) / ms), perTable };
}

/**
 * Projection to mainnet: the load phase at the measured rate per transaction, the index builds
 * scaled by rows × log(rows) (bench/README.md "sync", step 7).
 */
function projectMainnet(txs: number, loadMs: number, finishMs: number) {
  const sortFactor = Math.log(MAINNET_TXS) / Math.log(txs);
  const loadHours = MAINNET_TXS / (txs / (loadMs / 1000)) / 3600;
  const indexHours = ((finishMs / 1000) * (MAINNET_TXS / txs) * sortFactor) / 3600;
  return {
    mainnetTxs: MAINNET_TXS,
    loadHours: round(loadHours, 2),
    indexHours: round(indexHours, 2),
    hours: round(loadHours + indexHours, 2),
    sortFactor: round(sortFactor, 2),
  };
}

async function main(): Promise<void> {
  const { values } = benchArgs(import.meta.url, {
    options: {
      quick: { type: 'boolean' },
      blocks: { type: 'string' },
      'txs-per-block': { type: 'string' },
      seed: { type: 'string' },
      'catchup-blocks': { type: 'string' },
      'live-blocks': { type: 'string' },
      'skip-rpc': { type: 'boolean' },
      'import-only': { type: 'boolean' },
      'cpu-prof': { type: 'string' },
      baseline: { type: 'string' },
      'cache-dir': { type: 'string' },
      json: { type: 'string' },
    },
  });
  const size = runSize(values);
  const startMachine = machine();
  say(
    `bench/sync: ${size.corpus.blocks} blocks × ~${size.corpus.txsPerBlock} txs (seed ${size.corpus.seed}), catch-up ${size.catchupBlocks}, live ${size.liveBlocks}; load ${startMachine.loadavg.join(' ')}`,
  );
  const cache = cacheDir(values['cache-dir']);
  const g0 = performance.now();
  const corpus = ensureCorpus(cache, size.corpus, say);
  const genMs = performance.now() - g0;
  const m = await loadCorpusManifest(corpus.dir);
  const main = corpusMainChain(m);
  const nearTip = size.catchupBlocks + size.liveBlocks;
  const initialTip = m.tip.height - nearTip;
  /** The serialized bytes of the main chain's blocks 0..tip. */
  const rawBytesTo = (tip: number) => main.slice(0, tip + 1).reduce((s, b) => s + b.length, 0);
  const rawBytes = rawBytesTo(initialTip);
  const initialTxs = main.slice(0, initialTip + 1).reduce((s, b) => s + b.txs, 0);
  say(
    `corpus ${corpus.generated ? 'generated' : 'cached'}: ${corpus.dir} (${m.txs} txs, ${(m.rawBytes / 1e6).toFixed(0)} MB, ${m.reorgs} reorgs; generated in ${(m.generatedMs / 1000).toFixed(1)} s)`,
  );

  const root = mkdtempSync(join(cache, 'sync-'));
  const pgs = await startBenchPostgres(root);
  const result: Record<string, unknown> = {
    size,
    corpus: {
      key: m.key,
      txs: m.txs,
      rawBytes: m.rawBytes,
      reorgs: m.reorgs,
      staleBlocks: m.staleBlocks,
      generatedMs: m.generatedMs,
      generatedNow: corpus.generated,
      genMs: round(genMs),
    },
    machineStart: startMachine,
    postgres: { ...PG_SETTINGS, ...pgOverrides() },
  };
  try {
    // 1. blockwire import --blocks-dir
    const importUrl = await pgs.createDatabase('bw_import');
    let profDir: string | undefined;
    if (values['cpu-prof']) {
      profDir = values['cpu-prof'];
      mkdirSync(profDir, { recursive: true });
    }
    const imp = await importCorpus(corpus.dir, importUrl, nearTip, profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [], pgs);
    if (imp.tip !== initialTip) throw new Error(`import stopped at ${imp.tip}, expected ${initialTip}`);
    const importTxs = initialTxs; // genesis included (the import indexes it too)
    const loadTps = importTxs / (imp.loadMs / 1000);
    const totalTps = importTxs / ((imp.loadMs + imp.finishMs) / 1000);
    result.import = {
      ...imp,
      txs: importTxs,
      loadTxPerSec: Math.round(loadTps),
      txPerSec: Math.round(totalTps),
      blocksPerSec: round((imp.blocks * 1000) / (imp.loadMs + imp.finishMs), 1),
      wallTxPerSec: Math.round(importTxs / (imp.wallMs / 1000)),
      jsShare: round(imp.importerCpuMs / (imp.importerCpuMs + imp.postgresCpuMs), 2),
    };
    say(
      `import: ${importTxs} txs, ${imp.blocks} blocks: load ${round(imp.loadMs / 1000, 1)} s (${Math.round(loadTps)} tx/s) + indexes ${round(imp.finishMs / 1000, 1)} s = ${Math.round(totalTps)} tx/s; wall ${round(imp.wallMs / 1000, 1)} s; CPU importer ${round(imp.importerCpuMs / 1000, 1)} s (${round((imp.importerCpuMs * 1000) / importTxs, 1)} µs/tx, system ${round(imp.importerSysMs / 1000, 1)} s), PostgreSQL ${round(imp.postgresCpuMs / 1000, 1)} s; peak RSS ${imp.peakRssBytes === null ? '?' : Math.round(imp.peakRssBytes / 2 ** 20)} MiB of ${imp.memoryMb ?? '?'}${imp.cache ? `; outpoint cache bound ${imp.cache.maxEntries}, ${imp.cache.evictions} trims, ${imp.cache.dropped} dropped, ${imp.cache.readBack} read back` : ''}`,
    );
    // 7. (computed here so that --import-only gives it too)
    const proj = projectMainnet(importTxs, imp.loadMs, imp.finishMs);
    result.projection = proj;
    const sayProjection = (who: string, p: ReturnType<typeof projectMainnet>) =>
      say(
        `projection${who} for ${MAINNET_TXS / 1e9} billion mainnet transactions: load ${round(p.loadHours, 1)} h + index builds ${round(p.indexHours, 1)} h = ${round(p.hours, 1)} h`,
      );
    sayProjection('', proj);
    say(
      `import finish steps (ms): ${Object.entries(imp.finishSteps)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );

    // 1b. the same import by the baseline's code, same corpus, a fresh database of the same PostgreSQL
    const baselineRef = values.baseline ?? (values.quick ? 'none' : DEFAULT_BASELINE);
    if (baselineRef !== 'none') {
      const base = checkoutBaseline(baselineRef, say);
      try {
        const baseUrl = await pgs.createDatabase('bw_baseline');
        const bi = await importCorpus(corpus.dir, baseUrl, nearTip, [], pgs, base.dir);
        if (bi.tip !== initialTip) throw new Error(`baseline import stopped at ${bi.tip}, expected ${initialTip}`);
        const bLoad = importTxs / (bi.loadMs / 1000);
        const bTotal = importTxs / ((bi.loadMs + bi.finishMs) / 1000);
        result.baseline = {
          ref: baselineRef,
          commit: base.commit,
          deps: base.deps,
          ...bi,
          loadTxPerSec: Math.round(bLoad),
          txPerSec: Math.round(bTotal),
          ratio: round(totalTps / bTotal, 2),
          loadRatio: round(loadTps / bLoad, 2),
          cpuRatio: round(imp.importerCpuMs / bi.importerCpuMs, 2),
        };
        say(
          `baseline ${baselineRef} (${base.commit.slice(0, 12)}): load ${round(bi.loadMs / 1000, 1)} s (${Math.round(bLoad)} tx/s) + indexes ${round(bi.finishMs / 1000, 1)} s = ${Math.round(bTotal)} tx/s; CPU importer ${round(bi.importerCpuMs / 1000, 1)} s (${round((bi.importerCpuMs * 1000) / importTxs, 1)} µs/tx, system ${round(bi.importerSysMs / 1000, 1)} s); current / baseline: import ${round(totalTps / bTotal, 2)} ×, load ${round(loadTps / bLoad, 2)} ×`,
        );
        sayProjection(` (baseline ${baselineRef})`, projectMainnet(importTxs, bi.loadMs, bi.finishMs));
        await pgs.query('postgres', 'DROP DATABASE bw_baseline');
      } finally {
        base.remove();
      }
    }

    if (values['import-only']) {
      say(`RESULT ${JSON.stringify(result)}`);
      return;
    }
    // 2. size
    const sz = await measureSize(pgs, 'bw_import', rawBytes);
    result.size = sz;
    say(
      `size: database ${(sz.databaseBytes / 1e6).toFixed(1)} MB (empty ${(sz.emptyDatabaseBytes / 1e6).toFixed(1)} MB) vs raw blocks ${(rawBytes / 1e6).toFixed(1)} MB = ${sz.ratio}; ${Object.entries(
        sz.tables,
      )
        .map(([k, v]) => `${k} ${(v / 1e6).toFixed(1)}`)
        .join(', ')} MB`,
    );

    // 2b. the same import with history buckets off (HISTORY_BUSY=0): its size, and what the
    // finish's history step costs there (the merge) against the default's (the fold)
    const chunksUrl = await pgs.createDatabase('bw_chunks');
    const ci = await importCorpus(corpus.dir, chunksUrl, nearTip, [], pgs, undefined, CHUNK_ROWS);
    const csz = await measureSize(pgs, 'bw_chunks', rawBytes);
    await pgs.query('postgres', 'DROP DATABASE bw_chunks');
    // (the finish's history step: the merge without buckets; with them, the fold in its place, and any fold after the parts)
    const historyMs = (steps: Record<string, number>) => (steps.history ?? 0) + (steps['history buckets'] ?? 0);
    result.chunkRows = {
      wallMs: ci.wallMs,
      loadMs: ci.loadMs,
      finishMs: ci.finishMs,
      mergeMs: historyMs(ci.finishSteps),
      foldMs: historyMs(imp.finishSteps),
      size: csz,
    };
    say(
      `with history buckets off (HISTORY_BUSY=0): database ${(csz.databaseBytes / 1e6).toFixed(1)} MB = ${csz.ratio} of raw; import ${round(ci.wallMs / 1000, 1)} s (history step, the merge: ${round(historyMs(ci.finishSteps) / 1000, 1)} s) against ${round(imp.wallMs / 1000, 1)} s (the fold: ${round(historyMs(imp.finishSteps) / 1000, 1)} s); ${Object.entries(
        csz.tables,
      )
        .map(([k, v]) => `${k} ${(v / 1e6).toFixed(1)}`)
        .join(', ')} MB`,
    );

    // 3. the physical limit
    const lim = await measureCopyLimit(pgs, 'bw_import');
    const ratio = lim.ms / imp.loadMs;
    result.copyLimit = {
      ...lim,
      txPerSec: Math.round(importTxs / (lim.ms / 1000)),
      ratioLoad: round(ratio, 3),
      ratioTotal: round(lim.ms / (imp.loadMs + imp.finishMs), 3),
    };
    say(
      `COPY limit: ${lim.rows} rows (${(lim.fileBytes / 1e6).toFixed(0)} MB) in ${round(lim.ms / 1000, 2)} s = ${lim.rowsPerSec} rows/s, ${Math.round(importTxs / (lim.ms / 1000))} tx/s; import load phase at ${round(ratio, 3)} of it (${round(lim.ms / (imp.loadMs + imp.finishMs), 3)} with index builds)`,
    );

    // 4. catch-up with every index live, then 5. live blocks
    let steadyDb = 'bw_import';
    const node = await startCorpusNode({ dir: corpus.dir, tip: initialTip + size.catchupBlocks });
    const follower = startFollower(importUrl, node, {}, profDir ? ['--cpu-prof', `--cpu-prof-dir=${join(profDir, 'follower')}`] : []);
    const appliedAt: { at: number; f: Record<string, unknown> }[] = [];
    follower.onLine((line, at) => {
      const f = logLines([line], 'block applied')[0];
      if (f) appliedAt.push({ at, f });
    });
    try {
      await waitApplied(follower, main[initialTip + size.catchupBlocks]!.hash);
      const first = appliedAt[0]!;
      const lastAt = appliedAt[appliedAt.length - 1]!.at;
      const txs = appliedAt.reduce((s, x) => s + Number(x.f.txs), 0);
      const blocks = appliedAt.length;
      const ms = lastAt - (first.at - Number(first.f.ms));
      const applyMs = appliedAt.map((x) => Number(x.f.ms)).sort((a, b) => a - b);
      result.catchup = {
        blocks,
        txs,
        ms: round(ms),
        txPerSec: Math.round((txs * 1000) / ms),
        blocksPerSec: round((blocks * 1000) / ms, 2),
        applyMsP50: applyMs[Math.floor(blocks / 2)],
      };
      say(
        `catch-up (indexes live, per-block path): ${blocks} blocks, ${txs} txs in ${round(ms / 1000, 1)} s = ${Math.round((txs * 1000) / ms)} tx/s`,
      );
      if (size.liveBlocks > 0) {
        const live = await measureLive(corpusLiveNode(node), follower, size.liveBlocks, { pgs, db: 'bw_import' });
        result.live = live;
        say(
          `live: ${live.blocks} blocks of ${live.txsPerBlock} txs on an index of ${live.indexHeightBefore} blocks: ZMQ arrival → committed p50 ${live.p50} ms, p99 ${live.p99} ms, max ${live.max} ms; per block WAL ${live.walMbP50} MB, PostgreSQL CPU ${live.postgresCpuMsP50} ms, indexer CPU ${live.indexerCpuMsP50} ms`,
        );
        if (live.phasesP50) say(phaseLine(live.phasesP50));
        // (the floor undoes and applies the tip block again a dozen times: step 5b sizes a copy
        // of the index as the blocks left it)
        live.floor = await floorAfter(follower, pgs, 'bw_import', node.rpcUrl, async () => {
          await pgs.query('postgres', 'CREATE DATABASE bw_steady TEMPLATE bw_import');
          steadyDb = 'bw_steady';
        });
        say(floorLine(live.floor));
      }
    } finally {
      await stopFollower(follower);
      await node.stop();
    }

    // 5b. the index the catch-up and live blocks leave (applied block by block, their history in
    // chunk rows), folded as the idle indexer folds them (144 blocks at a time, the newest 6 or
    // more left): each fold's time, and the size then against the raw blocks it holds
    const steady = await foldAsIdle(pgs, steadyDb);
    const tipNow = (await pgs.query<{ h: number }>(steadyDb, 'SELECT height AS h FROM chain_tip WHERE id = 1')).rows[0]!.h;
    const steadySize = await measureSize(pgs, steadyDb, rawBytesTo(tipNow));
    if (steadyDb !== 'bw_import') await pgs.query('postgres', `DROP DATABASE ${steadyDb}`);
    result.steady = { blocks: tipNow - initialTip, tip: tipNow, ...steady, size: steadySize } satisfies SteadyResult;
    say(
      `after ${tipNow - initialTip} blocks applied block by block, folded as the idle indexer folds (${
        steady.folds
          .map((f) => `${f.blocks} blocks in ${round(f.ms / 1000, 1)} s, PostgreSQL CPU ${round(f.postgresCpuMs / 1000, 1)} s`)
          .join('; ') || 'no fold due'
      }; ${steady.unfolded} left in chunk rows): database ${(steadySize.databaseBytes / 1e6).toFixed(1)} MB / raw ${(steadySize.rawBlockBytes / 1e6).toFixed(1)} MB = ${steadySize.ratio}; ${Object.entries(
        steadySize.tables,
      )
        .map(([k, v]) => `${k} ${(v / 1e6).toFixed(1)}`)
        .join(', ')} MB`,
    );

    // 6. the same initial sync over RPC/REST (indexer role, bulk path, then per-block near the tip)
    if (!values['skip-rpc']) {
      const rpcUrl = await pgs.createDatabase('bw_rpc');
      const rnode = await startCorpusNode({ dir: corpus.dir, tip: initialTip });
      const r = await syncOverRpc(pgs, rpcUrl, rnode, initialTip);
      await rnode.stop();
      result.rpc = {
        ...r,
        txs: importTxs,
        txPerSec: Math.round(importTxs / (r.ms / 1000)),
        blocksPerSec: round(((initialTip + 1) * 1000) / r.ms, 1),
      };
      say(
        `sync over RPC/REST: ${importTxs} txs in ${round(r.ms / 1000, 1)} s = ${Math.round(importTxs / (r.ms / 1000))} tx/s (load ${r.loadMs === null ? '?' : round(r.loadMs / 1000, 1)} s, indexes ${r.finishMs === null ? '?' : round(r.finishMs / 1000, 1)} s)`,
      );
      await pgs.query('postgres', 'DROP DATABASE bw_rpc');
    }
  } finally {
    await pgs.stop();
    rmSync(root, { recursive: true, force: true });
  }
  result.machineEnd = machine();
  if (values.json) writeFileSync(values.json, JSON.stringify(result, null, 2));
  say(`RESULT ${JSON.stringify(result)}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
