/**
 * The only writers of the chain tables on the per-block path. `applyBlock` writes one block's
 * rows, its outbox events and the new tip in ONE Postgres transaction, after checking that the
 * block extends the stored tip; `undoBlock` is its exact inverse, computed from rows the index
 * holds (no node call), also one transaction. A crash at any point leaves a block boundary.
 * docs/schema.md gives each table's apply and undo rule.
 * @module
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { DecodedBlock } from '../src/bitcoin/block.js';
import { equalBytes } from '../src/bitcoin/hash.js';
import type { Database } from '../src/db/schema.js';
import { decodeIns } from '../src/db/packed.js';
import { decodeEntries, encodeEntries, historyChunks, restOf, SQL_HISTORY } from '../src/db/history-entries.js';
import { sqlTxNumHeight, txNumHeight, txNumOf } from '../src/db/tx-num.js';
import { FatalError } from '../src/errors.js';
import { extendWalletsFor } from '../src/db/wallet-chains.js';
import type { Logger } from '../src/log.js';
import { deriveBlock, deriveUndo, externalOutpoints, hashKey, outputKeys, MissingPrevoutError, type BlockRows, type Delta, type Prevout, type StoredTx, type Touch, type UtxoRow } from './derive.js';
import { anyWatched, appendEvents, loadWatches, type OutboxEvent, type Watch } from './events.js';
import { deleteMempoolTxs, mempoolDescendants, mempoolSpendersOf, mempoolTxidsAmong, toBuffer, type RemovedTouch } from './mempool-rows.js';

type Trx = Transaction<Database>;

/** Confirmation targets are at most 100 (subscriptions CHECK); watched_txs keeps this many blocks. */
const WATCH_KEEP_BLOCKS = 1100;
const MAX_TARGET = 100;

/** Hooks the run loop gives the writers. */
export interface WriteContext {
  /** Runs first in every write transaction: proves this process still holds the writer lock. */
  guard?: (trx: Trx) => Promise<void>;
  /** Debug lines with the time of each phase. */
  log?: Logger;
}

export type Tip = { height: number; hash: Buffer | null };

export type ApplyResult =
  | { kind: 'applied'; height: number; txs: number; events: number }
  /** The tip already is this block (a duplicate apply): nothing written. */
  | { kind: 'already'; height: number }
  /** The block does not extend the stored tip: nothing written; re-plan from `tip`. */
  | { kind: 'stale'; tip: Tip };

export type UndoResult = { kind: 'undone'; height: number; txs: number; events: number } | { kind: 'stale'; tip: Tip };

const int8s = (xs: readonly (number | bigint)[]) => xs.map((x) => x.toString());

/** The stored tip (height -1, hash null when empty). */
export async function readTip(db: Kysely<Database> | Trx): Promise<Tip> {
  const r = await db.selectFrom('chain_tip').select(['height', 'hash']).where('id', '=', 1).executeTakeFirst();
  return r ?? { height: -1, hash: null };
}

/**
 * Select-list items that turn hash and merge joins off for the rest of the transaction. Every
 * per-block statement joins a few thousand keys (an unnest of the block's outpoints, addresses…)
 * to a large table; PostgreSQL's estimate puts a hash join over a sequential scan of the whole
 * table (every unspent output, every balance) close to, and often below, the index lookups. At a
 * million rows that scan made deleting 8,000 spent outputs ~0.9 s instead of ~0.13 s (bench/README.md
 * "Live"); the planner only turns to the index once the table dwarfs the keys. SET LOCAL: the bulk
 * path and the API keep the planner's choice.
 */
export const KEYED_PLANS = sql`set_config('enable_hashjoin', 'off', true) AS _hj, set_config('enable_mergejoin', 'off', true) AS _mj`;

/**
 * Locks the tip for a block transaction and, in the same round trip, pins its join plans to
 * index lookups (see `KEYED_PLANS`).
 */
async function lockTip(trx: Trx): Promise<Tip> {
  const r = await sql<Tip>`SELECT height, hash, ${KEYED_PLANS} FROM chain_tip WHERE id = 1 FOR UPDATE`.execute(trx);
  return r.rows[0] ?? { height: -1, hash: null };
}

