/**
 * Reading the outbox (docs/schema.md "Outbox") and the streams' own bookkeeping in
 * `stream_state`: the relay cursor (every event with `seq <=` it has been matched, enqueued and
 * published) and the pruning watermark (events with `seq <=` it are gone; resuming before it is
 * "cursor expired"), and the run id of the Redis server the delivery jobs were last enqueued on
 * (a relay that finds another one re-creates the jobs it may have lost). Because every outbox writer takes the ordering lock, rows with
 * `seq > cursor` read in order never skip a late commit.
 * @module
 */
import { sql, type Expression, type Kysely, type SqlBool } from 'kysely';
import type { Database } from '../src/db/schema.js';
import type { OutboxRow } from './events.js';

/** Up to `limit` outbox rows with `after < seq <= upTo`, in order. */
export async function readOutbox(db: Kysely<Database>, opts: { after: bigint; upTo?: bigint; limit: number }): Promise<OutboxRow[]> {
  let q = db.selectFrom('outbox').selectAll().where('seq', '>', opts.after);
  if (opts.upTo !== undefined) q = q.where('seq', '<=', opts.upTo);
  return q.orderBy('seq').limit(opts.limit).execute();
}

/** What one API key can see: its subscriptions' addresses, chain events if it has a chain subscription, its own key events. */
export type KeyFilter = { keyId: bigint; addrKeys: readonly string[]; chain: boolean };

/** Like `readOutbox`, restricted to rows that can concern one key (matching still decides). */
export async function readOutboxForKey(
  db: Kysely<Database>,
  filter: KeyFilter,
  opts: { after: bigint; upTo: bigint; limit: number },
): Promise<OutboxRow[]> {
  return db
    .selectFrom('outbox')
    .selectAll()
    .where('seq', '>', opts.after)
    .where('seq', '<=', opts.upTo)
    .where((eb) => {
      const any: Expression<SqlBool>[] = [eb('key_id', '=', filter.keyId)];
      if (filter.addrKeys.length > 0) any.push(sql<boolean>`addr_key = ANY(${[...filter.addrKeys]}::uuid[])`);
      if (filter.chain) any.push(eb('type', 'in', ['block.connected', 'block.disconnected']));
      return eb.or(any);
    })
    .orderBy('seq')
    .limit(opts.limit)
    .execute();
}

/** The relay cursor and the pruning watermark. */
export async function readStreamState(db: Kysely<Database>): Promise<{ relay: bigint; pruned: bigint }> {
  const rows = await db.selectFrom('stream_state').select(['name', 'seq']).execute();
  const get = (n: string) => rows.find((r) => r.name === n)?.seq ?? 0n;
  return { relay: get('relay'), pruned: get('pruned') };
}

/** The run id of the Redis server delivery jobs were last enqueued on (null: none recorded yet). */
export async function readRedisRunId(db: Kysely<Database>): Promise<string | null> {
  const row = await db.selectFrom('stream_state').select('redis_run_id').where('name', '=', 'relay').executeTakeFirst();
  return row?.redis_run_id ?? null;
}

/** Records the Redis server delivery jobs are enqueued on from now on. */
export async function recordRedisRunId(db: Kysely<Database>, runId: string): Promise<void> {
  await db.updateTable('stream_state').set({ redis_run_id: runId, updated_at: new Date() }).where('name', '=', 'relay').execute();
}

/**
 * The relay cursor and the indexed tip, in one statement: the state of the chain when the event
 * log was read up to that cursor (the tip is -1 and its hash null while nothing is indexed).
 */
export async function readRelayAndTip(db: Kysely<Database>): Promise<{ relay: bigint; tip: { height: number; hash: Buffer | null } }> {
  const r = await sql<{ relay: bigint | null; height: number | null; hash: Buffer | null }>`
    SELECT (SELECT seq FROM stream_state WHERE name = 'relay') AS relay, t.height, t.hash
      FROM (SELECT 1) one LEFT JOIN chain_tip t ON t.id = 1`.execute(db);
  const row = r.rows[0]!;
  return { relay: BigInt(row.relay ?? 0n), tip: { height: row.height ?? -1, hash: row.hash } };
}

/** The newest event id there is (recorded, or pruned since): a stream cannot resume after it. */
export async function readNewestEventId(db: Kysely<Database>): Promise<bigint> {
  const r = await sql<{
    newest: bigint;
  }>`SELECT GREATEST((SELECT coalesce(max(seq), 0) FROM outbox), (SELECT coalesce(max(seq), 0) FROM stream_state)) AS newest`.execute(db);
  return BigInt(r.rows[0]?.newest ?? 0n);
}

/** Moves the relay cursor forward to `seq` (never back). */
export async function advanceRelayCursor(db: Kysely<Database>, seq: bigint): Promise<void> {
  await db
    .updateTable('stream_state')
    .set({ seq: sql<bigint>`GREATEST(seq, ${seq.toString()}::int8)`, updated_at: new Date() })
    .where('name', '=', 'relay')
    .execute();
}

/**
 * Deletes events recorded before `before` that the relay has passed, and raises the pruning
 * watermark to the highest seq deleted. Returns how many rows went.
 */
export async function pruneOutbox(db: Kysely<Database>, before: Date, limit = 50_000): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const r = await sql<{ n: string; top: string | null }>`
      WITH gone AS (
        DELETE FROM outbox WHERE seq IN (
          SELECT seq FROM outbox
          WHERE created_at < ${before.toISOString()}::timestamptz
            AND seq <= (SELECT seq FROM stream_state WHERE name = 'relay')
          ORDER BY seq LIMIT ${limit})
        RETURNING seq)
      SELECT count(*)::text AS n, max(seq)::text AS top FROM gone`.execute(trx);
    const row = r.rows[0];
    if (row?.top) {
      await trx
        .updateTable('stream_state')
        .set({ seq: sql<bigint>`GREATEST(seq, ${row.top}::int8)`, updated_at: new Date() })
        .where('name', '=', 'pruned')
        .execute();
    }
    return Number(row?.n ?? 0);
  });
}
