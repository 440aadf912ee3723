// `npm run bench -- --quick` runs every benchmark script end to end in a tiny configuration, so
// none of them can rot: each must exit 0 and print its tables, bench/sync must report every
// figure the sync targets name, and the README section must be regenerated from the results. No
// timing is asserted (figures from a shared 2-core machine are not test material).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseTables, spliceReadme } from '../../../bench/run.js';

const dir = mkdtempSync(join(tmpdir(), 'bw-bench-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm run bench -- --quick', () => {
  it('parses markdown tables and replaces only the results section of a README', () => {
    const t = parseTables('text\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\nmore\n| x |\n|:-:|\n| y |\n');
    expect(t).toEqual([
      { header: ['a', 'b'], rows: [['1', '2'], ['3', '4']] },
      { header: ['x'], rows: [['y']] },
    ]);
    const first = spliceReadme('# Benchmarks\n\nintro\n', '<!-- bench:results:start -->\nA\n<!-- bench:results:end -->');
    expect(first).toContain('intro');
    const second = spliceReadme(`${first}\n## after\n`, '<!-- bench:results:start -->\nB\n<!-- bench:results:end -->');
    expect(second).toContain('\nB\n');
    expect(second).not.toContain('\nA\n');
    expect(second).toContain('## after');
  });

  it(
    'runs every benchmark, writes the results file and the README tables',
    () => {
      const results = join(dir, 'quick.json');
      const readme = join(dir, 'README.md');
      copyFileSync('bench/README.md', readme);
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--quick', '--results', results, '--readme', readme], { encoding: 'utf8', timeout: 1_500_000, maxBuffer: 64 << 20 });
      const out = `${r.stdout}\n${r.stderr}`;
      const data = JSON.parse(readFileSync(results, 'utf8')) as { quick: boolean; runs: { name: string; exitCode: number; tables: unknown[]; result: Record<string, Record<string, number>> | null; tail: string[] }[] };
      expect(data.quick).toBe(true);
      expect(data.runs.map((x) => x.name)).toEqual(['sync', 'decode', 'api', 'events', 'stamp', 'wallets', 'electrum']);
      for (const run of data.runs) {
        expect(run.exitCode, `${run.name}:\n${run.tail.join('\n')}`).toBe(0);
        if (run.name !== 'sync') expect(run.tables.length, run.name).toBeGreaterThan(0);
      }
      expect(r.status, out.slice(-3000)).toBe(0);
      const sync = data.runs[0]!.result!;
      expect(sync.import!.txPerSec).toBeGreaterThan(0);
      expect(sync.import!.txs).toBeGreaterThan(1000);
      expect(sync.size!.databaseBytes).toBeGreaterThan(sync.size!.emptyDatabaseBytes!);
      expect(sync.copyLimit!.rows).toBeGreaterThan(sync.import!.txs!);
      expect(sync.catchup!.blocks).toBeGreaterThanOrEqual(5);
      expect(sync.live!.blocks).toBe(3);
      expect(sync.live!.txsPerBlock).toBeGreaterThan(3000);
      expect(sync.rpc!.txPerSec).toBeGreaterThan(0);
      expect(sync.projection!.hours).toBeGreaterThan(0);
      const md = readFileSync(readme, 'utf8');
      expect(md).toContain('<!-- bench:results:start -->');
      expect(md).toMatch(/\| initial sync \(`blockwire import`/);
      // Every target row has a figure (a parsing slip would show '—').
      expect(md).toMatch(/\| API balance \(16 connections, as fast as they go\) \| [\d,]+ req\/s, p99 [\d,]+ ms \|/);
      expect(md).toMatch(/\| API history page \(a million-entry address, random depth\), offered 5,000 req\/s \(open loop\) \| [\d,]+ req\/s served, p99 [\d,.]+ ms \|/);
      expect(md).toMatch(/\| events: block arrival → WebSocket, p99 at [\d,]+ clients \| [\d,]+ ms \|/);
      expect(md).toMatch(/\| webhook deliveries to a local receiver \| [\d,]+ \/s \|/);
      expect(md).toContain('## decode');
    },
    1_600_000,
  );
});
