/**
 * bench/size-breakdown: where the bytes of an imported index are. Imports the corpus (as
 * bench/sync's step 1 does, up to its catch-up and live blocks) into a database, runs VACUUM
 * ANALYZE and CHECKPOINT, and prints per chain table its rows, heap, TOAST and each index
 * (pg_relation_size), bytes per row, and the average stored width of each column
 * (avg(pg_column_size)). With `--baseline REF` the same corpus is first imported by REF's code
 * into a second database, measured, then migrated to the current code's latest migration
 * (the upgrade path of an existing index), vacuumed (VACUUM FULL, which a migration cannot
 * promise but shows the settled size) and measured again, beside the fresh import. With
 * `--candidates`, layouts that would shrink a table are built beside it in the same database
 * (CREATE TABLE AS in the table's key order, dropped afterwards) and their heaps compared with
 * the table's (CANDIDATES below; content of the history candidates is zeros of the exact length
 * the encoding would take: their size, not their reads, is what they measure).
 * Run: `node --import tsx bench/size-breakdown.ts [--blocks N] [--txs-per-block N]
 * [--baseline REF] [--candidates] [--keep DIR] [--cache-dir DIR]` (`--keep DIR`: the PostgreSQL stays in DIR;
 * a database already imported there is measured again, not imported).
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import { ensureCorpus } from './corpus/generate.js';
import { corpusMainChain, loadCorpusManifest } from '../devnode/corpus-manifest.js';
import { createDb } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { checkoutBaseline } from './baseline.js';
import { cacheDir, importCorpus, CHUNK_ROWS, runSize, say, startBenchPostgres, type BenchPostgres } from './harness.js';

const TABLES = ['txs', 'history', 'utxos', 'balances', 'blocks', 'script_aliases', 'asset_txs'] as const;

const mb = (n: number) => (n / 1e6).toFixed(1);

/** An 8-byte big-endian history entry `i` (0-based) of `rest` as int8, the previous one's for i = 0 being `first_tx_num`. */
const entry = (i: string) => `('x' || encode(substring(h.rest FROM (${i}) * 8 + 1 FOR 8), 'hex'))::bit(64)::int8`;
/** The bytes of LEB128(d) for d ≥ 0. */
const lebBytes = (d: string) =>
  `CASE WHEN ${d} < 128 THEN 1 WHEN ${d} < 16384 THEN 2 WHEN ${d} < 2097152 THEN 3 WHEN ${d} < 268435456 THEN 4 WHEN ${d} < 34359738368 THEN 5 ELSE 6 END`;

/** Candidate layouts: a table built from `select`, compared with `of`. */
const CANDIDATES: { name: string; of: string; what: string; select: string }[] = [
  {
    name: 'txs_fixed_first',
    of: 'txs',
    what: 'txs with its fixed-width columns first',
    select: 'SELECT tx_num, spent_group, first_seen, txid, outs, ins FROM txs ORDER BY tx_num',
  },
  {
    name: 'utxos_fixed_first',
    of: 'utxos',
    what: 'utxos as (tx_num, value, vout, addr_key, txid, script)',
    select: 'SELECT tx_num, value, vout, addr_key, txid, script FROM utxos ORDER BY tx_num, vout',
  },
  {
    name: 'history_null_rest',
    of: 'history',
    what: 'history with rest null for a chunk of one entry',
    select: `SELECT addr_key, first_tx_num, NULLIF(rest, ''::bytea) AS rest FROM history ORDER BY addr_key, first_tx_num`,
  },
  {
    name: 'history_delta4',
    of: 'history',
    what: 'history with rest as 4-byte offsets from first_tx_num',
    select: `SELECT addr_key, first_tx_num, decode(repeat('00', length(rest) / 2), 'hex') AS rest FROM history ORDER BY addr_key, first_tx_num`,
  },
  {
    name: 'history_leb_deltas',
    of: 'history',
    what: 'history with rest as LEB128 deltas between entries, null when empty',
    select: `SELECT addr_key, first_tx_num, CASE WHEN n IS NULL THEN NULL ELSE decode(repeat('00', n::int4), 'hex') END AS rest
      FROM (SELECT h.addr_key, h.first_tx_num,
        (SELECT sum(${lebBytes('d')}) FROM (SELECT ${entry('i')} - CASE WHEN i = 0 THEN h.first_tx_num ELSE ${entry('i - 1')} END AS d
          FROM generate_series(0, length(h.rest) / 8 - 1) i) x) AS n
        FROM history h) y
      ORDER BY addr_key, first_tx_num`,
  },
];

/** Each candidate's heap against its table's, as printable lines. */
export async function candidates(pgs: BenchPostgres, db: string): Promise<string[]> {
  const out = ['| candidate | heap MB | its table MB | saved MB |', '|---|---|---|---|'];
  for (const c of CANDIDATES) {
    await pgs.query(db, `DROP TABLE IF EXISTS size_candidate`);
    await pgs.query(db, `CREATE TABLE size_candidate AS ${c.select}`);
    const r = (
      await pgs.query<{ a: string; b: string }>(
        db,
        `SELECT pg_relation_size('size_candidate')::text AS a, pg_relation_size($1::regclass)::text AS b`,
        [c.of],
      )
    ).rows[0]!;
    await pgs.query(db, `DROP TABLE size_candidate`);
    out.push(`| ${c.name}: ${c.what} | ${mb(Number(r.a))} | ${mb(Number(r.b))} | ${mb(Number(r.b) - Number(r.a))} |`);
  }
  return out;
}

