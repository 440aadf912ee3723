/**
 * The cached key verifier (src/auth/key-cache.ts) on a real Postgres: it serves verified keys
 * from memory, yet a key revoked by any path — another connection's SQL, the keys command's
 * function, by hand — is refused on the very next verification; losing the LISTEN connection
 * falls back to the database and recovers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { sql } from 'kysely';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { createKeyVerifier, type KeyVerifier } from '../../../src/auth/key-cache.js';
import { createApiKey, revokeApiKey } from '../../../src/auth/keys.js';
import { createDb } from '../../../src/db/connect.js';
import { waitFor } from '../../support/wait.js';

describe('cached key verifier', () => {
  let t: TestDatabase;
  let v: KeyVerifier;
  let other: pg.Client;
  beforeAll(async () => {
    t = await createMigratedDatabase('keycache');
    v = await createKeyVerifier({ db: t.db, databaseUrl: t.url });
    other = new pg.Client({ connectionString: t.url });
    await other.connect();
  });
  afterAll(async () => {
    await v?.close();
    await other?.end();
    await t?.drop();
  });

  it('serves a verified key from memory (a silent revocation is not seen until the entry expires)', async () => {
    expect(v.caching).toBe(true);
    const k = await createApiKey(t.db, { name: 'cached' });
    expect((await v.verify(k.key))?.id).toBe(k.id);
    await other.query('ALTER TABLE api_keys DISABLE TRIGGER api_keys_notify');
    try {
      await other.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [String(k.id)]);
      expect((await v.verify(k.key))?.id).toBe(k.id); // from memory: no lookup happened
    } finally {
      await other.query('ALTER TABLE api_keys ENABLE TRIGGER api_keys_notify');
    }
    const short = await createKeyVerifier({ db: t.db, databaseUrl: t.url, ttlMs: 200 });
    try {
      const k2 = await createApiKey(t.db, { name: 'ttl' });
      expect(await short.verify(k2.key)).not.toBeNull();
      await other.query('ALTER TABLE api_keys DISABLE TRIGGER api_keys_notify');
      await other.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [String(k2.id)]);
      await other.query('ALTER TABLE api_keys ENABLE TRIGGER api_keys_notify');
      await new Promise((r) => setTimeout(r, 250));
      expect(await short.verify(k2.key)).toBeNull();
    } finally {
      await short.close();
    }
  });

  it('refuses a key revoked by another connection on the very next verification, every time', async () => {
    for (let i = 0; i < 25; i++) {
      const k = await createApiKey(t.db, { name: `r${i}` });
      expect(await v.verify(k.key)).not.toBeNull();
      expect(await v.verify(k.key)).not.toBeNull(); // cached now
      await other.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [String(k.id)]);
      expect(await v.verify(k.key), `round ${i}`).toBeNull();
    }
  });

  it('refuses a key revoked through revokeApiKey from another pool (the keys command)', async () => {
    const k = await createApiKey(t.db, { name: 'cli' });
    expect(await v.verify(k.key)).not.toBeNull();
    const cli = createDb(t.url, { max: 1 });
    try {
      expect(await revokeApiKey(cli, k.prefix)).toBe(1);
    } finally {
      await cli.destroy();
    }
    expect(await v.verify(k.key)).toBeNull();
  });

  it('keeps answering right under concurrency: 300 verifications at once, then a revocation in the middle of another burst', async () => {
    const k = await createApiKey(t.db, { name: 'burst' });
    const first = await Promise.all(Array.from({ length: 300 }, () => v.verify(k.key)));
    expect(first.every((p) => p?.id === k.id)).toBe(true);
    const before = Array.from({ length: 100 }, () => v.verify(k.key));
    await other.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [String(k.id)]);
    const after = await Promise.all(Array.from({ length: 100 }, () => v.verify(k.key)));
    await Promise.all(before);
    expect(after.every((p) => p === null)).toBe(true);
  });

  it('falls back to the database while the LISTEN connection is gone, and comes back', async () => {
    const k = await createApiKey(t.db, { name: 'fallback' });
    expect(await v.verify(k.key)).not.toBeNull();
    await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'blockwire-api-keys' AND datname = current_database()`.execute(
      t.db,
    );
    await waitFor('caching off', () => !v.caching, 10_000);
    await other.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [String(k.id)]);
    expect(await v.verify(k.key)).toBeNull();
    await waitFor('caching on', () => v.caching, 10_000);
    const k2 = await createApiKey(t.db, { name: 'after reconnect' });
    expect(await v.verify(k2.key)).not.toBeNull();
    await other.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [String(k2.id)]);
    expect(await v.verify(k2.key)).toBeNull();
  });
});
