/**
 * The writer's per-block mode (its other mode, bulk loading, is bulk.ts; both derive rows
 * through derive-tx.ts): two write transactions. `applyBlock` writes one block's rows, its outbox
 * events and the new tip in ONE Postgres transaction, after checking that the block extends the
 * stored tip; `undoBlock` is its exact inverse, computed from the block (asked of the node) and
 * the outputs it spent (its `block_undo` row, else the node's), also one transaction. A crash at any point leaves a block boundary. What they write is
 * in three modules: the chain tables' rows (chain-rows.ts), the events (block-events.ts) and the
 * reorg bookkeeping (reorg-bookkeeping.ts); docs/schema.md gives each table's apply and undo rule.
 * Consecutive blocks of a catch-up turn whose rows depend on the chain tables alone are written
 * together, each table once (apply-turn.ts), with the rows applying each alone writes.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { DecodedBlock } from '../../src/bitcoin/block.js';
import { equalBytes, hashToHex } from '../../src/bitcoin/hash.js';
import type { Database } from '../../src/db/schema.js';
import { decodeIns } from '../../src/db/packed.js';
import { txNumOf } from '../../src/db/tx-num.js';
import { txRowsAtNums } from '../../src/db/tx-reads.js';
import { FatalError, RetryableError } from '../../src/errors.js';
import { UNDO_BLOCKS_MIN } from '../../src/config.js';
import { extendWalletsFor } from '../../src/db/wallet-chains.js';
import { PhaseTimer } from '../../src/ops/phases.js';
import {
  BlockDerivation,
  addDelta,
  deriveUndo,
  SpendWalk,
  blockCreated,
  outputKeysOf,
  type BlockRows,
  type Prevout,
  type StoredTx,
  type UndoBlock,
  type UndoRows,
  type UndoSpent,
} from './derive.js';
import { checkBlock, checkMerkle } from '../block-check.js';
import { anyWatched, appendEvents, loadWatches, type OutboxEvent } from '../events.js';
import {
  type Trx,
  type Tip,
  lockTip,
  setTip,
  addBalances,
  insertUtxos,
  insertUtxosCopy,
  appendUtxos,
  insertHistory,
  insertBlocks,
  insertTxs,
  keepUndo,
  deleteOverwrittenCoinbase,
  spendUtxos,
  type OverwrittenOutput,
} from './chain-rows.js';
import { preferIndexLookups } from '../planner-hints.js';
import { removeFromMempool, confirmationEvents, mempoolHoldsAny } from './block-events.js';
import { rememberReorged, forgetReorged } from './reorg-bookkeeping.js';
import { insertScriptAliases } from './script-aliases.js';
import { assetCandidates, colorConfirmed, deleteAssetColors } from './asset-rows.js';
import type { TxidCache } from './txid-cache.js';
import { BinaryCopy } from './copy-binary.js';
import { OutpointMap } from './txid-maps.js';
import { NotRebuildableError, rebuildBlock } from './stored-block.js';
import { chainOnly, deriving, extendsTip, turnLength, writeTurn, type TurnContext } from './apply-turn.js';
import { readHistoryLayout, undoHistory } from './history-rows.js';
import { unfoldTxParts } from './tx-parts-fold.js';
import type { ScriptKeys } from './address-keys.js';
import type { SpentOutput } from '../node-rest.js';

/** Hooks the run loop gives the writers. */
export interface WriteContext extends TurnContext {
  /** Runs first in every write transaction: proves this process still holds the writer lock. */
  guard?: (trx: Trx) => Promise<void>;
}

export type ApplyResult =
  | { kind: 'applied'; height: number; txs: number; events: number }
  /** The tip already is this block (a duplicate apply): nothing written. */
  | { kind: 'already'; height: number }
  /** The block does not extend the stored tip: nothing written; re-plan from `tip`. */
  | { kind: 'stale'; tip: Tip };

export type UndoResult = { kind: 'undone'; height: number; txs: number; events: number } | { kind: 'stale'; tip: Tip };

/**
 * Applies `block` at `height` in one transaction: rows, mempool removals, outbox events, tip.
 * Returns 'already' if the tip is this block and 'stale' if the block does not extend the tip.
 * @throws FatalError ERR_PREVOUT_MISSING when the index lacks an output the block spends.
 */