async function setTip(trx: Trx, height: number, hash: Uint8Array | null): Promise<void> {
  await sql`UPDATE chain_tip SET height = ${height}, hash = ${hash === null ? null : toBuffer(hash)}, updated_at = now() WHERE id = 1`.execute(trx);
}

/** Adds `sign` × each delta to `balances`, deleting rows that reach 0 sats and 0 outputs. */
async function addBalances(trx: Trx, deltas: ReadonlyMap<string, Delta>, sign: 1 | -1): Promise<void> {
  const keys: string[] = [];
  const sats: string[] = [];
  const counts: number[] = [];
  for (const [k, d] of deltas) {
    if (d.sats === 0n && d.count === 0) continue;
    keys.push(k);
    sats.push((sign === 1 ? d.sats : -d.sats).toString());
    counts.push(sign * d.count);
  }
  if (keys.length === 0) return;
  // One MERGE: each address is looked up once; rows reaching 0 sats and 0 outputs go away.
  await sql`
    MERGE INTO balances AS b
    USING (SELECT * FROM unnest(${keys}::uuid[], ${sats}::int8[], ${counts}::int4[]) AS d(addr_key, sats, n)) AS d
    ON b.addr_key = d.addr_key
    WHEN MATCHED AND b.balance + d.sats = 0 AND b.utxo_count + d.n = 0 THEN DELETE
    WHEN MATCHED THEN UPDATE SET balance = b.balance + d.sats, utxo_count = b.utxo_count + d.n
    WHEN NOT MATCHED THEN INSERT (addr_key, balance, utxo_count) VALUES (d.addr_key, d.sats, d.n)`.execute(trx);
}

/** Inserts unspent outputs. */
async function insertUtxos(trx: Trx, rows: readonly UtxoRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 20_000) {
    const part = rows.slice(i, i + 20_000);
    await sql`
      INSERT INTO utxos (txid, vout, tx_num, addr_key, value, script)
      SELECT * FROM unnest(${part.map((r) => toBuffer(r.txid))}::bytea[], ${part.map((r) => r.vout)}::int4[], ${int8s(part.map((r) => r.txNum))}::int8[],
        ${part.map((r) => r.key)}::uuid[], ${part.map((r) => r.value.toString())}::int8[], ${part.map((r) => toBuffer(r.script))}::bytea[])`.execute(trx);
  }
}

async function insertHistory(trx: Trx, history: ReadonlyMap<string, readonly number[]>): Promise<void> {
  const chunks = historyChunks(history);
  for (let i = 0; i < chunks.length; i += 20_000) {
    const part = chunks.slice(i, i + 20_000);
    await sql`
      INSERT INTO history (addr_key, first_tx_num, rest)
      SELECT * FROM unnest(${part.map((c) => c.key)}::uuid[], ${int8s(part.map((c) => c.first))}::int8[], ${part.map((c) => restOf(c.entries))}::bytea[])`.execute(trx);
  }
}

/**
 * BIP30 (mainnet 91842 and 91880): a coinbase repeating an earlier coinbase's txid overwrites
 * its unspent outputs, as in Core, where the older outputs are lost. Their rows go and their
 * value leaves the balances with this block (as the bulk path does); undo cannot bring them
 * back, and neither can Core.
 */
async function dropOverwrittenCoinbase(trx: Trx, rows: BlockRows): Promise<void> {
  const coinbase = rows.txs[0];
  if (!coinbase) return;
  const r = await sql<{ addr_key: string | null; value: bigint }>`
    DELETE FROM utxos WHERE txid = ${toBuffer(coinbase.txid)} AND tx_num <> ${coinbase.txNum.toString()}::int8 RETURNING addr_key, value`.execute(trx);
  for (const old of r.rows) {
    if (old.addr_key === null) continue;
    const d = rows.balances.get(old.addr_key);
    if (d) {
      d.sats -= old.value;
      d.count -= 1;
    } else rows.balances.set(old.addr_key, { sats: -old.value, count: -1 });
  }
}

