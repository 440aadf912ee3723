/**
 * The writer's bulk mode (its other mode, per block, is apply.ts; both derive rows through
 * derive-tx.ts, here with the BulkBatch sink): initial sync in bulk, for an index far behind the
 * node (fed by the block prefetcher, ../bulk-sync.ts) or fed from blk*.dat by `import`:
 * 1. begin (one transaction): drop the secondary indexes and primary keys of txs, utxos,
 *    history, balances and script_aliases, empty the mempool tables, mark the bulk sync active;
 * 2. load: blocks in height order, many per Postgres transaction (a batch of ~INDEXER_BULK_BATCH_TXS
 *    transactions), written with binary COPY: blocks, txs, the batch's outputs still unspent at
 *    its end, `bulk_spent` for outputs of earlier batches it spent, history chunks per address,
 *    script aliases (script-aliases.ts), block.connected events, and the tip. Each commit is a checkpoint. Inputs resolve from an
 *    in-memory outpoint cache (outpoint-cache.ts), never from Postgres; JS derives batch N+1
 *    while Postgres ingests batch N;
 * 3. finish (finishBulk): three transactions at once on three connections (chain state: utxos
 *    without the spent rows, balances, bulk_spent cleared, their indexes; history: chunks re-cut,
 *    its key; script aliases: one of each, their key; the txs indexes), then, on an index that
 *    keeps history in buckets (`busy` > 0), the loaded chunk rows folded into them
 *    (history-build.ts), then the bulk sync marked done. The per-block mode takes over.
 * After a kill -9 anywhere, the next start sees the active mark, reloads the outpoint cache
 * from `utxos` minus `bulk_spent` and resumes after the last committed batch.
 * Per-address events are not emitted for bulk-loaded blocks (they are history, not news).
 * @module
 */
import pg from 'pg';
import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import { foldHistory, foldLoadedHistory } from './history-build.js';
import { moveRecentSql } from './history-recent.js';
import { RECENT_BALANCES } from './balances-recent.js';
import { decodeBlock, type DecodedBlock } from '../../src/bitcoin/block.js';
import { equalBytes, hashToHex } from '../../src/bitcoin/hash.js';
import type { Database } from '../../src/db/schema.js';
import { OUTBOX_LOCK } from '../../src/db/outbox-lock.js';
import { RECOMPUTE_WALLET_BALANCES } from '../wallet-balances.js';
import { RetryableError } from '../../src/errors.js';
import type { Logger } from '../../src/log.js';
import { PhaseTimer, type PhaseListener } from '../../src/ops/phases.js';
import { lockTip, readTip, type Tip } from './chain-rows.js';
import { foldLoadedTxParts, unrecordedTxs } from './tx-parts-fold.js';
import { CHUNK_ENTRIES, SQL_HISTORY } from '../../src/db/history-entries.js';
import { BulkBatch } from './bulk-batch.js';
import { colorConfirmed } from './asset-rows.js';
import { scriptKeyBytes } from './address-keys.js';
import { pgTypes } from '../../src/db/connect.js';
import { copyIn, CopyRowReader } from './copy-binary.js';
import { copyOutInto } from './copy-out.js';
import { entriesWithin, OutpointCache } from './outpoint-cache.js';
import { CHAIN_CHANNEL } from '../../src/db/chain-changes.js';
import { CHAIN_INDEXES, chainIndex, chainIndexSql, createIndexSteps, dropIndexSql, type ChainTable } from '../../src/db/chain-indexes.js';
import type { BlockFeed } from '../prefetch.js';
import { keepPartsGin, PARTS_GIN_LOADED, PARTS_GIN_MERGE, PartsGinMerger, partsGinExists } from './parts-gin.js';

/**
 * The chain tables' keys and indexes (src/db/chain-indexes.ts, the definitions the migrations
 * use): dropped at the beginning of a bulk sync, built by its finish. The finish drops those of
 * txs, balances and script_aliases again before building them (it may run twice after a crash);
 * utxos and history are new tables by then.
 */
const dropIndexes = (tables: readonly ChainTable[]) => chainIndexSql('drop', tables).join(';\n');
const indexSteps = (tables: readonly ChainTable[], only?: (name: string) => boolean) =>
  CHAIN_INDEXES.filter((ix) => tables.includes(ix.table) && (only?.(ix.name) ?? true)).flatMap((ix) =>
    createIndexSteps(ix).map((text, i) => ({ name: i === 0 ? ix.name : `${ix.name} attach`, text })),
  );
const DROP_INDEXES = dropIndexes(['txs', 'utxos', 'history', 'balances', 'script_aliases']);

/** The bulk sync's mark in sync_state (absent or `active: false` outside a bulk sync). */
export interface BulkState {
  active: boolean;
  /** Tip when the bulk sync began. */
  from: number;
  /** Last committed batch's tip. */
  height: number;
}

async function readBulkState(db: Kysely<Database> | Transaction<Database>): Promise<BulkState | null> {
  const r = await db.selectFrom('sync_state').select('value').where('key', '=', 'bulk').executeTakeFirst();
  return r ? (r.value as BulkState) : null;
}

export interface BulkLoadDeps {
  databaseUrl: string;
  log: Logger;
  /** Proves the writer lock inside each bulk transaction. */
  guardClient?: (client: pg.ClientBase) => Promise<void>;
  /** Transactions per batch (one Postgres transaction, one checkpoint). */
  batchTxs: number;
  signal?: AbortSignal;
  /** Progress line interval (ms). */
  progressMs?: number;
  /**
   * Memory budget of the bulk sync, bytes (IMPORT_MEMORY_MB); the outpoint cache gets what the
   * process and two batches leave of it (`cacheBound`). Undefined: the cache is unbounded.
   */
  memoryBytes?: number;
  /** Receives each phase's time of the batches and the finish (the process's metrics). */
  phases?: PhaseListener;
}

