/**
 * Data access for `hooks` (migrations/0002_tenancy.ts, 0020_streams.ts): a key's delivery
 * targets. Every API-facing function filters by `key_id` in the query itself, so another key's
 * hook looks exactly like a missing one. Deleted hooks are kept (soft delete) for the delivery log.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { BreakerStateName, Database, HooksTable } from '../schema.js';
import { ServiceError } from '../../errors.js';
import { lockApiKeyRow } from './api-keys.js';

export type HookRow = Omit<HooksTable, 'created_at' | 'breaker_state'> & { created_at: Date; breaker_state: BreakerStateName };

/** A new hook (id and secret chosen by the caller). */
export type NewHook =
  | { id: string; keyId: bigint; type: 'http'; url: string; secret: string }
  | { id: string; keyId: bigint; type: 'sns'; topicArn: string; region: string };

/**
 * Inserts a hook unless the key already holds `max` live ones (ServiceError 409
 * ERR_LIMIT_REACHED); creations of one key run one at a time (its `api_keys` row locked).
 */
export async function insertHook(db: Kysely<Database>, h: NewHook, max = Infinity): Promise<HookRow> {
  return db.transaction().execute(async (tx) => {
    await lockApiKeyRow(tx, h.keyId);
    const live = await tx
      .selectFrom('hooks')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('key_id', '=', h.keyId)
      .where('deleted_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(live.n) >= max)
      throw new ServiceError('ERR_LIMIT_REACHED', {
        message: `this key already has ${max} hooks (API_MAX_HOOKS_PER_KEY): delete some first`,
      });
    return insertHookRow(tx, h);
  });
}

async function insertHookRow(db: Kysely<Database>, h: NewHook): Promise<HookRow> {
  return db
    .insertInto('hooks')
    .values({
      id: h.id,
      key_id: h.keyId,
      type: h.type,
      url: h.type === 'http' ? h.url : null,
      secret: h.type === 'http' ? h.secret : null,
      topic_arn: h.type === 'sns' ? h.topicArn : null,
      region: h.type === 'sns' ? h.region : null,
      disabled_at: null,
      disabled_reason: null,
      deleted_at: null,
      previous_secret: null,
      previous_secret_until: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The key's live hooks, oldest first. */
export async function listHooks(db: Kysely<Database>, keyId: bigint): Promise<HookRow[]> {
  return db
    .selectFrom('hooks')
    .selectAll()
    .where('key_id', '=', keyId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** One live hook of the key, or undefined (unknown, deleted or another key's). */
export async function findHook(db: Kysely<Database>, keyId: bigint, id: string): Promise<HookRow | undefined> {
  return db
    .selectFrom('hooks')
    .selectAll()
    .where('id', '=', id)
    .where('key_id', '=', keyId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** A hook by id whatever its key or state (delivery workers), with whether its key is revoked. */
export async function findHookById(db: Kysely<Database>, id: string): Promise<(HookRow & { key_revoked: boolean }) | undefined> {
  return db
    .selectFrom('hooks as h')
    .innerJoin('api_keys as k', 'k.id', 'h.key_id')
    .selectAll('h')
    .select(sql<boolean>`k.revoked_at IS NOT NULL`.as('key_revoked'))
    .where('h.id', '=', id)
    .executeTakeFirst();
}

/** How many live subscriptions push to the hook. */
export async function countHookSubscriptions(db: Kysely<Database>, hookId: string): Promise<number> {
  const r = await db
    .selectFrom('subscriptions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('hook_id', '=', hookId)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Soft-deletes the key's hook; false when it was not found. */
export async function deleteHook(db: Kysely<Database>, keyId: bigint, id: string): Promise<boolean> {
  const r = await db
    .updateTable('hooks')
    .set({ deleted_at: new Date() })
    .where('id', '=', id)
    .where('key_id', '=', keyId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/**
 * Replaces an http hook's secret; the old one keeps signing (second signature) until `graceUntil`.
 * Returns the updated row, or undefined when not found.
 */
export async function rotateHookSecret(
  db: Kysely<Database>,
  keyId: bigint,
  id: string,
  secret: string,
  graceUntil: Date,
): Promise<HookRow | undefined> {
  return db
    .updateTable('hooks')
    .set((eb) => ({ previous_secret: eb.ref('secret'), previous_secret_until: graceUntil, secret }))
    .where('id', '=', id)
    .where('key_id', '=', keyId)
    .where('type', '=', 'http')
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Clears the disabled mark (after the receiver is fixed); undefined when not found. */
export async function enableHook(db: Kysely<Database>, keyId: bigint, id: string): Promise<HookRow | undefined> {
  return db
    .updateTable('hooks')
    .set({ disabled_at: null, disabled_reason: null })
    .where('id', '=', id)
    .where('key_id', '=', keyId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Disables a hook (e.g. the receiver answered 410 Gone); no-op when already disabled. */
export async function disableHook(db: Kysely<Database>, id: string, reason: string): Promise<void> {
  await db
    .updateTable('hooks')
    .set({ disabled_at: new Date(), disabled_reason: reason })
    .where('id', '=', id)
    .where('disabled_at', 'is', null)
    .execute();
}

/** Records the delivery workers' breaker of a hook (shown on the hook; another worker adopts a pause). */
export async function setHookBreaker(db: Kysely<Database>, id: string, state: BreakerStateName, until: Date | null): Promise<void> {
  await db.updateTable('hooks').set({ breaker_state: state, breaker_until: until }).where('id', '=', id).execute();
}
