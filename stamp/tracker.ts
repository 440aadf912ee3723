/**
 * The stamp tracker: one leader among all stamper processes (a lease row) watches every stored
 * transaction against Blockwire's index each turn. It sends stored-but-unsent ones (after a
 * crash: the same bytes), rebroadcasts ones the mempool lost, records confirmations and reorgs
 * (with stamp.confirmed / stamp.unconfirmed events in the same Postgres transaction), settles a
 * family when any version confirms (the others are replaced, ours spending them abandoned), and
 * fee-bumps a chain tip unconfirmed for STAMP_BUMP_AFTER_BLOCKS blocks.
 * @module
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { hashToHex } from '../src/bitcoin/hash.js';
import { bumpStampTx, type BumpDeps } from './bump.js';
import { appendStampEvents } from './events.js';
import {
  abandonTxs,
  liveChildren,
  loadWatchedTxs,
  markAccepted,
  pruneFamilyLocks,
  recordBroadcastError,
  repointStamps,
  type StampTxRow,
} from './ledger.js';
import { txsWithGoneInputs } from './coins.js';
import { broadcastRaw } from './node.js';
import { STAMP_STUCK_REFUSALS } from '../src/ops/state.js';
import type { StampDb } from './tables.js';
import { txRowsByTxids } from '../src/db/tx-reads.js';
import { sqlTxNumHeight } from '../src/db/tx-num.js';

/** Confirmed transactions are watched this many blocks deep for reorgs. */
const REORG_WATCH_DEPTH = 12;

export type TrackerSettings = {
  pollMs: number;
  bumpAfterBlocks: number;
  /** Resend an unconfirmed transaction the index's mempool does not hold after this long. */
  rebroadcastMs: number;
};

export type TrackerDeps = BumpDeps & {
  settings: TrackerSettings;
  fees: () => Promise<{ ratePerKvB: bigint; incrementalPerKvB: bigint }>;
};

export type Tracker = {
  /** One pass (tests and benchmarks call it directly). Returns false when another process leads. */
  turn(): Promise<boolean>;
  stop(): Promise<void>;
};

type Tip = { height: number; hash: Buffer | null };

async function readTip(db: StampDb): Promise<Tip> {
  const r = await db.selectFrom('chain_tip').select(['height', 'hash']).where('id', '=', 1).executeTakeFirst();
  return r ?? { height: -1, hash: null };
}

/** Takes or renews the leader lease; false when a live other process holds it. */
async function lead(db: StampDb, me: string, ttlMs: number): Promise<boolean> {
  const r = await sql`
    UPDATE stamp_leader SET owner = ${me}::uuid, until = now() + make_interval(secs => ${ttlMs / 1000})
    WHERE id = 1 AND (owner IS NULL OR owner = ${me}::uuid OR until < now())
    RETURNING 1`.execute(db);
  return r.rows.length === 1;
}

async function resign(db: StampDb, me: string): Promise<void> {
  await db.updateTable('stamp_leader').set({ owner: null, until: null }).where('id', '=', 1).where('owner', '=', me).execute();
}

/** Which of `txids` the index has in a block (height, block hash). */
async function findConfirmed(db: StampDb, txids: Buffer[]): Promise<Map<string, { height: number; hash: Buffer }>> {
  const r = await sql<{ txid: Buffer; height: number; hash: Buffer }>`
    SELECT t.txid, b.height, b.hash FROM ${txRowsByTxids(txids)} t JOIN blocks b ON b.height = ${sqlTxNumHeight(sql.ref('t.tx_num'))}`.execute(
    db,
  );
  return new Map(r.rows.map((x) => [x.txid.toString('hex'), { height: x.height, hash: x.hash }]));
}

async function findInMempool(db: StampDb, txids: Buffer[]): Promise<Set<string>> {
  const r = await sql<{ txid: Buffer }>`SELECT txid FROM mempool_txs WHERE txid = ANY(${txids}::bytea[])`.execute(db);
  return new Set(r.rows.map((x) => x.txid.toString('hex')));
}

