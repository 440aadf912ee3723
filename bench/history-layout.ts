/**
 * bench/history-layout: packed layouts for txids and address history, measured against today's
 * tables in one PostgreSQL (the size target, the index at most half the raw blocks, and the
 * live-block target, a 4,000-transaction block committed in 300 ms at p50). Imports the corpus up to
 * its 4,000-transaction tail (the index bench/live follows), copies `txs` and `history` into
 * candidate layouts, then applies the tail's first blocks to today's tables and to every
 * candidate, each step after a CHECKPOINT, and reads the typical answers from each layout:
 * - txids: one row per block (`bw_txids`: the block's 32-byte txids back to back, TOAST,
 *   uncompressed) with a GIN on the txids' first 8 bytes (`txid_key`): txid → (height, position)
 *   replaces the per-transaction `txs` rows and their indexes;
 * - block rows: address history packed per block, the block's (address key, positions) sorted by
 *   key and cut into rows of `--shard-keys` addresses (`bw_hist_blocks`: `keys uuid[]`, entries =
 *   per key a count byte and 2-byte positions), a GIN on `keys`; addresses with more than
 *   `--busy` entries keep today's chunk rows (`bw_hist_busy`);
 * - pair rows (what electrs and Fulcrum key, in a B-tree): one row per (address, block),
 *   `(addr8 int8, height int4)` = the address key's first 8 bytes and the height, the block's
 *   positions packed (`bw_hist_pairs`);
 * - history buckets and transaction parts (bench/bucket-layouts.ts): address-bucket append logs
 *   (`bw_hist_buckets_<n>`, about `--bucket-addresses` n addresses a row; `<n>n`: newest
 *   first; busy addresses in `bw_hist_busy`), 64-transaction rows (`bw_tx_parts`, a GIN on
 *   their spent groups) and txid-bucket append logs (`bw_txid_buckets`); a block's records
 *   appended with one upsert, undone by cutting the logs, each also measured with pages already
 *   logged.
 * GIN indexes take a block's entries into their pending list (fastupdate); merging it into the
 * tree (`gin_clean_pending_list`, what autovacuum or a job does off the block's transaction) is
 * measured once after the blocks, its cost shared by them. WAL per step is from
 * pg_current_wal_lsn, its full-page images and per-resource-manager split from pg_walinspect.
 * Run: `node --import tsx bench/history-layout.ts --blocks 2000 [--txs-per-block N]
 * [--live N] [--busy N] [--shard-keys N] [--lookups N] [--candidates LIST] [--bucket-addresses N,…]
 * [--txid-bucket-txids N] [--keep DIR] [--cache-dir DIR]` (`--candidates`: any of txids, blocks,
 * pairs, buckets, parts, comma-separated; default all)
 * (`--keep DIR`: the PostgreSQL and its imported database stay in DIR and are reused by the next
 * run, whose applied blocks are undone first).
 * @module
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { benchArgs } from './args.js';
import { ensureCorpus } from './corpus/generate.js';
import { corpusMainChain, loadCorpusManifest } from '../devnode/corpus-manifest.js';
import { startCorpusNode } from '../devnode/corpus.js';
import {
  cacheDir,
  importCorpus,
  CHUNK_ROWS,
  machine,
  pct,
  processCpuMs,
  round,
  runSize,
  say,
  startBenchPostgres,
  type BenchPostgres,
} from './harness.js';
import { decodeBlock, type DecodedBlock } from '../src/bitcoin/block.js';
import { createDb } from '../src/db/connect.js';
import { decodeEntries, historyChunkEntries, historyChunks, newestEntries, restOf } from '../src/db/history-entries.js';
import { firstTxNum } from '../src/db/tx-num.js';
import { applyBlock, undoBlock } from '../indexer/writer/apply.js';
import { readTip } from '../indexer/writer/chain-rows.js';
import { createNodeSource } from '../indexer/chain-source.js';
import { BitcoindClient } from '../src/rpc/bitcoind.js';
import { deriveBlock, externalOutpoints, hashKey, type BlockRows, type Prevout } from '../indexer/writer/derive.js';
import { bucketOf, histEntries, partTx, PART_SHIFT, txidMatches } from './bucket-log.js';
import { decodeIns } from '../src/db/packed.js';
import { spendsKeysSql } from '../src/db/spent-groups.js';
import {
  appendLogs,
  bucketAddresses,
  buildHistBuckets,
  buildTxParts,
  copyParts,
  createFunctions,
  cutLogs,
  deleteParts,
  histBits,
  histBucketTable,
  histLogs,
  keyBytes,
  logsDigest,
  newestFirst,
  partTxid,
  resolveTxids,
  trimBuckets,
  txidBits,
  txidLogs,
} from './bucket-layouts.js';

const MB = (n: number) => round(n / 1e6, 1);
const DB = 'bw_packed';
const POS_MASK = 0xfffff;

/** One measured write: WAL bytes (all, full-page images), PostgreSQL CPU and wall time. */
interface Step {
  walMb: number;
  fpiMb: number;
  /** WAL MB per resource manager (Btree, Heap, Gin, …). */
  byRmgr: Record<string, number>;
  pgCpuMs: number;
  ms: number;
}