/** Mempool transactions that the block mined or conflicted with leave the mempool tables. */
async function removeFromMempool(trx: Trx, block: DecodedBlock, watches: (keys: string[]) => Promise<Map<string, Watch>>): Promise<OutboxEvent[]> {
  // Catching up, the mempool tables are empty: skip the lookups.
  if ((await sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM mempool_txs) AS any`.execute(trx)).rows[0]?.any !== true) return [];
  const txids = block.txs.map((t) => t.txid);
  const mined = await mempoolTxidsAmong(trx, txids);
  if (mined.length > 0) await deleteMempoolTxs(trx, mined);
  const outpoints: { txid: Uint8Array; vout: number }[] = [];
  const spenderOf = new Map<string, Uint8Array>();
  block.txs.forEach((tx, i) => {
    if (i === 0 && tx.isCoinbase) return;
    for (const input of tx.inputs) {
      outpoints.push({ txid: input.prevTxid, vout: input.vout });
      spenderOf.set(`${hashKey(input.prevTxid)}:${input.vout}`, tx.txid);
    }
  });
  const blockIds = new Set(txids.map(hashKey));
  const conflicts = new Map<string, { txid: Buffer; by: Uint8Array }>();
  for (const s of await mempoolSpendersOf(trx, outpoints)) {
    if (blockIds.has(hashKey(s.txid))) continue;
    conflicts.set(hashKey(s.txid), { txid: s.txid, by: spenderOf.get(`${hashKey(s.prevTxid)}:${s.prevVout}`)! });
  }
  if (conflicts.size === 0) return [];
  const direct = [...conflicts.values()].map((c) => c.txid);
  const desc = await mempoolDescendants(trx, direct);
  const removed = (await deleteMempoolTxs(trx, [...direct, ...desc])).touches;
  return removalEvents(removed, await watches(removed.map((r) => r.key)), (txid) => conflicts.get(hashKey(txid))?.by);
}

/** tx.replaced (when `replacedBy` names the replacement) or tx.dropped for watched addresses. */
export function removalEvents(removed: readonly RemovedTouch[], watched: ReadonlyMap<string, Watch>, replacedBy: (txid: Buffer) => Uint8Array | undefined): OutboxEvent[] {
  const events: OutboxEvent[] = [];
  for (const r of removed) {
    const w = watched.get(r.key);
    if (!w) continue;
    const by = replacedBy(r.txid);
    events.push({
      type: by ? 'tx.replaced' : 'tx.dropped',
      addrKey: r.key,
      address: w.address,
      txid: r.txid,
      confirmations: 0,
      received: r.received,
      sent: r.sent,
      ...(by ? { replacedBy: by } : {}),
    });
  }
  return events;
}

/** tx.confirmed for the block's watched touches (recorded in watched_txs) and tx.confirmations for earlier ones. */
async function confirmationEvents(trx: Trx, rows: BlockRows, watched: ReadonlyMap<string, Watch>): Promise<OutboxEvent[]> {
  const events: OutboxEvent[] = [];
  const base = txNumOf(rows.height, 0);
  const mine = (rows.touches ?? []).filter((t: Touch) => watched.has(t.key));
  for (const t of mine) {
    const w = watched.get(t.key)!;
    events.push({
      type: 'tx.confirmed',
      addrKey: t.key,
      address: w.address,
      txid: rows.txs[t.pos]!.txid,
      blockHash: rows.hash,
      height: rows.height,
      confirmations: 1,
      received: t.received,
      sent: t.sent,
    });
  }
  if (rows.height >= 1) {
    const from = txNumOf(Math.max(0, rows.height - MAX_TARGET + 1), 0);
    const r = await sql<{ tx_num: bigint; addr_key: string; txid: Buffer; received: bigint; sent: bigint; target: number; address: string; block_hash: Buffer }>`
      SELECT t.tx_num, t.addr_key, t.txid, t.received, t.sent, w.confirmations AS target, w.address, b.hash AS block_hash
      FROM watched_txs t
      JOIN watched_addresses w ON w.addr_key = t.addr_key
      JOIN blocks b ON b.height = ${sqlTxNumHeight(sql.ref('t.tx_num'))}
      WHERE t.tx_num >= ${from.toString()}::int8 AND t.tx_num < ${base.toString()}::int8
      ORDER BY t.tx_num, t.addr_key`.execute(trx);
    for (const x of r.rows) {
      const h = txNumHeight(x.tx_num);
      const conf = rows.height - h + 1;
      if (conf < 2 || conf > x.target) continue;
      events.push({ type: 'tx.confirmations', addrKey: x.addr_key, address: x.address, txid: x.txid, blockHash: x.block_hash, height: h, confirmations: conf, received: x.received, sent: x.sent });
    }
  }
  if (mine.length > 0) {
    await sql`
      INSERT INTO watched_txs (tx_num, addr_key, txid, received, sent)
      SELECT * FROM unnest(${int8s(mine.map((t) => base + t.pos))}::int8[], ${mine.map((t) => t.key)}::uuid[],
        ${mine.map((t) => toBuffer(rows.txs[t.pos]!.txid))}::bytea[], ${mine.map((t) => t.received.toString())}::int8[], ${mine.map((t) => t.sent.toString())}::int8[])
      ON CONFLICT DO NOTHING`.execute(trx);
  }
  if (rows.height > WATCH_KEEP_BLOCKS) await sql`DELETE FROM watched_txs WHERE tx_num < ${txNumOf(rows.height - WATCH_KEEP_BLOCKS, 0).toString()}::int8`.execute(trx);
  return events;
}

/** Deletes the spent outputs and returns them as prevouts keyed by `hashKey(txid):vout`. */
async function spendUtxos(trx: Trx, outpoints: readonly { txid: Uint8Array; vout: number }[]): Promise<Map<string, Prevout>> {
  const found = new Map<string, Prevout>();
  for (let i = 0; i < outpoints.length; i += 20_000) {
    const part = outpoints.slice(i, i + 20_000);
    const r = await sql<{ txid: Buffer; vout: number; tx_num: bigint; value: bigint; script: Buffer; addr_key: string | null }>`
      DELETE FROM utxos u USING unnest(${part.map((o) => toBuffer(o.txid))}::bytea[], ${part.map((o) => o.vout)}::int4[]) AS s(txid, vout)
      WHERE u.txid = s.txid AND u.vout = s.vout
      RETURNING u.txid, u.vout, u.tx_num, u.value, CASE WHEN u.addr_key IS NULL THEN u.script ELSE ''::bytea END AS script, u.addr_key`.execute(trx);
    for (const x of r.rows) {
      found.set(`${hashKey(x.txid)}:${x.vout}`, { txNum: Number(x.tx_num), value: x.value, script: x.script, ...(x.addr_key !== null ? { keys: x.addr_key } : {}) });
    }
  }
  return found;
}

/**
 * Applies `block` at `height` in one transaction: rows, mempool removals, outbox events, tip.
 * Returns 'already' if the tip is this block and 'stale' if the block does not extend the tip.
 * @throws FatalError ERR_PREVOUT_MISSING when the index lacks an output the block spends.
 */
export async function applyBlock(db: Kysely<Database>, block: DecodedBlock, height: number, ctx: WriteContext = {}): Promise<ApplyResult> {
  return db.transaction().execute(async (trx) => {
    if (ctx.guard) await ctx.guard(trx);
    const tip = await lockTip(trx);
    if (tip.height === height && tip.hash !== null && equalBytes(tip.hash, block.hash)) return { kind: 'already', height };
    const extendsTip = height === 0 ? tip.height === -1 : tip.height === height - 1 && tip.hash !== null && equalBytes(tip.hash, block.header.prevHash);
    if (!extendsTip) return { kind: 'stale', tip };

    const ms: Record<string, number> = {};
    let t = performance.now();
    const lap = (k: string) => {
      const now = performance.now();
      ms[k] = Math.round(now - t);
      t = now;
    };
    const spending = spendUtxos(trx, externalOutpoints(block));
    // While Postgres deletes the spent outputs, hash every output's address key.
    const keys = outputKeys(block);
    const prevouts = await spending;
    lap('spend');
    let rows: BlockRows;
    try {
      // Per-address amounts are only needed for events: skip them when nothing is watched.
      rows = deriveBlock(block, height, (txid, vout) => prevouts.get(`${hashKey(txid)}:${vout}`), { touches: await anyWatched(trx), outputKeys: keys });
    } catch (err) {
      if (err instanceof MissingPrevoutError) throw new FatalError('ERR_PREVOUT_MISSING', `cannot apply block ${height}: ${err.message}`, { cause: err });
      throw err;
    }
    lap('derive');
    await dropOverwrittenCoinbase(trx, rows);

    await sql`
      INSERT INTO blocks (height, hash, prev_hash, header, time, tx_count, size, weight)
      VALUES (${height}, ${toBuffer(rows.hash)}, ${toBuffer(rows.prevHash)}, ${toBuffer(rows.header)}, ${rows.time}, ${rows.txCount}, ${rows.size}, ${rows.weight})`.execute(trx);
    for (let i = 0; i < rows.txs.length; i += 10_000) {
      const part = rows.txs.slice(i, i + 10_000);
      await sql`
        INSERT INTO txs (tx_num, txid, outs, ins, first_seen)
        SELECT u.tx_num, u.txid, u.outs, u.ins, m.first_seen
        FROM unnest(${int8s(part.map((t) => t.txNum))}::int8[], ${part.map((t) => toBuffer(t.txid))}::bytea[], ${part.map((t) => t.outs)}::bytea[], ${part.map((t) => t.ins)}::bytea[])
          AS u(tx_num, txid, outs, ins)
        LEFT JOIN mempool_txs m ON m.txid = u.txid`.execute(trx);
    }
    lap('txs');
    await insertUtxos(trx, rows.created);
    lap('utxos');
    await addBalances(trx, rows.balances, 1);
    lap('balances');
    await insertHistory(trx, rows.history);
    lap('history');
    // Wallet gap limits move before the events are built: an address the extension brings in
    // is watched (its wallet's subscriptions) when this block's touches are matched.
    await extendWalletsFor(trx, [...rows.history.keys()]);
    lap('wallets');

    const watched = await loadWatches(trx, (rows.touches ?? []).map((t) => t.key));
    lap('watches');
    const events: OutboxEvent[] = [{ type: 'block.connected', blockHash: rows.hash, height }];
    events.push(...(await confirmationEvents(trx, rows, watched)));
    lap('confirmations');
    events.push(...(await removeFromMempool(trx, block, (keys) => loadWatches(trx, keys))));
    lap('mempool');
    await forgetReorged(trx, events);
    await appendEvents(trx, events);
    await setTip(trx, height, rows.hash);
    lap('events');
    if (ctx.log) ctx.log.debug({ height, txs: rows.txCount, ms }, 'apply phases');
    return { kind: 'applied', height, txs: rows.txCount, events: events.length };
  });
}

/** Truncates or deletes the history chunks of `keys` holding entries at or above `fromTxNum`. */
async function cutHistory(trx: Trx, keys: readonly string[], fromTxNum: number): Promise<void> {
  if (keys.length === 0) return;
  const from = fromTxNum.toString();
  await sql`DELETE FROM history WHERE addr_key = ANY(${keys}::uuid[]) AND first_tx_num >= ${from}::int8`.execute(trx);
  // Chunks never overlap, so only an address's newest remaining chunk can reach into the range:
  // the one whose last entry (the last 8 bytes of `rest`) is at or above it.
  const straddling = await sql<{ addr_key: string; first_tx_num: bigint; rest: Buffer }>`
    SELECT k AS addr_key, h.first_tx_num, h.rest
    FROM unnest(${keys}::uuid[]) AS k
    CROSS JOIN LATERAL (SELECT first_tx_num, rest FROM history WHERE addr_key = k ORDER BY first_tx_num DESC LIMIT 1) h
    WHERE length(h.rest) > 0 AND ${sql.raw(SQL_HISTORY.lastEntry('h.rest'))} >= ${from}::int8`.execute(trx);
  for (const c of straddling.rows) {
    const kept = decodeEntries(c.rest).filter((n) => n < BigInt(fromTxNum));
    await sql`
      UPDATE history SET rest = ${encodeEntries(kept)}
      WHERE addr_key = ${c.addr_key}::uuid AND first_tx_num = ${c.first_tx_num.toString()}::int8`.execute(trx);
  }
}

/**
 * Undoes the tip block, which must be at `height`, in one transaction, from stored rows only.
 * Its transactions do not return to the mempool tables here: the next mempool sync adds those
 * the node put back. Those of watched addresses are remembered in `reorged_txs` (same
 * transaction) so that one never put back ends with tx.replaced or tx.dropped (reorged.ts).
 */
export async function undoBlock(db: Kysely<Database>, height: number, ctx: WriteContext = {}): Promise<UndoResult> {
  return db.transaction().execute(async (trx) => {
    if (ctx.guard) await ctx.guard(trx);
    const tip = await lockTip(trx);
    if (tip.height !== height) return { kind: 'stale', tip };
    const block = await sql<{ hash: Buffer; prev_hash: Buffer }>`SELECT hash, prev_hash FROM blocks WHERE height = ${height}`.execute(trx);
    const b = block.rows[0];
    if (!b) throw new FatalError('ERR_INDEX_CORRUPT', `chain_tip is at ${height} but blocks has no row at that height`);
    const lo = txNumOf(height, 0);
    const hi = txNumOf(height + 1, 0);
    const txRows = await sql<{ tx_num: bigint; txid: Buffer; outs: Buffer; ins: Buffer }>`
      SELECT tx_num, txid, outs, ins FROM txs WHERE tx_num >= ${lo.toString()}::int8 AND tx_num < ${hi.toString()}::int8 ORDER BY tx_num`.execute(trx);
    const blockTxs: StoredTx[] = txRows.rows.map((r) => ({ txNum: Number(r.tx_num), txid: r.txid, outs: r.outs, ins: r.ins }));
    const prevNums = new Set<number>();
    for (const t of blockTxs) for (const ref of decodeIns(t.ins)) if (Number(ref.txNum) < lo) prevNums.add(Number(ref.txNum));
    const prevTxs = new Map<number, StoredTx>();
    if (prevNums.size > 0) {
      const pr = await sql<{ tx_num: bigint; txid: Buffer; outs: Buffer }>`
        SELECT tx_num, txid, outs FROM txs WHERE tx_num = ANY(${int8s([...prevNums])}::int8[])`.execute(trx);
      for (const r of pr.rows) prevTxs.set(Number(r.tx_num), { txNum: Number(r.tx_num), txid: r.txid, outs: r.outs, ins: Buffer.alloc(0) });
    }
    const u = deriveUndo(height, blockTxs, prevTxs, { touches: true });

    for (let i = 0; i < u.createdOutpoints.length; i += 20_000) {
      const part = u.createdOutpoints.slice(i, i + 20_000);
      await sql`
        DELETE FROM utxos u USING unnest(${part.map((o) => toBuffer(o.txid))}::bytea[], ${part.map((o) => o.vout)}::int4[]) AS s(txid, vout)
        WHERE u.txid = s.txid AND u.vout = s.vout`.execute(trx);
    }
    await insertUtxos(trx, u.restored);
    await addBalances(trx, u.balances, -1);
    await cutHistory(trx, u.keys, lo);
    await sql`DELETE FROM txs WHERE tx_num >= ${lo.toString()}::int8 AND tx_num < ${hi.toString()}::int8`.execute(trx);
    await sql`DELETE FROM blocks WHERE height = ${height}`.execute(trx);

    const watched = await loadWatches(trx, (u.touches ?? []).map((t) => t.key));
    const events: OutboxEvent[] = [{ type: 'block.disconnected', blockHash: b.hash, height }];
    for (const t of u.touches ?? []) {
      const w = watched.get(t.key);
      if (!w) continue;
      events.push({ type: 'tx.reorged', addrKey: t.key, address: w.address, txid: blockTxs[t.pos]!.txid, blockHash: b.hash, height, confirmations: 0, received: t.received, sent: t.sent });
    }
    await sql`DELETE FROM watched_txs WHERE tx_num >= ${lo.toString()}::int8 AND tx_num < ${hi.toString()}::int8`.execute(trx);
    await rememberReorged(trx, height, blockTxs, prevTxs, events);
    await appendEvents(trx, events);
    await setTip(trx, height - 1, height === 0 ? null : b.prev_hash);
    return { kind: 'undone', height, txs: blockTxs.length, events: events.length };
  });
}

/**
 * Records the block's tx.reorged transactions in `reorged_txs` (with the outpoints they spend)
 * until indexer/reorged.ts knows their end, and lowers the fork bound of rows already waiting:
 * a conflicting spend in the new branch is at or above the lowest height undone since.
 */
async function rememberReorged(trx: Trx, height: number, blockTxs: readonly StoredTx[], prevTxs: ReadonlyMap<number, StoredTx>, events: readonly OutboxEvent[]): Promise<void> {
  await sql`UPDATE reorged_txs SET since_height = ${height} WHERE since_height > ${height}`.execute(trx);
  const reorged = events.filter((e) => e.type === 'tx.reorged');
  if (reorged.length === 0) return;
  const lo = txNumOf(height, 0);
  const byTxid = new Map(blockTxs.map((t) => [hashKey(t.txid), t]));
  const spendsOf = new Map<string, Buffer>();
  for (const e of reorged) {
    const k = hashKey(e.txid!);
    if (spendsOf.has(k)) continue;
    const refs = decodeIns(byTxid.get(k)!.ins);
    const out = Buffer.alloc(refs.length * 36);
    refs.forEach((ref, i) => {
      const n = Number(ref.txNum);
      const prev = n < lo ? prevTxs.get(n) : blockTxs[n - lo];
      if (!prev) throw new FatalError('ERR_INDEX_CORRUPT', `undo of block ${height}: no stored tx at tx_num ${n}`);
      toBuffer(prev.txid).copy(out, i * 36);
      out.writeUInt32LE(ref.vout, i * 36 + 32);
    });
    spendsOf.set(k, out);
  }
  await sql`
    INSERT INTO reorged_txs (txid, addr_key, address, received, sent, spends, since_height)
    SELECT u.*, ${height}::int4 FROM unnest(${reorged.map((e) => toBuffer(e.txid!))}::bytea[], ${reorged.map((e) => e.addrKey!)}::uuid[], ${reorged.map((e) => e.address!)}::text[],
      ${reorged.map((e) => e.received!.toString())}::int8[], ${reorged.map((e) => e.sent!.toString())}::int8[], ${reorged.map((e) => spendsOf.get(hashKey(e.txid!))!)}::bytea[])
      AS u(txid, addr_key, address, received, sent, spends)
    ON CONFLICT (txid, addr_key) DO UPDATE SET address = EXCLUDED.address, received = EXCLUDED.received, sent = EXCLUDED.sent, spends = EXCLUDED.spends,
      since_height = EXCLUDED.since_height, reorged_at = now()`.execute(trx);
}

/**
 * A reorged transaction whose story goes on (a tx.confirmed or tx.unconfirmed among `events`)
 * leaves `reorged_txs` in the same transaction, so that reorged.ts never ends it a second time
 * (say, replaced again after it came back to the mempool and left it).
 */
export async function forgetReorged(trx: Trx, events: readonly OutboxEvent[]): Promise<void> {
  const ids = new Map<string, Buffer>();
  for (const e of events) if ((e.type === 'tx.confirmed' || e.type === 'tx.unconfirmed') && e.txid) ids.set(hashKey(e.txid), toBuffer(e.txid));
  if (ids.size === 0) return;
  await sql`DELETE FROM reorged_txs WHERE txid = ANY(${[...ids.values()]}::bytea[])`.execute(trx);
}

