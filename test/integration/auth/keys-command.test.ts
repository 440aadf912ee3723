/**
 * `blockwire keys` as an operator runs it (a child process on DATABASE_URL): `create` prints the
 * key alone on stdout, `list` shows it without the secret, `revoke` by prefix makes it invalid;
 * `create --secret` prints an access key and a secret key, the secret sealed under a server key
 * the command creates (0600 file) or takes from BLOCKWIRE_SERVER_SECRET_KEYS; `server-key
 * --rotate` and `reseal` move every secret under a new server key; usage errors exit 2.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { projectRoot } from '../../support/fixtures.js';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { findSigningKey, verifyApiKey } from '../../../src/auth/keys.js';
import { boxKeyId, parseKeyring } from '../../../src/auth/secret-box.js';

function blockwire(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(projectRoot, 'bin', 'blockwire.js'), ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

describe('blockwire keys', () => {
  let t: TestDatabase;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await createMigratedDatabase('keyscmd');
    env = { DATABASE_URL: t.url, LOG_LEVEL: 'silent' };
  });
  afterAll(async () => t?.drop());

  it('create prints the key alone; list shows it without the secret; revoke ends it', async () => {
    const created = await blockwire(['keys', 'create', '--name', 'ops key', '--scope', 'read'], env);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^bw_[A-Za-z0-9_-]{49}\n$/);
    const key = created.stdout.trim();
    const principal = await verifyApiKey(t.db, key);
    expect(principal).toMatchObject({ name: 'ops key', scopes: ['read'] });

    const list = await blockwire(['keys', 'list'], env);
    expect(list.code).toBe(0);
    const [header, ...rows] = list.stdout.trimEnd().split('\n');
    expect(header).toBe('id\tprefix\tname\tscopes\trate_limit\tcreated\tstatus');
    expect(rows.find((r) => r.includes(principal!.prefix))!.split('\t')).toEqual([
      expect.stringMatching(/^\d+$/),
      principal!.prefix,
      'ops key',
      'read',
      '-',
      expect.stringMatching(/^\d{4}-/),
      'active',
    ]);
    expect(list.stdout).toContain(principal!.prefix);
    expect(list.stdout).toContain('ops key');
    expect(list.stdout).not.toContain(key);

    const revoked = await blockwire(['keys', 'revoke', principal!.prefix], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(await verifyApiKey(t.db, key)).toBeNull();
    expect((await blockwire(['keys', 'revoke', principal!.prefix], env)).code).toBe(1);
    expect((await blockwire(['keys', 'list'], env)).stdout).toMatch(/revoked \d{4}-/);
  });

  it('create --secret prints the access key then the secret key; the secret opens only with the server key', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'blockwire-keys-'));
    const fileEnv = { ...env, BLOCKWIRE_DATA_DIR: dataDir };
    const created = await blockwire(['keys', 'create', '--name', 'signer', '--secret'], fileEnv);
    expect(created.code, created.stderr).toBe(0);
    const lines = created.stdout.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^bw_[A-Za-z0-9_-]{49}$/);
    expect(lines[1]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(lines[2]).toBe('');
    const [access, secret] = lines as [string, string];
    expect(created.stderr).not.toContain(secret);
    const file = join(dataDir, 'server-keys');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const ring = parseKeyring(await readFile(file, 'utf8'));
    expect(await findSigningKey(t.db, ring, access)).toMatchObject({ secret, principal: { name: 'signer' } });
    expect(await findSigningKey(t.db, parseKeyring(`other:${Buffer.alloc(32, 1).toString('base64')}`), access)).toBeNull();
    expect(await verifyApiKey(t.db, access)).toBeNull(); // an access key is no bearer token
    expect((await blockwire(['keys', 'list'], fileEnv)).stdout).not.toContain(secret);

    // rotation: a new server key first in the file, then every secret sealed again under it
    const rotated = await blockwire(['keys', 'server-key', '--rotate'], fileEnv);
    expect(rotated.code, rotated.stderr).toBe(0);
    const ring2 = parseKeyring(await readFile(file, 'utf8'));
    expect(ring2.current.id).not.toBe(ring.current.id);
    expect(ring2.byId.has(ring.current.id)).toBe(true);
    const resealed = await blockwire(['keys', 'reseal'], fileEnv);
    expect(resealed.code, resealed.stderr).toBe(0);
    expect(resealed.stderr).toContain('resealed 1 secret');
    const row = await t.db.selectFrom('api_keys').select('secret_box').where('name', '=', 'signer').executeTakeFirstOrThrow();
    expect(boxKeyId(row.secret_box!)).toBe(ring2.current.id);
    expect(
      await findSigningKey(t.db, parseKeyring(`${ring2.current.id}:${ring2.byId.get(ring2.current.id)!.toString('base64')}`), access),
    ).toMatchObject({ secret });

    // the setting instead of the file: the key line `server-key` prints
    const line = (await blockwire(['keys', 'server-key'], env)).stdout.trim();
    const withSetting = await blockwire(['keys', 'create', '--name', 'signer2', '--secret'], {
      ...env,
      BLOCKWIRE_SERVER_SECRET_KEYS: line,
    });
    expect(withSetting.code, withSetting.stderr).toBe(0);
    const [access2, secret2] = withSetting.stdout.split('\n') as [string, string];
    expect(await findSigningKey(t.db, parseKeyring(line), access2)).toMatchObject({ secret: secret2 });
    expect((await blockwire(['keys', 'server-key', '--rotate'], { ...env, BLOCKWIRE_SERVER_SECRET_KEYS: line })).code).toBe(2);
  });

  it('usage errors exit 2 without touching the database', async () => {
    for (const args of [
      ['keys'],
      ['keys', 'create'],
      ['keys', 'create', '--name', 'x', '--scope', 'admin'],
      ['keys', 'nope'],
      ['keys', 'revoke'],
    ]) {
      const r = await blockwire(args, { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).not.toMatch(/^bw_/);
    }
  });
});