export function createTracker(deps: TrackerDeps): Tracker {
  const { db, settings } = deps;
  const log = deps.log.child({ component: 'stamp.tracker' });
  const me = randomUUID();
  const ttlMs = Math.min(60_000, Math.max(1000, settings.pollMs * 3));
  let firstTurn = true;
  let stopped = false;

  /** Sends `v`'s stored bytes; false when it was abandoned (it can never confirm). */
  async function send(v: StampTxRow, tip: Tip): Promise<boolean> {
    const row = await db.selectFrom('stamp_txs').select('raw').where('txid', '=', v.txid).executeTakeFirstOrThrow();
    const outcome = await broadcastRaw(deps.node, row.raw);
    const txid = hashToHex(v.txid);
    switch (outcome.kind) {
      case 'accepted':
        await markAccepted(db, v, tip.height);
        if (v.status === 'signed')
          log.info({ txid, replaces: v.replaces ? hashToHex(v.replaces) : undefined }, 'stored stamp transaction broadcast');
        return true;
      case 'in-chain':
        return true; // the index will show it
      case 'unavailable':
        log.warn({ txid, message: outcome.message }, 'node unavailable; stamp transaction will be sent again');
        return true;
      case 'missing-inputs': {
        const deadParent = await db
          .selectFrom('stamp_tx_inputs as i')
          .innerJoin('stamp_txs as p', 'p.txid', 'i.prev_txid')
          .select('p.txid')
          .where('i.txid', '=', v.txid)
          .where('p.status', 'in', ['replaced', 'abandoned'])
          .executeTakeFirst();
        if (deadParent) {
          const gone = await db.transaction().execute((trx) => abandonTxs(trx, [v.txid]));
          log.warn(
            { txid, abandoned: gone.map(hashToHex) },
            'stamp transaction spends a version that lost; abandoned, its stamps are queued again',
          );
          return false;
        }
        if ((await txsWithGoneInputs(db)).has(v.txid.toString('hex'))) {
          // The index agrees: a coin it spends left the chain (a reorg) or was spent by another
          // transaction. It can never confirm: its stamps go into a transaction of good coins.
          const gone = await db.transaction().execute((trx) => abandonTxs(trx, [v.txid]));
          log.warn(
            { txid, abandoned: gone.map(hashToHex) },
            'stamp transaction spends a coin that left the chain; abandoned, its stamps are queued again',
          );
          return false;
        }
        // The index has not seen what the node saw yet (it follows the node): sent again later.
        refused(
          txid,
          await recordBroadcastError(db, v.txid, outcome.message),
          outcome.message,
          'stamp transaction inputs missing at the node; will retry',
        );
        return true;
      }
      case 'rejected':
        if (v.replaces && v.status === 'signed') {
          await db.transaction().execute((trx) => abandonTxs(trx, [v.txid]));
          log.warn({ txid, message: outcome.message }, 'stored fee bump refused by the node; the original stays');
          return false;
        }
        refused(
          txid,
          await recordBroadcastError(db, v.txid, outcome.message),
          outcome.message,
          'node refuses a stamp transaction; will retry',
        );
    }
    return true;
  }

  /** Logs a refusal when it starts and when it makes the stamper stuck, not at every retry. */
  function refused(txid: string, times: number, message: string, what: string): void {
    if (times === 1) log.warn({ txid, message }, what);
    else if (times === STAMP_STUCK_REFUSALS)
      log.error(
        { txid, message, refusals: times },
        'stamp transaction refused by the node again and again: the stamper cannot make progress (see /healthz)',
      );
    else log.debug({ txid, message, refusals: times }, what);
  }

  // Every transition is a compare-and-set on the state this turn read: should two processes
  // ever track at once (a turn outliving the leader lease), only one records it and its events.
  async function settleConfirmed(conf: StampTxRow, versions: StampTxRow[], at: { height: number; hash: Buffer }, tip: Tip): Promise<void> {
    const done = await db.transaction().execute(async (trx) => {
      const moved = await trx
        .updateTable('stamp_txs')
        .set({ status: 'confirmed', confirmed_height: at.height, confirmed_hash: at.hash, last_error: null })
        .where('txid', '=', conf.txid)
        .where('status', '=', conf.status)
        .where((eb) => (conf.confirmed_hash ? eb('confirmed_hash', '=', conf.confirmed_hash) : eb('confirmed_hash', 'is', null)))
        .returning('txid')
        .executeTakeFirst();
      if (!moved) return false;
      if (conf.status === 'confirmed') await appendStampEvents(trx, 'stamp.unconfirmed', conf.txid, null, 0);
      const losers = versions.filter((v) => v !== conf && (v.status === 'signed' || v.status === 'broadcast')).map((v) => v.txid);
      if (losers.length > 0) {
        await trx
          .updateTable('stamp_txs')
          .set({ status: 'replaced' })
          .where('txid', 'in', losers)
          .where('status', 'in', ['signed', 'broadcast'])
          .execute();
        const children = (await Promise.all(losers.map((l) => liveChildren(trx, l)))).flat();
        if (children.length > 0) await abandonTxs(trx, children);
        await pruneFamilyLocks(trx, conf.family);
      }
      await repointStamps(trx, conf.txid);
      await appendStampEvents(trx, 'stamp.confirmed', conf.txid, at, tip.height - at.height + 1);
      return true;
    });
    if (done) log.info({ txid: hashToHex(conf.txid), height: at.height }, 'stamp transaction confirmed');
  }

  async function unconfirm(was: StampTxRow, tip: Tip): Promise<void> {
    const done = await db.transaction().execute(async (trx) => {
      const moved = await trx
        .updateTable('stamp_txs')
        .set({ status: 'broadcast', confirmed_height: null, confirmed_hash: null, broadcast_height: tip.height, last_broadcast_at: null })
        .where('txid', '=', was.txid)
        .where('status', '=', 'confirmed')
        .where('confirmed_hash', '=', was.confirmed_hash!)
        .returning('txid')
        .executeTakeFirst();
      if (moved) await appendStampEvents(trx, 'stamp.unconfirmed', was.txid, null, 0);
      return moved !== undefined;
    });
    if (!done) return;
    log.warn({ txid: hashToHex(was.txid), height: was.confirmed_height }, 'stamp transaction left the main chain (reorg)');
    Object.assign(was, {
      status: 'broadcast',
      broadcast_height: tip.height,
      last_broadcast_at: null,
      confirmed_height: null,
      confirmed_hash: null,
    });
  }

  async function trackFamily(
    versions: StampTxRow[],
    confirmed: Map<string, { height: number; hash: Buffer }>,
    mempool: Set<string>,
    tip: Tip,
  ): Promise<void> {
    const conf = versions.find((v) => confirmed.has(v.txid.toString('hex')));
    if (conf) {
      const at = confirmed.get(conf.txid.toString('hex'))!;
      if (conf.status !== 'confirmed' || !conf.confirmed_hash?.equals(at.hash)) await settleConfirmed(conf, versions, at, tip);
      return;
    }
    const was = versions.find((v) => v.status === 'confirmed');
    if (was) await unconfirm(was, tip);
    const live = versions.filter((v) => v.status === 'signed' || v.status === 'broadcast');
    const now = Date.now();
    for (const v of live) {
      const lost =
        !mempool.has(v.txid.toString('hex')) &&
        (firstTurn || !v.last_broadcast_at || now - v.last_broadcast_at.getTime() >= settings.rebroadcastMs);
      if ((v.status === 'signed' || lost) && !(await send(v, tip))) return; // abandoned: nothing to bump
    }
    if (live.some((v) => v.status === 'signed')) return; // a stored replacement still waits for the node
    for (const v of live) {
      if (v.status !== 'broadcast' || v.broadcast_height === null || tip.height - v.broadcast_height < settings.bumpAfterBlocks) continue;
      const fees = await deps.fees();
      const r = await bumpStampTx(deps, v, { targetRatePerKvB: fees.ratePerKvB, incrementalPerKvB: fees.incrementalPerKvB }, tip.height);
      if (r.kind === 'refused') log.warn({ txid: hashToHex(v.txid), reason: r.reason }, 'stamp transaction stuck; fee bump not possible');
      else if (r.kind === 'skipped') log.debug({ txid: hashToHex(v.txid), reason: r.reason }, 'fee bump skipped');
    }
  }

  async function runTurn(): Promise<boolean> {
    if (!(await lead(db, me, ttlMs))) return false;
    const tip = await readTip(db);
    const watched = await loadWatchedTxs(db, tip.height, REORG_WATCH_DEPTH);
    if (watched.length > 0) {
      const ids = watched.map((t) => t.txid);
      const [confirmed, mempool] = await Promise.all([findConfirmed(db, ids), findInMempool(db, ids)]);
      const families = new Map<string, StampTxRow[]>();
      for (const t of watched) {
        const k = t.family.toString('hex');
        const list = families.get(k);
        if (list) list.push(t);
        else families.set(k, [t]);
      }
      for (const versions of families.values()) {
        if (stopped) break;
        try {
          await trackFamily(versions, confirmed, mempool, tip);
        } catch (err) {
          log.error({ err, family: hashToHex(versions[0]!.family) }, 'stamp tracking failed for a transaction; retrying next turn');
        }
      }
    }
    firstTurn = false;
    return true;
  }

  // Turns never overlap (the loop's and a caller's).
  let last: Promise<unknown> = Promise.resolve();
  const turn = (): Promise<boolean> => {
    const next = last.then(runTurn, runTurn);
    last = next.catch(() => undefined);
    return next;
  };

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = turn()
        .catch((err) => log.error({ err }, 'stamp tracker turn failed'))
        .finally(schedule);
    }, settings.pollMs);
  };
  running = turn()
    .catch((err) => log.error({ err }, 'stamp tracker turn failed'))
    .finally(schedule);

  return {
    turn,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
      await resign(db, me).catch(() => undefined);
    },
  };
}