async function main(): Promise<void> {
  const { values } = benchArgs(import.meta.url, {
    options: {
      blocks: { type: 'string' },
      'txs-per-block': { type: 'string' },
      'cache-dir': { type: 'string' },
      keep: { type: 'string' },
      live: { type: 'string', default: '3' },
      busy: { type: 'string', default: '100' },
      'shard-keys': { type: 'string', default: '64' },
      'txid-group': { type: 'string', default: '64' },
      lookups: { type: 'string', default: '500' },
      candidates: { type: 'string', default: CANDIDATES.join(',') },
      'bucket-addresses': { type: 'string', default: '16' },
      'txid-bucket-txids': { type: 'string', default: '48' },
    },
  });
  const size = runSize({ ...values, 'catchup-blocks': '0' });
  const live = Number(values.live);
  const busy = Number(values.busy);
  const shardKeys = Number(values['shard-keys']);
  const lookups = Number(values.lookups);
  const group = Number(values['txid-group']);
  if (!(busy > 0 && busy < 256)) throw new Error('--busy must be 1..255 (a block row keeps an address count in one byte)');
  const sel = new Set(values.candidates.split(',').filter(Boolean));
  for (const x of sel)
    if (!(CANDIDATES as readonly string[]).includes(x)) throw new Error(`--candidates: ${x} is none of ${CANDIDATES.join(', ')}`);
  const perBucket = values['bucket-addresses'].split(',');
  for (const spec of perBucket) bucketAddresses(spec);
  const txidPerBucket = Number(values['txid-bucket-txids']);
  if (!(Number.isInteger(txidPerBucket) && txidPerBucket > 0)) throw new Error('--txid-bucket-txids: a positive integer');
  const opts: Options = { sel, busy, shardKeys, group, perBucket: sel.has('buckets') ? perBucket : [], txidPerBucket };
  const cache = cacheDir(values['cache-dir']);
  const corpus = ensureCorpus(cache, size.corpus, say);
  const m = await loadCorpusManifest(corpus.dir);
  const tip = m.tip.height - size.liveBlocks;
  const chain = corpusMainChain(m);
  const rawBytes = chain.slice(0, tip + 1).reduce((s, b) => s + b.length, 0);
  say(`bench/history-layout: ${corpus.dir}, blocks 0..${tip} (${MB(rawBytes)} MB raw), then ${live} blocks of its tail`);
  const root = values.keep ?? mkdtempSync(join(cache, 'history-layout-'));
  const pgs = await startBenchPostgres(root);
  const node = await startCorpusNode({ dir: corpus.dir, tip });
  const url = pgs.url(DB);
  try {
    const have =
      (await pgs.query<{ n: string }>('postgres', `SELECT count(*)::text AS n FROM pg_database WHERE datname = $1`, [DB])).rows[0]!.n ===
      '1';
    if (!have) {
      await pgs.createDatabase(DB);
      const imp = await importCorpus(corpus.dir, url, size.liveBlocks, [], pgs, undefined, CHUNK_ROWS);
      if (imp.tip !== tip) throw new Error(`import stopped at ${imp.tip}, expected ${tip}`);
      say(`imported ${imp.blocks} blocks, ${imp.txs} txs in ${round(imp.wallMs / 1000)} s`);
    }
    const db = createDb(url);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      // A reused index: undo what the last run applied, drop the candidates' rows above the import.
      const source = createNodeSource({ rpc: new BitcoindClient({ url: node.rpcUrl }), restMode: 'off' });
      for (let t = (await readTip(db)).height; t > tip; t--) await undoBlock(db, t, source);
      await buildCandidates(c, tip, opts);
      await c.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
      await c.query('VACUUM ANALYZE');
      const sizes = await measureSizes(c, rawBytes);
      reportSizes(sizes);
      const busyKeys = sel.has('blocks') || sel.has('buckets') ? await readBusyKeys(c) : new Set<string>();
      say(`busy addresses (> ${busy} entries, kept in chunk rows): ${busyKeys.size}`);
      const bits = new Map<string, number>();
      for (const n of opts.perBucket) bits.set(n, await histBits(c, n));
      const tBits = sel.has('parts') ? await txidBits(c) : 0;
      const growth = await tableSizes(c, [
        ...opts.perBucket.map(histBucketTable),
        ...(sel.has('parts') ? ['bw_txid_buckets', 'bw_tx_parts'] : []),
      ]);

      // Live blocks: today's statements and each candidate's, each after a CHECKPOINT (and, for
      // today's history and txs statements and the bucket candidates, once more right after:
      // pages already logged, as consecutive blocks find the pages the previous ones wrote).
      const steps: Record<string, Step[]> = {};
      const add = (k: string, s: Step) => (steps[k] ??= []).push(s);
      for (let i = 0; i < live; i++) {
        const h = tip + 1 + i;
        const block = decodeBlock(node.readBlock(chain[h]!));
        const rows = await derive(c, block, h);
        const spent = spentTxids(block);
        // The spend's txid → tx_num resolution, warm (a first pass unmeasured), each layout's
        // answers checked against today's.
        const want = await todayTxNums(c, spent);
        if (want.size !== spent.length) throw new Error(`today: ${want.size} of ${spent.length} spent txids resolved`);
        add(
          'today: spent txids → tx_num (txs_txid_key; read, warm)',
          await step(pgs, c, async () => void (await todayTxNums(c, spent)), false),
        );
        if (sel.has('txids')) {
          let found = 0;
          add('txids rows: spent txids → tx_num (GIN; read)', await step(pgs, c, async () => void (found = await resolvePacked(c, spent))));
          if (found !== spent.length) throw new Error(`txid rows: ${found} of ${spent.length} spent txids resolved`);
        }
        if (sel.has('parts')) {
          await resolveTxids(c, spent, tBits);
          let got: Awaited<ReturnType<typeof resolveTxids>> = { nums: [], settled: 0 };
          add(
            'txid buckets: spent txids → tx_num (read, warm)',
            await step(pgs, c, async () => void (got = await resolveTxids(c, spent, tBits)), false),
          );
          spent.forEach((t, j) => {
            if (got.nums[j] !== want.get(t.toString('hex')))
              throw new Error(`txid buckets: ${t.toString('hex')} → ${got.nums[j]}, today's ${want.get(t.toString('hex'))}`);
          });
          if (got.settled > 0) say(`  txid buckets: ${got.settled} spent txids shared their record with another (settled by their parts)`);
        }
        const today = async () => {
          add('today: history insert (rolled back)', await step(pgs, c, () => rolledBack(c, () => insertHistoryRows(c, rows))));
          add(
            'today: history insert again (rolled back; pages logged)',
            await step(pgs, c, () => rolledBack(c, () => insertHistoryRows(c, rows)), false),
          );
          add('today: txs insert (rolled back)', await step(pgs, c, () => rolledBack(c, () => insertTxsRows(c, rows))));
          add(
            'today: txs insert again (rolled back; pages logged)',
            await step(pgs, c, () => rolledBack(c, () => insertTxsRows(c, rows)), false),
          );
          add('today: whole block (applyBlock)', await step(pgs, c, async () => void (await applyBlock(db, block, h))));
        };
        const packed = async () => {
          if (sel.has('txids'))
            add(
              `txids: rows of ${group || 'a block'} + GIN`,
              await step(pgs, c, () => committed(c, () => insertTxidRows(c, h, rows, group))),
            );
          if (sel.has('blocks'))
            add(
              'block rows + GIN (+ busy chunks)',
              await step(pgs, c, () => committed(c, () => insertBlockRows(c, h, rows, busyKeys, shardKeys))),
            );
          if (sel.has('pairs')) add('pair rows (addr8, height)', await step(pgs, c, () => committed(c, () => insertPairRows(c, h, rows))));
          if (sel.has('buckets') && !sel.has('blocks'))
            add(
              'busy chunks (the busy addresses, chunk rows)',
              await step(pgs, c, () => committed(c, () => insertBusyChunks(c, rows, busyKeys))),
            );
          for (const n of opts.perBucket)
            await bucketSteps(
              pgs,
              c,
              add,
              `history buckets of ${n}`,
              histBucketTable(n),
              h,
              histLogs(rows, bits.get(n)!, busyKeys, newestFirst(n)),
            );
          if (sel.has('parts')) await partSteps(pgs, c, add, h, rows, txidLogs(rows, tBits));
        };
        // Alternate the order: neither side always runs first after the import's caches.
        if (i % 2 === 0) {
          await today();
          await packed();
        } else {
          await packed();
          await today();
        }
        say(`  block ${h}: ${block.txs.length} txs, ${rows.history.size} addresses, ${spent.length} spent txids`);
      }
      reportSteps(steps, live);
      // The bucket tables' growth over the live blocks (each block's rows appended, cut and
      // appended again: three new versions of each touched row), and after a plain VACUUM.
      const grown = await tableSizes(c, Object.keys(growth));
      if (Object.keys(growth).length > 0) await c.query(`VACUUM ${Object.keys(growth).join(', ')}`);
      const vacuumed = await tableSizes(c, Object.keys(growth));
      for (const t of Object.keys(growth))
        say(`growth of ${t} over ${live} blocks: ${growth[t]} → ${grown[t]} MB, after VACUUM ${vacuumed[t]} MB`);
      // Reads: before the GIN merge, with the live blocks' entries in the pending lists.
      const readCtx: ReadContext = { o: opts, busyKeys, bits, tBits };
      const readsPending = await measureReads(c, lookups, readCtx, true);
      const merge: Record<string, Step> = {};
      for (const [k, ix] of [
        ['txids', 'bw_txids_keys'],
        ['blocks', 'bw_hist_blocks_keys'],
        ['parts', 'bw_tx_parts_spent'],
      ] as const)
        if (sel.has(k)) merge[k] = await step(pgs, c, async () => void (await c.query(`SELECT gin_clean_pending_list('${ix}')`)));
      reportMerge(merge, live);
      const reads = await measureReads(c, lookups, readCtx, false);
      reportReads(reads, readsPending);
      say(
        `RESULT ${JSON.stringify({ sizes, steps: summarize(steps), merge, growth: { before: growth, after: grown, vacuumed }, reads, readsPending, live, busy, shardKeys, perBucket: opts.perBucket, txidPerBucket, machine: machine() })}`,
      );
    } finally {
      await c.end();
      await db.destroy();
    }
  } finally {
    await node.stop();
    await pgs.stop();
    if (!values.keep && existsSync(root)) rmSync(root, { recursive: true, force: true });
  }
}

