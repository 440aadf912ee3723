/**
 * The end of a reorged transaction's story. `undoBlock` remembers each transaction of a watched
 * address that it took out of the chain in `reorged_txs` (apply.ts). Core puts such a
 * transaction back in its mempool unless the new chain conflicts with it or it is otherwise
 * invalid; when it comes back, the mempool sync (tx.unconfirmed) or a block (tx.confirmed)
 * already tells the subscriber. This resolver, run by the loop when the index is at the node's
 * tip and the mempool sync has nothing pending, settles the rest, each turn in ONE Postgres
 * transaction with its outbox events:
 * - confirmed again (in `txs`) or in the indexed mempool: forgotten, no event;
 * - an input spent by a confirmed transaction (the double spend the new branch confirmed):
 *   `tx.replaced` with `replaced_by` at once;
 * - otherwise, once `graceMs` has passed since the undo and the node says the transaction is not
 *   in its mempool: `tx.replaced` by a mempool transaction spending one of its inputs, else
 *   `tx.dropped` (a parent that is gone, a coinbase, policy).
 * @module
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { hashToHex, hexToHash } from '../src/bitcoin/hash.js';
import type { Database } from '../src/db/schema.js';
import { decodeIns } from '../src/db/packed.js';
import type { Logger } from '../src/log.js';
import { removalEvents } from './writer/block-events.js';
import { settleReorged } from './writer/reorg-bookkeeping.js';
import type { MempoolSource } from './chain-source.js';
import { txNumOf } from '../src/db/tx-num.js';
import { appendEvents, loadWatches, type Watch } from './events.js';
import { addMempoolReplacers, mempoolTxidsAmong, toBuffer, type RemovedTouch } from './mempool-rows.js';
import { txidConfirmed, txRowsByTxid, txRowsByTxids, txRowsFrom, unspentAt } from '../src/db/tx-reads.js';

type Trx = Transaction<Database>;

/** Default grace period: Core may re-add a disconnected transaction a little after the reorg. */
const REORGED_GRACE_MS = 60_000;

export interface ReorgedDeps {
  db: Kysely<Database>;
  source: MempoolSource;
  log: Logger;
  guard?: (trx: Trx) => Promise<void>;
  /** How long after its undo a transaction absent from the node's mempool is dropped (ms). */
  graceMs?: number;
  /** The node holds a reorged transaction that the indexed mempool lacks: resync the mempool. */
  nodeHolds?: (txids: string[]) => void;
}

/**
 * Reorged transactions this resolver ended since start. (Those confirmed again or back in the
 * mempool leave reorged_txs with their own tx.confirmed / tx.unconfirmed, in apply and mempool.)
 */
export interface ReorgedStats {
  /** Ended with tx.replaced (a confirmed or mempool double spend). */
  replaced: number;
  /** Ended with tx.dropped. */
  dropped: number;
}

export interface ReorgedResolver {
  /** Settles what can be settled now; true when rows were resolved. */
  step(): Promise<boolean>;
  readonly stats: ReorgedStats;
}

type Row = {
  txid: Buffer;
  addr_key: string;
  address: string;
  received: bigint;
  sent: bigint;
  spends: Buffer;
  since_height: number;
  due: boolean;
};
type Outpoint = { txid: Buffer; vout: number };

const outpointsOf = (spends: Buffer): Outpoint[] => {
  const out: Outpoint[] = [];
  for (let i = 0; i + 36 <= spends.length; i += 36) out.push({ txid: spends.subarray(i, i + 32), vout: spends.readUInt32LE(i + 32) });
  return out;
};

/**
 * Confirmed transactions spending an input of `victims` (one row each): victim txid hex → the
 * spender's txid. Only outpoints of confirmed transactions that are no longer unspent can have
 * one, and it lies at or above the victim's `since_height` (below the fork both chains agree),
 * so only the blocks since the reorg are read.
 */
async function confirmedSpenders(trx: Trx, victims: readonly Row[]): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  const ops = victims.flatMap((v) => outpointsOf(v.spends).map((o) => ({ ...o, victim: v })));
  if (ops.length === 0) return found;
  const spent = await sql<{ i: string; tx_num: bigint }>`
    SELECT q.i::text AS i, t.tx_num
    FROM unnest(${ops.map((o) => toBuffer(o.txid))}::bytea[], ${ops.map((o) => o.vout)}::int4[]) WITH ORDINALITY AS q(txid, vout, i)
    JOIN LATERAL ${txRowsByTxid(sql.ref('q.txid'))} t ON true
    WHERE NOT EXISTS (${unspentAt(sql.ref('q.txid'), sql.ref('q.vout'))})`.execute(trx);
  if (spent.rows.length === 0) return found;
  const wanted = new Map<string, Row[]>();
  let from = Infinity;
  for (const r of spent.rows) {
    const o = ops[Number(r.i) - 1]!;
    const k = `${r.tx_num}:${o.vout}`;
    wanted.set(k, [...(wanted.get(k) ?? []), o.victim]);
    from = Math.min(from, o.victim.since_height);
  }
  let after = (txNumOf(from, 0) - 1).toString();
  for (;;) {
    const page = await sql<{ tx_num: bigint; txid: Buffer; ins: Buffer }>`
      SELECT t.tx_num, t.txid, t.ins FROM ${txRowsFrom(sql`${after}::int8 + 1`, null)} t ORDER BY t.tx_num LIMIT 5000`.execute(trx);
    for (const t of page.rows) {
      for (const ref of decodeIns(t.ins)) {
        const victims = wanted.get(`${ref.txNum}:${ref.vout}`);
        if (!victims) continue;
        for (const v of victims) if (!found.has(hashToHex(v.txid))) found.set(hashToHex(v.txid), t.txid);
        wanted.delete(`${ref.txNum}:${ref.vout}`);
      }
    }
    if (wanted.size === 0 || page.rows.length < 5000) return found;
    after = page.rows[page.rows.length - 1]!.tx_num.toString();
  }
}