/** The breakdown of database `db` as printable lines. */
export async function breakdown(pgs: BenchPostgres, db: string, raw: number): Promise<string[]> {
  const out: string[] = [];
  const total = Number((await pgs.query<{ n: string }>(db, 'SELECT pg_database_size(current_database())::text AS n')).rows[0]!.n);
  out.push(`database ${mb(total)} MB, raw blocks ${mb(raw)} MB: ${(total / raw).toFixed(3)} ×`);
  out.push('| table | rows | heap MB | B/row | toast MB | index | MB | B/row |');
  out.push('|---|---|---|---|---|---|---|---|');
  for (const t of TABLES) {
    const r = (
      await pgs.query<{ rows: string; heap: string; toast: string }>(
        db,
        `SELECT c.reltuples::int8::text AS rows, pg_relation_size(c.oid)::text AS heap,
          COALESCE(pg_total_relation_size(NULLIF(c.reltoastrelid, 0)), 0)::text AS toast
        FROM pg_class c WHERE c.oid = $1::regclass`,
        [t],
      )
    ).rows[0];
    if (!r) continue;
    const rows = Math.max(1, Number(r.rows));
    const ix = await pgs.query<{ name: string; n: string }>(
      db,
      `SELECT i.indexrelid::regclass::text AS name, pg_relation_size(i.indexrelid)::text AS n
      FROM pg_index i WHERE i.indrelid = $1::regclass ORDER BY 1`,
      [t],
    );
    const first = `| ${t} | ${r.rows} | ${mb(Number(r.heap))} | ${Math.round(Number(r.heap) / rows)} | ${mb(Number(r.toast))}`;
    if (ix.rows.length === 0) out.push(`${first} | — | — | — |`);
    ix.rows.forEach((x, i) =>
      out.push(`${i === 0 ? first : '| | | | |'} | ${x.name} | ${mb(Number(x.n))} | ${Math.round(Number(x.n) / rows)} |`),
    );
    const cols = await pgs.query<{ attname: string }>(
      db,
      `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
      [t],
    );
    const widths = await pgs.query<Record<string, string>>(
      db,
      `SELECT ${cols.rows.map((c) => `round(avg(pg_column_size(${c.attname})), 1)::text AS ${c.attname}`).join(', ')},
        round(avg(pg_column_size(x.*)), 1)::text AS "(row)",
        round(avg((${cols.rows.map((c) => `(${c.attname} IS NULL)::int`).join(' + ')})), 2)::text AS "(nulls)"
      FROM ${t} x`,
    );
    out.push(
      `  ${t} columns, average stored bytes: ${Object.entries(widths.rows[0]!)
        .map(([k, v]) => `${k} ${v ?? '—'}`)
        .join(', ')}`,
    );
  }
  return out;
}

async function exists(pgs: BenchPostgres, db: string): Promise<boolean> {
  return (await pgs.query('postgres', 'SELECT 1 FROM pg_database WHERE datname = $1', [db])).rows.length > 0;
}

async function settle(pgs: BenchPostgres, db: string, full = false): Promise<void> {
  await pgs.query(db, full ? 'VACUUM (FULL, ANALYZE)' : 'VACUUM ANALYZE');
  await pgs.query('postgres', 'CHECKPOINT');
}

async function main(): Promise<void> {
  const { values } = benchArgs(import.meta.url, {
    options: {
      blocks: { type: 'string' },
      'txs-per-block': { type: 'string' },
      baseline: { type: 'string' },
      candidates: { type: 'boolean' },
      keep: { type: 'string' },
      'cache-dir': { type: 'string' },
    },
  });
  const size = runSize(values);
  const corpus = ensureCorpus(cacheDir(values['cache-dir']), size.corpus, say);
  const m = await loadCorpusManifest(corpus.dir);
  const nearTip = size.catchupBlocks + size.liveBlocks;
  const raw = corpusMainChain(m)
    .slice(0, m.tip.height - nearTip + 1)
    .reduce((s, b) => s + b.length, 0);
  const root = values.keep ?? mkdtempSync(join(cacheDir(values['cache-dir']), 'size-'));
  const pgs = await startBenchPostgres(root);
  try {
    if (values.baseline) {
      if (!(await exists(pgs, 'bw_base'))) {
        const base = checkoutBaseline(values.baseline, say);
        try {
          const url = await pgs.createDatabase('bw_base');
          await importCorpus(corpus.dir, url, nearTip, [], pgs, base.dir, CHUNK_ROWS);
        } finally {
          base.remove();
        }
        await settle(pgs, 'bw_base');
        say(`baseline ${values.baseline}, imported:\n${(await breakdown(pgs, 'bw_base', raw)).join('\n')}`);
        const db = createDb(pgs.url('bw_base'));
        const t0 = performance.now();
        try {
          await migrateToLatest(db);
        } finally {
          await db.destroy();
        }
        say(`baseline migrated to the current code in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      }
      await settle(pgs, 'bw_base', true);
      say(`baseline ${values.baseline}, migrated, VACUUM FULL:\n${(await breakdown(pgs, 'bw_base', raw)).join('\n')}`);
    }
    if (!(await exists(pgs, 'bw_import'))) {
      const url = await pgs.createDatabase('bw_import');
      await importCorpus(corpus.dir, url, nearTip, [], pgs, undefined, CHUNK_ROWS);
    }
    await settle(pgs, 'bw_import');
    say(`current code, imported:\n${(await breakdown(pgs, 'bw_import', raw)).join('\n')}`);
    if (values.candidates) say(`candidate layouts:\n${(await candidates(pgs, 'bw_import')).join('\n')}`);
  } finally {
    await pgs.stop();
    if (!values.keep) rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