async function tableExists(c: pg.Client, name: string): Promise<boolean> {
  return (await c.query(`SELECT 1 FROM pg_class WHERE relname = $1`, [name])).rowCount === 1;
}

/** The candidates the bench knows (`--candidates`). */
const CANDIDATES = ['txids', 'blocks', 'pairs', 'buckets', 'parts'] as const;

interface Options {
  sel: ReadonlySet<string>;
  busy: number;
  shardKeys: number;
  group: number;
  /** Addresses per bucket of each history bucket table (empty: no bucket candidate). */
  perBucket: string[];
  txidPerBucket: number;
}

/** The candidate tables that exist (each built with the parameters in bw_layout_params). */
async function candidateTables(c: pg.Client): Promise<string[]> {
  const r = await c.query<{ n: string }>(
    `SELECT relname AS n FROM pg_class WHERE relkind = 'r' AND relname LIKE 'bw\\_%' AND relname NOT IN ('bw_layout_params', 'bw_entries', 'bw_busy_keys') ORDER BY 1`,
  );
  return r.rows.map((x) => x.n);
}

/**
 * Builds the candidate tables from today's `txs` and `history` (the import's content), those
 * a reused index lacks or holds with other parameters (bw_layout_params: each candidate's
 * parameters when built); the rows of the blocks an earlier run applied above `tip` are removed
 * from the others.
 */
async function buildCandidates(c: pg.Client, tip: number, o: Options): Promise<void> {
  if (await tableExists(c, 'bw_layout_meta')) {
    // An index from before bw_layout_params: its candidates are rebuilt.
    for (const t of await candidateTables(c)) await c.query(`DROP TABLE ${t}`);
  }
  await c.query('CREATE TABLE IF NOT EXISTS bw_layout_params (name text PRIMARY KEY, value text NOT NULL)');
  await createFunctions(c);
  const built = new Map(
    (await c.query<{ name: string; value: string }>('SELECT * FROM bw_layout_params')).rows.map((r) => [r.name, r.value]),
  );
  const tables = await candidateTables(c);
  if (tables.length > 0) await trimCandidates(c, tip, tables);
  const t0 = performance.now();
  const q = async (label: string, text: string) => {
    const t = performance.now();
    await c.query(text);
    say(`  build ${label}: ${round((performance.now() - t) / 1000, 1)} s`);
  };
  const done = (name: string, value: string) =>
    c.query('INSERT INTO bw_layout_params VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value', [name, value]);
  // What each wanted candidate was built with: rebuilt when it differs (or is missing).
  const want = new Map<string, string>();
  if (o.sel.has('txids')) want.set('bw_txids', String(o.group));
  if (o.sel.has('blocks')) want.set('bw_hist_blocks', `${o.busy}/${o.shardKeys}`);
  if (o.sel.has('blocks') || o.sel.has('buckets')) want.set('bw_hist_busy', String(o.busy));
  if (o.sel.has('pairs')) want.set('bw_hist_pairs', '');
  for (const n of o.perBucket) want.set(histBucketTable(n), String(o.busy));
  if (o.sel.has('parts')) want.set('bw_tx_parts', String(o.txidPerBucket));
  const stale = (t: string) => want.has(t) && (built.get(t) !== want.get(t) || !tables.includes(t));
  if (stale('bw_txids')) {
    await c.query('DROP TABLE IF EXISTS bw_txids; DROP FUNCTION IF EXISTS bw_txid_keys(bytea)');
    await buildTxids(c, o.group, q);
    await done('bw_txids', want.get('bw_txids')!);
  }
  const history = [...want.keys()].filter((t) => t.startsWith('bw_hist_') && stale(t));
  if (history.length > 0) {
    await buildEntries(c, o.busy, q);
    for (const t of history) {
      if (t === 'bw_hist_busy') await buildBusy(c, q);
      else if (t === 'bw_hist_blocks') await buildBlockRows(c, o.shardKeys, q);
      else if (t === 'bw_hist_pairs') await buildPairs(c, q);
      else await buildHistBuckets(c, t.slice('bw_hist_buckets_'.length), q);
      await done(t, want.get(t)!);
    }
    await c.query(`DROP TABLE bw_entries, bw_busy_keys`);
  }
  if (stale('bw_tx_parts')) {
    await buildTxParts(c, o.txidPerBucket, q);
    await done('bw_tx_parts', want.get('bw_tx_parts')!);
  }
  say(`candidates ready in ${round((performance.now() - t0) / 1000)} s`);
}

/** Every history entry once, (address, tx_num), and the busy addresses (more than `busy` entries): the source of the history candidates. */
async function buildEntries(c: pg.Client, busy: number, q: (label: string, text: string) => Promise<void>): Promise<void> {
  await q(
    'entries',
    `DROP TABLE IF EXISTS bw_entries, bw_busy_keys;
     CREATE UNLOGGED TABLE bw_entries AS
       SELECT h.addr_key, ('x' || encode(substring(e.b FROM i * 8 + 1 FOR 8), 'hex'))::bit(64)::int8 AS tx_num
       FROM history h CROSS JOIN LATERAL (SELECT int8send(h.first_tx_num) || h.rest AS b) e
       CROSS JOIN LATERAL generate_series(0, length(e.b) / 8 - 1) AS i;
     CREATE UNLOGGED TABLE bw_busy_keys AS SELECT addr_key FROM bw_entries GROUP BY 1 HAVING count(*) > ${busy};
     ALTER TABLE bw_busy_keys ADD PRIMARY KEY (addr_key)`,
  );
}

/** The busy addresses' chunk rows, as today's (`bw_hist_busy`). */
async function buildBusy(c: pg.Client, q: (label: string, text: string) => Promise<void>): Promise<void> {
  await q(
    'busy chunks',
    `DROP TABLE IF EXISTS bw_hist_busy;
     CREATE TABLE bw_hist_busy (LIKE history);
     INSERT INTO bw_hist_busy SELECT h.* FROM history h JOIN bw_busy_keys b USING (addr_key) ORDER BY addr_key, first_tx_num;
     ALTER TABLE bw_hist_busy ADD PRIMARY KEY (addr_key, first_tx_num)`,
  );
}

/** Block rows (`bw_hist_blocks`) of the addresses that are not busy. */
async function buildBlockRows(c: pg.Client, shardKeys: number, q: (label: string, text: string) => Promise<void>): Promise<void> {
  const maxPos = Number((await c.query<{ m: string }>(`SELECT max(tx_num & ${POS_MASK})::text AS m FROM bw_entries`)).rows[0]!.m);
  if (maxPos > 0xffff) throw new Error(`a position ${maxPos} does not fit the block rows' 2 bytes`);
  await q(
    'block rows',
    `DROP TABLE IF EXISTS bw_hist_blocks;
     CREATE TABLE bw_hist_blocks (height int4 NOT NULL, shard int4 NOT NULL, keys uuid[] NOT NULL, entries bytea NOT NULL,
       PRIMARY KEY (height, shard)) WITH (autovacuum_enabled = off);
     INSERT INTO bw_hist_blocks
       SELECT height, (rn / ${shardKeys})::int4, array_agg(addr_key ORDER BY addr_key), string_agg(ent, ''::bytea ORDER BY addr_key)
       FROM (SELECT height, addr_key, ent, row_number() OVER (PARTITION BY height ORDER BY addr_key) - 1 AS rn
             FROM (SELECT (e.tx_num >> 20)::int4 AS height, e.addr_key,
                          substring(int2send(count(*)::int2) FROM 2) || string_agg(substring(int4send((e.tx_num & ${POS_MASK})::int4) FROM 3), ''::bytea ORDER BY e.tx_num) AS ent
                   FROM bw_entries e WHERE NOT EXISTS (SELECT 1 FROM bw_busy_keys b WHERE b.addr_key = e.addr_key)
                   GROUP BY 1, 2) p) s
       GROUP BY height, rn / ${shardKeys}
       ORDER BY 1, 2;
     CREATE INDEX bw_hist_blocks_keys ON bw_hist_blocks USING gin (keys)`,
  );
}