export async function applyBlock(db: Kysely<Database>, block: DecodedBlock, height: number, ctx: WriteContext = {}): Promise<ApplyResult> {
  return (await applyBlocks(db, [{ block, height }], ctx))[0]!;
}

/**
 * A block to apply. `unchecked`: its Merkle root is not checked yet (the run loop's blocks,
 * block-check.ts `decodeAsked`); it is checked in the transaction, before the commit (a mismatch
 * rolls the whole transaction back with ERR_BLOCK_MERKLE, retryable).
 */
export interface BlockToApply {
  block: DecodedBlock;
  height: number;
  unchecked?: boolean;
  /**
   * The outputs each transaction spent, as the node gave them (`/rest/spenttxouts`: the
   * coinbase's list empty): the spend then takes their scripts from here instead of returning
   * them (`spendUtxos`). Ignored when its shape is not the block's; used by a block written
   * alone (not by a turn of several, apply-turn.ts).
   */
  spent?: readonly (readonly SpentOutput[])[];
  /**
   * Its history chunk rows go into `history_recent` (a live block: history-recent.ts), moved into
   * `history` when the run loop is idle. Used by a block written alone, as `spent` is.
   */
  recent?: boolean;
}

/**
 * Applies consecutive blocks in one transaction, each exactly as `applyBlock` would (its rows,
 * mempool removals, events and tip, in order), stopping at the first that is not applied
 * ('already' or 'stale': the blocks before it stay applied), and once `budgetMs` has passed
 * since the first (the blocks not tried yet are left out of the results: the caller offers
 * them again). One transaction for several blocks while catching up saves each block its own
 * commit (a WAL flush) and round trips; a crash still leaves a block boundary (all of them or
 * none), and the budget keeps a commit, so progress and the caught-up blocks' events, coming
 * often. Where nothing but the chain tables decides the blocks' rows, the blocks that extend
 * one another are written together, each table once (apply-turn.ts: the same rows; the budget
 * then applies to the blocks after them). Returns one result per block tried.
 */
export async function applyBlocks(
  db: Kysely<Database>,
  blocks: readonly BlockToApply[],
  ctx: WriteContext = {},
  budgetMs = Infinity,
): Promise<ApplyResult[]> {
  const results = await db.transaction().execute(async (trx) => {
    if (ctx.guard) await ctx.guard(trx);
    // Once per transaction, not per block: the planner settings are transaction-local, and only
    // this indexer's mempool sync, never while blocks are applied, adds mempool rows: tables
    // empty at the first block stay empty for the others (catching up, their lookups are skipped).
    await preferIndexLookups(trx);
    const mempool = await mempoolHoldsAny(trx);
    const tip = await lockTip(trx);
    const start = performance.now();
    const results: ApplyResult[] = [];
    if (blocks.length > 1 && !mempool && (await chainOnly(trx))) {
      const n = turnLength(tip, blocks);
      if (n > 1) {
        for (const b of blocks.slice(0, n)) if (b.unchecked) checkMerkle(b.block);
        for (const a of await writeTurn(trx, blocks.slice(0, n), ctx)) results.push({ kind: 'applied', ...a });
      }
    }
    for (let i = results.length; i < blocks.length; i++) {
      const prev = results[results.length - 1];
      if (prev && (prev.kind !== 'applied' || performance.now() - start >= budgetMs)) break;
      const { block, height, unchecked, spent, recent } = blocks[i]!;
      // (the first block meets the tip locked above; a later one, the tip its predecessor set)
      const lockedTip = i === 0 ? tip : await lockTip(trx);
      results.push(await applyInTransaction(trx, block, height, ctx, mempool, unchecked ?? false, lockedTip, spent, recent ?? false));
    }
    return results;
  });
  // Committed: the next blocks' spends find these transactions' outputs by key.
  results.forEach((r, i) => {
    if (r.kind === 'applied')
      ctx.txids?.addBlock(
        r.height,
        blocks[i]!.block.txs.map((tx) => tx.txid),
      );
  });
  return results;
}

