/**
 * The indexed mempool: transactions appear in address history and unspent
 * outputs with 0 confirmations and leave when mined (apply.ts), replaced, conflicted or evicted.
 * Sync follows Core's protocol (interface_zmq.py test_mempool_sync): seed from
 * `getrawmempool(false, true)`, keep the ZMQ `sequence` A/R messages above its
 * `mempool_sequence`, apply them as deltas, and reseed on any gap or restart. A message is only
 * a hint: an addition is fetched from the node and must be in its mempool, a removal must be
 * absent from it, before the tables change. Each change is one Postgres transaction with its
 * outbox events (tx.unconfirmed, tx.replaced with replaced_by, tx.dropped for watched addresses;
 * mempool.added / mempool.removed for every transaction, which the mempool pushes follow).
 *
 * A lost message is seen as a counter gap only when another message follows it. For the last
 * messages before a quiet spell (nothing follows), the sync compares `getmempoolinfo`'s size and
 * total fee with the index's every `checkMs` while idle: the same difference twice in a row, with
 * neither side changing in between, means hints were lost, and the mempool is reseeded.
 * @module
 */
import { unspentAt } from '../src/db/tx-reads.js';
import { sql, type Kysely, type Transaction } from 'kysely';
import { decodeTx, type DecodedTx } from '../src/bitcoin/tx.js';
import { hashToHex, hexToHash } from '../src/bitcoin/hash.js';
import type { Database } from '../src/db/schema.js';
import { extendWalletsFor } from '../src/db/wallet-chains.js';
import type { Logger } from '../src/log.js';
import { deriveMempoolTx, type MempoolPrevout } from './writer/derive.js';
import type { MempoolSource, MempoolSummary, NodeMempoolTx } from './chain-source.js';
import { appendEvents, loadWatches, type OutboxEvent } from './events.js';
import { removalEvents } from './writer/block-events.js';
import { preferIndexLookups } from './planner-hints.js';
import { forgetReorged } from './writer/reorg-bookkeeping.js';
import {
  addMempoolReplacers,
  deleteMempoolTxs,
  insertMempoolTxs,
  mempoolDescendants,
  mempoolSpendersOf,
  toBuffer,
  type MempoolTxRow,
  type RemovedTouch,
} from './mempool-rows.js';
import type { SequenceHint } from './notify.js';
import { colorMempool } from './writer/asset-rows.js';
import {
  afterHints,
  afterResync,
  initialSyncState,
  judgeCheck,
  nextWork,
  planResync,
  planVerified,
  receiveHint,
  requestResync,
  startCheck,
  takeDue,
  takeHints,
  type SyncPolicy,
} from './mempool-plan.js';

type Trx = Transaction<Database>;

export interface MempoolStats {
  resyncs: number;
  added: number;
  removed: number;
  /** Hints the node contradicted (an A not in its mempool, an R still in it). */
  ignoredHints: number;
  /** Reseeds caused by the idle check (the index stayed unlike the node with no hint to explain it). */
  drifts: number;
}

export interface MempoolSync {
  /** A `sequence` message (only A and R matter here; their sequence is the one the event took). */
  hint(h: SequenceHint): void;
  /** Reseed from `getrawmempool` at the next step (start, ZMQ gap or reset, periodic). */
  requestResync(reason: string): void;
  /** True when a resync or hints are waiting. */
  readonly pending: boolean;
  /** Brings the mempool tables up to date with the node; true when something was done. */
  step(): Promise<boolean>;
  readonly stats: MempoolStats;
}

export interface MempoolSyncDeps {
  db: Kysely<Database>;
  source: MempoolSource;
  log: Logger;
  guard?: (trx: Trx) => Promise<void>;
  /** Hints queued at most; beyond, they are dropped and a resync is scheduled. */
  maxHints?: number;
  /**
   * How long a transaction the node removed stays indexed while its replacement may still be
   * announced (ms, default 1000): an RBF replacement's `A` can come after the victim's `R`.
   */
  removalGraceMs?: number;
  /**
   * While idle, how often to compare the node's mempool size and fees with the index's (ms);
   * null or absent: never (without ZMQ every poll reseeds anyway).
   */
  checkMs?: number | null;
}

type Change = { add: Map<string, NodeMempoolTx>; remove: Set<string> };

/** The index's side of the idle check: how many mempool transactions, their fees summed; null when a fee is unknown. */
async function storedSummary(db: Kysely<Database>): Promise<MempoolSummary | null> {
  const r = await sql<{ n: number; with_fee: number; fee: string }>`
    SELECT count(*)::int4 AS n, count(fee)::int4 AS with_fee, coalesce(sum(fee), 0)::text AS fee FROM mempool_txs`.execute(db);
  const row = r.rows[0]!;
  return row.with_fee === row.n ? { size: row.n, fee: BigInt(row.fee) } : null;
}

