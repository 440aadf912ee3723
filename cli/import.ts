/**
 * `blockwire import --blocks-dir DIR`: the fastest first sync, straight from Bitcoin Core's
 * blk*.dat files (xor.dat honoured) through the bulk path, up to a few blocks below the
 * most-work tip found there; `blockwire start` then follows the node from the imported tip
 * (undoing anything the node does not agree with). Same database settings as `start`; takes
 * the indexer lock, so it refuses to run beside a running indexer.
 * @module
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { isNetworkName, type NetworkName } from '../src/bitcoin/network.js';
import { openDatabase } from './open-database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createLogger } from '../src/log.js';
import { readTip } from '../indexer/writer/chain-rows.js';
import { blkFeed, scanBlocksDir } from '../indexer/blk-feed.js';
import { cacheBound, runBulk } from '../indexer/writer/bulk.js';
import { createWriterLock } from '../indexer/writer-lock.js';
import { applyHistoryBusy } from '../indexer/writer/history-switch.js';
import { applyTxParts } from '../indexer/writer/tx-parts-fold.js';

const USAGE = `usage: blockwire import --blocks-dir DIR [--network main|test|testnet4|signet|regtest] [--near-tip N] [--memory-mb MB]

Indexes the blocks in Bitcoin Core's blocks directory (blk*.dat, xor.dat) in bulk, up to N
blocks (default 6) below the most-work tip found there. Uses DATABASE_URL, or the embedded
PostgreSQL under BLOCKWIRE_DATA_DIR. Then run \`blockwire start\` to follow the node.
--memory-mb bounds the import's memory (default IMPORT_MEMORY_MB, 4096): beyond it, spent
outputs are read back from PostgreSQL instead of memory (slower, same index).
`;

export async function run(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      options: {
        'blocks-dir': { type: 'string' },
        network: { type: 'string' },
        'near-tip': { type: 'string' },
        'memory-mb': { type: 'string' },
        help: { type: 'boolean' },
      },
    });
  } catch (err) {
    process.stderr.write(`blockwire import: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const v = args.values;
  if (v.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const dir = v['blocks-dir'];
  if (!dir) {
    process.stderr.write(`blockwire import: --blocks-dir is required\n\n${USAGE}`);
    return 2;
  }
  if (v.network !== undefined && !isNetworkName(v.network)) {
    process.stderr.write(`blockwire import: unknown network '${v.network}'\n`);
    return 2;
  }
  const nearTip = v['near-tip'] === undefined ? 6 : Number(v['near-tip']);
  if (!Number.isInteger(nearTip) || nearTip < 0) {
    process.stderr.write(`blockwire import: --near-tip must be a non-negative integer\n`);
    return 2;
  }
  const memoryMb = v['memory-mb'] === undefined ? undefined : Number(v['memory-mb']);
  if (memoryMb !== undefined && (!Number.isInteger(memoryMb) || memoryMb < 1)) {
    process.stderr.write(`blockwire import: --memory-mb must be a positive integer (MiB)\n`);
    return 2;
  }
  const config = loadConfig(process.env);
  const log = createLogger({ level: config.logLevel, format: config.logFormat }).child({ component: 'indexer.import' });
  const network = (v.network as NetworkName | undefined) ?? config.network;

  log.info({ dir }, 'scanning block files for the most-work chain');
  const chain = await scanBlocksDir(dir, network);
  const best = chain.blocks.length - 1;
  log.info({ network: chain.network, records: chain.records, best, bestHash: chain.blocks[best]!.hash }, 'block files scanned');

  const handle = await openDatabase(config, { quiet: true });
  const lock = createWriterLock({ databaseUrl: handle.url, log });
  try {
    await migrateToLatest(handle.db);
    await lock.acquire();
    const layout = await applyHistoryBusy(handle.db, config.historyBusy, { guard: lock.guard });
    if (await applyTxParts(handle.db, config.txParts)) log.info({ txParts: config.txParts }, 'transaction parts switched by TX_PARTS');
    if (layout.applied) log.info({ busy: layout.busy }, 'empty index: history buckets on at HISTORY_BUSY');
    const tip = await readTip(handle.db);
    if (tip.height >= 0) {
      const ours = chain.blocks[tip.height]?.hash;
      if (ours !== hashToHex(tip.hash!)) {
        process.stderr.write(`blockwire import: the index's tip ${tip.height} ${hashToHex(tip.hash!)} is not on the chain in ${dir}\n`);
        return 1;
      }
    }
    const target = best - nearTip;
    const memoryBytes = (memoryMb ?? config.importMemoryMb) * 2 ** 20;
    const bound = cacheBound(memoryBytes, config.indexerBulkBatchTxs);
    log.info(
      { memoryMb: memoryBytes / 2 ** 20, cacheMaxOutputs: bound.maxEntries, cacheMb: Math.round(bound.cacheBytes / 2 ** 20) },
      'memory budget',
    );
    const r = await runBulk(
      handle.db,
      { databaseUrl: handle.url, log, batchTxs: config.indexerBulkBatchTxs, memoryBytes, guardClient: lock.guardClient },
      (from) => blkFeed(chain, from, target),
      target,
    );
    // Peak resident memory of this process (getrusage's ru_maxrss), against the budget.
    log.info({ peakRssBytes: process.resourceUsage().maxRSS * 1024, memoryMb: memoryBytes / 2 ** 20 }, 'import peak memory');
    const txPerSec = r.ms > 0 ? Math.round((r.txs * 1000) / r.ms) : 0;
    process.stdout.write(
      `imported ${r.blocks} blocks (${r.txs} transactions) to height ${r.tip} in ${(r.ms / 1000).toFixed(1)} s (${txPerSec} tx/s)\n`,
    );
    return 0;
  } finally {
    await lock.release();
    await handle.close();
  }
}
