/**
 * Signing keys: an API key may have a secret (Coinstack's HMAC authentication signs each request
 * with it). The server needs the secret itself to check signatures, so it is kept sealed with a
 * server key (src/auth/secret-box.ts: AES-256-GCM, bound to the row's key digest), never in
 * clear. A key with a secret is an access key: it names the key in a signed request and is not
 * accepted alone as a bearer token.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE api_keys ADD COLUMN secret_box bytea`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE api_keys DROP COLUMN secret_box`.execute(db);
}
