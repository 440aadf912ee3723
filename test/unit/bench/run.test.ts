// `npm run bench -- --quick` runs every benchmark script end to end in a tiny configuration, so
// none of them can rot: each must exit 0 and print its tables, bench/sync must report every
// figure the sync targets name, and the README section must be regenerated from the results. No
// timing is asserted (figures from a shared 2-core machine are not test material).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BENCHES, parseTables, spliceReadme, summary, type BenchRun } from '../../../bench/run.js';
import { bitcoindPresent } from '../../support/bitcoind.js';

// bench/core needs a real bitcoind: without one it is left out (and the run fails under CI).
const withCore = bitcoindPresent || Boolean(process.env.CI);
if (!withCore) process.stderr.write('notice: npm run bench -- --quick without bench/core: bitcoind not found (set BITCOIND_BIN)\n');
const names = BENCHES.map((b) => b.name).filter((n) => withCore || n !== 'core');

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

  it('the summary sets each target against the floor measured in the same run', () => {
    const run = (name: string, text: string, result: unknown = null): BenchRun => ({ name, command: name, exitCode: 0, ms: 1, loadBefore: [], loadAfter: [], tables: parseTables(text), result, tail: [] });
    const api = [
      '| route | req/s | of floor | p50 ms | p99 ms |',
      '|---|---|---|---|---|',
      '| floor: unknown route | 20000 | 100 % | 0 | 2 |',
      '| balance (random of 200k addresses) | 10000 | 50 % | 1 | 4 |',
      '| history page (limit 25, hot address, random depth) | 6000 | 30 % | 1 | 30 |',
      '| history page (limit 25, random of 200k addresses) | 8000 | 40 % | 1 | 4 |',
      '| transaction (random of 10k payments, 2 in / 2 out) | 7000 | 35 % | 1 | 5 |',
    ].join('\n');
    const decode = '| block | txs | floor ms | decode / floor | decode tx/s |\n|---|---|---|---|---|\n| all 5 | 10000 | 25 | 0.9 | 360000 |';
    const events = '| fan-out | clients | blocks | p50 ms | p99 ms | max ms | first client p50 ms | first client p99 ms |\n|---|---|---|---|---|---|---|---|\n| block arrival (devnode) | 10000 | 20 | 500 | 900 | 950 | 100 | 200 |\n| block arrival → webhook delivered (1 chain subscription) | 1 | 20 | 300 | 1200 | 1300 | 300 | 1200 |';
    const sync = { import: { txs: 1_000_000, importerCpuMs: 7_000, txPerSec: 60_000, peakRssBytes: 2 ** 31 }, live: { p50: 290, p99: 650 }, projection: { hours: 5.5 }, size: { ratio: 0.9, rawBlockBytes: 1e9 } };
    const md = summary([run('sync', '', sync), run('decode', decode), run('api', api), run('events', events)]);
    const row = (label: string) => md.split('\n').find((l) => l.startsWith(`| ${label}`))?.split('|').map((c) => c.trim());
    expect(row('VM speed class: txid hashing')?.[2]).toBe('400,000 tx/s');
    expect(row('VM speed class: bare fastify')?.[2]).toBe('20,000 req/s');
    expect(row('API balance (16')?.slice(2, 6)).toEqual(['10,000 req/s, p99 4 ms = 0.50 × floor', '20,000 req/s', '≥ 0.5 × floor, p99 ≤ 10 ms', '**met**']);
    expect(row('API history page (a million-entry address, random depth) (16')?.[5]).toBe('**missed**'); // 0.30 × and p99 30 ms
    expect(row('API history page (random addresses) (16')?.[5]).toBe('**met**');
    expect(row('API transaction lookup')?.[5]).toBe('**met**');
    expect(row('live: 4,000-tx block')?.[5]).toBe('**met**');
    expect(row('live: same, p99')?.[5]).toBe('**missed**');
    expect(row('block → first WebSocket message')?.slice(2, 6)).toEqual(['200 ms', '10,000 clients', '≤ 1,000 ms', '**met**']);
    expect(row('importer CPU per transaction')?.slice(2, 6)).toEqual(['7.0 µs', 'txid hashing 2.50 µs/tx', '≤ 8 µs', '**met**']);
    expect(row('peak memory of the import')?.[5]).toBe('**met**');
    expect(row('projected full mainnet sync')?.[5]).toBe('**met**');
    expect(row('database size')?.[5]).toBe('**missed**');
    expect(row('events: block arrival → WebSocket, p99 to the last of 10,000 clients')?.[5]).toBe('**met**');
    expect(row('block → first webhook delivered')?.slice(2, 6)).toEqual(['1,200 ms', 'a chain subscription, local receiver', '≤ 1,000 ms', '**missed**']);
    // A bench that did not run leaves its targets without a verdict.
    expect(row('webhook deliveries')?.[5]).toBe('—');
    const wallets = { corpus: { blocks: 20_001, txs: 6e7 }, gapLimit: 1000, connections: 16, creationMs: { wpkh: 1500 }, balance: { reqPerSec: 900, p99: 40 }, addressBalance: { reqPerSec: 2000 }, million: { txs: 1_000_000, addresses: 1000, createMs: 4200, balanceMs: 12, historyMs: 11_000, historyNextMs: 300, unspentMs: 900 } };
    const mw = summary([run('wallets', '', wallets)]);
    const wrow = (label: string) => mw.split('\n').find((l) => l.startsWith(`| ${label}`))?.split('|').map((c) => c.trim());
    expect(wrow('wallet balance, 2 × 100')?.[5]).toBe('**missed**');
    expect(wrow('wallet with 1,000,000 transactions: creation')?.slice(2, 6)).toEqual(['4.20 s', '1,000 used addresses, index of 20,001 blocks', 'seconds, not a rescan (≤ 10 s)', '**met**']);
    expect(wrow('wallet with 1,000,000 transactions: first balance')?.[5]).toBe('**missed**'); // the first history page took 11 s
  });

  it(
    'runs every benchmark, writes the results file and the README tables',
    () => {
      const results = join(dir, 'quick.json');
      const readme = join(dir, 'README.md');
      copyFileSync('bench/README.md', readme);
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--quick', '--results', results, '--readme', readme, '--only', names.join(',')], { encoding: 'utf8', timeout: 1_500_000, maxBuffer: 64 << 20 });
      const out = `${r.stdout}\n${r.stderr}`;
      const data = JSON.parse(readFileSync(results, 'utf8')) as { quick: boolean; runs: { name: string; exitCode: number; tables: unknown[]; result: Record<string, Record<string, number>> | null; tail: string[] }[] };
      expect(data.quick).toBe(true);
      expect(data.runs.map((x) => x.name)).toEqual(names);
      expect(names.slice(0, 7)).toEqual(['sync', 'decode', 'api', 'events', 'stamp', 'wallets', 'electrum']);
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
      // bench/core: both nodes measured on the same chain.
      if (withCore) {
        const core = data.runs.find((x) => x.name === 'core')!.result!;
        for (const node of ['core', 'devnode']) {
          expect(core[node]!.sync, node).toMatchObject({ txPerSec: expect.any(Number) });
          expect((core[node]!.live as unknown as { blocks: number }).blocks, node).toBe(2);
        }
        expect(core.chain!.txs).toBeGreaterThan(400);
      }
      const md = readFileSync(readme, 'utf8');
      expect(md).toContain('<!-- bench:results:start -->');
      expect(md).toMatch(/\| initial sync \(`blockwire import`/);
      // Every target row has a figure (a parsing slip would show '—').
      expect(md).toMatch(/\| API balance \(16 connections, as fast as they go\) \| [\d,]+ req\/s, p99 [\d,]+ ms = [\d.]+ × floor \| [\d,]+ req\/s \|/);
      expect(md).toMatch(/\| API transaction lookup \(16 connections, as fast as they go\) \| [\d,]+ req\/s, p99 [\d,]+ ms = [\d.]+ × floor \|/);
      expect(md).toMatch(/\| VM speed class: txid hashing [^|]*\| [\d,]+ tx\/s \|/);
      expect(md).toMatch(/\| VM speed class: bare fastify [^|]*\| [\d,]+ req\/s \|/);
      expect(md).toMatch(/\| importer CPU per transaction [^|]*\| [\d.]+ µs \|/);
      expect(md).toMatch(/\| peak memory of the import [^|]*\| [\d.]+ GiB \|/);
      expect(md).toMatch(/\| block → first WebSocket message, p99 \| [\d,]+ ms \|/);
      expect(md).toMatch(/\| block → first webhook delivered, p99 \| [\d,]+ ms \|/);
      expect(md).toMatch(/\| wallet balance, 2 × 100 addresses \(\d+ connections, as fast as they go\) \| [\d,]+ req\/s, p99 [\d,]+ ms \| one address's balance [\d,]+ req\/s \|/);
      expect(md).toMatch(/\| wallet creation, 2 × 100 addresses, median of 3 \| wpkh\(tpub\/<0;1>\/\*\): [\d.,]+ s; [^|]+\| index of [\d,]+ blocks \([\d,]+ txs\) \|/);
      expect(md).toMatch(/\| API history page \(a million-entry address, random depth\), offered 5,000 req\/s \(open loop\) \| [\d,]+ req\/s served, p99 [\d,.]+ ms \|/);
      expect(md).toMatch(/\| events: block arrival → WebSocket, p99 to the last of [\d,]+ clients \| [\d,]+ ms \|/);
      expect(md).toMatch(/\| webhook deliveries to a local receiver \(Standard Webhooks signatures\) \| [\d,]+ \/s \|/);
      expect(md).toContain('## decode');
      if (withCore) expect(md).toMatch(/\| live on Bitcoin Core 30\.0: [\d,]+-tx block, ZMQ arrival → committed, p50 \| [\d,]+ ms \| devnode, same blocks: [\d,]+ ms \|/);
    },
    1_600_000,
  );
});
