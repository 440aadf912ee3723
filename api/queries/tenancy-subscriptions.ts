/**
 * Data access for `subscriptions` (migrations/0002_tenancy.ts, 0020_streams.ts): a key's address
 * and chain subscriptions. API-facing functions filter by `key_id` in the query; deletion is
 * soft, which also takes the address out of the `watched_addresses` view the indexer reads.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database, SubscriptionsTable } from '../../src/db/schema.js';
import { ServiceError } from '../../src/errors.js';
import { lockApiKeyRow } from '../../src/db/queries/api-keys.js';

export type SubscriptionRow = Omit<SubscriptionsTable, 'created_at' | 'confirmations' | 'start_seq'> & {
  created_at: Date;
  confirmations: number;
  start_seq: bigint;
};

export type NewSubscription = {
  id: string;
  keyId: bigint;
  kind: 'address' | 'chain' | 'wallet';
  address: string | null;
  addrKey: string | null;
  /** The wallet of a `wallet` subscription. */
  walletId?: string | null;
  hookId: string | null;
  confirmations: number;
};

/**
 * Inserts a subscription whose `start_seq` is the newest outbox event at this moment, so it
 * receives events recorded after it was created, never older ones — or, when the key already has
 * the same live subscription (kind, address, wallet, hook, confirmations), returns that one.
 * Creations of one key run one at a time (its `api_keys` row locked), so neither identical
 * concurrent inserts nor the cap `max` (live subscriptions per key) can be passed: a new one when
 * the key already holds `max` throws ServiceError 409 ERR_LIMIT_REACHED (the unique index
 * `subscriptions_one_live` stays as the backstop).
 */
export async function insertSubscription(db: Kysely<Database>, s: NewSubscription, max = Infinity): Promise<SubscriptionRow> {
  return db.transaction().execute(async (tx) => {
    await lockApiKeyRow(tx, s.keyId);
    const existing = await tx
      .selectFrom('subscriptions')
      .selectAll()
      .where('key_id', '=', s.keyId)
      .where('kind', '=', s.kind)
      .where(sql<boolean>`addr_key IS NOT DISTINCT FROM ${s.addrKey}::uuid`)
      .where(sql<boolean>`wallet_id IS NOT DISTINCT FROM ${s.walletId ?? null}::text`)
      .where(sql<boolean>`hook_id IS NOT DISTINCT FROM ${s.hookId}::text`)
      .where('confirmations', '=', s.confirmations)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (existing) return existing;
    if ((await countLiveSubscriptions(tx, s.keyId)) >= max) {
      throw new ServiceError('ERR_LIMIT_REACHED', {
        message: `this key already has ${max} subscriptions (API_MAX_SUBSCRIPTIONS_PER_KEY): delete some first`,
      });
    }
    return tx
      .insertInto('subscriptions')
      .values({
        id: s.id,
        key_id: s.keyId,
        kind: s.kind,
        address: s.address,
        addr_key: s.addrKey,
        wallet_id: s.walletId ?? null,
        hook_id: s.hookId,
        confirmations: s.confirmations,
        deleted_at: null,
        start_seq: sql<bigint>`(SELECT coalesce(max(seq), 0) FROM outbox)`,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
}

async function countLiveSubscriptions(db: Kysely<Database>, keyId: bigint): Promise<number> {
  const r = await db
    .selectFrom('subscriptions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('key_id', '=', keyId)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Where a page of a key's subscriptions starts: after this one (creation order). */
export type SubscriptionPosition = { createdAt: Date; id: string };

/**
 * Up to `limit` of the key's live subscriptions, oldest first, after `after` when given. The
 * order is the creation time to the millisecond (what a JavaScript Date holds), then the id.
 */
export async function listSubscriptions(
  db: Kysely<Database>,
  keyId: bigint,
  page: { limit: number; after?: SubscriptionPosition },
): Promise<SubscriptionRow[]> {
  const at = sql`date_trunc('milliseconds', created_at)`;
  let q = db.selectFrom('subscriptions').selectAll().where('key_id', '=', keyId).where('deleted_at', 'is', null);
  if (page.after) q = q.where(sql<boolean>`(${at}, id) > (${page.after.createdAt}::timestamptz, ${page.after.id}::text)`);
  return q.orderBy(at).orderBy('id').limit(page.limit).execute();
}

/** Soft-deletes the key's subscription; false when it was not found. */
export async function deleteSubscription(db: Kysely<Database>, keyId: bigint, id: string): Promise<boolean> {
  const r = await db
    .updateTable('subscriptions')
    .set({ deleted_at: new Date() })
    .where('id', '=', id)
    .where('key_id', '=', keyId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}
