// `npm run bench -- --quick` runs every benchmark script end to end in a tiny configuration, so
// none of them can rot: each must exit 0 and print its tables, bench/sync must report every
// figure the sync targets name, and the README section must be regenerated from the results. No
// timing is asserted (figures from a shared 2-core machine are not test material). The benches
// start their own PostgreSQL, Redis and bitcoind; the run is a step of its own (the vitest project
// `bench`, selected alone by BLOCKWIRE_BENCH_SMOKE=1), which scripts/test.sh runs beside the suite.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BENCHES } from '../../bench/run.js';
import type { FloorResult } from '../../bench/live-floor.js';
import { bitcoindPresent } from '../support/bitcoind.js';
import { PART_TXS } from '../../src/db/tx-parts.js';

// bench/core needs a real bitcoind: without one it is left out (and the run fails under CI).
const withCore = bitcoindPresent || Boolean(process.env.CI);
if (!withCore) process.stderr.write('notice: npm run bench -- --quick without bench/core: bitcoind not found (set BITCOIND_BIN)\n');
const names = BENCHES.map((b) => b.name).filter((n) => withCore || n !== 'core');

const dir = mkdtempSync(join(tmpdir(), 'bw-bench-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm run bench -- --quick', () => {
  it('runs every benchmark, writes the results file and the README tables', () => {
    const results = join(dir, 'quick.json');
    const readme = join(dir, 'README.md');
    copyFileSync('bench/README.md', readme);
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'bench/run.ts', '--quick', '--results', results, '--readme', readme, '--only', names.join(',')],
      { encoding: 'utf8', timeout: 1_500_000, maxBuffer: 64 << 20 },
    );
    const out = `${r.stdout}\n${r.stderr}`;
    const data = JSON.parse(readFileSync(results, 'utf8')) as {
      quick: boolean;
      runs: { name: string; exitCode: number; tables: unknown[]; result: Record<string, Record<string, number>> | null; tail: string[] }[];
    };
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
    // (the limit copies every chain table the import wrote: with parts on, the default, the
    // transactions are in tx_parts, up to 64 a row, and txs is empty)
    const copied = (sync.copyLimit as unknown as { perTable: Record<string, { rows: number }> }).perTable;
    expect(copied.tx_parts!.rows).toBeGreaterThan(0);
    expect(copied.txs!.rows + PART_TXS * copied.tx_parts!.rows).toBeGreaterThanOrEqual(sync.import!.txs!);
    expect(copied.txid_buckets!.rows).toBeGreaterThan(0);
    // The import (history buckets on, the default) folded its history into them; the same import
    // with them off (HISTORY_BUSY=0) keeps it in chunk rows.
    const chunkRows = sync.chunkRows as unknown as { foldMs: number; mergeMs: number; size: { tables: Record<string, number> } };
    expect(chunkRows.foldMs).toBeGreaterThan(0);
    expect(chunkRows.mergeMs).toBeGreaterThan(0);
    expect(chunkRows.size.tables.history).toBeGreaterThan(0);
    expect((sync.size as unknown as { tables: Record<string, number> }).tables.history_buckets).toBeGreaterThan(0);
    expect(sync.catchup!.blocks).toBeGreaterThanOrEqual(5);
    expect(sync.live!.blocks).toBe(3);
    expect(sync.live!.txsPerBlock).toBeGreaterThan(3000);
    // The live block's floor, measured in the same run on the same index (bench/live-floor.ts).
    const floor = (sync.live as unknown as { floor: FloorResult }).floor;
    expect(floor.rows.txs).toBeGreaterThan(3000);
    expect(floor.floor.logged.postgresCpuMs).toBeGreaterThan(0);
    expect(floor.writer.checkpoint.walMb).toBeGreaterThan(0);
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
    expect(md).toMatch(
      /\| API balance \(16 connections, as fast as they go\) \| [\d,]+ req\/s, p99 [\d,]+ ms = [\d.]+ × floor \| [\d,]+ req\/s \|/,
    );
    expect(md).toMatch(
      /\| API transaction lookup \(16 connections, as fast as they go\) \| [\d,]+ req\/s, p99 [\d,]+ ms = [\d.]+ × floor \|/,
    );
    expect(md).toMatch(
      /\| API transaction lookup, Coinstack's path \(16 connections, as fast as they go\) \| [\d,]+ req\/s, p99 [\d,]+ ms = [\d.]+ × floor \|/,
    );
    expect(md).toMatch(/\| VM speed class: txid hashing [^|]*\| [\d,]+ tx\/s \|/);
    expect(md).toMatch(/\| VM speed class: bare fastify [^|]*\| [\d,]+ req\/s \|/);
    expect(md).toMatch(/\| importer CPU per transaction [^|]*\| [\d.]+ µs \|/);
    expect(md).toMatch(/\| database size \/ raw block bytes, history buckets off \(HISTORY_BUSY=0 [^|]*\| [\d.]+ \|/);
    expect(md).toMatch(/\| peak memory of the import [^|]*\| [\d.]+ GiB \|/);
    expect(md).toMatch(/\| block → first WebSocket message, p99 \| [\d,]+ ms \|/);
    expect(md).toMatch(/\| block → first webhook delivered, p99 \| [\d,]+ ms \|/);
    expect(md).toMatch(
      /\| live: 4,000-tx block, ZMQ arrival → committed with its events, p50 \| [\d,]+ ms \| index of [\d,]+ blocks; floor \(PostgreSQL's own write cost for these rows\): [\d,]+ ms, PostgreSQL CPU [\d,]+ ms \|/,
    );
    expect(md).toMatch(
      /\| wallet balance, 2 × 100 addresses \(\d+ connections, as fast as they go\) \| [\d,]+ req\/s, p99 [\d,]+ ms \| one address's balance [\d,]+ req\/s \|/,
    );
    expect(md).toMatch(
      /\| wallet creation, 2 × 100 addresses, median of 3 \| wpkh\(tpub\/<0;1>\/\*\): [\d.,]+ s; [^|]+\| index of [\d,]+ blocks \([\d,]+ txs\) \|/,
    );
    expect(md).toMatch(
      /\| API history page \(a million-entry address, random depth\), offered 5,000 req\/s \(open loop\) \| [\d,]+ req\/s served, p99 [\d,.]+ ms \|/,
    );
    expect(md).toMatch(/\| events: block arrival → WebSocket, p99 to the last of [\d,]+ clients \| [\d,]+ ms \|/);
    expect(md).toMatch(/\| webhook deliveries to a local receiver \(Standard Webhooks signatures\) \| [\d,]+ \/s \|/);
    expect(md).toContain('## decode');
    if (withCore)
      expect(md).toMatch(
        /\| live on Bitcoin Core 30\.0: [\d,]+-tx block, ZMQ arrival → committed, p50 \| [\d,]+ ms \| devnode, same blocks: [\d,]+ ms; index of [\d,]+ blocks, PostgreSQL CPU [\d,]+ ms a block; floor \(PostgreSQL's own write cost for these rows\): [\d,]+ ms, PostgreSQL CPU [\d,]+ ms \|/,
      );
    expect(md).toMatch(
      /\| small blocks \(1–10 txs\) indexed block by block on the devnode: ms per block, median \| [\d.,]+ ms \(p90 [\d.,]+\) \| [\d,]+ blocks, [\d.,]+ blocks\/s \|/,
    );
    if (withCore)
      expect(md).toMatch(
        /\| small blocks \(1–10 txs\) indexed block by block on Bitcoin Core 30\.0: ms per block, median \| [\d.,]+ ms \(p90 [\d.,]+\) \|/,
      );
    // The lookup asking Core, warm / cold, in /v1 and at Coinstack's path.
    const ms = String.raw`[\d.]+ ms \([\d.]+\) / [\d.]+ ms \([\d.]+\)`;
    if (withCore)
      expect(md).toMatch(
        new RegExp(String.raw`\| API transaction lookup from Bitcoin Core 30\.0[^|]*\| ${ms}; Coinstack's path: ${ms} \|`),
      );
  }, 1_600_000);
});
