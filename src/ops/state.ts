/**
 * The deployment's state as Postgres holds it, read in one round trip: index tip, the indexer's
 * heartbeat (node tip, mode, last error; heartbeat.ts writes it), the relay's backlog in the
 * outbox, deliveries by status, stamps waiting and a stamp transaction the node keeps refusing. Shared by /metrics and `blockwire status`.
 * Every count uses a partial index or a bounded range, so a scrape stays cheap on a big index.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { hashToHex } from '../bitcoin/hash.js';
import { HEARTBEAT_KEY, type Heartbeat } from './heartbeat.js';

/** Counts stop here: a backlog of a million events is reported as 1,000,000. */
const COUNT_CAP = 1_000_000;

/**
 * Sends of one stamp transaction the node refused in a row after which the stamper is stuck: it
 * cannot make progress by itself (the transaction keeps its stamps and coins). A refusal that
 * clears (the node accepts it, or the tracker abandons a transaction whose coins left the chain
 * and rebuilds its stamps from good coins) resets the count.
 */
export const STAMP_STUCK_REFUSALS = 5;

/** The live stamp transaction the node has refused longest, when it is stuck. */
export type StuckStampTx = { txid: string; refusals: number; seconds: number; error: string | null };

/** Why the stamper cannot make progress, in one line (/healthz, `blockwire status`). */
export function stuckStampReason(s: StuckStampTx): string {
  return `the stamper cannot make progress: the node refused stamp transaction ${s.txid} ${s.refusals} times in a row over ${Math.round(s.seconds)} s (${s.error ?? 'no reason given'})`;
}

/** The stuck stamp transaction refused longest (at least STAMP_STUCK_REFUSALS times in a row), or null. */
export async function readStuckStampTx(db: Kysely<Database>): Promise<StuckStampTx | null> {
  const r = await sql<{ txid: Buffer; refusals: number; seconds: number; error: string | null }>`
    SELECT txid, refusals, extract(epoch FROM now() - refused_since)::float8 AS seconds, last_error AS error
    FROM stamp_txs WHERE status IN ('signed', 'broadcast') AND refusals >= ${STAMP_STUCK_REFUSALS}
    ORDER BY refused_since LIMIT 1`.execute(db);
  const row = r.rows[0];
  return row ? { txid: hashToHex(row.txid), refusals: row.refusals, seconds: Math.max(0, row.seconds), error: row.error } : null;
}

export type DeploymentState = {
  index: { height: number; hash: string | null; updatedAt: Date };
  /** The indexer's last report (absent before an indexer ever ran against this database). */
  heartbeat: (Heartbeat & { ageSeconds: number }) | null;
  outbox: {
    /** Relay cursor: the last event id handed to streams and queues. */
    cursor: bigint;
    /** Newest event id (0 when the outbox is empty). */
    newest: bigint;
    /** Events above the cursor (capped at COUNT_CAP). */
    pending: number;
    /** Age of the oldest of them in seconds (0 when none). */
    oldestPendingSeconds: number;
  };
  deliveries: { pending: number; failed24h: number; dead24h: number };
  stamps: { queued: number; unconfirmedTxs: number; stuck: StuckStampTx | null };
};

type Row = {
  tip_height: number;
  tip_hash: Buffer | null;
  tip_updated: Date;
  hb: Heartbeat | null;
  hb_age: number | null;
  cursor: string;
  newest: string;
  pending: string;
  oldest_age: number | null;
  d_pending: string;
  d_failed: string;
  d_dead: string;
  s_queued: string;
  s_txs: string;
};

/** Reads the state; throws when Postgres is unreachable or the schema is missing. */
export async function readDeploymentState(db: Kysely<Database>): Promise<DeploymentState> {
  const r = await sql<Row>`
    WITH cur AS (SELECT coalesce((SELECT seq FROM stream_state WHERE name = 'relay'), 0) AS seq)
    SELECT
      t.height AS tip_height, t.hash AS tip_hash, t.updated_at AS tip_updated,
      (SELECT value FROM sync_state WHERE key = ${HEARTBEAT_KEY}) AS hb,
      (SELECT extract(epoch FROM now() - updated_at)::float8 FROM sync_state WHERE key = ${HEARTBEAT_KEY}) AS hb_age,
      cur.seq::text AS cursor,
      coalesce((SELECT max(seq) FROM outbox), 0)::text AS newest,
      (SELECT count(*) FROM (SELECT 1 FROM outbox WHERE seq > cur.seq LIMIT ${COUNT_CAP}) p)::text AS pending,
      (SELECT extract(epoch FROM now() - min(created_at))::float8 FROM (SELECT created_at FROM outbox WHERE seq > cur.seq ORDER BY seq LIMIT 1) o) AS oldest_age,
      (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'pending' LIMIT ${COUNT_CAP}) p)::text AS d_pending,
      (SELECT count(*) FROM deliveries WHERE status <> 'pending' AND updated_at > now() - interval '24 hours' AND status = 'failed')::text AS d_failed,
      (SELECT count(*) FROM deliveries WHERE status <> 'pending' AND updated_at > now() - interval '24 hours' AND status = 'dead')::text AS d_dead,
      (SELECT count(*) FROM (SELECT 1 FROM stamps WHERE status = 'queued' LIMIT ${COUNT_CAP}) p)::text AS s_queued,
      (SELECT count(*) FROM stamp_txs WHERE status IN ('signed', 'broadcast'))::text AS s_txs
    FROM chain_tip t, cur
    WHERE t.id = 1
  `.execute(db);
  const row = r.rows[0];
  if (!row) throw new Error('chain_tip has no row: run `blockwire migrate`');
  const stuck = await readStuckStampTx(db);
  return {
    index: { height: row.tip_height, hash: row.tip_hash ? hashToHex(row.tip_hash) : null, updatedAt: row.tip_updated },
    heartbeat: row.hb ? { ...row.hb, ageSeconds: Math.max(0, row.hb_age ?? 0) } : null,
    outbox: {
      cursor: BigInt(row.cursor),
      newest: BigInt(row.newest),
      pending: Number(row.pending),
      oldestPendingSeconds: Math.max(0, row.oldest_age ?? 0),
    },
    deliveries: { pending: Number(row.d_pending), failed24h: Number(row.d_failed), dead24h: Number(row.d_dead) },
    stamps: { queued: Number(row.s_queued), unconfirmedTxs: Number(row.s_txs), stuck },
  };
}