async function storedTxids(db: Kysely<Database> | Trx): Promise<Set<string>> {
  const r = await sql<{ txid: Buffer }>`SELECT txid FROM mempool_txs`.execute(db);
  return new Set(r.rows.map((x) => hashToHex(x.txid)));
}

/** An outpoint as a Map key: `txidhex:vout`. */
const outpointId = (txid: Uint8Array, vout: number): string =>
  `${Buffer.from(txid.buffer, txid.byteOffset, txid.byteLength).toString('hex')}:${vout}`;

/** Prevouts of `outpoints` from utxos and mempool_outputs, keyed by `outpointId`. */
async function loadPrevouts(trx: Trx, outpoints: readonly { txid: Uint8Array; vout: number }[]): Promise<Map<string, MempoolPrevout>> {
  const out = new Map<string, MempoolPrevout>();
  if (outpoints.length === 0) return out;
  const r = await sql<{ txid: Buffer; vout: number; value: bigint; script: Buffer; addr_key: string | null }>`
    SELECT u.txid, u.vout, u.value, u.script, u.addr_key
      FROM unnest(${outpoints.map((o) => toBuffer(o.txid))}::bytea[], ${outpoints.map((o) => o.vout)}::int4[]) AS q(txid, vout)
      JOIN LATERAL (${unspentAt(sql.ref('q.txid'), sql.ref('q.vout'))}) u ON true
    UNION ALL
    SELECT o.txid, o.vout, o.value, o.script, o.addr_key
      FROM unnest(${outpoints.map((o) => toBuffer(o.txid))}::bytea[], ${outpoints.map((o) => o.vout)}::int4[]) AS q(txid, vout)
      JOIN mempool_outputs o ON o.txid = q.txid AND o.vout = q.vout`.execute(trx);
  for (const x of r.rows)
    out.set(outpointId(x.txid, x.vout), { value: x.value, script: x.script, ...(x.addr_key !== null ? { keys: x.addr_key } : {}) });
  return out;
}

/**
 * The mempool's own events: `mempool.added` per transaction added, `mempool.removed` per
 * transaction removed that touched an address (with its replacement when one spends its
 * inputs), each with the address keys it touches in `data.keys`. The Electrum server and
 * coinstackd's `/websocket` push the mempool from these.
 */
function mempoolEvents(
  added: readonly MempoolTxRow[],
  removed: readonly RemovedTouch[],
  replacedBy: ReadonlyMap<string, Uint8Array>,
): OutboxEvent[] {
  const events: OutboxEvent[] = [];
  const gone = new Map<string, { txid: Buffer; keys: Set<string> }>();
  for (const t of removed) {
    const id = t.txid.toString('hex');
    const g = gone.get(id) ?? { txid: t.txid, keys: new Set<string>() };
    g.keys.add(t.key);
    gone.set(id, g);
  }
  for (const [id, g] of gone) {
    const by = replacedBy.get(id);
    events.push({ type: 'mempool.removed', txid: g.txid, ...(by ? { replacedBy: by } : {}), data: { keys: [...g.keys] } });
  }
  // Removals first, as they were applied (a replacement's victim leaves before it enters).
  for (const r of added) events.push({ type: 'mempool.added', txid: r.txid, data: { keys: [...new Set(r.addresses.map((a) => a.key))] } });
  return events;
}