async function applyInTransaction(
  trx: Trx,
  block: DecodedBlock,
  height: number,
  ctx: WriteContext,
  mempool: boolean,
  unchecked: boolean,
  tip: Tip,
  spent: BlockToApply['spent'],
  recent: boolean,
): Promise<ApplyResult> {
  if (tip.height === height && tip.hash !== null && equalBytes(tip.hash, block.hash)) return { kind: 'already', height };
  if (!extendsTip(tip, block, height)) return { kind: 'stale', tip };

  const timer = new PhaseTimer('apply', ctx.phases);
  const lap = (phase: string) => timer.lap(phase);
  // Per-address amounts are only needed for events: skip them when nothing is watched.
  const touches = await anyWatched(trx);
  let derived: Awaited<ReturnType<typeof spendAndDerive>>;
  try {
    derived = await spendAndDerive(
      trx,
      block,
      height,
      { touches, mempool, txids: ctx.txids, spent: spent && fitsBlock(spent, block) ? spent : undefined },
      lap,
    );
  } catch (err) {
    // A block damaged on its way from the node can fail its derivation (an input naming no
    // output: ERR_PREVOUT_MISSING, fatal) before its Merkle root is checked: the mismatch,
    // retryable, is then the error.
    if (unchecked) checkMerkle(block);
    throw err;
  }
  const { rows, written, overwritten } = derived;
  lap('derive');

  // Everything below goes out back to back, each statement encoded while the ones before run
  // (their tables differ, or, for utxos, the rows do: their order changes no row). The
  // overwritten coinbase outputs (sent with the spends, done by now) change the balances first.
  // Whatever fails here, every statement sent finishes before the error reaches the rollback:
  // one sent after it would commit on its own.
  const sent: Promise<unknown>[] = [written, overwritten];
  try {
    const writes: Promise<unknown>[] = [insertBlocks(trx, [rows]), keepUndo(trx, [rows], ctx.undoBlocks ?? UNDO_BLOCKS_MIN)];
    const history = insertHistory(trx, rows.history, recent);
    sent.push(...writes, history);
    for (const w of sent) w.catch(() => {});
    for (const old of await overwritten) if (old.addr_key !== null) addDelta(rows.balances, old.addr_key, -old.value, -1);
    const balances = addBalances(trx, rows.balances, 1, recent);
    const aliases = insertScriptAliases(trx, rows.aliases);
    sent.push(balances, aliases);
    for (const w of [balances, aliases]) w.catch(() => {});
    // Every statement of the rows is sent: the Merkle root is checked while PostgreSQL runs them.
    if (unchecked) checkMerkle(block);
    await written;
    await Promise.all(writes);
    lap('txs');
    lap('utxos');
    await history;
    lap('history');
    await balances;
    lap('balances');
    await aliases;
  } catch (err) {
    await Promise.allSettled(sent);
    throw err;
  }
  await colorConfirmed(trx, ...assetCandidates([{ rows, height }]));
  lap('assets');
  // Wallet gap limits move before the events are built: an address the extension brings in
  // is watched (its wallet's subscriptions) when this block's touches are matched.
  await extendWalletsFor(trx, [...rows.history.keys()]);
  lap('wallets');

  const watched = await loadWatches(
    trx,
    (rows.touches ?? []).map((t) => t.key),
  );
  lap('watches');
  const events: OutboxEvent[] = [{ type: 'block.connected', blockHash: rows.hash, height }];
  events.push(...(await confirmationEvents(trx, rows, watched)));
  lap('confirmations');
  if (mempool) events.push(...(await removeFromMempool(trx, block, (keys) => loadWatches(trx, keys))));
  lap('mempool');
  await forgetReorged(trx, events);
  await appendEvents(trx, events);
  await setTip(trx, height, rows.hash);
  lap('events');
  if (ctx.log) ctx.log.debug({ height, txs: rows.txCount, ms: timer.ms }, 'apply phases');
  return { kind: 'applied', height, txs: rows.txCount, events: events.length };
}

/** Whether the node's spent outputs `spent` have the block's shape: a list per transaction, an output per input. */
function fitsBlock(spent: readonly (readonly SpentOutput[])[], block: DecodedBlock): boolean {
  if (spent.length !== block.txs.length) return false;
  return block.txs.every((tx, i) => spent[i]!.length === (i === 0 && tx.isCoinbase ? 0 : tx.inputs.length));
}

