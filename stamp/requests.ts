/**
 * Stamp requests (`stamps` table): insert with an optional Idempotency-Key, claim queued ones
 * for a batch under a lease (a crashed batcher's claims expire), give claims back, drop the ones
 * the wallet cannot pay, and resolve a stamp id to its stamp for the key that made it.
 * Data access only: functions taking `db` or a transaction.
 * @module
 */
import { sql } from 'kysely';
import type { StampDb, StampTrx } from './tables.js';

export type StampRow = {
  id: bigint;
  key_id: bigint;
  hash: Buffer;
  status: 'queued' | 'placed';
  txid: Buffer | null;
  vout: number | null;
  created_at: Date;
};

const COLUMNS = ['id', 'key_id', 'hash', 'status', 'txid', 'vout', 'created_at'] as const;

/**
 * Persists a request. With an idempotency key already used by this API key, returns the existing
 * stamp instead (`created: false`); the caller compares hashes.
 */
export async function insertStampRequest(
  db: StampDb,
  req: { keyId: bigint; hash: Buffer; idempotencyKey?: string | undefined },
): Promise<{ row: StampRow; created: boolean }> {
  const idem = req.idempotencyKey ?? null;
  const inserted = await db
    .insertInto('stamps')
    .values({ key_id: req.keyId, hash: req.hash, idempotency_key: idem })
    .onConflict((oc) => oc.columns(['key_id', 'idempotency_key']).where('idempotency_key', 'is not', null).doNothing())
    .returning(COLUMNS)
    .executeTakeFirst();
  if (inserted) return { row: inserted, created: true };
  const existing = await db
    .selectFrom('stamps')
    .select(COLUMNS)
    .where('key_id', '=', req.keyId)
    .where('idempotency_key', '=', idem)
    .executeTakeFirst();
  if (!existing) {
    // The other request's stamp was dropped (wallet could not pay) between the two statements.
    return insertStampRequest(db, req);
  }
  return { row: existing, created: false };
}

/** A stamp by id (undefined once dropped). */
export async function findStamp(db: StampDb, id: bigint): Promise<StampRow | undefined> {
  return db.selectFrom('stamps').select(COLUMNS).where('id', '=', id).executeTakeFirst();
}

export type ClaimedStamp = { id: bigint; hash: Buffer };

/** Claims up to `limit` queued stamps (oldest first) whose claim is free or expired. */
export async function claimQueuedStamps(db: StampDb, owner: string, leaseMs: number, limit: number): Promise<ClaimedStamp[]> {
  const r = await sql<ClaimedStamp>`
    UPDATE stamps SET lease_owner = ${owner}::uuid, lease_until = now() + make_interval(secs => ${leaseMs / 1000})
    WHERE id IN (
      SELECT id FROM stamps
      WHERE status = 'queued' AND (lease_until IS NULL OR lease_until < now())
      ORDER BY id LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING id, hash`.execute(db);
  return r.rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Gives back claims (the stamps stay queued for the next batch). */
export async function releaseStampClaims(db: StampDb | StampTrx, owner: string, ids?: readonly bigint[]): Promise<void> {
  let q = db
    .updateTable('stamps')
    .set({ lease_owner: null, lease_until: null })
    .where('lease_owner', '=', owner)
    .where('status', '=', 'queued');
  if (ids) {
    if (ids.length === 0) return;
    q = q.where('id', 'in', [...ids]);
  }
  await q.execute();
}

/** Drops claimed stamps the wallet cannot pay for: they were never accepted. Returns the ids dropped. */
export async function dropUnpayableStamps(db: StampDb, owner: string, ids: readonly bigint[]): Promise<bigint[]> {
  if (ids.length === 0) return [];
  // A stamp that was placed before (queued again when its transaction could no longer confirm)
  // was accepted: it waits for coins, it is never dropped.
  const r = await db
    .deleteFrom('stamps')
    .where('id', 'in', [...ids])
    .where('lease_owner', '=', owner)
    .where('status', '=', 'queued')
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('stamp_outputs as o').select('o.txid').whereRef('o.stamp_id', '=', 'stamps.id'))),
    )
    .returning('id')
    .execute();
  return r.map((x) => x.id);
}

/** Counts of stamps waiting for a transaction. */
export async function countQueuedStamps(db: StampDb): Promise<number> {
  const r = await db
    .selectFrom('stamps')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('status', '=', 'queued')
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export type StampLocation = {
  stamp: StampRow;
  /** Every (txid, vout) the stamp has had, the asked one included. */
  outputs: { txid: Buffer; vout: number }[];
};

/** The stamp that `(txid, vout)` names, if it belongs to `keyId`, with all its ids. */
export async function findStampByOutput(db: StampDb, keyId: bigint, txid: Buffer, vout: number): Promise<StampLocation | undefined> {
  const stamp = await db
    .selectFrom('stamp_outputs as o')
    .innerJoin('stamps as s', 's.id', 'o.stamp_id')
    .select(['s.id', 's.key_id', 's.hash', 's.status', 's.txid', 's.vout', 's.created_at'])
    .where('o.txid', '=', txid)
    .where('o.vout', '=', vout)
    .where('s.key_id', '=', keyId)
    .executeTakeFirst();
  if (!stamp) return undefined;
  const outputs = await db.selectFrom('stamp_outputs').select(['txid', 'vout']).where('stamp_id', '=', stamp.id).execute();
  return { stamp, outputs };
}