/** What the process needs besides the outpoint cache: code, heap and pools (measured ~130 MB on a tiny import). */
const BASE_BYTES = 256 * 2 ** 20;
/** Two batches in memory (one derived, one being written): COPY rows, history groups, per transaction. */
const BATCH_BYTES_PER_TX = 1024;

/** The outpoint cache's bound under a memory budget: the most entries it may hold. */
export function cacheBound(memoryBytes: number, batchTxs: number): { maxEntries: number; cacheBytes: number } {
  const cacheBytes = Math.max(0, memoryBytes - BASE_BYTES - 2 * batchTxs * BATCH_BYTES_PER_TX);
  return { maxEntries: entriesWithin(cacheBytes), cacheBytes };
}

/**
 * The cache bound in force during a load. Once the cache is full, its oldest entries are
 * dropped (they are in `utxos`, committed) and from then on `evicting` is set: a block's inputs
 * the cache does not hold are read from `utxos` through an index on the outpoint, built the
 * first time (`reader`, a connection of its own, since the main one is busy with COPY).
 */
interface Bound {
  maxEntries: number;
  evicting: boolean;
  reader: pg.Client | null;
  evictions: number;
  evicted: number;
  misses: number;
  overWarned: boolean;
}

/** The index that lets a bounded bulk sync read evicted outputs back (gone with utxos at the finish, which rebuilds that table). */
const OUTPOINT_INDEX = 'CREATE INDEX IF NOT EXISTS utxos_bulk_outpoint ON utxos (txid, vout)';

export interface BulkResult {
  tip: number;
  blocks: number;
  txs: number;
  ms: number;
  /** Why loading stopped: reached the target, the feed ended, the chain changed, or stop(). */
  reason: 'target' | 'end' | 'fork' | 'stopped';
}

/**
 * How often a bulk session's backend checks, while a statement runs, that the importer is still
 * connected. A backend notices a closed client only when it next reads from it: one whose
 * importer died (killed, out of memory) in the middle of a finish statement went on for minutes
 * to hours — its INSERT filling the disk, its transaction holding the tables, the next `blockwire
 * import` refused by the indexer lock its session still held. With the check it cancels the
 * statement within this interval; the rollback leaves the sync to finish again.
 */
export const CLIENT_CHECK_INTERVAL = '5s';

/**
 * Index builds (and the GIN merges, parts-gin.ts) sort in memory up to maintenance_work_mem: at
 * least 512 MB for them, on `c` for its transaction (`local`) or its session.
 */
const INDEX_MEMORY_KB = 512 * 1024;
async function indexMemory(c: pg.Client, local: boolean): Promise<void> {
  await c.query(
    `SELECT set_config('maintenance_work_mem', '${INDEX_MEMORY_KB}kB', $1) FROM pg_settings
     WHERE name = 'maintenance_work_mem' AND setting::int8 < ${INDEX_MEMORY_KB}`,
    [local],
  );
}

/** A connection of the bulk sync, its backend checking for a departed client (CLIENT_CHECK_INTERVAL). */
export async function connectBulk(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: 'blockwire-indexer-bulk', types: pgTypes });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    throw new RetryableError('ERR_DB_UNAVAILABLE', `cannot connect to Postgres for the bulk sync: ${(err as Error).message}`, {
      cause: err,
    });
  }
  // (a setting of PostgreSQL 14 on, where the operating system can tell: none otherwise)
  await client.query(`SELECT set_config(name, $1, false) FROM pg_settings WHERE name = 'client_connection_check_interval'`, [
    CLIENT_CHECK_INTERVAL,
  ]);
  return client;
}

