/**
 * The deployment's state as Postgres holds it, read in one round trip: index tip, the indexer's
 * heartbeat (node tip, mode, last error; heartbeat.ts writes it), the relay's backlog in the
 * outbox, deliveries by status and stamps waiting. Shared by /metrics and `blockwire status`.
 * Every count uses a partial index or a bounded range, so a scrape stays cheap on a big index.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { HEARTBEAT_KEY, type Heartbeat } from './heartbeat.js';

/** Counts stop here: a backlog of a million events is reported as 1,000,000. */
const COUNT_CAP = 1_000_000;

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
  stamps: { queued: number; unconfirmedTxs: number };
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
    stamps: { queued: Number(row.s_queued), unconfirmedTxs: Number(row.s_txs) },
  };
}