/** Spent outputs deleted per statement: a 4,000-transaction block's ~8,000 in four parts. */
const SPEND_PART = 2_000;

/** Transactions hashed or derived between two turns of the event loop (`inSlices`). */
const SLICE = 64;

/**
 * Runs `step` over positions `start` to `end` in slices of SLICE transactions, with a turn of the
 * event loop after each: node-postgres sends a connection's next queued statement only once it
 * has read the last one's answer, so a statement PostgreSQL finishes while the writer computes
 * is answered, and the next sent, within one slice's time (a few ms) instead of the whole
 * computation's (`bench/live-ab.ts --timeline` measures how long the server waits for the writer).
 */
async function inSlices(start: number, end: number, step: (from: number, end: number) => void): Promise<void> {
  for (let at = start; at < end;) {
    const from = at;
    at = Math.min(at + SLICE, end);
    step(from, at);
    if (at < end) await new Promise((r) => setImmediate(r));
  }
}

/**
 * Deletes the outputs `block` spends and derives its rows, overlapped: the spent outputs are
 * deleted in parts of consecutive transactions (SPEND_PART outpoints each), all sent at once,
 * and each part's transactions are derived while PostgreSQL deletes the next part's. (Deleting
 * all first and deriving after leaves PostgreSQL idle for the whole derivation.) The first part
 * runs while every output's address key is hashed. The block's new `utxos` rows (the outputs
 * no transaction of the block spends: known from the block alone, `blockCreated`) are copied
 * right after the spends, before any part is derived, and each part's `txs` rows, final once
 * the part is derived, while the next part is derived (`written`: all of them written): the
 * spend statements, sent first, run before them, and they only delete outputs of earlier blocks
 * (outpoints of the block's own transactions are not among them). BIP30's overwritten coinbase
 * outputs go with the spends (`overwritten`: their rows, for the balances).
 */
async function spendAndDerive(
  trx: Trx,
  block: DecodedBlock,
  height: number,
  { touches, mempool, txids, spent }: { touches: boolean; mempool: boolean; txids: TxidCache | undefined; spent: BlockToApply['spent'] },
  lap: (phase: string) => void,
): Promise<{ rows: BlockRows; written: Promise<void>; overwritten: Promise<OverwrittenOutput[]> }> {
  // Walked as the parts go: the first part's statement goes out before the later transactions' txids are hashed.
  const walk = new SpendWalk(block);
  // The node's spent outputs by outpoint, each part's in before its statement is sent.
  const given = spent ? new OutpointMap<SpentOutput>() : undefined;
  const parts: { end: number; spent: Promise<OutpointMap<Prevout>> }[] = [];
  const copies: Promise<void>[] = [];
  let overwritten: Promise<OverwrittenOutput[]> | undefined;
  try {
    let outpoints: { txid: Uint8Array; vout: number }[] = [];
    for (let i = 0; i < block.txs.length; i++) {
      outpoints.push(...walk.step());
      if (given && !(i === 0 && block.txs[0]!.isCoinbase))
        block.txs[i]!.inputs.forEach((input, j) => given.set(input.prevTxid, input.vout, spent![i]![j]!));
      if (outpoints.length >= SPEND_PART || i === block.txs.length - 1) {
        const spent = spendUtxos(trx, outpoints, txids, given);
        // Rejections are taken as each part is awaited; one left pending must not go unhandled.
        spent.catch(() => {});
        parts.push({ end: i + 1, spent });
        outpoints = [];
        // The first part's statement goes out before the others are prepared.
        if (parts.length === 1) await new Promise((r) => setImmediate(r));
      }
    }
    const spentHere = walk.spentHere;
    const deleted = deleteOverwrittenCoinbase(trx, [{ txid: block.txs[0]!.txid, txNum: txNumOf(height, 0) }]);
    overwritten = deleted;
    deleted.catch(() => {});
    const keys = new Array<ScriptKeys[]>(block.txs.length);
    await inSlices(0, block.txs.length, (from, end) => outputKeysOf(block, keys, from, end));
    // The block's new unspent outputs, known from the block alone: copied right after the spends,
    // while the parts are derived.
    const created = new BinaryCopy(block.txs.length * 200);
    await inSlices(0, block.txs.length, (from, end) => appendUtxos(created, blockCreated(block, height, keys, spentHere, from, end)));
    const utxos = insertUtxosCopy(trx, created);
    utxos.catch(() => {});
    copies.push(utxos);
    const prevouts = new OutpointMap<Prevout>();
    const derivation = new BlockDerivation(block, height, (txid, vout) => prevouts.get(txid, vout), {
      touches,
      outputKeys: keys,
      spentHere,
    });
    let derived = 0;
    for (const p of parts) {
      prevouts.setAll(await p.spent);
      // Let the next part's statement go out before deriving holds the event loop.
      await new Promise((r) => setImmediate(r));
      lap('spend');
      await inSlices(derived, p.end, (_, end) => deriving(height, () => derivation.through(end)));
      const copy = insertTxs(trx, derivation.txRows(derived, p.end), mempool);
      copy.catch(() => {});
      copies.push(copy);
      derived = p.end;
      lap('derive');
    }
    // Settled whole before it fails: each copy finishes, so none outlives an error it raises.
    const written = Promise.allSettled(copies).then((all) => {
      for (const r of all) if (r.status === 'rejected') throw r.reason;
    });
    written.catch(() => {});
    return { rows: deriving(height, () => derivation.rows()), written, overwritten: deleted };
  } catch (err) {
    // The transaction fails with `err`. Every statement sent, the spends' follow-ups included
    // (spendUtxos), finishes first: one sent after the rollback would commit on its own.
    await Promise.allSettled([...parts.map((p) => p.spent), ...copies, ...(overwritten ? [overwritten] : [])]);
    throw err;
  }
}