async function inTransaction<T>(client: pg.Client, deps: BulkLoadDeps, fn: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    if (deps.guardClient) await deps.guardClient(client);
    const r = await fn();
    await client.query('COMMIT');
    return r;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/** Whether transaction parts are on (TX_PARTS, with history buckets on): the fold moves transactions into parts. */
async function partsOn(client: pg.Client): Promise<boolean> {
  const on = await client.query<{ on: boolean }>(
    'SELECT t.fold AND h.busy > 0 AS on FROM txid_bucket_params t CROSS JOIN history_bucket_params h WHERE t.id = 1 AND h.id = 1',
  );
  return on.rows[0]?.on === true;
}

/**
 * Starts a bulk sync: moves the live blocks' chunk rows into `history` (its finish folds and
 * rewrites that table only: history-recent.ts), drops indexes, empties the mempool tables, marks
 * it active (one transaction).
 */
export async function beginBulk(client: pg.Client, deps: BulkLoadDeps, fromHeight: number): Promise<void> {
  await inTransaction(client, deps, async () => {
    await client.query(moveRecentSql());
    await client.query(DROP_INDEXES);
    // (the batches write parts with parts on: the spends GIN takes them into its pending list,
    // merged beside the load: parts-gin.ts; the key stays)
    if (await partsOn(client)) await keepPartsGin(client);
    await client.query('TRUNCATE mempool_txs, mempool_outputs, mempool_spends, mempool_addresses, bulk_spent');
    const state: BulkState = { active: true, from: fromHeight, height: fromHeight };
    await client.query(
      `INSERT INTO sync_state (key, value) VALUES ('bulk', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = now()`,
      [JSON.stringify(state)],
    );
  });
  deps.log.info({ from: fromHeight }, 'bulk sync started: secondary indexes dropped until it finishes');
}

/**
 * Loads `utxos` minus `bulk_spent` into a new outpoint cache (binary COPY out). Under a bound
 * too small for them all, the newest half of the bound is loaded and the rest is read back on
 * demand (`bound.evicting`).
 */
async function loadCache(client: pg.Client, deps: BulkLoadDeps, bound: Bound | null): Promise<OutpointCache> {
  const { log } = deps;
  const t0 = performance.now();
  const count = Number((await client.query<{ n: string }>('SELECT count(*)::text AS n FROM utxos')).rows[0]!.n);
  const cache = new OutpointCache(Math.min(Math.ceil((count * 4) / 3) + 1024, bound ? Math.ceil((bound.maxEntries * 4) / 3) : Infinity));
  if (count === 0) return cache;
  let limit = '';
  if (bound && count > bound.maxEntries) {
    await startEvicting(client, deps, bound);
    limit = ` ORDER BY u.tx_num DESC LIMIT ${Math.floor(bound.maxEntries / 2)}`;
  }
  const rows = new CopyRowReader(5, (d, at, len) => {
    const txid = new Uint8Array(d.subarray(at[0]!, at[0]! + len[0]!));
    const keys =
      at[3]! >= 0
        ? Buffer.from(d.subarray(at[3]!, at[3]! + len[3]!))
        : at[4]! >= 0
          ? scriptKeyBytes(d.subarray(at[4]!, at[4]! + len[4]!))
          : null;
    cache.insert(txid, d.readInt32BE(at[1]!), Number(d.readBigInt64BE(at[2]!)), keys);
  });
  await copyOutInto(
    client,
    `SELECT u.txid, u.vout, u.tx_num, u.addr_key, CASE WHEN u.addr_key IS NULL THEN u.script END
      FROM utxos u WHERE NOT EXISTS (SELECT 1 FROM bulk_spent s WHERE s.tx_num = u.tx_num AND s.vout = u.vout)${limit}`,
    rows,
  );
  log.info(
    { outputs: cache.size, ms: Math.round(performance.now() - t0), mb: Math.round(cache.bytes / 1e6), evicting: bound?.evicting ?? false },
    'bulk sync: unspent outputs loaded into memory',
  );
  return cache;
}

/** Builds the outpoint index on `utxos` and opens the reader: from now on misses are read back. */
async function startEvicting(client: pg.Client, deps: BulkLoadDeps, bound: Bound): Promise<void> {
  if (bound.evicting) return;
  const t0 = performance.now();
  await inTransaction(client, deps, () => client.query(OUTPOINT_INDEX));
  bound.reader = await connectBulk(deps.databaseUrl);
  // One index probe per outpoint, never a scan of the whole table (as preferIndexLookups, indexer/planner-hints.ts, does for the per-block statements).
  await bound.reader.query('SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_seqscan = off');
  bound.evicting = true;
  deps.log.warn(
    { maxEntries: bound.maxEntries, ms: Math.round(performance.now() - t0) },
    'bulk sync: the outpoint cache reached its bound (IMPORT_MEMORY_MB); older outputs are dropped from memory and read back from PostgreSQL when spent',
  );
}

/** Drops the cache's oldest entries down to half its bound (every entry is committed: no batch is in flight). */
async function evict(client: pg.Client, deps: BulkLoadDeps, bound: Bound, cache: OutpointCache, room: number): Promise<void> {
  await startEvicting(client, deps, bound);
  const t0 = performance.now();
  const keep = Math.floor(bound.maxEntries / 2);
  let n = cache.evictTo(keep);
  // A block larger than what is left: nothing kept (the block itself may still overflow the bound).
  if (cache.size + room > bound.maxEntries) n += cache.evictTo(0);
  bound.evictions++;
  bound.evicted += n;
  deps.log.info({ dropped: n, kept: cache.size, ms: Math.round(performance.now() - t0) }, 'bulk sync: outpoint cache trimmed');
}

/**
 * Before a block is derived under an evicting bound: the outputs its inputs spend that the cache
 * does not hold (evicted ones: committed in `utxos`) are read from PostgreSQL into the cache, and
 * so are the outputs of its coinbase's txid (a BIP30 duplicate coinbase replaces one). Inputs
 * spending the same block's outputs are left alone (those enter the cache as it is derived).
 * An outpoint found nowhere stays missing: deriving the block throws MissingPrevoutError.
 */
async function readMisses(bound: Bound, cache: OutpointCache, block: DecodedBlock): Promise<void> {
  const own = new Set<string>();
  for (const tx of block.txs) own.add(Buffer.from(tx.txid.buffer, tx.txid.byteOffset, 32).toString('latin1'));
  const txids: Buffer[] = [];
  const vouts: number[] = [];
  for (const [i, tx] of block.txs.entries()) {
    if (i === 0 && tx.isCoinbase) {
      for (let v = 0; v < tx.outputs.length; v++) {
        if (cache.find(tx.txid, v) >= 0) continue;
        txids.push(Buffer.from(tx.txid));
        vouts.push(v);
      }
      continue;
    }
    for (const input of tx.inputs) {
      if (cache.find(input.prevTxid, input.vout) >= 0) continue;
      if (own.has(Buffer.from(input.prevTxid.buffer, input.prevTxid.byteOffset, 32).toString('latin1'))) continue;
      txids.push(Buffer.from(input.prevTxid));
      vouts.push(input.vout);
    }
  }
  if (txids.length === 0) return;
  const r = await bound.reader!.query<{ txid: Buffer; vout: number; tx_num: string; addr_key: Buffer | null; script: Buffer | null }>(
    `SELECT u.txid, u.vout, u.tx_num::text AS tx_num, uuid_send(u.addr_key) AS addr_key, CASE WHEN u.addr_key IS NULL THEN u.script END AS script
       FROM unnest($1::bytea[], $2::int4[]) AS m(txid, vout) JOIN utxos u ON u.txid = m.txid AND u.vout = m.vout`,
    [txids, vouts],
  );
  for (const row of r.rows) {
    const keys = row.addr_key ? Buffer.from(row.addr_key) : row.script ? scriptKeyBytes(row.script) : null;
    cache.insert(row.txid, row.vout, Number(row.tx_num), keys);
  }
  bound.misses += r.rows.length;
}

/** Outputs and inputs of a block: the most entries deriving it can add to the cache (reads back included). */
function blockEntries(block: DecodedBlock): number {
  let n = 0;
  for (const tx of block.txs) n += tx.outputCount + tx.inputCount;
  return n;
}

/** Writes one batch in one transaction: the checkpoint. */
async function writeBatch(client: pg.Client, deps: BulkLoadDeps, b: BulkBatch): Promise<void> {
  const utxos = b.utxos();
  const history = b.history(CHUNK_ENTRIES);
  const timer = new PhaseTimer('bulk_batch', deps.phases);
  const lap = (phase: string) => timer.lap(phase);
  await inTransaction(client, deps, async () => {
    await copyIn(client, 'blocks (height, hash, prev_hash, header, time, tx_count, size, weight)', b.blocks.finish());
    await copyIn(
      client,
      b.parts ? 'tx_parts (part, txids, ends, outs, ins)' : 'txs (tx_num, txid, outs, ins, spent_group)',
      b.txs.finish(),
    );
    lap('txs');
    if (utxos.rows > 0) await copyIn(client, 'utxos (txid, vout, tx_num, addr_key, value, script)', utxos.finish());
    lap('utxos');
    if (b.spent.rows > 0) await copyIn(client, 'bulk_spent (tx_num, vout)', b.spent.finish());
    lap('spent');
    if (b.assetCandidates.length > 0)
      await client.query(
        `INSERT INTO bulk_asset_candidates (tx_num, first_prev, first_vout, first_script)
         SELECT * FROM unnest($1::int8[], $2::int8[], $3::int4[], $4::bytea[])`,
        [
          b.assetCandidates.map((c) => String(c.txNum)),
          b.assetCandidates.map((c) => String(c.prevTxNum)),
          b.assetCandidates.map((c) => c.prevVout),
          b.assetCandidates.map((c) => (c.script ? Buffer.from(c.script) : null)),
        ],
      );
    if (history.rows > 0) await copyIn(client, 'history (addr_key, first_tx_num, rest)', history.finish());
    lap('history');
    if (b.aliases.rows > 0) await copyIn(client, 'script_aliases (script_key, addr_key, keyed)', b.aliases.finish());
    await client.query('SELECT pg_advisory_xact_lock($1::int8)', [OUTBOX_LOCK.toString()]);
    await client.query(
      `INSERT INTO outbox (type, block_hash, height)
       SELECT 'block.connected', h, n FROM unnest($1::bytea[], $2::int4[]) WITH ORDINALITY AS u(h, n, ord) ORDER BY ord`,
      [b.blockHashes, b.heights],
    );
    await client.query('UPDATE chain_tip SET height = $1, hash = $2, updated_at = now() WHERE id = 1', [
      b.lastHeight,
      Buffer.from(b.lastHash!),
    ]);
    await client.query(
      `UPDATE sync_state SET value = jsonb_set(value, '{height}', to_jsonb($1::int4)), updated_at = now() WHERE key = 'bulk'`,
      [b.lastHeight],
    );
  });
  lap('commit');
  deps.log.debug(
    { height: b.lastHeight, txs: b.txCount, rows: { utxos: utxos.rows, spent: b.spent.rows, history: history.rows }, ms: timer.ms },
    'bulk batch written',
  );
}

/**
 * Loads blocks from `feed` (which must start at tip + 1) up to `target` in batches. The bulk
 * sync must be active (beginBulk). Stops at a block that does not extend the previous one.
 */
async function loadBlocks(
  client: pg.Client,
  deps: BulkLoadDeps,
  feed: BlockFeed,
  tip: Tip,
  target: number,
  cache: OutpointCache,
  bound: Bound | null,
  /** Transaction parts on: the batches write parts, not `txs` rows (the finish records their txids). */
  parts: boolean,
  merger: PartsGinMerger | null,
): Promise<BulkResult> {
  const { log } = deps;
  const t0 = performance.now();
  let prevHash: Uint8Array | null = tip.hash;
  let height = tip.height;
  let batchId = 0;
  let totalTxs = 0;
  let totalBlocks = 0;
  let reason: BulkResult['reason'] = 'target';
  let pending: Promise<void> | null = null;
  // The batch being written, and a written one whose buffers the next batch takes over.
  let writing: BulkBatch | null = null;
  let spare: BulkBatch | null = null;
  let lastLog = performance.now();
  let lastLogTxs = 0;
  let lastLogBlocks = 0;
  const progressMs = deps.progressMs ?? 10_000;
  // A block held over to the next batch: the cache had to be trimmed first.
  let carried: { block: DecodedBlock; height: number } | null = null;

  let done = false;
  while (!done) {
    const b: BulkBatch = new BulkBatch(++batchId, cache, parts, spare ?? undefined);
    spare = null;
    let trim = false;
    while (b.txCount < deps.batchTxs) {
      if (deps.signal?.aborted) {
        reason = 'stopped';
        done = true;
        break;
      }
      let block: DecodedBlock;
      let blockHeight: number;
      if (carried) {
        ({ block, height: blockHeight } = carried);
        carried = null;
      } else {
        if (height >= target) {
          done = true;
          break;
        }
        const fb = await feed.next();
        if (fb === null) {
          reason = 'end';
          done = true;
          break;
        }
        block = decodeBlock(fb.raw);
        if (
          fb.height !== height + 1 ||
          (prevHash !== null && !equalBytes(block.header.prevHash, prevHash)) ||
          hashToHex(block.hash) !== fb.hash
        ) {
          log.warn({ height: fb.height, hash: fb.hash }, 'bulk sync: the chain changed under it; handing over to the per-block path');
          reason = 'fork';
          done = true;
          break;
        }
        blockHeight = fb.height;
      }
      if (bound) {
        const room = blockEntries(block);
        if (cache.size + room > bound.maxEntries) {
          if (b.blockCount > 0) {
            // Trimming drops entries that must be in PostgreSQL: this batch is written first.
            carried = { block, height: blockHeight };
            trim = true;
            break;
          }
          if (pending) await pending;
          pending = null;
          await evict(client, deps, bound, cache, room);
          if (cache.size + room > bound.maxEntries && !bound.overWarned) {
            bound.overWarned = true;
            log.warn(
              { height: blockHeight, entries: room, maxEntries: bound.maxEntries },
              'bulk sync: a block needs more outpoint cache entries than IMPORT_MEMORY_MB allows; the cache grows past its bound for it',
            );
          }
        }
        if (bound.evicting) await readMisses(bound, cache, block);
      }
      b.addBlock(block, blockHeight);
      height = blockHeight;
      prevHash = block.hash;
      // Let the COPY of the previous batch move while this one is derived.
      await new Promise<void>((r) => setImmediate(r));
      const now = performance.now();
      if (now - lastLog >= progressMs) {
        const s = (now - lastLog) / 1000;
        const bps = (totalBlocks + b.blockCount - lastLogBlocks) / s;
        const tps = (totalTxs + b.txCount - lastLogTxs) / s;
        const memory = bound ? { cacheEvictions: bound.evictions, cacheReadBack: bound.misses } : {};
        log.info(
          {
            height,
            target,
            blocksPerSec: Math.round(bps * 10) / 10,
            txPerSec: Math.round(tps),
            etaSec: bps > 0 ? Math.round((target - height) / bps) : null,
            cacheOutputs: cache.size,
            cacheMb: Math.round(cache.bytes / 1e6),
            ...memory,
          },
          'bulk sync progress',
        );
        lastLog = now;
        lastLogBlocks = totalBlocks + b.blockCount;
        lastLogTxs = totalTxs + b.txCount;
      }
    }
    if (pending) await pending;
    pending = null;
    spare = writing;
    writing = null;
    if (b.blockCount > 0) {
      totalTxs += b.txCount;
      totalBlocks += b.blockCount;
      pending = writeBatch(client, deps, b).then(() => merger?.kick());
      writing = b;
      // Surface a failed write at once when nothing else is left to do; commit before a trim.
      if (done || trim) {
        await pending;
        pending = null;
        spare = writing;
        writing = null;
      }
    }
    if (trim) await evict(client, deps, bound!, cache, blockEntries(carried!.block));
  }
  if (pending) await pending;
  return { tip: height, blocks: totalBlocks, txs: totalTxs, ms: Math.round(performance.now() - t0), reason };
}

/**
 * The finish's independent parts, each one transaction on its own connection, run at the
 * same time (most of these statements run on one core in PostgreSQL; only B-tree builds use
 * parallel workers): the spends GIN (the longest build, on one core: src/db/spent-groups.ts),
 * started first (with transaction parts on, the parts' fold, and the parts' key and GIN on a
 * fourth connection: `PartsFinish`; that GIN is merged beside the load, parts-gin.ts); chain
 * state (utxos rebuilt without the spent rows, balances recomputed from them, `bulk_spent`
 * emptied, the utxos and balances indexes), then the txs
 * B-trees beside the GIN (index builds take a share lock, which does not block another build on
 * the same table; the primary key is attached once the GIN has committed: `createIndexSteps`);
 * history (each address's per-batch chunks re-cut into full chunks, its key, script aliases).
 * The txs (and parts') indexes are dropped beforehand in a transaction of their own (FINISH_DROP: a drop's
 * exclusive lock, held to its commit, would keep the other part's builds waiting); each part
 * writes utxos and history into new tables (the old ones go with their indexes) and drops the
 * balances indexes before building them, so the finish is idempotent: after a crash between the
 * commits the next finish simply runs it all again.
 */
const FINISH_DROP = dropIndexes(['txs']);
/**
 * The script each Open Assets candidate's first input spends, when an earlier batch made that
 * output: `utxos` still holds it (spent rows leave with the finish's next step), the only
 * place left with its script (`txs.outs` keeps tags). One scan of `utxos`, only with candidates.
 */
const FIRST_SCRIPTS = `UPDATE bulk_asset_candidates c SET first_script = u.script FROM utxos u
   WHERE c.first_script IS NULL AND u.tx_num = c.first_prev AND u.vout = c.first_vout`;
const spendsIndex = (name: string) => name === 'txs_spent_groups';
/**
 * A step of the finish: a statement, or `instead` when it did the step's work (then the statement
 * is skipped): it returns its own steps' milliseconds, null when it did nothing.
 */
type FinishStep = {
  name: string;
  /** The statement (none for a step that is all `instead`). */
  text?: string;
  instead?: (c: pg.Client, deps: BulkLoadDeps) => Promise<Record<string, number> | null>;
};

/**
 * An index with history buckets on and nothing folded (an initial sync): the loaded chunk rows are
 * folded into the buckets as they are read in key order, and only the busy addresses' rows are cut
 * into chunks, in place of the merge (history-build.ts `foldLoadedHistory`): the merge's sort is
 * the fold's, and `history` is written once, small.
 */
async function foldLoaded(c: pg.Client, deps: BulkLoadDeps): Promise<Record<string, number> | null> {
  let reader: pg.Client | null = null;
  try {
    const f = await foldLoadedHistory(c, async () => (reader = await connectBulk(deps.databaseUrl)));
    if (f) deps.log.info(f, 'bulk finish: history folded into buckets');
    return f?.ms ?? null;
  } finally {
    await (reader as pg.Client | null)?.end().catch(() => {});
  }
}

/**
 * With transaction parts on (`txid_bucket_params.fold`, history buckets on) the batches wrote
 * parts, not `txs` rows: their txids go into the buckets in one SQL pass, after the `txs` rows of
 * blocks applied before the bulk sync began are folded as the indexer folds them (tx-parts-fold.ts
 * `foldLoadedTxParts`; `txs` is left empty), in place of the `txs` index builds, which then index
 * an empty table. The parts' GIN took the batches' rows into its pending list (parts-gin.ts);
 * their key, kept while they load, is dropped here and built after, when the GIN's list is merged.
 */
async function foldLoadedParts(c: pg.Client, deps: BulkLoadDeps): Promise<Record<string, number> | null> {
  const t0 = performance.now();
  await c.query("SET LOCAL work_mem = '512MB'");
  const tip = await c.query<{ height: number }>('SELECT height FROM chain_tip WHERE id = 1');
  const bulk = await c.query<{ from: number }>("SELECT (value->>'from')::int4 AS from FROM sync_state WHERE key = 'bulk'");
  // (the records get half the budget: the finish's other parts run beside)
  const memory = deps.memoryBytes === undefined ? {} : { memoryBytes: deps.memoryBytes / 2 };
  const f = await foldLoadedTxParts(onClient(c), c, (bulk.rows[0]?.from ?? -1) + 1, tip.rows[0]!.height + 1, memory);
  return { [`${f.txs} transactions, ${f.parts} parts`]: Math.round(performance.now() - t0) };
}

/**
 * How the finish treats the parts: 'off' (the batches wrote `txs` rows), 'after' (their indexes
 * are built once the fold has committed: it may write parts, from `txs` rows of blocks applied
 * before the bulk sync began) or 'beside' (the fold only reads them: their indexes are finished
 * on a connection of their own from the start, the spends GIN first, so that a build of it, the
 * longest and on one core when the begin did not keep it, is not left alone at the end).
 */
type PartsFinish = 'off' | 'after' | 'beside';

/**
 * The parts' spends GIN, then their primary key (attached last: it waits for the fold's reads to
 * commit). A GIN kept through the load (`kept`: parts-gin.ts) has only its pending list left to
 * merge, and its storage parameters restored once the key is attached.
 */
const partsSpends = (name: string) => name === 'tx_parts_spent_groups';
const partsIndexSteps = (kept: boolean): FinishStep[] => [
  ...(kept ? [{ name: 'tx_parts_spent_groups: pending list', text: PARTS_GIN_MERGE }] : indexSteps(['tx_parts'], partsSpends)),
  ...indexSteps(['tx_parts'], (n) => !partsSpends(n)),
  ...(kept ? [{ name: 'tx_parts_spent_groups: parameters', text: PARTS_GIN_LOADED }] : []),
];

/** The finish's parts, each a transaction of its own on its own connection, run at once. */
const finishParts = (parts: PartsFinish, ginKept: boolean): readonly (readonly FinishStep[])[] => [
  parts === 'off'
    ? indexSteps(['txs'], spendsIndex)
    : [
        { name: 'transaction parts', instead: foldLoadedParts },
        ...indexSteps(['txs']),
        ...(parts === 'after' ? partsIndexSteps(ginKept) : []),
      ],
  ...(parts === 'beside' ? [partsIndexSteps(ginKept)] : []),
  [
    {
      name: 'utxos',
      text: `CREATE TABLE utxos_live (LIKE utxos INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
       INSERT INTO utxos_live
         SELECT u.* FROM utxos u
         WHERE NOT EXISTS (SELECT 1 FROM bulk_spent s WHERE s.tx_num = u.tx_num AND s.vout = u.vout)
         ORDER BY u.addr_key, u.tx_num;
       DROP TABLE utxos;
       ALTER TABLE utxos_live RENAME TO utxos;
       NOTIFY ${CHAIN_CHANNEL};`, // (the new table has no trigger: src/db/chain-changes.ts)
    },
    {
      name: 'balances',
      text: `${dropIndexes(['balances'])};
       TRUNCATE balances, ${RECENT_BALANCES};
       INSERT INTO balances (addr_key, balance, utxo_count)
         SELECT addr_key, sum(value)::int8, count(*)::int4 FROM utxos WHERE addr_key IS NOT NULL GROUP BY addr_key;
       TRUNCATE bulk_spent;`,
    },
    ...indexSteps(['utxos', 'balances']),
    ...(parts === 'off' ? indexSteps(['txs'], (name) => !spendsIndex(name)) : []),
  ],
  [
    // Each address's per-batch chunks concatenated in order and cut into full chunks of
    // CHUNK_ENTRIES (the newest one partial): ~12 % fewer history rows on a mainnet-shaped corpus
    // (~5 % of the database). One sort and one pass: the chunk's first entry is decoded from the
    // concatenation for every chunk but an address's first. Written by CREATE TABLE AS, whose bulk
    // insert costs ~20 % less CPU than INSERT … SELECT into a new table (no per-row executor
    // insert); the columns' NOT NULL are set after it (one scan). Unlike the INSERT, it could run
    // a parallel plan, whose workers would pass every row through a queue while the other parts
    // take the cores: it stays serial, as the INSERT was.
    {
      name: 'history',
      instead: foldLoaded,
      text: `SET LOCAL max_parallel_workers_per_gather = 0;
       CREATE TABLE history_merged (addr_key, first_tx_num, rest) AS
         SELECT addr_key,
                CASE WHEN i = 0 THEN f ELSE ${SQL_HISTORY.entryAt('e', `i * ${CHUNK_ENTRIES}`)} END,
                ${SQL_HISTORY.slice('e', `i * ${CHUNK_ENTRIES} + 1`, `${CHUNK_ENTRIES - 1}`)}
         FROM (SELECT addr_key, f, e, generate_series(0, (${SQL_HISTORY.count('e')} - 1) / ${CHUNK_ENTRIES}) AS i
               FROM (SELECT addr_key, min(first_tx_num) AS f, string_agg(${SQL_HISTORY.entries()}, ''::bytea ORDER BY first_tx_num) AS e
                     FROM history GROUP BY addr_key) a) c;
       ALTER TABLE history_merged ALTER COLUMN addr_key SET NOT NULL, ALTER COLUMN first_tx_num SET NOT NULL,
         ALTER COLUMN rest SET NOT NULL;
       DROP TABLE history;
       ALTER TABLE history_merged RENAME TO history;
       NOTIFY ${CHAIN_CHANNEL};`, // (the new table has no trigger: src/db/chain-changes.ts)
    },
    ...indexSteps(['history']),
    {
      // Repeats are the same row (an alias depends on the script alone): one of each is kept.
      name: 'script aliases',
      text: `${dropIndexes(['script_aliases'])};
       DELETE FROM script_aliases a USING script_aliases b WHERE a.script_key = b.script_key AND a.ctid > b.ctid;`,
    },
    ...indexSteps(['script_aliases']),
  ],
];

/** Kysely over the bulk's own connection (opened with the pool's type parsing): its transactions run on that client. */
function onClient(client: pg.Client): Kysely<Database> {
  const pool = { connect: async () => Object.assign(client, { release: () => {} }), end: async () => {} };
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: pool as unknown as pg.Pool }) });
}

