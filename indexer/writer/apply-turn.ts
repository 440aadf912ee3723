/**
 * The writer's multi-block mode: consecutive blocks of a catch-up turn written with one set of
 * statements, each chain table written once for all of them, where applying them one by one
 * (apply.ts) takes some fifteen statements per block. The rows are exactly those the blocks
 * applied one by one leave:
 * - every block is derived on its own (derive.ts) at its height; an output an earlier block of
 *   the turn created resolves from memory, goes to the spender's `block_undo` row as it would,
 *   and is left out of `utxos` (applied one by one, it is inserted, then deleted);
 * - each block keeps its own `blocks` and `txs` rows, history chunks (cut per block),
 *   `block_undo` row and block.connected event, in height order; `balances` and the wallets'
 *   summaries take the sum of the blocks' deltas (the same final rows: deltas add);
 * - the windows (`block_undo`, `watched_txs`) are cut once, at the last block.
 * A turn is taken only where a block's write depends on nothing but the chain tables
 * (`chainOnly`): no watched address (tx.confirmed and tx.confirmations are per block, through
 * `watched_txs`), no wallet chain (gap limits move with each block's addresses), empty mempool
 * tables (removals are per block); and only over blocks that each extend the one before and
 * repeat no coinbase txid (BIP30's overwrite goes block by block; `turnLength`). Otherwise
 * apply.ts applies each block on its own.
 * @module
 */
import { sql } from 'kysely';
import type { DecodedBlock } from '../../src/bitcoin/block.js';
import { equalBytes } from '../../src/bitcoin/hash.js';
import { historyChunks } from '../../src/db/history-entries.js';
import { FatalError } from '../../src/errors.js';
import { UNDO_BLOCKS_MIN } from '../../src/config.js';
import { extendWalletsFor } from '../../src/db/wallet-chains.js';
import type { Logger } from '../../src/log.js';
import { PhaseTimer, type PhaseListener } from '../../src/ops/phases.js';
import {
  addDelta,
  deriveBlock,
  externalOutpoints,
  hashKey,
  outputKeys,
  MissingPrevoutError,
  type BlockRows,
  type Delta,
  type DeriveOptions,
  type Prevout,
  type PrevoutLookup,
} from './derive.js';
import { appendEvents, type OutboxEvent } from '../events.js';
import {
  type Trx,
  type Tip,
  addBalances,
  dropOverwrittenCoinbase,
  insertBlocks,
  insertHistoryChunks,
  insertTxs,
  insertUtxos,
  keepUndo,
  setTip,
  spendUtxos,
} from './chain-rows.js';
import { pruneWatchedTxs } from './block-events.js';
import { insertScriptAliases, type ScriptAlias } from './script-aliases.js';
import { assetCandidates, colorConfirmed } from './asset-rows.js';
import type { TxidCache } from './txid-cache.js';

/** What both modes of the writer take from the run loop besides the lock guard. */
export interface TurnContext {
  /** Debug lines with the time of each phase. */
  log?: Logger;
  /** Receives each phase's time (the process's metrics: blockwire_indexer_phase_seconds). */
  phases?: PhaseListener;
  /** How many of the newest blocks keep their `block_undo` row (INDEXER_UNDO_BLOCKS; default its minimum). */
  undoBlocks?: number;
  /** The recent transactions' tx_nums (txid-cache.ts): the spend deletes their outputs by key. */
  txids?: TxidCache;
}

/** A block the turn applied: its height, transactions and events. */
export interface TurnApplied {
  height: number;
  txs: number;
  events: number;
}

/** Whether a block's write depends on the chain tables alone: no address is watched and no wallet has a chain. */
export async function chainOnly(trx: Trx): Promise<boolean> {
  const r = await sql<{ only: boolean }>`
    SELECT NOT EXISTS (SELECT 1 FROM watched_addresses) AND NOT EXISTS (SELECT 1 FROM wallet_chains) AS only`.execute(trx);
  return r.rows[0]?.only === true;
}

/** Whether `block` at `height` extends `tip` (genesis: an empty index). */
export function extendsTip(tip: Tip, block: DecodedBlock, height: number): boolean {
  return height === 0 ? tip.height === -1 : tip.height === height - 1 && tip.hash !== null && equalBytes(tip.hash, block.header.prevHash);
}

/** How many of `blocks`, from the first, one turn writes on `tip`: each extends the one before, no coinbase txid twice. */
export function turnLength(tip: Tip, blocks: readonly { block: DecodedBlock; height: number }[]): number {
  const coinbases = new Set<string>();
  let prev = tip;
  for (let i = 0; i < blocks.length; i++) {
    const { block, height } = blocks[i]!;
    if (!extendsTip(prev, block, height)) return i;
    const coinbase = block.txs[0];
    if (coinbase) {
      if (coinbases.has(hashKey(coinbase.txid))) return i;
      coinbases.add(hashKey(coinbase.txid));
    }
    prev = { height, hash: Buffer.from(block.hash) };
  }
  return blocks.length;
}