/** Pair rows (`bw_hist_pairs`), every address. */
async function buildPairs(c: pg.Client, q: (label: string, text: string) => Promise<void>): Promise<void> {
  await q(
    'pair rows',
    `DROP TABLE IF EXISTS bw_hist_pairs;
     CREATE TABLE bw_hist_pairs (addr8 int8 NOT NULL, height int4 NOT NULL, pos bytea NOT NULL) WITH (autovacuum_enabled = off);
     INSERT INTO bw_hist_pairs
       SELECT ('x' || translate(left(addr_key::text, 18), '-', ''))::bit(64)::int8, (tx_num >> 20)::int4,
              string_agg(substring(int4send((tx_num & ${POS_MASK})::int4) FROM 3), ''::bytea ORDER BY tx_num)
       FROM bw_entries GROUP BY 1, 2 ORDER BY 1, 2;
     ALTER TABLE bw_hist_pairs ADD PRIMARY KEY (addr8, height)`,
  );
}

/**
 * `bw_txids`: a block's txids in rows of `group` (0: the whole block in one row), key (height,
 * part), and a GIN on their first 8 bytes as int8 (txid_key's expression, written out: PostgreSQL
 * 17 builds an index with search_path = pg_catalog).
 */
async function buildTxids(c: pg.Client, group: number, q: (label: string, text: string) => Promise<void>): Promise<void> {
  const part = group > 0 ? `((tx_num & ${POS_MASK}) / ${group})::int4` : '0';
  await q(
    `txids (rows of ${group || 'a block'})`,
    `CREATE FUNCTION bw_txid_keys(b bytea) RETURNS int8[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
       $$ SELECT array_agg(('x' || encode(substring(b FROM i * 32 + 1 FOR 8), 'hex'))::bit(64)::int8 ORDER BY i)
          FROM generate_series(0, length(b) / 32 - 1) AS i $$;
     CREATE TABLE bw_txids (height int4 NOT NULL, part int4 NOT NULL, txids bytea NOT NULL, PRIMARY KEY (height, part)) WITH (autovacuum_enabled = off);
     ALTER TABLE bw_txids ALTER COLUMN txids SET STORAGE ${group > 0 && group * 32 < 2000 ? 'PLAIN' : 'EXTERNAL'};
     INSERT INTO bw_txids SELECT (tx_num >> 20)::int4, ${part}, string_agg(txid, ''::bytea ORDER BY tx_num) FROM txs GROUP BY 1, 2 ORDER BY 1, 2;
     CREATE INDEX bw_txids_keys ON bw_txids USING gin (bw_txid_keys(txids))`,
  );
}

/** Removes the candidates' rows of blocks above `tip` (a reused index whose blocks were undone). */
async function trimCandidates(c: pg.Client, tip: number, tables: readonly string[]): Promise<void> {
  const has = (t: string) => tables.includes(t);
  if (has('bw_txids')) await c.query(`DELETE FROM bw_txids WHERE height > ${tip}`);
  if (has('bw_hist_blocks')) await c.query(`DELETE FROM bw_hist_blocks WHERE height > ${tip}`);
  if (has('bw_hist_pairs')) await c.query(`DELETE FROM bw_hist_pairs WHERE height > ${tip}`);
  if (has('bw_hist_busy')) await c.query(`DELETE FROM bw_hist_busy WHERE first_tx_num >= ${firstTxNum(tip + 1)}`);
  await trimBuckets(
    c,
    tables.filter((t) => t.startsWith('bw_hist_buckets_') || t === 'bw_tx_parts' || t === 'bw_txid_buckets'),
    tip + 1,
  );
  await c.query(`VACUUM ${tables.join(', ')}`);
  if (has('bw_txids')) await c.query(`SELECT gin_clean_pending_list('bw_txids_keys')`);
  if (has('bw_hist_blocks')) await c.query(`SELECT gin_clean_pending_list('bw_hist_blocks_keys')`);
  if (has('bw_tx_parts')) await c.query(`SELECT gin_clean_pending_list('bw_tx_parts_spent')`);
}

interface LogRows {
  rows: number;
  /** Bytes of `log` per row: mean, p99, largest; rows whose log is over 2,000 bytes (TOAST's threshold: compressed inline under STORAGE MAIN). */
  avg: number;
  p99: number;
  max: number;
  over2k: number;
}

interface Sizes {
  rawMb: number;
  /** Table (heap + TOAST) and index MB of each relation measured. */
  tables: Record<string, { table: number; indexes: number }>;
  /** Each index of `txs` and of the candidates, MB. */
  indexes: Record<string, number>;
  databaseMb: number;
  todayRatio: number;
  /** The database with `txs` and/or `history` replaced by candidates: MB and its ratio to raw. */
  projected: Record<string, { mb: number; ratio: number }>;
  /** The bucket tables' rows. */
  logs: Record<string, LogRows>;
}

async function measureSizes(c: pg.Client, rawBytes: number): Promise<Sizes> {
  await c.query('CHECKPOINT');
  const candidates = await candidateTables(c);
  const names = ['txs', 'history', 'utxos', 'balances', ...candidates];
  const tables: Sizes['tables'] = {};
  for (const n of names) {
    const r = await c.query<{ t: string; i: string }>(`SELECT pg_table_size($1)::text AS t, pg_indexes_size($1)::text AS i`, [n]);
    tables[n] = { table: MB(Number(r.rows[0]!.t)), indexes: MB(Number(r.rows[0]!.i)) };
  }
  const idx = await c.query<{ n: string; s: string }>(
    `SELECT indexrelid::regclass::text AS n, pg_relation_size(indexrelid)::text AS s FROM pg_index WHERE indrelid = ANY($1::regclass[])`,
    [['txs', ...candidates]],
  );
  const dbBytes = Number((await c.query<{ n: string }>(`SELECT pg_database_size(current_database())::text AS n`)).rows[0]!.n);
  const sum = (ns: string[]) => ns.reduce((s, n) => s + tables[n]!.table + tables[n]!.indexes, 0);
  const todayMb = MB(dbBytes) - sum(candidates);
  const projected: Sizes['projected'] = {};
  const project = (label: string, out: string[], into: string[]) => {
    if (!into.every((t) => candidates.includes(t))) return;
    const mb = round(todayMb - sum(out) + sum(into), 1);
    projected[label] = { mb, ratio: round(mb / MB(rawBytes), 3) };
  };
  project('txs → txid rows, history → block rows + busy chunks', ['txs', 'history'], ['bw_txids', 'bw_hist_blocks', 'bw_hist_busy']);
  project('txs → parts + txid buckets', ['txs'], ['bw_tx_parts', 'bw_txid_buckets']);
  const logs: Sizes['logs'] = {};
  for (const t of candidates.filter((x) => x.startsWith('bw_hist_buckets_') || x === 'bw_txid_buckets')) {
    const r = await c.query<{ rows: string; avg: string; p99: string; max: string; over: string }>(
      `SELECT count(*)::text AS rows, avg(length(log))::text AS avg, percentile_disc(0.99) WITHIN GROUP (ORDER BY length(log))::text AS p99,
              max(length(log))::text AS max, count(*) FILTER (WHERE length(log) > 2000)::text AS over FROM ${t}`,
    );
    const x = r.rows[0]!;
    logs[t] = { rows: Number(x.rows), avg: round(Number(x.avg)), p99: Number(x.p99), max: Number(x.max), over2k: Number(x.over) };
    if (t === 'bw_txid_buckets') continue;
    const n = t.slice('bw_hist_buckets_'.length);
    project(`history → buckets of ${n} + busy chunks`, ['history'], [t, 'bw_hist_busy']);
    project(
      `txs → parts + txid buckets, history → buckets of ${n} + busy chunks`,
      ['txs', 'history'],
      ['bw_tx_parts', 'bw_txid_buckets', t, 'bw_hist_busy'],
    );
  }
  return {
    rawMb: MB(rawBytes),
    tables,
    indexes: Object.fromEntries(idx.rows.map((r) => [r.n, MB(Number(r.s))])),
    databaseMb: round(todayMb, 1),
    todayRatio: round(todayMb / MB(rawBytes), 3),
    projected,
    logs,
  };
}

