/**
 * `blockwire import --memory-mb`: with a bound far below the chain's unspent outputs, the
 * outpoint cache is trimmed again and again and the outputs it dropped are read back from
 * PostgreSQL when spent; the index equals the one of an unbounded import of the same blocks,
 * table for table. A synthetic mainnet-shaped corpus (bench/corpus): 40 blocks of ~150
 * transactions, a stale branch, spends of recent and of old outputs.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PARAMS, generateCorpus } from '../../../bench/corpus/generate.js';
import { corpusBlocksDir } from '../../../devnode/corpus-manifest.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { projectRoot } from '../../support/fixtures.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';

const run = promisify(execFile);

/** The JSON log line with message `msg` of a command's output. */
function logLine(stdout: string, msg: string): Record<string, unknown> {
  const line = stdout.split('\n').find((l) => l.startsWith('{') && l.includes(`"msg":"${msg}"`));
  if (!line) throw new Error(`no '${msg}' line in:\n${stdout.slice(-2000)}`);
  return JSON.parse(line) as Record<string, unknown>;
}

describe('blockwire import under a memory bound', () => {
  const root = mkdtempSync(join(tmpdir(), 'bw-import-memory-'));
  const dbs: TestDatabase[] = [];
  let blocksDir: string;

  beforeAll(() => {
    const dir = join(root, 'corpus');
    generateCorpus({
      out: dir,
      params: { ...DEFAULT_PARAMS, blocks: 40, txsPerBlock: 150, tailBlocks: 0, seed: 'memory', hotShare: 0.05 },
    });
    blocksDir = corpusBlocksDir(dir);
  });
  afterAll(async () => {
    await Promise.all(dbs.map((d) => d.drop()));
    rmSync(root, { recursive: true, force: true });
  });

  const importInto = async (db: TestDatabase, args: string[]) => {
    const { stdout } = await run(
      process.execPath,
      [join(projectRoot, 'bin', 'blockwire.js'), 'import', '--blocks-dir', blocksDir, '--network', 'regtest', '--near-tip', '0', ...args],
      {
        env: { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: 'info', LOG_FORMAT: 'json', INDEXER_BULK_BATCH_TXS: '700' },
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return stdout;
  };

  it('trims the cache, reads dropped outputs back from PostgreSQL, and builds the same index as an unbounded import', async () => {
    const bounded = await createTestDatabase('impmem');
    const free = await createTestDatabase('impfree');
    dbs.push(bounded, free);
    // 1 MiB leaves the cache its smallest table (768 outputs); the chain has thousands unspent.
    const out = await importInto(bounded, ['--memory-mb', '1']);
    const budget = logLine(out, 'memory budget');
    expect(budget.cacheMaxOutputs).toBe(768);
    const done = logLine(out, 'bulk load done');
    expect(done.cacheMaxEntries).toBe(768);
    expect(Number(done.cacheEvictions)).toBeGreaterThan(1);
    expect(Number(done.cacheDropped)).toBeGreaterThan(1000);
    expect(Number(done.cacheReadBack)).toBeGreaterThan(100);

    const freeOut = await importInto(free, []);
    expect(logLine(freeOut, 'bulk load done').cacheEvictions).toBe(0);

    expect((await readTip(bounded.db)).height).toBe(40);
    const [a, b] = [await snapshotIndex(bounded.db), await snapshotIndex(free.db)];
    expect(a.utxos.length).toBeGreaterThan(2000);
    expect(a).toEqual(b);
    // The index used to read dropped outputs back went with the rebuilt utxos table.
    const idx = await bounded.db
      .selectFrom('pg_indexes' as never)
      .select('indexname' as never)
      .where('tablename' as never, '=', 'utxos' as never)
      .execute();
    expect((idx as { indexname: string }[]).map((r) => r.indexname).sort()).toEqual(['utxos_addr', 'utxos_pkey']);
  });

  it('continues a bounded import on an index whose unspent outputs exceed the bound (the cache loads the newest, reads the rest back)', async () => {
    const twice = await createTestDatabase('impmem2');
    const free = await createTestDatabase('impfree2');
    dbs.push(twice, free);
    const first = await run(
      process.execPath,
      [
        join(projectRoot, 'bin', 'blockwire.js'),
        'import',
        '--blocks-dir',
        blocksDir,
        '--network',
        'regtest',
        '--near-tip',
        '15',
        '--memory-mb',
        '1',
      ],
      {
        env: { ...process.env, DATABASE_URL: twice.url, LOG_LEVEL: 'warn', INDEXER_BULK_BATCH_TXS: '700' },
      },
    );
    expect(first.stdout).toMatch(/to height 25 /);
    const out = await importInto(twice, ['--memory-mb', '1']);
    const loaded = logLine(out, 'bulk sync: unspent outputs loaded into memory');
    expect(loaded.evicting).toBe(true);
    expect(loaded.outputs).toBe(384);
    expect(Number(logLine(out, 'bulk load done').cacheReadBack)).toBeGreaterThan(100);
    await importInto(free, []);
    expect(await snapshotIndex(twice.db)).toEqual(await snapshotIndex(free.db));
  });

  it('refuses a --memory-mb that is not a positive integer', async () => {
    await expect(
      run(process.execPath, [join(projectRoot, 'bin', 'blockwire.js'), 'import', '--blocks-dir', root, '--memory-mb', '0']),
    ).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--memory-mb must be a positive integer') });
  });
});
