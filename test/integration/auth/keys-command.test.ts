/**
 * `blockwire keys` as an operator runs it (a child process on DATABASE_URL): `create` prints the
 * key alone on stdout, `list` shows it without the secret, `revoke` by prefix makes it invalid;
 * usage errors exit 2.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { projectRoot } from '../../support/fixtures.js';
import { verifyApiKey } from '../../../src/auth/keys.js';

function blockwire(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(projectRoot, 'bin', 'blockwire.js'), ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
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
    expect(list.stdout).toContain(principal!.prefix);
    expect(list.stdout).toContain('ops key');
    expect(list.stdout).not.toContain(key);

    const revoked = await blockwire(['keys', 'revoke', principal!.prefix], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(await verifyApiKey(t.db, key)).toBeNull();
    expect((await blockwire(['keys', 'revoke', principal!.prefix], env)).code).toBe(1);
    expect((await blockwire(['keys', 'list'], env)).stdout).toMatch(/revoked \d{4}-/);
  });

  it('usage errors exit 2 without touching the database', async () => {
    for (const args of [['keys'], ['keys', 'create'], ['keys', 'create', '--name', 'x', '--scope', 'admin'], ['keys', 'nope'], ['keys', 'revoke']]) {
      const r = await blockwire(args, { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).not.toMatch(/^bw_/);
    }
  });
});