/** Applies one verified change in one transaction; returns txids it could not add yet. */
async function commitChange(trx: Trx, change: Change, log: Logger): Promise<{ added: number; removed: number; unresolved: string[] }> {
  await preferIndexLookups(trx);
  const stored = await storedTxids(trx);
  const events: OutboxEvent[] = [];

  // Removals first (an RBF replacement spends what its victim spent).
  const removeIds = [...change.remove].filter((t) => stored.has(t)).map((t) => hexToHash(t));
  const removedSpends = new Map<string, { txid: Uint8Array; vout: number }[]>();
  if (removeIds.length > 0) {
    const r = await sql<{ txid: Buffer; prev_txid: Buffer; prev_vout: number }>`
      SELECT txid, prev_txid, prev_vout FROM mempool_spends WHERE txid = ANY(${removeIds.map(toBuffer)}::bytea[])`.execute(trx);
    for (const x of r.rows) {
      const k = x.txid.toString('hex');
      const list = removedSpends.get(k) ?? [];
      list.push({ txid: x.prev_txid, vout: x.prev_vout });
      removedSpends.set(k, list);
    }
  }
  const removedNow = await deleteMempoolTxs(trx, removeIds);
  const removed = removedNow.touches;

  // Additions, parents before children; a transaction whose inputs are unknown waits.
  const decoded = new Map<string, { tx: DecodedTx; info: NodeMempoolTx }>();
  for (const [txid, info] of change.add) {
    if (stored.has(txid)) continue;
    const tx = decodeTx(info.raw);
    if (hashToHex(tx.txid) !== txid) {
      log.warn({ txid }, 'node returned a different transaction than asked for; ignored');
      continue;
    }
    decoded.set(txid, { tx, info });
  }
  const outpoints = [...decoded.values()].flatMap((d) => d.tx.inputs.map((i) => ({ txid: i.prevTxid, vout: i.vout })));
  const known = await loadPrevouts(trx, outpoints);
  const rows: MempoolTxRow[] = [];
  const unresolved: string[] = [];
  const done = new Set<string>();
  let progress = true;
  while (progress) {
    progress = false;
    for (const [txid, d] of decoded) {
      if (done.has(txid)) continue;
      if (!d.tx.inputs.every((input) => known.has(outpointId(input.prevTxid, input.vout)))) continue;
      const row = deriveMempoolTx(d.tx, (txid, vout) => known.get(outpointId(txid, vout)), d.info.time ?? new Date());
      if (d.info.fee !== null) row.fee = d.info.fee;
      rows.push(row);
      done.add(txid);
      progress = true;
      d.tx.outputs.forEach((o, vout) => known.set(outpointId(d.tx.txid, vout), { value: o.value, script: o.script }));
    }
  }
  for (const txid of decoded.keys()) if (!done.has(txid)) unresolved.push(txid);

  // Transactions already stored that spend what an addition spends were replaced by it.
  const conflictBy = new Map<string, Uint8Array>();
  if (rows.length > 0) {
    const spenderOf = new Map<string, Uint8Array>();
    const outs = rows.flatMap((r) => r.spends.map((s) => ({ txid: s.prevTxid, vout: s.prevVout, by: r.txid })));
    for (const o of outs) spenderOf.set(outpointId(o.txid, o.vout), o.by);
    for (const s of await mempoolSpendersOf(trx, outs)) {
      conflictBy.set(s.txid.toString('hex'), spenderOf.get(outpointId(s.prevTxid, s.prevVout))!);
    }
  }
  let conflictRemoved: RemovedTouch[] = [];
  let conflictCount = 0;
  if (conflictBy.size > 0) {
    const direct = [...conflictBy.keys()].map((h) => Buffer.from(h, 'hex'));
    const desc = await mempoolDescendants(trx, direct);
    const gone = await deleteMempoolTxs(trx, [...direct, ...desc]);
    conflictRemoved = gone.touches;
    conflictCount = gone.count;
  }
  await insertMempoolTxs(trx, rows);
  await colorMempool(trx, rows);
  // Wallet gap limits move before the events are built (as for blocks: src/db/wallet-chains.ts).
  await extendWalletsFor(
    trx,
    rows.flatMap((r) => r.addresses.map((a) => a.key)),
  );

  // replaced_by for the removals: whoever spends their outpoints now.
  const replacedBy = new Map<string, Uint8Array>(conflictBy);
  await addMempoolReplacers(
    trx,
    [...removedSpends].flatMap(([txid, list]) => list.map((o) => ({ ...o, victim: txid }))),
    replacedBy,
  );

  const allRemoved = [...removed, ...conflictRemoved];
  const watchKeys = [...allRemoved.map((r) => r.key), ...rows.flatMap((r) => r.addresses.map((a) => a.key))];
  const watched = await loadWatches(trx, watchKeys);
  for (const r of rows) {
    for (const a of r.addresses) {
      const w = watched.get(a.key);
      if (w)
        events.push({
          type: 'tx.unconfirmed',
          addrKey: a.key,
          address: w.address,
          txid: r.txid,
          confirmations: 0,
          received: a.received,
          sent: a.sent,
        });
    }
  }
  events.push(...removalEvents(allRemoved, watched, (txid) => replacedBy.get(txid.toString('hex'))));
  await forgetReorged(trx, events);
  events.push(...mempoolEvents(rows, allRemoved, replacedBy));
  await appendEvents(trx, events);
  return { added: rows.length, removed: removedNow.count + conflictCount, unresolved };
}