/** The block's rows as the per-block writer derives them, its prevouts read (not deleted) from `utxos`. */
async function derive(c: pg.Client, block: DecodedBlock, height: number): Promise<BlockRows> {
  const outpoints = externalOutpoints(block);
  const r = await c.query<{ txid: Buffer; vout: number; tx_num: string; value: string; script: Buffer; addr_key: string | null }>(
    `SELECT u.txid, u.vout, u.tx_num::text, u.value::text, u.script, u.addr_key::text
       FROM unnest($1::bytea[], $2::int4[]) AS s(txid, vout)
       JOIN txs t ON txid_key(t.txid) = txid_key(s.txid) AND t.txid = s.txid
       JOIN utxos u ON u.tx_num = t.tx_num AND u.vout = s.vout`,
    [outpoints.map((o) => Buffer.from(o.txid)), outpoints.map((o) => o.vout)],
  );
  const prevouts = new Map<string, Prevout>();
  for (const x of r.rows)
    prevouts.set(`${hashKey(x.txid)}:${x.vout}`, {
      txNum: Number(x.tx_num),
      value: BigInt(x.value),
      script: x.script,
      ...(x.addr_key !== null ? { keys: x.addr_key } : {}),
    });
  return deriveBlock(block, height, (txid, vout) => prevouts.get(`${hashKey(txid)}:${vout}`));
}

/** CHECKPOINT (unless `checkpoint` is false: pages already logged stay so), then `fn`, with the WAL it wrote (pg_walinspect), the PostgreSQL CPU and its time. */
async function step(pgs: BenchPostgres, c: pg.Client, fn: () => Promise<void>, checkpoint = true): Promise<Step> {
  if (checkpoint) await c.query('CHECKPOINT');
  const lsn0 = (await c.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0]!.l;
  const cpu0 = pgs.cpuMs();
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  const pgCpuMs = pgs.cpuMs() - cpu0;
  const lsn1 = (await c.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0]!.l;
  // pg_walinspect reads flushed WAL only (a rolled-back step's records may not be yet, and a
  // transaction that only took an id does not flush at commit): a message with flush = true
  // flushes everything before it.
  await c.query(`SELECT pg_logical_emit_message(false, 'bw', 'flush', true)`);
  const wal = Number((await c.query<{ d: string }>('SELECT pg_wal_lsn_diff($1, $2)::text AS d', [lsn1, lsn0])).rows[0]!.d);
  const byRmgr: Record<string, number> = {};
  let fpi = 0;
  if (wal > 0) {
    const st = await c.query<{ rm: string; all: string; fpi: string }>(
      `SELECT "resource_manager/record_type" AS rm, combined_size::text AS all, fpi_size::text AS fpi FROM pg_get_wal_stats($1, $2) WHERE count > 0`,
      [lsn0, lsn1],
    );
    for (const r of st.rows) {
      byRmgr[r.rm] = MB(Number(r.all));
      fpi += Number(r.fpi);
    }
  }
  return { walMb: MB(wal), fpiMb: MB(fpi), byRmgr, pgCpuMs, ms: round(ms, 1) };
}

async function rolledBack(c: pg.Client, fn: () => Promise<void>): Promise<void> {
  await c.query('BEGIN');
  try {
    await fn();
  } finally {
    await c.query('ROLLBACK');
  }
}

async function committed(c: pg.Client, fn: () => Promise<void>): Promise<void> {
  await c.query('BEGIN');
  try {
    await fn();
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK');
    throw err;
  }
}

/** Today's history statement (chain-rows.ts insertHistory), on this client. */
async function insertHistoryRows(c: pg.Client, rows: BlockRows): Promise<void> {
  const chunks = historyChunks(rows.history);
  await c.query(
    `INSERT INTO history (addr_key, first_tx_num, rest)
       SELECT * FROM unnest($1::uuid[], $2::int8[], $3::bytea[]) ORDER BY 1, 2`,
    [chunks.map((x) => x.key), chunks.map((x) => String(x.first)), chunks.map((x) => restOf(x.entries))],
  );
}

/** Today's `txs` rows of the block (the apply's statement without the mempool join). */
async function insertTxsRows(c: pg.Client, rows: BlockRows): Promise<void> {
  await c.query(`INSERT INTO txs (tx_num, txid, outs, ins) SELECT * FROM unnest($1::int8[], $2::bytea[], $3::bytea[], $4::bytea[])`, [
    rows.txs.map((t) => String(t.txNum)),
    rows.txs.map((t) => Buffer.from(t.txid)),
    rows.txs.map((t) => t.outs),
    rows.txs.map((t) => t.ins),
  ]);
}

async function insertTxidRows(c: pg.Client, height: number, rows: BlockRows, group: number): Promise<void> {
  const size = group > 0 ? group : rows.txs.length;
  const parts: Buffer[] = [];
  for (let i = 0; i < rows.txs.length; i += size) parts.push(Buffer.concat(rows.txs.slice(i, i + size).map((t) => t.txid)));
  await c.query(`INSERT INTO bw_txids (height, part, txids) SELECT $1, p - 1, t FROM unnest($2::bytea[]) WITH ORDINALITY AS u(t, p)`, [
    height,
    parts,
  ]);
}

/** The txids of the outputs a block spends, each once: what the spend statement turns into tx_nums. */
function spentTxids(block: DecodedBlock): Buffer[] {
  const seen = new Map<string, Buffer>();
  for (const o of externalOutpoints(block)) seen.set(hashKey(o.txid), Buffer.from(o.txid));
  return [...seen.values()];
}

/** Today: each txid's tx_num through `txs_txid_key`, by txid hex. */
async function todayTxNums(c: pg.Client, txids: Buffer[]): Promise<Map<string, number>> {
  const r = await c.query<{ txid: Buffer; n: string }>({
    name: 'today-spent',
    text: `SELECT s.txid, t.tx_num::text AS n FROM unnest($1::bytea[]) AS s(txid) JOIN txs t ON txid_key(t.txid) = txid_key(s.txid) AND t.txid = s.txid`,
    values: [txids],
  });
  return new Map(r.rows.map((x) => [x.txid.toString('hex'), Number(x.n)]));
}

/** Packed: every spent txid's row found by one GIN scan (&&), its position by the row's keys. */
async function resolvePacked(c: pg.Client, txids: Buffer[]): Promise<number> {
  const r = await c.query(
    `WITH w AS (SELECT txid, ('x' || encode(substring(txid FROM 1 FOR 8), 'hex'))::bit(64)::int8 AS key FROM unnest($1::bytea[]) AS s(txid))
     SELECT b.height, b.part, k.i
       FROM bw_txids b CROSS JOIN LATERAL unnest(bw_txid_keys(b.txids)) WITH ORDINALITY AS k(key, i)
       JOIN w ON w.key = k.key
      WHERE bw_txid_keys(b.txids) && (SELECT array_agg(key) FROM w)
        AND substring(b.txids FROM (k.i::int4 - 1) * 32 + 1 FOR 32) = w.txid`,
    [txids],
  );
  return r.rowCount ?? 0;
}

/** A block row's entries for one address: a count byte, then each position as 2 bytes. */
function blockEntries(nums: readonly number[]): Buffer {
  const b = Buffer.allocUnsafe(1 + 2 * nums.length);
  b[0] = nums.length;
  nums.forEach((n, i) => b.writeUInt16BE(n & POS_MASK, 1 + 2 * i));
  return b;
}

