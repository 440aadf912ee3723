/**
 * Data access for `subscriptions` (migrations/0002_tenancy.ts, 0020_streams.ts): a key's address
 * and chain subscriptions. API-facing functions filter by `key_id` in the query; deletion is
 * soft, which also takes the address out of the `watched_addresses` view the indexer reads.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database, SubscriptionsTable } from '../schema.js';

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
 * the same live subscription (kind, address, wallet, hook, confirmations), returns that one: the
 * unique index `subscriptions_one_live` decides between concurrent inserts.
 */
export async function insertSubscription(db: Kysely<Database>, s: NewSubscription): Promise<SubscriptionRow> {
  for (;;) {
    const inserted = await db
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
      .onConflict((oc) => oc.doNothing())
      .returningAll()
      .executeTakeFirst();
    if (inserted) return inserted;
    // The same subscription exists (committed before this insert's conflict check) — unless it
    // was deleted since, and then the insert is tried again.
    const existing = await db
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
  }
}

/** The key's live subscriptions, oldest first. */
export async function listSubscriptions(db: Kysely<Database>, keyId: bigint): Promise<SubscriptionRow[]> {
  return db.selectFrom('subscriptions').selectAll().where('key_id', '=', keyId).where('deleted_at', 'is', null).orderBy('created_at').orderBy('id').execute();
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
