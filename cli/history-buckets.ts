/**
 * `blockwire history-buckets --busy N`: moves the index to history buckets (docs/schema.md
 * `history_buckets`): the addresses with at most N entries keep their history as records in
 * buckets, about half the size of the chunk rows; the others keep chunk rows. On an empty index
 * it only sets N: an import or initial sync then writes the buckets at its finish. Once per index
 * (there is no way back but a reindex). Same database settings as `start`; takes the indexer
 * lock, so it refuses to run beside a running indexer.
 * @module
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { openDatabase } from './open-database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createLogger } from '../src/log.js';
import { FatalError } from '../src/errors.js';
import { buildHistoryBuckets } from '../indexer/writer/history-switch.js';
import { createWriterLock } from '../indexer/writer-lock.js';

const USAGE = `usage: blockwire history-buckets --busy N [--base BITS]

Keeps the history of every address with at most N entries (1..100000; 100 is a good start) as
13-byte records in hash buckets instead of chunk rows: on a mainnet-shaped chain the history
takes about half the space. Addresses with more entries keep chunk rows. Runs once, with the
indexer stopped (it takes the indexer's lock): on an index with blocks it folds the history in
one transaction, then compacts the history table (VACUUM FULL: its readers wait; minutes per
10 GB). On an empty index it only switches: the first import or sync folds at its finish and
chooses the bucket count. --base sets the number of buckets (2^BITS) on an index with blocks
(default: chosen from the records).
`;

export async function run(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseArgs({ args: argv, options: { busy: { type: 'string' }, base: { type: 'string' }, help: { type: 'boolean' } } });
  } catch (err) {
    process.stderr.write(`blockwire history-buckets: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const v = args.values;
  if (v.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const busy = Number(v.busy);
  if (v.busy === undefined || !Number.isInteger(busy) || busy < 1 || busy > 100_000) {
    process.stderr.write(`blockwire history-buckets: --busy must be an integer from 1 to 100000\n\n${USAGE}`);
    return 2;
  }
  const base = v.base === undefined ? undefined : Number(v.base);
  if (base !== undefined && (!Number.isInteger(base) || base < 1 || base > 31)) {
    process.stderr.write(`blockwire history-buckets: --base must be an integer from 1 to 31\n`);
    return 2;
  }
  const config = loadConfig(process.env);
  const log = createLogger({ level: config.logLevel, format: config.logFormat }).child({ component: 'indexer.history-buckets' });
  const handle = await openDatabase(config, { quiet: true });
  const lock = createWriterLock({ databaseUrl: handle.url, log });
  try {
    await migrateToLatest(handle.db);
    await lock.acquire();
    const t0 = performance.now();
    const r = await buildHistoryBuckets(handle.db, { busy, guard: lock.guard, ...(base === undefined ? {} : { base }) });
    process.stdout.write(
      `history buckets on: busy ${r.busy}, base ${r.base}; ${r.records} records of ${r.keys - r.busyKeys} addresses in buckets, ` +
        `${r.busyKeys} addresses in chunk rows (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`,
    );
    return 0;
  } catch (err) {
    if (err instanceof FatalError) {
      process.stderr.write(`blockwire history-buckets: ${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    await lock.release();
    await handle.close();
  }
}