/** Where undo takes a block and the outputs it spent: the node (chain-source.ts `ChainSource`). */
export interface UndoSource {
  /** The serialized block, or null when the node does not have it. */
  getBlock(hash: string): Promise<Uint8Array | null>;
  /** The outputs each transaction of the block spent, in input order, or null when unknown. */
  getSpentTxOuts?(hash: string): Promise<readonly (readonly { value: bigint; script: Uint8Array }[])[] | null>;
}

/** The block undo needs, from the node, checked against its hash and Merkle root; null when the node does not have it. */
async function blockToUndo(source: UndoSource, hash: Uint8Array): Promise<DecodedBlock | null> {
  const hex = hashToHex(hash);
  const raw = await source.getBlock(hex);
  return raw === null ? null : checkBlock(raw, hex);
}

const EMPTY = new Uint8Array(0);

function blockMissing(height: number, hash: Uint8Array, why: string): RetryableError {
  return new RetryableError('ERR_UNDO_BLOCK_MISSING', `undo of block ${height} (${hashToHex(hash)}) needs the block, and ${why}`);
}

/**
 * The block at `height` rebuilt from the index's rows (stored-block.ts), for a node that no
 * longer has it; its `txs` rows are `blockTxs`.
 * @throws RetryableError ERR_UNDO_BLOCK_MISSING when the rows do not hold what undo needs.
 */
async function blockFromRows(
  trx: Kysely<Database>,
  height: number,
  hash: Uint8Array,
  blockTxs: readonly (StoredTx & { outs: Uint8Array })[],
  undo: Uint8Array,
): Promise<UndoBlock> {
  const lo = txNumOf(height, 0);
  const hi = txNumOf(height + 1, 0);
  const utxos = await sql<{ tx_num: bigint; vout: number; script: Buffer }>`
    SELECT tx_num, vout, script FROM utxos WHERE tx_num >= ${lo.toString()}::int8 AND tx_num < ${hi.toString()}::int8`.execute(trx);
  const earlier = new Set<string>();
  for (const t of blockTxs) for (const r of decodeIns(t.ins)) if (Number(r.txNum) < lo) earlier.add(r.txNum.toString());
  const prev = await sql<{ tx_num: bigint; txid: Buffer }>`
    SELECT t.tx_num, t.txid FROM ${txRowsAtNums([...earlier].map(BigInt))} t`.execute(trx);
  try {
    return rebuildBlock({
      base: lo,
      txs: blockTxs,
      undo,
      unspent: new Map(utxos.rows.map((r) => [`${r.tx_num}:${r.vout}`, r.script])),
      prevTxids: new Map(prev.rows.map((r) => [Number(r.tx_num), r.txid])),
    });
  } catch (err) {
    if (err instanceof NotRebuildableError) throw blockMissing(height, hash, `the node does not have it, nor the index: ${err.message}`);
    if (err instanceof RangeError) throw new FatalError('ERR_INDEX_CORRUPT', `undo of block ${height}: ${err.message}`);
    throw err;
  }
}

