/**
 * Data access for `api_keys` (migrations/0002_tenancy.ts): rows are found by the SHA-256 digest
 * of the key, never by the key. Functions take `db` or a transaction.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.js';

export type ApiKeyRow = {
  id: bigint;
  name: string;
  prefix: string;
  scopes: string[];
  rate_limit: number | null;
  created_at: Date;
  revoked_at: Date | null;
};

/** Inserts a key row; returns its id. */
export async function insertApiKey(
  db: Kysely<Database>,
  row: { name: string; keyHash: Buffer; prefix: string; scopes: string[]; rateLimit: number | null; secretBox?: Buffer | null },
): Promise<bigint> {
  const r = await db
    .insertInto('api_keys')
    .values({
      name: row.name,
      key_hash: row.keyHash,
      prefix: row.prefix,
      scopes: row.scopes,
      rate_limit: row.rateLimit,
      revoked_at: null,
      secret_box: row.secretBox ?? null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return r.id;
}

/** The row whose digest is `keyHash` (revoked or not), with the stored digest for comparison and its sealed secret. */
export async function findApiKeyByHash(
  db: Kysely<Database>,
  keyHash: Buffer,
): Promise<(ApiKeyRow & { key_hash: Buffer; secret_box: Buffer | null }) | undefined> {
  return db
    .selectFrom('api_keys')
    .select(['id', 'name', 'prefix', 'scopes', 'rate_limit', 'created_at', 'revoked_at', 'key_hash', 'secret_box'])
    .where('key_hash', '=', keyHash)
    .limit(1)
    .executeTakeFirst();
}

/** Every key, oldest first (no digests). */
export async function listApiKeyRows(db: Kysely<Database>): Promise<ApiKeyRow[]> {
  return db
    .selectFrom('api_keys')
    .select(['id', 'name', 'prefix', 'scopes', 'rate_limit', 'created_at', 'revoked_at'])
    .orderBy('id')
    .execute();
}

/** Marks keys revoked, selected by id or by display prefix; returns the ids revoked now. */
export async function revokeApiKeyRows(db: Kysely<Database>, by: { id: bigint } | { prefix: string }): Promise<bigint[]> {
  let q = db.updateTable('api_keys').set({ revoked_at: new Date() }).where('revoked_at', 'is', null);
  q = 'id' in by ? q.where('id', '=', by.id) : q.where('prefix', '=', by.prefix);
  const rows = await q.returning('id').execute();
  return rows.map((r) => r.id);
}

/** The sealed secrets of every signing key (to seal them again under another server key). */
export async function listSecretBoxes(db: Kysely<Database>): Promise<{ id: bigint; key_hash: Buffer; secret_box: Buffer }[]> {
  const rows = await db
    .selectFrom('api_keys')
    .select(['id', 'key_hash', 'secret_box'])
    .where('secret_box', 'is not', null)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ id: r.id, key_hash: r.key_hash, secret_box: r.secret_box! }));
}

/** Replaces a key's sealed secret (the same secret sealed under another server key). */
export async function updateSecretBox(db: Kysely<Database>, id: bigint, box: Buffer): Promise<void> {
  await db.updateTable('api_keys').set({ secret_box: box }).where('id', '=', id).execute();
}

/** Which of `ids` are keys that exist and are not revoked. */
export async function liveApiKeyIds(db: Kysely<Database>, ids: readonly bigint[]): Promise<Set<bigint>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .selectFrom('api_keys')
    .select('id')
    .where('id', 'in', [...ids])
    .where('revoked_at', 'is', null)
    .execute();
  return new Set(rows.map((r) => r.id));
}

/**
 * Locks the key's row until the end of `tx` (FOR NO KEY UPDATE): creations counted against a
 * per-key cap (subscriptions, hooks) run one at a time per key, so concurrent ones cannot pass it.
 */
export async function lockApiKeyRow(tx: Kysely<Database>, keyId: bigint): Promise<void> {
  await sql`SELECT 1 FROM api_keys WHERE id = ${keyId} FOR NO KEY UPDATE`.execute(tx);
}