async function insertBlockRows(
  c: pg.Client,
  height: number,
  rows: BlockRows,
  busyKeys: ReadonlySet<string>,
  shardKeys: number,
): Promise<void> {
  const keys = [...rows.history.keys()].filter((k) => !busyKeys.has(k)).sort();
  const shards: { keys: string[]; entries: Buffer }[] = [];
  for (let i = 0; i < keys.length; i += shardKeys) {
    const part = keys.slice(i, i + shardKeys);
    shards.push({ keys: part, entries: Buffer.concat(part.map((k) => blockEntries(rows.history.get(k)!))) });
  }
  await c.query(
    `INSERT INTO bw_hist_blocks (height, shard, keys, entries)
       SELECT $1, s - 1, k::uuid[], e FROM unnest($2::text[], $3::bytea[]) WITH ORDINALITY AS u(k, e, s)`,
    [height, shards.map((s) => `{${s.keys.join(',')}}`), shards.map((s) => s.entries)],
  );
  await insertBusyChunks(c, rows, busyKeys);
}

/** The busy addresses' entries of a block as today's chunk rows (`bw_hist_busy`, beside the block rows or the history buckets). */
async function insertBusyChunks(c: pg.Client, rows: BlockRows, busyKeys: ReadonlySet<string>): Promise<void> {
  const hot = historyChunks(new Map([...rows.history].filter(([k]) => busyKeys.has(k))));
  if (hot.length > 0)
    await c.query(
      `INSERT INTO bw_hist_busy (addr_key, first_tx_num, rest) SELECT * FROM unnest($1::uuid[], $2::int8[], $3::bytea[]) ORDER BY 1, 2`,
      [hot.map((x) => x.key), hot.map((x) => String(x.first)), hot.map((x) => restOf(x.entries))],
    );
}

async function readBusyKeys(c: pg.Client): Promise<Set<string>> {
  return new Set((await c.query<{ k: string }>('SELECT DISTINCT addr_key::text AS k FROM bw_hist_busy')).rows.map((r) => r.k));
}

/** Table (heap + TOAST + free space map) MB of each of `tables`. */
async function tableSizes(c: pg.Client, tables: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of tables) out[t] = MB(Number((await c.query<{ n: string }>('SELECT pg_table_size($1)::text AS n', [t])).rows[0]!.n));
  return out;
}

type Add = (k: string, s: Step) => void;

/**
 * A block's records into a bucket table, after a CHECKPOINT (one upsert); its undo (the touched
 * buckets' logs cut, checked to give back what was there) and the append again, pages already
 * logged.
 */
async function bucketSteps(
  pgs: BenchPostgres,
  c: pg.Client,
  add: Add,
  label: string,
  table: string,
  h: number,
  logs: Map<number, Buffer[]>,
) {
  const buckets = [...logs.keys()];
  const before = await logsDigest(c, table, buckets);
  add(`${label}: append (one upsert)`, await step(pgs, c, () => committed(c, () => appendLogs(c, table, logs))));
  add(`${label}: undo, logs cut (pages logged)`, await step(pgs, c, () => committed(c, () => cutLogs(c, table, buckets, h)), false));
  if ((await logsDigest(c, table, buckets)) !== before) throw new Error(`${table}: the undo of block ${h} did not give back its logs`);
  add(`${label}: append again (pages logged)`, await step(pgs, c, () => committed(c, () => appendLogs(c, table, logs)), false));
}

/** A block's parts (COPY) and txid records (one upsert), each after a CHECKPOINT; their undo and both again, pages already logged. */
async function partSteps(pgs: BenchPostgres, c: pg.Client, add: Add, h: number, rows: BlockRows, logs: Map<number, Buffer[]>) {
  const buckets = [...logs.keys()];
  const before = await logsDigest(c, 'bw_txid_buckets', buckets);
  add('parts: COPY (+ spends GIN pending list)', await step(pgs, c, () => committed(c, () => copyParts(c, rows))));
  add('txid buckets: append (one upsert)', await step(pgs, c, () => committed(c, () => appendLogs(c, 'bw_txid_buckets', logs))));
  const undo = async () => {
    await deleteParts(c, h);
    await cutLogs(c, 'bw_txid_buckets', buckets, h);
  };
  add('parts + txid buckets: undo (pages logged)', await step(pgs, c, () => committed(c, undo), false));
  if ((await logsDigest(c, 'bw_txid_buckets', buckets)) !== before)
    throw new Error(`bw_txid_buckets: the undo of block ${h} did not give back its logs`);
  add('parts: COPY again (pages logged)', await step(pgs, c, () => committed(c, () => copyParts(c, rows)), false));
  add(
    'txid buckets: append again (pages logged)',
    await step(pgs, c, () => committed(c, () => appendLogs(c, 'bw_txid_buckets', logs)), false),
  );
}

/** The address key's first 8 bytes as a signed int8 (text). */
const addr8 = (key: string) => BigInt.asIntN(64, BigInt(`0x${key.replace(/-/g, '').slice(0, 16)}`)).toString();

async function insertPairRows(c: pg.Client, height: number, rows: BlockRows): Promise<void> {
  const keys = [...rows.history.keys()];
  await c.query(
    `INSERT INTO bw_hist_pairs (addr8, height, pos) SELECT a, $1, p FROM unnest($2::int8[], $3::bytea[]) AS u(a, p) ORDER BY a`,
    [height, keys.map(addr8), keys.map((k) => blockEntries(rows.history.get(k)!).subarray(1))],
  );
}

interface ReadFigure {
  n: number;
  /** Client-side time per answer (ms), median and p99, and the PostgreSQL backend's CPU per answer (µs). */
  p50: number;
  p99: number;
  cpuUs: number;
}

type Reads = Record<string, ReadFigure>;

const PAGE = 25;

/** Times `fn` over `inputs` twice (the second pass, warm, is measured), with the backend's CPU. */
async function timeReads<T>(c: pg.Client, pid: number, inputs: readonly T[], fn: (x: T) => Promise<void>): Promise<ReadFigure> {
  for (const x of inputs) await fn(x);
  const ms: number[] = [];
  const cpu0 = processCpuMs(pid);
  for (const x of inputs) {
    const t0 = performance.now();
    await fn(x);
    ms.push(performance.now() - t0);
  }
  return {
    n: inputs.length,
    p50: round(pct(ms, 50), 3),
    p99: round(pct(ms, 99), 3),
    cpuUs: round(((processCpuMs(pid) - cpu0) * 1000) / inputs.length),
  };
}

/** The newest page of an address in block rows: the GIN finds its rows, each row's entries are walked to its key. */
function blockRowEntries(rows: { height: number; keys: string[]; entries: Buffer }[], key: string): number[] {
  const out: number[] = [];
  for (const r of rows) {
    let at = 0;
    const want = r.keys.indexOf(key);
    for (let i = 0; i < want; i++) at += 1 + 2 * r.entries[at]!;
    const n = r.entries[at]!;
    const nums: number[] = [];
    for (let j = 0; j < n; j++) nums.push(r.height * 2 ** 20 + r.entries.readUInt16BE(at + 1 + 2 * j));
    out.push(...nums.reverse());
  }
  return out;
}

interface ReadContext {
  o: Options;
  busyKeys: ReadonlySet<string>;
  /** Bucket bits of each history bucket table, and of the txid buckets. */
  bits: ReadonlyMap<string, number>;
  tBits: number;
}

/**
 * Reads the typical answers from each layout, each checked against today's: an address's newest
 * history page (the tx_nums of its 25 newest entries; the API then reads those transactions, the
 * same in every layout), its balance (`balances`, kept as is), a txid's position and a
 * position's txid.
 */