/**
 * Ends a bulk sync: FINISH_DROP, then the parts of `finishParts` at once, each in its own transaction, then the
 * Open Assets colors of the transactions listed in bulk_asset_candidates, then the bulk mark
 * cleared. A crash before the mark leaves the sync active and the next run
 * finishes again.
 */
export async function finishBulk(client: pg.Client, deps: BulkLoadDeps): Promise<void> {
  const t0 = performance.now();
  const ms: Record<string, number> = {};
  const others: pg.Client[] = [];
  try {
    // Transaction parts on: the loaded rows go into parts rather than being indexed. Also when
    // TX_PARTS went off since the batches wrote parts (a restart between): their txids must be
    // recorded all the same (the `txs` rows written after the switch stay rows). Their indexes are
    // dropped here, before the parts begin (a drop's exclusive lock is held to its commit).
    const parts: PartsFinish =
      (await partsOn(client)) || (await unrecordedTxs(onClient(client))) > 0
        ? (await client.query('SELECT 1 FROM txs LIMIT 1')).rows.length > 0
          ? 'after'
          : 'beside'
        : 'off';
    const ginKept = parts !== 'off' && (await partsGinExists(client));
    const drop = new PhaseTimer('bulk_finish', deps.phases);
    await inTransaction(client, deps, async () => {
      await client.query(FINISH_DROP);
      if (ginKept) await client.query(dropIndexSql(chainIndex('tx_parts_pkey')));
      else if (parts !== 'off') await client.query(dropIndexes(['tx_parts']));
      await client.query(FIRST_SCRIPTS);
    });
    drop.lap('drop txs indexes');
    Object.assign(ms, drop.ms);
    const steps = finishParts(parts, ginKept);
    for (let i = 1; i < steps.length; i++) others.push(await connectBulk(deps.databaseUrl));
    // (in the order they failed, each with the step it was in: the first is the cause, a later one
    // may only follow from it)
    const failed: { step: string; err: unknown }[] = [];
    const run = async (c: pg.Client, steps: readonly FinishStep[]) => {
      const timer = new PhaseTimer('bulk_finish', deps.phases);
      let step = 'begin';
      await inTransaction(c, deps, async () => {
        await indexMemory(c, true);
        for (const s of steps) {
          step = s.name;
          const done = (await s.instead?.(c, deps)) ?? null;
          if (!done && s.text) await c.query(s.text);
          timer.lap(s.name);
          for (const [k, took] of Object.entries(done ?? {})) ms[`${s.name}: ${k}`] = took;
        }
        step = 'commit';
      }).catch((err: unknown) => {
        failed.push({ step, err });
        throw err;
      });
      Object.assign(ms, timer.ms);
    };
    await Promise.allSettled(steps.map((steps, i) => run(i === 0 ? client : others[i - 1]!, steps)));
    for (const f of failed.slice(1)) deps.log.warn({ err: f.err, step: f.step }, 'bulk finish: another part failed too');
    if (failed.length > 0) {
      deps.log.error({ err: failed[0]!.err, step: failed[0]!.step }, 'bulk finish: a part failed');
      throw failed[0]!.err;
    }
  } finally {
    await Promise.all(others.map((c) => c.end().catch(() => {})));
  }
  // History buckets (an index with `busy` > 0): the batches wrote every address's entries as
  // chunk rows; those of the blocks not folded yet (the loaded ones, and any the per-block path
  // left) move into their buckets, up to the tip. A second finish after a crash folds nothing
  // more: `folded` is at the tip.
  const fold = new PhaseTimer('bulk_finish', deps.phases);
  await onClient(client)
    .transaction()
    .execute(async (trx) => {
      if (deps.guardClient) await deps.guardClient(client);
      // (onto empty buckets, the bulk path loaded most of the chain: the base fits its records)
      const f = await foldHistory(trx, (await lockTip(trx)).height + 1, { chooseBase: true });
      if (f.busy === 0 || f.keys === 0) return;
      deps.log.info(f, 'bulk finish: history folded into buckets');
      for (const [step, took] of Object.entries(f.ms)) ms[`history buckets: ${step}`] = took;
    });
  fold.lap('history buckets');
  ms['history buckets'] = fold.ms['history buckets']!;
  // Open Assets: the transactions the batches listed, colored in chain order now that txs has its key.
  const assets = new PhaseTimer('bulk_finish', deps.phases);
  await onClient(client)
    .transaction()
    .execute(async (trx) => {
      if (deps.guardClient) await deps.guardClient(client);
      const candidates = await trx.selectFrom('bulk_asset_candidates').select(['tx_num', 'first_script']).execute();
      if (candidates.length === 0) return;
      await colorConfirmed(
        trx,
        candidates.map((c) => c.tx_num),
        new Map(candidates.flatMap((c) => (c.first_script ? [[c.tx_num, c.first_script] as const] : []))),
      );
      await trx.deleteFrom('bulk_asset_candidates').execute();
    });
  assets.lap('assets');
  ms.assets = assets.ms.assets!;
  await inTransaction(client, deps, async () => {
    await client.query(`UPDATE sync_state SET value = jsonb_set(value, '{active}', 'false'::jsonb), updated_at = now() WHERE key = 'bulk'`);
    // The bulk path rebuilt balances and emptied the mempool tables: wallets' summaries follow.
    await client.query(RECOMPUTE_WALLET_BALANCES);
  });
  await client.query('ANALYZE blocks, txs, utxos, balances, history, history_buckets').catch(() => {});
  deps.log.info({ ms: Math.round(performance.now() - t0), steps: ms }, 'bulk sync finished: indexes built');
}

