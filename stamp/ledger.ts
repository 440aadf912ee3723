/**
 * Signed stamp transactions (`stamp_txs` and its satellites): storing a signed transaction with
 * its inputs, change, stamp ids and coin locks in one Postgres transaction (before it is ever
 * broadcast), and the state changes that follow — accepted by the node, replaced by a fee bump,
 * confirmed, reorged out, abandoned. A stamp's current location follows its family's winning
 * version; every id ever issued stays in `stamp_outputs`.
 * @module
 */
import { type Selectable, sql } from 'kysely';
import type { BuiltTx, Coin } from './build.js';
import { coinKey, lockLeasedCoins, unlockFamily } from './coins.js';
import type { StampDb, StampTrx, StampTxsTable } from './tables.js';

/** A transaction ready to store: what it carries and where its coins come from. */
export type PlannedTx = {
  built: BuiltTx;
  /** txid of the family's first version (the tx's own txid for a new one). */
  family: Buffer;
  replaces: Buffer | null;
  /** Stamp of OP_RETURN output i. */
  stampIds: readonly bigint[];
};

/** A lease ran out and another batch took a coin or a stamp: nothing was stored. */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

/**
 * Stores `planned` transactions of one batch (or one bump), in order, in `trx`: the signed
 * bytes, inputs, change, stamp ids, coin locks (leases of `owner` become family locks; change of
 * an earlier transaction of the same batch is locked directly) and, for new stamps, their
 * placement. Throws LeaseLostError when a lease was lost.
 */
export async function storeSignedTxs(
  trx: StampTrx,
  owner: string,
  planned: readonly PlannedTx[],
  leased: ReadonlySet<string>,
): Promise<void> {
  for (const p of planned) {
    const { built } = p;
    // The same bytes may have been signed before and abandoned (their coins left the chain and
    // came back, or the node refused an identical bump): that row lives again. A live one means
    // two batches took the same coins, which the locks below refuse.
    const stored = await trx
      .insertInto('stamp_txs')
      .values({
        txid: built.txid,
        family: p.family,
        replaces: p.replaces,
        raw: built.raw,
        fee: built.fee,
        vsize: built.vsize,
        status: 'signed',
      })
      .onConflict((oc) =>
        oc
          .column('txid')
          .doUpdateSet({
            status: 'signed',
            family: p.family,
            replaces: p.replaces,
            created_at: sql<Date>`clock_timestamp()`,
            broadcast_at: null,
            last_broadcast_at: null,
            broadcast_height: null,
            confirmed_height: null,
            confirmed_hash: null,
            last_error: null,
            refusals: 0,
            refused_since: null,
          })
          .where('stamp_txs.status', '=', 'abandoned'),
      )
      .returning(sql<boolean>`xmax <> 0`.as('again'))
      .executeTakeFirst();
    if (!stored) throw new LeaseLostError(`transaction ${built.txid.toString('hex')} is already stored and live`);
    const fromLease = built.inputs.filter((c) => leased.has(coinKey(c)));
    if (!(await lockLeasedCoins(trx, owner, p.family, fromLease)))
      throw new LeaseLostError('a coin lease expired before the transaction was stored');
    const others = built.inputs.filter((c) => !leased.has(coinKey(c)));
    for (const c of others) {
      // Change of a transaction stored just before (same batch), or a coin the family already holds (a bump).
      const r = await sql`
        INSERT INTO stamp_coin_locks (txid, vout, owner, family) VALUES (${c.txid}, ${c.vout}, ${owner}::uuid, ${p.family})
        ON CONFLICT (txid, vout) DO UPDATE SET owner = stamp_coin_locks.owner
          WHERE stamp_coin_locks.family = ${p.family}
        RETURNING 1`.execute(trx);
      if (r.rows.length !== 1) throw new LeaseLostError(`coin ${c.txid.toString('hex')}:${c.vout} is held by another transaction`);
    }
    if (p.stampIds.length !== built.dataCount) throw new RangeError(`${p.stampIds.length} stamps for ${built.dataCount} OP_RETURN outputs`);
    if (!stored.again) {
      await trx
        .insertInto('stamp_tx_inputs')
        .values(
          built.inputs.map((c: Coin, vin) => ({
            txid: built.txid,
            vin,
            prev_txid: c.txid,
            prev_vout: c.vout,
            value: c.value,
            script: c.script,
          })),
        )
        .execute();
      if (built.change.length > 0) {
        await trx
          .insertInto('stamp_change')
          .values(built.change.map((c) => ({ txid: built.txid, vout: c.vout, value: c.value, script: c.script })))
          .execute();
      }
    }
    if (p.stampIds.length > 0) {
      // Same txid, same inputs and outputs; an OP_RETURN output of the earlier signing names the
      // stamp whose hash it carries, now perhaps another request with the same hash.
      await trx
        .insertInto('stamp_outputs')
        .values(p.stampIds.map((stamp_id, vout) => ({ txid: built.txid, vout, stamp_id })))
        .onConflict((oc) => oc.columns(['txid', 'vout']).doUpdateSet({ stamp_id: (eb) => eb.ref('excluded.stamp_id') }))
        .execute();
    }
    if (p.replaces === null) {
      const r = await sql<{ n: string }>`
        WITH done AS (
          UPDATE stamps s SET status = 'placed', txid = ${built.txid}, vout = x.vout, placed_at = now(), lease_owner = NULL, lease_until = NULL
          FROM unnest(${p.stampIds.map(String)}::int8[], ${p.stampIds.map((_, i) => i)}::int4[]) AS x(id, vout)
          WHERE s.id = x.id AND s.status = 'queued' AND s.lease_owner = ${owner}::uuid
          RETURNING 1)
        SELECT count(*)::text AS n FROM done`.execute(trx);
      if (Number(r.rows[0]?.n ?? 0) !== p.stampIds.length)
        throw new LeaseLostError('a stamp claim expired before the transaction was stored');
    }
  }
}