/**
 * Creates the mempool sync; call `step()` from the run loop when the chain is at the node's tip.
 * Its decisions are the pure steps of indexer/mempool-plan.ts over one explicit state; this is
 * their I/O (the node, the tables, the log). The state is read and replaced only between awaits,
 * so a hint that arrives during a step is kept.
 */
export function createMempoolSync(deps: MempoolSyncDeps): MempoolSync {
  const { db, source, log } = deps;
  const policy: SyncPolicy = { maxHints: deps.maxHints ?? 100_000, graceMs: deps.removalGraceMs ?? 1000, checkMs: deps.checkMs ?? null };
  const stats: MempoolStats = { resyncs: 0, added: 0, removed: 0, ignoredHints: 0, drifts: 0 };
  let state = initialSyncState(policy, Date.now());
  /** When the idle check last failed (its warning is logged at most every ten minutes). */
  let checkFailedAt = 0;

  const commit = async (change: Change) =>
    db.transaction().execute(async (trx) => {
      if (deps.guard) await deps.guard(trx);
      return commitChange(trx, change, log);
    });

  async function resync(): Promise<void> {
    const snap = await source.getMempoolSnapshot();
    const { missing, gone } = planResync(await storedTxids(db), snap.txids);
    const fetched = await source.getMempoolTxs(missing);
    // (the snapshot settles every deferred removal: present ones stay, absent ones go now)
    const r = await commit({ add: fetched, remove: gone });
    stats.resyncs++;
    stats.added += r.added;
    stats.removed += r.removed;
    // The snapshot's sequence is the next one the node will assign: hints from it on are newer.
    // Inputs not known yet (the node is a block ahead of the index): try again next turn.
    state = afterResync(state, BigInt(snap.sequence), r.unresolved.length);
    log.info(
      { size: snap.txids.length, added: r.added, removed: r.removed, unresolved: r.unresolved.length, sequence: snap.sequence },
      'mempool resynced',
    );
  }

  /** The idle check; true when it found the index unlike the node twice and asked for a reseed. */
  async function check(): Promise<boolean> {
    const started = startCheck(state, Date.now(), policy);
    state = started.state;
    if (!started.compare) return false;
    let node: MempoolSummary | null;
    let ours: MempoolSummary | null;
    try {
      [node, ours] = await Promise.all([source.getMempoolSummary(), storedSummary(db)]);
    } catch (err) {
      // The check is a safety net: a node refusing getmempoolinfo (rpcwhitelist) must not fail turns.
      if (Date.now() - checkFailedAt > 600_000) log.warn({ err }, 'mempool idle check failed (getmempoolinfo?); trying again later');
      checkFailedAt = Date.now();
      return false;
    }
    const judged = judgeCheck(state, node, ours);
    state = judged.state;
    if (judged.drift) {
      stats.drifts++;
      log.warn({ node, index: ours }, 'mempool unlike the node with no message to explain it (zmq messages lost): full reconcile');
    }
    return judged.drift;
  }

  async function applyHints(): Promise<void> {
    const batch = state.hints.length;
    const taken = takeHints(state);
    state = taken.state;
    if (taken.intent.size === 0) return;
    // Verify every hint with the node: present in its mempool or not, now.
    const present = await source.getMempoolTxs([...taken.intent.keys()]);
    const plan = planVerified(state, taken.intent, new Set(present.keys()), Date.now(), policy);
    state = plan.state;
    stats.ignoredHints += plan.ignored;
    const r = await commit({ add: new Map(plan.add.map((txid) => [txid, present.get(txid)!])), remove: plan.remove });
    stats.added += r.added;
    stats.removed += r.removed;
    state = afterHints(state, r.unresolved.length);
    log.debug({ hints: batch, added: r.added, removed: r.removed, unresolved: r.unresolved.length }, 'mempool hints applied');
  }

  return {
    stats,
    get pending() {
      return nextWork(state, Date.now()) !== 'idle';
    },
    hint(h) {
      if (h.label === 'A' || h.label === 'R') log.debug({ label: h.label, txid: h.hash, seq: h.mempoolSeq?.toString() }, 'mempool hint');
      state = receiveHint(state, h, policy);
    },
    requestResync(reason) {
      if (!state.needResync) log.info({ reason }, 'mempool resync requested');
      state = requestResync(state);
    },
    async step() {
      switch (nextWork(state, Date.now())) {
        case 'resync':
          await resync();
          return true;
        case 'hints':
          await applyHints();
          return true;
        case 'remove': {
          const due = takeDue(state, Date.now());
          state = due.state;
          const r = await commit({ add: new Map(), remove: due.remove });
          stats.removed += r.removed;
          return true;
        }
        case 'check':
          return check();
        case 'idle':
          return false;
      }
    },
  };
}