/** Runs a whole bulk sync from the stored tip with `feed` up to `target`, resuming one in progress. */
export async function runBulk(
  db: Kysely<Database>,
  deps: BulkLoadDeps,
  makeFeed: (from: number) => BlockFeed,
  target: number,
): Promise<BulkResult> {
  const client = await connectBulk(deps.databaseUrl);
  try {
    let state = await readBulkState(db);
    const tip = await readTip(db);
    if (!state?.active) {
      if (target <= tip.height) return { tip: tip.height, blocks: 0, txs: 0, ms: 0, reason: 'target' };
      await beginBulk(client, deps, tip.height);
      state = await readBulkState(db);
    } else {
      deps.log.info({ tip: tip.height, from: state.from }, 'resuming the bulk sync from its last checkpoint');
    }
    const bound: Bound | null =
      deps.memoryBytes === undefined
        ? null
        : {
            maxEntries: cacheBound(deps.memoryBytes, deps.batchTxs).maxEntries,
            evicting: false,
            reader: null,
            evictions: 0,
            evicted: 0,
            misses: 0,
            overWarned: false,
          };
    let result: BulkResult;
    try {
      const cache = await loadCache(client, deps, bound);
      const feed = makeFeed(tip.height + 1);
      const parts = await partsOn(client);
      // (with parts on, the GIN's pending list merged after each batch: parts-gin.ts)
      const merger =
        parts && (await partsGinExists(client))
          ? new PartsGinMerger(async () => {
              const c = await connectBulk(deps.databaseUrl);
              await indexMemory(c, false);
              return c;
            }, deps.log)
          : null;
      try {
        result = await loadBlocks(client, deps, feed, tip, target, cache, bound, parts, merger);
      } finally {
        feed.close();
        await merger?.close();
        if (merger)
          deps.log.info({ merges: merger.merges, ms: Math.round(merger.ms) }, 'bulk load: spends index pending list merged beside it');
      }
    } finally {
      await bound?.reader?.end().catch(() => {});
    }
    const memory = bound
      ? { cacheMaxEntries: bound.maxEntries, cacheEvictions: bound.evictions, cacheDropped: bound.evicted, cacheReadBack: bound.misses }
      : {};
    deps.log.info({ ...result, txPerSec: result.ms > 0 ? Math.round((result.txs * 1000) / result.ms) : null, ...memory }, 'bulk load done');
    if (result.reason !== 'stopped') await finishBulk(client, deps);
    return result;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Whether `db` has an unfinished bulk sync. */
export async function bulkActive(db: Kysely<Database>): Promise<boolean> {
  return (await readBulkState(db))?.active === true;
}