async function measureReads(c: pg.Client, lookups: number, ctx: ReadContext, quick: boolean): Promise<Reads> {
  const { o, busyKeys } = ctx;
  const group = o.group;
  const pid = (await c.query<{ p: number }>('SELECT pg_backend_pid() AS p')).rows[0]!.p;
  // Lookups as the API plans them: by index (a generic plan must not fall back to a scan).
  await c.query('SET enable_seqscan = off');
  say(`  reads${quick ? ' (GIN pending lists unmerged)' : ''}: sampling`);
  const n = quick ? Math.ceil(lookups / 5) : lookups;
  const sample = async (text: string) =>
    (await c.query<{ k: string }>(text)).rows
      .map((r) => r.k)
      .filter((k) => !busyKeys.has(k))
      .slice(0, n);
  const typical = await sample(`SELECT DISTINCT addr_key::text AS k FROM history TABLESAMPLE SYSTEM (1) REPEATABLE (7) LIMIT ${n * 2}`);
  const wide = await sample(
    `SELECT addr_key::text AS k FROM history GROUP BY 1 HAVING sum(1 + length(rest) / 8) BETWEEN 20 AND 100 ORDER BY 1 LIMIT ${n}`,
  );
  const hot = [...busyKeys].slice(0, 3);
  const txids = (await c.query<{ t: Buffer }>(`SELECT txid AS t FROM txs TABLESAMPLE SYSTEM (0.1) REPEATABLE (7) LIMIT ${n}`)).rows.map(
    (r) => r.t,
  );
  const chunkPageSql = (table: string) =>
    // The newest chunks holding the page's entries (their counts from the stored lengths).
    `SELECT f, rest FROM (SELECT first_tx_num::text AS f, rest, sum(1 + length(rest) / 8) OVER (ORDER BY first_tx_num DESC) AS upto
       FROM ${table} WHERE addr_key = $1) x WHERE upto - (1 + length(rest) / 8) < ${PAGE}`;
  const todayPage = async (key: string, table = 'history') => {
    const r = await c.query<{ f: string; rest: Buffer }>({ name: `page-${table}`, text: chunkPageSql(table), values: [key] });
    return newestEntries(
      r.rows.map((x) => historyChunkEntries(BigInt(x.f), x.rest)),
      2n ** 62n,
      PAGE,
    ).map(Number);
  };
  const blocksPage = async (key: string) => {
    if (busyKeys.has(key)) return todayPage(key, 'bw_hist_busy');
    const r = await c.query<{ height: number; keys: string[]; entries: Buffer }>({
      name: 'page-blocks',
      // Through the GIN (materialized: otherwise the planner walks the primary key backwards
      // for the LIMIT, reading the whole table for an address with few entries).
      text: `WITH m AS MATERIALIZED (SELECT height, keys, entries FROM bw_hist_blocks WHERE keys @> ARRAY[$1::uuid])
             SELECT height, keys::text[] AS keys, entries FROM m ORDER BY height DESC LIMIT ${PAGE}`,
      values: [key],
    });
    return blockRowEntries(r.rows, key).slice(0, PAGE);
  };
  const pairsPage = async (key: string) => {
    const r = await c.query<{ height: number; pos: Buffer }>({
      name: 'page-pairs',
      text: `SELECT height, pos FROM bw_hist_pairs WHERE addr8 = $1 ORDER BY height DESC LIMIT ${PAGE}`,
      values: [addr8(key)],
    });
    const out: number[] = [];
    for (const x of r.rows) {
      const nums: number[] = [];
      for (let j = 0; j < x.pos.length; j += 2) nums.push(x.height * 2 ** 20 + x.pos.readUInt16BE(j));
      out.push(...nums.reverse());
    }
    return out.slice(0, PAGE);
  };
  // A bucket page: one statement reads the address's bucket row and its busy chunks (whether an
  // address is busy is not known before: both are asked), its records are picked out here.
  const bucketsPage = (per: string) => {
    const table = histBucketTable(per);
    const bits = ctx.bits.get(per)!;
    return async (key: string) => {
      const kb = keyBytes(key);
      const r = await c.query<{ f: string | null; rest: Buffer }>({
        name: `page-${table}`,
        text: `SELECT NULL::text AS f, log AS rest FROM ${table} WHERE bucket = $2 UNION ALL (${chunkPageSql('bw_hist_busy')})`,
        values: [key, bucketOf(kb, bits)],
      });
      const nums: number[] = [];
      for (const x of r.rows)
        if (x.f === null) nums.push(...histEntries(x.rest, kb));
        else nums.push(...decodeEntries(historyChunkEntries(BigInt(x.f), x.rest)).map(Number));
      return nums.sort((a, b) => b - a).slice(0, PAGE);
    };
  };
  const pages: [string, (k: string) => Promise<number[]>][] = [];
  if (o.sel.has('blocks')) pages.push(['block rows', blocksPage]);
  if (o.sel.has('pairs')) pages.push(['pair rows', pairsPage]);
  for (const per of o.perBucket) pages.push([`buckets of ${per}`, bucketsPage(per)]);
  // Each layout must answer what today's tables answer.
  for (const key of [...typical.slice(0, 50), ...wide.slice(0, 50), ...hot]) {
    const want = JSON.stringify(await todayPage(key));
    for (const [name, page] of pages) {
      const got = JSON.stringify(await page(key));
      if (got !== want) throw new Error(`${name}: page of ${key} is ${got}, today's ${want}`);
    }
  }
  const todayTx = async (txid: Buffer) =>
    Number(
      (
        await c.query<{ n: string }>({
          name: 'tx-today',
          text: `SELECT tx_num::text AS n FROM txs WHERE txid_key(txid) = txid_key($1) AND txid = $1`,
          values: [txid],
        })
      ).rows[0]!.n,
    );
  const packedTx = async (txid: Buffer) => {
    const r = await c.query<{ height: number; part: number; at: number }>({
      name: 'tx-packed',
      text: `SELECT height, part, position($1::bytea IN txids) AS at FROM bw_txids WHERE bw_txid_keys(txids) @> ARRAY[txid_key($1)]`,
      values: [txid],
    });
    const hit = r.rows.find((x) => x.at > 0 && (x.at - 1) % 32 === 0);
    if (!hit) throw new Error(`txid ${txid.toString('hex')} not found in bw_txids`);
    return hit.height * 2 ** 20 + hit.part * group + (hit.at - 1) / 32;
  };
  // A txid through its bucket, each match checked against the txid in its part (an API lookup
  // may name a txid the index does not have): two statements.
  const bucketTx = async (txid: Buffer) => {
    const r = await c.query<{ log: Buffer }>({
      name: 'tx-bucket',
      text: `SELECT log FROM bw_txid_buckets WHERE bucket = $1`,
      values: [bucketOf(txid, ctx.tBits)],
    });
    for (const m of r.rows[0] ? txidMatches(r.rows[0].log, txid) : []) if ((await partTxid(c, m))?.equals(txid)) return m;
    throw new Error(`txid ${txid.toString('hex')} not found in bw_txid_buckets`);
  };
  const todayTxid = async (num: number) =>
    (await c.query<{ t: Buffer }>({ name: 'txid-today', text: `SELECT txid AS t FROM txs WHERE tx_num = $1`, values: [num] })).rows[0]!.t;
  const nums: number[] = [];
  for (const t of txids) nums.push(await todayTx(t));
  // Who spent the outputs of a transaction: the spenders (tx_num, vin, vout) through today's
  // spends GIN on `txs` and through the parts' GIN (a part's transactions found by their
  // lengths), for transactions whose outputs a sampled transaction's first input spends.
  const spentFrom = o.sel.has('parts')
    ? (
        await c.query<{ ins: Buffer }>(`SELECT ins FROM txs TABLESAMPLE SYSTEM (1) REPEATABLE (11) WHERE length(ins) > 0 LIMIT ${n}`)
      ).rows.map((r) => Number(decodeIns(r.ins)[0]!.txNum))
    : [];
  const spendersOf = (target: number, found: { n: number; ins: Uint8Array }[]) =>
    found.flatMap(({ n, ins }) => decodeIns(ins).flatMap((r, vin) => (Number(r.txNum) === target ? [`${n}:${vin}:${r.vout}`] : []))).sort();
  const todaySpenders = async (target: number) => {
    const r = await c.query<{ n: string; ins: Buffer }>({
      name: 'spenders-today',
      text: `SELECT s.tx_num::text AS n, s.ins FROM txs s WHERE ${spendsKeysSql('s')} @> ARRAY[$1::int8 >> 4] AND length(s.ins) > 0`,
      values: [target],
    });
    return spendersOf(
      target,
      r.rows.map((x) => ({ n: Number(x.n), ins: x.ins })),
    );
  };
  const partSpenders = async (target: number) => {
    const r = await c.query<{ part: string; txids: Buffer; lens: Buffer; outs: Buffer; ins: Buffer }>({
      name: 'spenders-parts',
      text: `SELECT part::text, txids, lens, outs, ins FROM bw_tx_parts WHERE spent_tx_groups(ins) @> ARRAY[$1::int8 >> 4] AND length(ins) > 0`,
      values: [target],
    });
    return spendersOf(
      target,
      r.rows.flatMap((x) =>
        Array.from({ length: x.txids.length / 32 }, (_, i) => ({ n: Number(x.part) * 2 ** PART_SHIFT + i, ins: partTx(x, i).ins })),
      ),
    );
  };
  for (const t of spentFrom.slice(0, 50)) {
    const want = await todaySpenders(t);
    if (want.length === 0) throw new Error(`no spender of ${t} through today's spends GIN`);
    if (JSON.stringify(await partSpenders(t)) !== JSON.stringify(want))
      throw new Error(`bw_tx_parts: spenders of ${t} differ from today's`);
  }
  for (const [i, t] of txids.slice(0, 50).entries()) {
    if (o.sel.has('txids') && (await packedTx(t)) !== nums[i]) throw new Error(`bw_txids: wrong position for ${t.toString('hex')}`);
    if (o.sel.has('parts')) {
      if ((await bucketTx(t)) !== nums[i]) throw new Error(`bw_txid_buckets: wrong position for ${t.toString('hex')}`);
      if (!(await partTxid(c, nums[i]!))?.equals(t)) throw new Error(`bw_tx_parts: wrong txid at ${nums[i]}`);
    }
  }
  const balance = async (key: string) =>
    void (await c.query({ name: 'balance', text: `SELECT balance, utxo_count FROM balances WHERE addr_key = $1`, values: [key] }));
  const reads: Reads = {};
  const run = async (label: string, keys: string[], fn: (k: string) => Promise<unknown>) => {
    if (keys.length > 0) reads[label] = await timeReads(c, pid, keys, async (k) => void (await fn(k)));
    say(`  reads: ${label} ${JSON.stringify(reads[label])}`);
  };
  for (const [kind, keys] of [
    ['typical', typical],
    ['20–100 entries', wide],
    ['busy', hot],
  ] as const) {
    // Alternated: today, then each layout, per kind of address.
    await run(`history page, ${kind}: today`, keys, (k) => todayPage(k));
    for (const [name, page] of pages) await run(`history page, ${kind}: ${name}`, keys, page);
  }
  await run('balance (every layout)', typical, balance);
  reads['txid → tx_num: today'] = await timeReads(c, pid, txids, async (t) => void (await todayTx(t)));
  if (o.sel.has('txids'))
    reads[`txid → tx_num: txids in rows of ${group || 'a block'}`] = await timeReads(c, pid, txids, async (t) => void (await packedTx(t)));
  if (o.sel.has('parts')) {
    reads['txid → tx_num: txid buckets, checked in the part'] = await timeReads(c, pid, txids, async (t) => void (await bucketTx(t)));
    reads['tx_num → txid: today'] = await timeReads(c, pid, nums, async (x) => void (await todayTxid(x)));
    reads['tx_num → txid: parts'] = await timeReads(c, pid, nums, async (x) => void (await partTxid(c, x)));
    reads['spenders of a transaction: today (spends GIN on txs)'] = await timeReads(
      c,
      pid,
      spentFrom,
      async (x) => void (await todaySpenders(x)),
    );
    reads['spenders of a transaction: parts (GIN on their spent groups)'] = await timeReads(
      c,
      pid,
      spentFrom,
      async (x) => void (await partSpenders(x)),
    );
  }
  await c.query('RESET enable_seqscan');
  return reads;
}