/** Creates the resolver; the run loop calls `step()` when idle at the node's tip. */
export function createReorgedResolver(deps: ReorgedDeps): ReorgedResolver {
  const { db, source, log } = deps;
  const graceSecs = (deps.graceMs ?? REORGED_GRACE_MS) / 1000;
  const stats: ReorgedStats = { replaced: 0, dropped: 0 };

  return {
    stats,
    async step() {
      const pending = await sql<{ txid: Buffer; due: boolean }>`
        SELECT r.txid, bool_and(r.reorged_at <= now() - make_interval(secs => ${graceSecs}))
          AND NOT ${txidConfirmed(sql.ref('r.txid'))} AND NOT EXISTS (SELECT 1 FROM mempool_txs m WHERE m.txid = r.txid) AS due
        FROM reorged_txs r GROUP BY r.txid`.execute(db);
      if (pending.rows.length === 0) return false;
      // The node's word on those past their grace period, asked before the transaction opens.
      const dueIds = pending.rows.filter((r) => r.due).map((r) => hashToHex(r.txid));
      const inNode = dueIds.length > 0 ? await source.getMempoolTxs(dueIds) : new Map();
      const absent = new Set(dueIds.filter((t) => !inNode.has(t)));

      const result = await db.transaction().execute(async (trx) => {
        if (deps.guard) await deps.guard(trx);
        const rows = (
          await sql<Row>`
            SELECT txid, addr_key, address, received, sent, spends, since_height, reorged_at <= now() - make_interval(secs => ${graceSecs}) AS due
            FROM reorged_txs ORDER BY reorged_at, txid, addr_key FOR UPDATE`.execute(trx)
        ).rows;
        const byTx = new Map<string, Row>();
        for (const r of rows) if (!byTx.has(hashToHex(r.txid))) byTx.set(hashToHex(r.txid), r);
        const ids = [...byTx.values()].map((r) => r.txid);
        const confirmed = await sql<{ txid: Buffer }>`SELECT DISTINCT t.txid FROM ${txRowsByTxids(ids)} t`.execute(trx);
        const settled = new Set([...confirmed.rows.map((r) => r.txid), ...(await mempoolTxidsAmong(trx, ids))].map(hashToHex));
        const open = [...byTx.values()].filter((r) => !settled.has(hashToHex(r.txid)));
        const replacedBy = await confirmedSpenders(trx, open);
        // Past the grace period and not in the node's mempool: replaced by a mempool spender, else dropped.
        const gone = open.filter((r) => !replacedBy.has(hashToHex(r.txid)) && r.due && absent.has(hashToHex(r.txid)));
        await addMempoolReplacers(
          trx,
          gone.flatMap((r) => outpointsOf(r.spends).map((o) => ({ ...o, victim: hashToHex(r.txid) }))),
          replacedBy,
        );
        const ended = new Set([...replacedBy.keys(), ...gone.map((r) => hashToHex(r.txid))]);
        const resolved = [...settled, ...ended];
        const waiting = open
          .filter((r) => r.due && !ended.has(hashToHex(r.txid)) && !absent.has(hashToHex(r.txid)))
          .map((r) => hashToHex(r.txid));
        if (resolved.length === 0) return { resolved: 0, events: 0, waiting, counts: { replaced: 0, dropped: 0 } };

        const endRows = rows.filter((r) => ended.has(hashToHex(r.txid)));
        const watched = await loadWatches(
          trx,
          endRows.map((r) => r.addr_key),
        );
        // The address text as its tx.reorged carried it, for addresses still watched.
        const addressed = new Map<string, Watch>();
        for (const r of endRows) {
          const w = watched.get(r.addr_key);
          if (w && !addressed.has(r.addr_key)) addressed.set(r.addr_key, { ...w, address: r.address });
        }
        const touches: RemovedTouch[] = endRows.map((r) => ({ txid: r.txid, key: r.addr_key, received: r.received, sent: r.sent }));
        const events = removalEvents(touches, addressed, (txid) => replacedBy.get(hashToHex(txid)));
        await settleReorged(
          trx,
          resolved.map((h) => toBuffer(hexToHash(h))),
        );
        await appendEvents(trx, events);
        const counts = { replaced: replacedBy.size, dropped: ended.size - replacedBy.size };
        return { resolved: resolved.length, events: events.length, waiting, counts };
      });
      // Counted once committed.
      stats.replaced += result.counts.replaced;
      stats.dropped += result.counts.dropped;
      if (result.waiting.length > 0) deps.nodeHolds?.(result.waiting);
      if (result.resolved > 0) log.info({ resolved: result.resolved, events: result.events }, 'reorged transactions settled');
      return result.resolved > 0;
    },
  };
}
