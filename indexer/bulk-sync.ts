/**
 * The run loop's bulk path (run.ts `BulkPath`): while the index is far behind the node (or a bulk
 * sync was interrupted), the writer's bulk mode (writer/bulk.ts `runBulk`) loads blocks up to
 * near the node's tip, fed by the one block prefetcher (prefetch.ts); then the per-block mode
 * takes over.
 * @module
 */
import type pg from 'pg';
import type { Kysely } from 'kysely';
import type { Config } from '../src/config.js';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import type { PhaseListener } from '../src/ops/phases.js';
import type { Prefetcher } from './prefetch.js';
import type { BulkPath } from './run.js';
import { bulkActive, runBulk } from './writer/bulk.js';

/** The bulk path of the run loop: the writer's bulk mode (writer/bulk.ts) fed by the block prefetcher. */
export function createBulkSync(deps: {
  config: Pick<Config, 'indexerBulkThreshold' | 'indexerBulkNearTip' | 'indexerBulkBatchTxs' | 'importMemoryMb'>;
  db: Kysely<Database>;
  databaseUrl: string;
  /** The block prefetcher the run loop uses too (its `feed` reads the node ahead). */
  blocks: Prefetcher;
  log: Logger;
  guardClient?: (client: pg.ClientBase) => Promise<void>;
  phases?: PhaseListener;
}): BulkPath {
  const { config, db } = deps;
  let nodeHeight = -1;
  // Only this process starts or ends a bulk sync: after the first read the flag is known here.
  let active: boolean | null = null;
  return {
    async shouldRun(tip, height, extendsTip) {
      nodeHeight = height;
      active ??= await bulkActive(db);
      return active || (extendsTip && height - tip.height > config.indexerBulkThreshold);
    },
    async run(signal) {
      const target = Math.max(nodeHeight - config.indexerBulkNearTip, -1);
      active = null;
      await runBulk(
        db,
        {
          databaseUrl: deps.databaseUrl,
          log: deps.log,
          batchTxs: config.indexerBulkBatchTxs,
          memoryBytes: config.importMemoryMb * 2 ** 20,
          signal,
          ...(deps.guardClient ? { guardClient: deps.guardClient } : {}),
          ...(deps.phases ? { phases: deps.phases } : {}),
        },
        (from) => deps.blocks.feed(from, target),
        target,
      );
    },
  };
}