function summarize(steps: Record<string, Step[]>): Record<string, Step> {
  const out: Record<string, Step> = {};
  for (const [k, ss] of Object.entries(steps)) {
    const med = (f: (s: Step) => number) => pct(ss.map(f), 50);
    const rm: Record<string, number> = {};
    for (const name of new Set(ss.flatMap((s) => Object.keys(s.byRmgr)))) rm[name] = med((s) => s.byRmgr[name] ?? 0);
    out[k] = { walMb: med((s) => s.walMb), fpiMb: med((s) => s.fpiMb), byRmgr: rm, pgCpuMs: med((s) => s.pgCpuMs), ms: med((s) => s.ms) };
  }
  return out;
}

function reportSizes(sizes: Sizes): void {
  say(`\nSize (MB; raw blocks ${sizes.rawMb}):`);
  say('| relation | table (heap + TOAST) | indexes |\n|---|---|---|');
  for (const [n, s] of Object.entries(sizes.tables)) say(`| ${n} | ${s.table} | ${s.indexes} |`);
  say(
    `indexes: ${Object.entries(sizes.indexes)
      .map(([n, s]) => `${n} ${s}`)
      .join(', ')}`,
  );
  for (const [t, l] of Object.entries(sizes.logs))
    say(`${t}: ${l.rows} rows, log bytes mean ${l.avg}, p99 ${l.p99}, max ${l.max}; ${l.over2k} rows over 2,000 bytes`);
  say(`database today ${sizes.databaseMb} MB = ${sizes.todayRatio} × raw`);
  for (const [k, p] of Object.entries(sizes.projected)) say(`  with ${k}: ${p.mb} MB = ${p.ratio} × raw`);
}

const byRm = (s: Step) =>
  Object.entries(s.byRmgr)
    .filter(([, v]) => v >= 0.05)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');

function reportSteps(steps: Record<string, Step[]>, live: number): void {
  say(`\nOne 4,000-transaction block, each step after a CHECKPOINT (medians of ${live} blocks):`);
  say('| step | WAL MB | of which full-page images | by resource manager | PostgreSQL CPU ms | ms |\n|---|---|---|---|---|---|');
  for (const [k, s] of Object.entries(summarize(steps))) say(`| ${k} | ${s.walMb} | ${s.fpiMb} | ${byRm(s)} | ${s.pgCpuMs} | ${s.ms} |`);
}

function reportMerge(merge: Record<string, Step>, live: number): void {
  for (const [k, s] of Object.entries(merge))
    say(`| GIN pending list merge, ${k} (${live} blocks' entries, once) | ${s.walMb} | ${s.fpiMb} | ${byRm(s)} | ${s.pgCpuMs} | ${s.ms} |`);
}

function reportReads(reads: Reads, pending: Reads): void {
  say('\nReads, warm (second pass), one client, prepared statements:');
  say(
    '| answer | n | p50 ms | p99 ms | PostgreSQL CPU µs/answer | p50 ms with the GIN pending lists unmerged |\n|---|---|---|---|---|---|',
  );
  for (const [k, r] of Object.entries(reads)) say(`| ${k} | ${r.n} | ${r.p50} | ${r.p99} | ${r.cpuUs} | ${pending[k]?.p50 ?? '—'} |`);
}

await main();