/** A stored transaction as the broadcaster and tracker see it (no raw bytes: read when sent). */
export type StampTxRow = Pick<Selectable<StampTxsTable>, (typeof TX_COLUMNS)[number]>;

const TX_COLUMNS = [
  'txid',
  'family',
  'replaces',
  'fee',
  'vsize',
  'status',
  'created_at',
  'last_broadcast_at',
  'broadcast_height',
  'confirmed_height',
  'confirmed_hash',
] as const;

/** Every version of every family the tracker must still watch (oldest first). */
export async function loadWatchedTxs(db: StampDb, tipHeight: number, finalityDepth: number): Promise<StampTxRow[]> {
  return db
    .selectFrom('stamp_txs')
    .select(TX_COLUMNS)
    .where((eb) =>
      eb.or([
        eb('status', 'in', ['signed', 'broadcast']),
        eb.and([eb('status', '=', 'confirmed'), eb('confirmed_height', '>', tipHeight - finalityDepth)]),
        eb.and([
          eb('status', '=', 'replaced'),
          eb('family', 'in', eb.selectFrom('stamp_txs as f').select('f.family').where('f.status', 'in', ['signed', 'broadcast'])),
        ]),
      ]),
    )
    .orderBy('created_at')
    .orderBy('txid')
    .execute();
}

/**
 * True once `txid` went to the node — accepted, or sent and refused for now (the tracker sends
 * it again) — or moved on since (confirmed, replaced): a stamp in it may be answered.
 */
export async function wasSent(db: StampDb, txid: Buffer): Promise<boolean> {
  const r = await db.selectFrom('stamp_txs').select(['status', 'last_broadcast_at']).where('txid', '=', txid).executeTakeFirst();
  return r !== undefined && (r.status !== 'signed' || r.last_broadcast_at !== null);
}

/** The node took `txid` (first broadcast, rebroadcast, or a replacement now in force). */
export async function markAccepted(db: StampDb, tx: { txid: Buffer; replaces: Buffer | null }, tipHeight: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const cur = await trx.selectFrom('stamp_txs').select(['status']).where('txid', '=', tx.txid).forUpdate().executeTakeFirst();
    if (!cur) return;
    if (cur.status === 'signed') {
      await trx
        .updateTable('stamp_txs')
        .set({
          status: 'broadcast',
          broadcast_at: new Date(),
          last_broadcast_at: new Date(),
          broadcast_height: tipHeight,
          last_error: null,
          refusals: 0,
          refused_since: null,
        })
        .where('txid', '=', tx.txid)
        .execute();
      if (tx.replaces) {
        await trx
          .updateTable('stamp_txs')
          .set({ status: 'replaced' })
          .where('txid', '=', tx.replaces)
          .where('status', 'in', ['signed', 'broadcast'])
          .execute();
        await repointStamps(trx, tx.txid);
      }
    } else if (cur.status === 'broadcast') {
      await trx
        .updateTable('stamp_txs')
        .set({ last_broadcast_at: new Date(), last_error: null, refusals: 0, refused_since: null })
        .where('txid', '=', tx.txid)
        .execute();
    }
  });
}

/**
 * Notes why the node refused `txid` (kept for logs and /healthz; the tracker tries again) and
 * counts the refusals in a row. Returns that count (0 when the row is gone).
 */
export async function recordBroadcastError(db: StampDb, txid: Buffer, message: string): Promise<number> {
  const r = await db
    .updateTable('stamp_txs')
    .set((eb) => ({
      last_error: message.slice(0, 500),
      last_broadcast_at: new Date(),
      refusals: eb('refusals', '+', 1),
      refused_since: eb.fn.coalesce('refused_since', sql<Date>`now()`),
    }))
    .where('txid', '=', txid)
    .returning('refusals')
    .executeTakeFirst();
  return r?.refusals ?? 0;
}

