/**
 * API key change notifications: any UPDATE or DELETE of an `api_keys` row (revocation by the
 * `blockwire keys` command, by the API, or by hand in SQL) sends `NOTIFY blockwire_api_keys,
 * '<id>'`, so API processes drop that key from their verification cache at once.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION blockwire_api_keys_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('blockwire_api_keys', OLD.id::text);
      RETURN NULL;
    END $$;
    CREATE TRIGGER api_keys_notify AFTER UPDATE OR DELETE ON api_keys
      FOR EACH ROW EXECUTE FUNCTION blockwire_api_keys_notify();
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER api_keys_notify ON api_keys; DROP FUNCTION blockwire_api_keys_notify();`.execute(db);
}