/** The outputs of earlier blocks `hash` spent, from the node (undo of a block without a `block_undo` row). */
async function spentToUndo(source: UndoSource, hash: Uint8Array, height: number): Promise<UndoSpent> {
  const hex = hashToHex(hash);
  const perTx = source.getSpentTxOuts ? await source.getSpentTxOuts(hex) : null;
  if (perTx === null)
    throw new RetryableError(
      'ERR_UNDO_BLOCK_MISSING',
      `undo of block ${height} (${hex}) needs the outputs it spent, and the node does not give them (no undo data for the block)`,
    );
  return { perTx };
}

/**
 * Undoes the tip block, which must be at `height`, in one transaction. The block comes from the
 * node (`source`), asked before the transaction begins, and so do the outputs it spent when the
 * index keeps no `block_undo` row for it (a bulk-loaded block, or one deeper than
 * INDEXER_UNDO_BLOCKS): a node keeps a block it disconnected and its undo data (unless pruned).
 * A block the node no longer has (a node killed before it wrote its newest block to disk
 * forgets it) is rebuilt from the index's rows when it has a `block_undo` row
 * (stored-block.ts). Stored rows give the rest: the block's txs rows (each input's prevout tx_num). Its
 * transactions do not return to the mempool tables here: the next mempool sync adds those the
 * node put back. Those of watched addresses are remembered in `reorged_txs` (same transaction)
 * so that one never put back ends with tx.replaced or tx.dropped (reorged.ts).
 * @throws RetryableError ERR_UNDO_BLOCK_MISSING when the node does not have the block or what it
 * spent (pruned, or not served for now): the run loop retries with backoff, showing it in `lastError`.
 */