/** Points every stamp of the version `txid` at it (a bump took effect, or this version confirmed). */
export async function repointStamps(trx: StampTrx, txid: Buffer): Promise<void> {
  await sql`
    UPDATE stamps s SET txid = o.txid, vout = o.vout
    FROM stamp_outputs o
    WHERE o.txid = ${txid} AND o.stamp_id = s.id AND s.status = 'placed' AND (s.txid IS DISTINCT FROM o.txid OR s.vout IS DISTINCT FROM o.vout)`.execute(
    trx,
  );
}

/** The stamps a version carries, with the key that made each (for events). */
export async function stampsOfTx(
  trx: StampTrx | StampDb,
  txid: Buffer,
): Promise<{ stamp_id: bigint; key_id: bigint; hash: Buffer; vout: number }[]> {
  return trx
    .selectFrom('stamp_outputs as o')
    .innerJoin('stamps as s', 's.id', 'o.stamp_id')
    .select(['o.stamp_id', 's.key_id', 's.hash', 'o.vout'])
    .where('o.txid', '=', txid)
    .orderBy('o.vout')
    .execute();
}

/**
 * Abandons versions that can never confirm (their parent lost to a conflicting version, or the
 * node refuses them for good), and everything of ours hanging below them: their coins are freed
 * and their stamps go back to the queue for a new transaction (new ids; old ids keep resolving).
 * Returns the txids abandoned.
 */
export async function abandonTxs(trx: StampTrx, txids: readonly Buffer[]): Promise<Buffer[]> {
  const done: Buffer[] = [];
  let frontier = [...txids];
  while (frontier.length > 0) {
    const rows = await trx
      .updateTable('stamp_txs')
      .set({ status: 'abandoned' })
      .where('txid', 'in', frontier)
      .where('status', 'in', ['signed', 'broadcast'])
      .returning(['txid', 'family'])
      .execute();
    for (const r of rows) {
      done.push(r.txid);
      await settleFamily(trx, r.family);
    }
    if (rows.length === 0) break;
    const children = await trx
      .selectFrom('stamp_tx_inputs as i')
      .innerJoin('stamp_txs as t', 't.txid', 'i.txid')
      .select('t.txid')
      .distinct()
      .where(
        'i.prev_txid',
        'in',
        rows.map((r) => r.txid),
      )
      .where('t.status', 'in', ['signed', 'broadcast'])
      .execute();
    frontier = children.map((c) => c.txid);
  }
  return done;
}

/**
 * After a version of `family` is abandoned: with no live version left, the family's coins are
 * freed and its stamps queued again; otherwise only coins no live version spends are freed (the
 * extra input of a refused bump).
 */
async function settleFamily(trx: StampTrx, family: Buffer): Promise<void> {
  const live = await trx
    .selectFrom('stamp_txs')
    .select('txid')
    .where('family', '=', family)
    .where('status', 'in', ['signed', 'broadcast', 'confirmed'])
    .executeTakeFirst();
  if (live) {
    await pruneFamilyLocks(trx, family);
    return;
  }
  await unlockFamily(trx, family);
  await sql`
    UPDATE stamps s SET status = 'queued', txid = NULL, vout = NULL, placed_at = NULL, lease_owner = NULL, lease_until = NULL
    FROM stamp_txs t
    WHERE t.family = ${family} AND s.txid = t.txid AND s.status = 'placed'`.execute(trx);
}

/** Frees the coins `family` holds that none of its live (or confirmed) versions spends. */
export async function pruneFamilyLocks(trx: StampTrx, family: Buffer): Promise<void> {
  await sql`
    DELETE FROM stamp_coin_locks l WHERE l.family = ${family} AND NOT EXISTS (
      SELECT 1 FROM stamp_tx_inputs i JOIN stamp_txs t ON t.txid = i.txid
      WHERE i.prev_txid = l.txid AND i.prev_vout = l.vout AND t.family = ${family} AND t.status IN ('signed', 'broadcast', 'confirmed'))`.execute(
    trx,
  );
}

/** Live transactions (signed or broadcast) that spend an output of `txid`. */
export async function liveChildren(db: StampDb | StampTrx, txid: Buffer): Promise<Buffer[]> {
  const r = await db
    .selectFrom('stamp_tx_inputs as i')
    .innerJoin('stamp_txs as t', 't.txid', 'i.txid')
    .select('t.txid')
    .distinct()
    .where('i.prev_txid', '=', txid)
    .where('t.status', 'in', ['signed', 'broadcast'])
    .execute();
  return r.map((x) => x.txid);
}

/** Counts by status of transactions not yet settled, for /healthz. */
export async function countPendingTxs(db: StampDb): Promise<{ signed: number; broadcast: number }> {
  const rows = await db
    .selectFrom('stamp_txs')
    .select(['status', (eb) => eb.fn.countAll<string>().as('n')])
    .where('status', 'in', ['signed', 'broadcast'])
    .groupBy('status')
    .execute();
  const get = (s: string) => Number(rows.find((r) => r.status === s)?.n ?? 0);
  return { signed: get('signed'), broadcast: get('broadcast') };
}
