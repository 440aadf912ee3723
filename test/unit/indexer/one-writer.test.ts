/**
 * One writer: every statement that writes a chain table lives in indexer/writer/. The sources
 * of every server role and the kernel are scanned for writes (SQL INSERT/UPDATE/DELETE/MERGE/
 * TRUNCATE/COPY/DROP/ALTER naming a chain table, the Kysely builders, `copyIn` of the bulk
 * path); outside the writer's folder none may name a chain table. The same scanner must find
 * a write of each chain table inside the folder, so a pattern that matches nothing fails here
 * too. Migrations (the schema's history), tests and bench (fixtures they seed) are not scanned.
 */
import { describe, expect, it } from 'vitest';
import { sourceFiles, sourceText } from '../../support/source-files.js';

const SCANNED = ['src', 'indexer', 'api', 'streams', 'stamp', 'electrum', 'cli', 'devnode'];
const WRITER = 'indexer/writer/';

/** The tables of the chain index (docs/schema.md): written by indexer/writer/ alone. */
const CHAIN_TABLES = [
  'blocks',
  'txs',
  'utxos',
  'balances',
  'history',
  'history_buckets',
  'history_bucket_params',
  'script_aliases',
  'watched_txs',
  'reorged_txs',
  'chain_tip',
  'bulk_spent',
  'asset_txs',
  'bulk_asset_candidates',
  'block_undo',
];

const WRITES: readonly RegExp[] = [
  /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|MERGE\s+INTO|COPY|DROP\s+TABLE(?:\s+IF\s+EXISTS)?|ALTER\s+TABLE(?:\s+IF\s+EXISTS)?)\s+([a-z_]+)/g,
  /\bTRUNCATE\s+(?:TABLE\s+)?([a-z_]+(?:\s*,\s*[a-z_]+)*)/g,
  /\.(?:insertInto|updateTable|deleteFrom|mergeInto|replaceInto)\(\s*['"`]([a-z_]+)/g,
  /\bcopyIn\(\s*\w+\s*,\s*['"`]([a-z_]+)/g,
];

/** Each chain table a source writes, with the file. */
function writesIn(file: string): { file: string; table: string }[] {
  const text = sourceText(file);
  const found: { file: string; table: string }[] = [];
  for (const re of WRITES) {
    for (const m of text.matchAll(re)) {
      for (const table of m[1]!.split(',').map((t) => t.trim())) if (CHAIN_TABLES.includes(table)) found.push({ file, table });
    }
  }
  return found;
}

describe('one writer of the chain tables', () => {
  const files = sourceFiles(SCANNED);
  const writes = files.flatMap(writesIn);

  it('writes them only from indexer/writer/', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(writes.filter((w) => !w.file.startsWith(WRITER))).toEqual([]);
  });

  it('finds a write of every chain table in indexer/writer/ (the scan sees what it looks for)', () => {
    const inWriter = new Set(writes.filter((w) => w.file.startsWith(WRITER)).map((w) => w.table));
    expect([...inWriter].sort()).toEqual([...CHAIN_TABLES].sort());
  });
});