export async function undoBlock(db: Kysely<Database>, height: number, source: UndoSource, ctx: WriteContext = {}): Promise<UndoResult> {
  // Before anything is written: whatever becomes of the undo (committed, failed, unknown), no
  // transaction of the block stays among the recent ones (a miss only costs the txs lookup).
  ctx.txids?.cut(txNumOf(height, 0));
  const known = await sql<{ hash: Buffer; undo: boolean }>`
    SELECT hash, EXISTS (SELECT 1 FROM block_undo WHERE height = ${height}) AS undo FROM blocks WHERE height = ${height}`.execute(db);
  const stored = known.rows[0];
  const fetched = stored && (await blockToUndo(source, stored.hash));
  if (stored && fetched === null && !stored.undo) throw blockMissing(height, stored.hash, 'the node does not have it');
  const nodeSpent = stored && !stored.undo ? await spentToUndo(source, stored.hash, height) : undefined;
  return db.transaction().execute(async (trx) => {
    if (ctx.guard) await ctx.guard(trx);
    await preferIndexLookups(trx);
    const tip = await lockTip(trx);
    if (tip.height !== height) return { kind: 'stale', tip };
    const timer = new PhaseTimer('undo', ctx.phases);
    const block = await sql<{ hash: Buffer; prev_hash: Buffer }>`SELECT hash, prev_hash FROM blocks WHERE height = ${height}`.execute(trx);
    const b = block.rows[0];
    if (!b) throw new FatalError('ERR_INDEX_CORRUPT', `chain_tip is at ${height} but blocks has no row at that height`);
    // (another block at the height since it was asked for: the caller re-plans)
    if (!stored || !equalBytes(stored.hash, b.hash) || (fetched && !equalBytes(fetched.hash, b.hash))) return { kind: 'stale', tip };
    const lo = txNumOf(height, 0);
    const hi = txNumOf(height + 1, 0);
    // A block below the fold's height (a reorg deeper than the blocks kept unfolded): the parts of
    // the blocks from it up become rows again first (tx-parts-fold.ts), and the undo works on rows.
    const layout = await readHistoryLayout(trx);
    if (layout.busy > 0 && lo < txNumOf(layout.folded, 0)) await unfoldTxParts(trx, BigInt(lo));
    // (the outputs' values and tags only when the block is rebuilt from the rows)
    const txRows = await sql<{ tx_num: bigint; txid: Buffer; ins: Buffer; outs: Buffer | null }>`
      SELECT tx_num, txid, ins, CASE WHEN ${fetched === null} THEN outs END AS outs
      FROM txs WHERE tx_num >= ${lo.toString()}::int8 AND tx_num < ${hi.toString()}::int8 ORDER BY tx_num`.execute(trx);
    const blockTxs = txRows.rows.map((r) => ({ txNum: Number(r.tx_num), txid: r.txid, ins: r.ins, outs: r.outs ?? EMPTY }));
    // The spent outputs come from the block's undo row; without one, from the node.
    const undo = await sql<{ spent: Buffer }>`DELETE FROM block_undo WHERE height = ${height} RETURNING spent`.execute(trx);
    const row = undo.rows[0];
    // (a row gone since it was seen: the caller re-plans and asks the node first, never under the tip's lock)
    const spent: UndoSpent | undefined = row ? { undo: row.spent } : nodeSpent;
    if (!spent) return { kind: 'stale', tip };
    const undone = fetched ?? (await blockFromRows(trx, height, b.hash, blockTxs, row!.spent));
    let u: UndoRows;
    try {
      u = deriveUndo(height, undone, blockTxs, spent, { touches: true });
    } catch (err) {
      if (err instanceof RangeError) throw new FatalError('ERR_INDEX_CORRUPT', err.message);
      throw err;
    }
    // The txids of the transactions its inputs spent (reorged_txs keeps the outpoints), from the block.
    const prevTxs = new Map<number, Pick<StoredTx, 'txid'>>();
    undone.txs.forEach((tx, pos) => {
      if (pos === 0 && tx.isCoinbase) return;
      decodeIns(blockTxs[pos]!.ins).forEach((ref, at) => {
        if (Number(ref.txNum) < lo) prevTxs.set(Number(ref.txNum), { txid: tx.inputs[at]!.prevTxid });
      });
    });
    timer.lap('derive');

    // The outputs the block created and nothing spent since: the block's tx_num range of utxos_pkey.
    await sql`DELETE FROM utxos WHERE tx_num >= ${lo.toString()}::int8 AND tx_num < ${hi.toString()}::int8`.execute(trx);
    await insertUtxos(trx, u.restored);
    timer.lap('utxos');
    await addBalances(trx, u.balances, -1);
    timer.lap('balances');
    await undoHistory(trx, layout, u.keys, lo);
    timer.lap('history');
    await deleteAssetColors(trx, BigInt(lo), BigInt(hi));
    await sql`DELETE FROM txs WHERE tx_num >= ${lo.toString()}::int8 AND tx_num < ${hi.toString()}::int8`.execute(trx);
    await sql`DELETE FROM blocks WHERE height = ${height}`.execute(trx);
    timer.lap('txs');

    const watched = await loadWatches(
      trx,
      (u.touches ?? []).map((t) => t.key),
    );
    const events: OutboxEvent[] = [{ type: 'block.disconnected', blockHash: b.hash, height }];
    for (const t of u.touches ?? []) {
      const w = watched.get(t.key);
      if (!w) continue;
      events.push({
        type: 'tx.reorged',
        addrKey: t.key,
        address: w.address,
        txid: blockTxs[t.pos]!.txid,
        blockHash: b.hash,
        height,
        confirmations: 0,
        received: t.received,
        sent: t.sent,
      });
    }
    await sql`DELETE FROM watched_txs WHERE tx_num >= ${lo.toString()}::int8 AND tx_num < ${hi.toString()}::int8`.execute(trx);
    await rememberReorged(trx, height, blockTxs, prevTxs, events);
    await appendEvents(trx, events);
    await setTip(trx, height - 1, height === 0 ? null : b.prev_hash);
    timer.lap('events');
    if (ctx.log) ctx.log.debug({ height, txs: blockTxs.length, ms: timer.ms }, 'undo phases');
    return { kind: 'undone', height, txs: blockTxs.length, events: events.length };
  });
}