/**
 * The rows of `block` at `height`.
 * @throws FatalError ERR_PREVOUT_MISSING when neither the index nor `lookup` knows an output it spends.
 */
function deriveOrFail(block: DecodedBlock, height: number, lookup: PrevoutLookup, opts: DeriveOptions): BlockRows {
  return deriving(height, () => deriveBlock(block, height, lookup, opts));
}

/** Runs a derivation of the block at `height`, a missing prevout made ERR_PREVOUT_MISSING. */
export function deriving<T>(height: number, derive: () => T): T {
  try {
    return derive();
  } catch (err) {
    if (err instanceof MissingPrevoutError)
      throw new FatalError('ERR_PREVOUT_MISSING', `cannot apply block ${height}: ${err.message}`, { cause: err });
    throw err;
  }
}

const outpointKey = (txid: Uint8Array, vout: number) => `${hashKey(txid)}:${vout}`;

/**
 * Writes `blocks` (consecutive, the first extending the locked tip: `turnLength`) in the
 * caller's transaction, each as applying it alone would, and moves the tip to the last.
 */
export async function writeTurn(
  trx: Trx,
  blocks: readonly { block: DecodedBlock; height: number }[],
  ctx: TurnContext,
): Promise<TurnApplied[]> {
  const timer = new PhaseTimer('apply', ctx.phases, blocks.length);
  const lap = (phase: string) => timer.lap(phase);
  // Only the outputs of earlier turns are in `utxos`; the turn's own resolve from memory below.
  const earlier = new Set<string>();
  const external: { txid: Uint8Array; vout: number }[] = [];
  for (const { block } of blocks) {
    for (const o of externalOutpoints(block)) if (!earlier.has(hashKey(o.txid))) external.push(o);
    for (const tx of block.txs) earlier.add(hashKey(tx.txid));
  }
  const spending = spendUtxos(trx, external, ctx.txids);
  // While Postgres deletes the spent outputs, hash every output's address key.
  const keys = blocks.map(({ block }) => outputKeys(block));
  const stored = await spending;
  lap('spend');
  const made = new Map<string, Prevout>();
  const spentInTurn = new Set<string>();
  const lookup: PrevoutLookup = (txid, vout) => {
    const k = outpointKey(txid, vout);
    const p = made.get(k);
    if (p === undefined) return stored.get(txid, vout);
    spentInTurn.add(k);
    return p;
  };
  const rows = blocks.map(({ block, height }, i) => {
    const r = deriveOrFail(block, height, lookup, { outputKeys: keys[i]! });
    for (const u of r.created) made.set(outpointKey(u.txid, u.vout), { txNum: u.txNum, value: u.value, script: u.script, keys: u.keys });
    return r;
  });
  const balances = new Map<string, Delta>();
  for (const r of rows) for (const [k, d] of r.balances) addDelta(balances, k, d.sats, d.count);
  lap('derive');
  await dropOverwrittenCoinbase(trx, rows, balances);

  await insertBlocks(trx, rows);
  // Empty mempool tables (`chainOnly`): no first sighting to look up.
  await insertTxs(
    trx,
    rows.flatMap((r) => r.txs),
    false,
  );
  await keepUndo(trx, rows, ctx.undoBlocks ?? UNDO_BLOCKS_MIN);
  lap('txs');
  await colorConfirmed(trx, ...assetCandidates(rows.map((r) => ({ rows: r, height: r.height }))));
  lap('assets');
  await insertUtxos(
    trx,
    rows.flatMap((r) => r.created).filter((u) => !spentInTurn.has(outpointKey(u.txid, u.vout))),
  );
  lap('utxos');
  await addBalances(trx, balances, 1);
  lap('balances');
  await insertHistoryChunks(
    trx,
    rows.flatMap((r) => historyChunks(r.history)),
  );
  lap('history');
  const aliases = new Map<string, ScriptAlias>();
  for (const r of rows) for (const a of r.aliases) aliases.set(a.scriptKey.toString('hex'), a);
  await insertScriptAliases(trx, [...aliases.values()]);
  // No wallet had a chain when the turn began (`chainOnly`): this takes the wallet lock and
  // extends one created since, as the last block's apply would.
  await extendWalletsFor(trx, [...new Set(rows.flatMap((r) => [...r.history.keys()]))]);
  lap('wallets');
  // Nothing watched, nothing in the mempool tables: no per-address event, no removal.
  lap('watches');
  lap('confirmations');
  lap('mempool');
  const last = rows[rows.length - 1]!;
  await pruneWatchedTxs(trx, last.height);
  const events: OutboxEvent[] = rows.map((r) => ({ type: 'block.connected', blockHash: r.hash, height: r.height }));
  await appendEvents(trx, events);
  await setTip(trx, last.height, last.hash);
  lap('events');
  const txs = rows.reduce((s, r) => s + r.txCount, 0);
  if (ctx.log) ctx.log.debug({ height: last.height, blocks: rows.length, txs, ms: timer.ms }, 'apply phases');
  return rows.map((r) => ({ height: r.height, txs: r.txCount, events: 1 }));
}
