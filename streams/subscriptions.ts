/**
 * Loads live subscriptions as matching needs them (streams/match.ts `SubscriptionRef`): for a
 * batch of events (the relay, the hub's gap fill) or for one key (a resuming stream client).
 * Only the subscriptions a batch can match are read: those of its addresses and of the wallets
 * its rows lead, plus chain subscriptions when it has block events; never those of a revoked key.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import type { ChainEvent } from './events.js';
import { addressKeysOf, hasBlockEvents, walletIdsOf, type SubscriptionRef } from './match.js';

type Row = {
  id: string;
  key_id: bigint;
  kind: 'address' | 'chain' | 'wallet';
  addr_key: string | null;
  wallet_id: string | null;
  hook_id: string | null;
  hook_type: 'http' | 'sns' | null;
  hook_disabled: boolean | null;
  hook_deleted: boolean | null;
  hook_failing: boolean | null;
  confirmations: number;
  start_seq: bigint;
};

function toRef(r: Row): SubscriptionRef {
  const usable = r.hook_id !== null && r.hook_type !== null && r.hook_deleted === false;
  return {
    id: r.id,
    keyId: r.key_id,
    kind: r.kind,
    addrKey: r.addr_key,
    walletId: r.wallet_id,
    hookId: r.hook_id,
    hookType: usable ? r.hook_type : null,
    hookActive: usable && r.hook_disabled === false,
    hookFailing: r.hook_failing === true,
    confirmations: r.confirmations,
    startSeq: r.start_seq,
  };
}

function base(db: Kysely<Database>) {
  return (
    db
      .selectFrom('subscriptions as s')
      // A revoked key's subscriptions match nothing: no delivery is logged or queued for it.
      .innerJoin('api_keys as k', (j) => j.onRef('k.id', '=', 's.key_id').on('k.revoked_at', 'is', null))
      .leftJoin('hooks as h', 'h.id', 's.hook_id')
      .select([
        's.id',
        's.key_id',
        's.kind',
        's.addr_key',
        's.wallet_id',
        's.hook_id',
        'h.type as hook_type',
        sql<boolean | null>`h.disabled_at IS NOT NULL`.as('hook_disabled'),
        sql<boolean | null>`h.deleted_at IS NOT NULL`.as('hook_deleted'),
        sql<boolean | null>`h.breaker_state <> 'closed'`.as('hook_failing'),
        's.confirmations',
        's.start_seq',
      ])
      .where('s.deleted_at', 'is', null)
  );
}

/** The live subscriptions that events of this batch can match. */
export async function loadSubscriptionsFor(db: Kysely<Database>, events: readonly ChainEvent[]): Promise<SubscriptionRef[]> {
  const addrKeys = addressKeysOf(events);
  const walletIds = walletIdsOf(events);
  const chain = hasBlockEvents(events);
  if (addrKeys.length === 0 && walletIds.length === 0 && !chain) return [];
  const rows = await base(db)
    .where((eb) => {
      const any = [];
      if (addrKeys.length > 0) any.push(sql<boolean>`s.addr_key = ANY(${addrKeys}::uuid[])`);
      if (walletIds.length > 0) any.push(sql<boolean>`s.wallet_id = ANY(${walletIds}::text[])`);
      if (chain) any.push(eb('s.kind', '=', 'chain'));
      return eb.or(any);
    })
    .execute();
  return (rows as Row[]).map(toRef);
}

/** Every live subscription of one key. */
export async function loadKeySubscriptions(db: Kysely<Database>, keyId: bigint): Promise<SubscriptionRef[]> {
  const rows = await base(db).where('s.key_id', '=', keyId).execute();
  return (rows as Row[]).map(toRef);
}
