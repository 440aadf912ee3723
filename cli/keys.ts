/**
 * `blockwire keys create --name NAME [--scope read|write]… [--rate-limit N]` prints the new key
 * alone on stdout (once: only its digest is stored); with `--secret` it makes a signing key for
 * HMAC-signed requests (Coinstack's SDKs) and prints its access key on the first line and its
 * secret key on the second (once: the secret is stored sealed with a server key,
 * src/auth/server-keys.ts). `keys list` prints a header line, then id, prefix, name, scopes, rate
 * limit, created time and status, tab-separated; `keys revoke ID|PREFIX`. `keys server-key` prints a fresh server key line (for
 * BLOCKWIRE_SERVER_SECRET_KEYS), `--rotate` puts one first in the keyring file instead; `keys
 * reseal` seals every stored secret again under the keyring's first key. The database is opened
 * as `blockwire start` does it: DATABASE_URL, or the embedded PostgreSQL under BLOCKWIRE_DATA_DIR.
 * @module
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { openDatabase } from './open-database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createApiKey, listApiKeys, resealSecrets, revokeApiKey, SCOPES, type Scope } from '../src/auth/keys.js';
import { KeyringError, newServerKeyLine, type Keyring } from '../src/auth/secret-box.js';
import { loadKeyring, rotateKeyringFile, serverKeyFile } from '../src/auth/server-keys.js';

const USAGE = `usage:
  blockwire keys create --name NAME [--scope read|write]... [--rate-limit N] [--secret]
  blockwire keys list
  blockwire keys revoke ID|PREFIX
  blockwire keys server-key [--rotate]
  blockwire keys reseal
`;

/** The columns of `keys list`, printed as its first line. */
export const KEY_COLUMNS = ['id', 'prefix', 'name', 'scopes', 'rate_limit', 'created', 'status'] as const;

function fail(message: string): number {
  process.stderr.write(`blockwire keys: ${message}\n${USAGE}`);
  return 2;
}

export async function run(argv: string[]): Promise<number> {
  const [action, ...rest] = argv;
  if (action === undefined || action === '--help' || action === '-h') {
    process.stdout.write(USAGE);
    return action === undefined ? 2 : 0;
  }
  if (!['create', 'list', 'revoke', 'server-key', 'reseal'].includes(action)) return fail(`unknown action '${action}'`);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        scope: { type: 'string', multiple: true },
        'rate-limit': { type: 'string' },
        secret: { type: 'boolean' },
        rotate: { type: 'boolean' },
      },
    });
  } catch (err) {
    return fail((err as Error).message);
  }
  const { values, positionals } = parsed;
  let scopes: Scope[] | undefined;
  let rateLimit: number | null = null;
  if (action === 'create') {
    if (!values.name || values.name.trim() === '') return fail('create needs --name NAME');
    if (values.scope) {
      const bad = values.scope.filter((s) => !(SCOPES as readonly string[]).includes(s));
      if (bad.length > 0) return fail(`unknown scope ${bad.join(', ')} (scopes: ${SCOPES.join(', ')})`);
      scopes = values.scope as Scope[];
    }
    if (values['rate-limit'] !== undefined) {
      if (!/^[1-9]\d*$/.test(values['rate-limit'])) return fail('--rate-limit must be a positive integer');
      rateLimit = Number(values['rate-limit']);
    }
  }
  if (action === 'revoke' && positionals.length !== 1) return fail('revoke needs one key id or prefix');

  const config = loadConfig(process.env);
  if (action === 'server-key') {
    if (!values.rotate) {
      process.stdout.write(`${newServerKeyLine()}\n`);
      process.stderr.write(
        'put this line first in BLOCKWIRE_SERVER_SECRET_KEYS (keep the old keys after it), restart, then run `blockwire keys reseal`\n',
      );
      return 0;
    }
    if (config.serverSecretKeys !== undefined)
      return fail('the server keys come from BLOCKWIRE_SERVER_SECRET_KEYS: rotate by changing it (see `keys server-key`)');
    const id = rotateKeyringFile(config);
    process.stderr.write(
      `server key ${id} now seals new secrets (${serverKeyFile(config)}); run \`blockwire keys reseal\` to seal the stored ones with it\n`,
    );
    return 0;
  }
  let keyring: Keyring | undefined;
  try {
    keyring = loadKeyring(config, { create: action === 'create' && values.secret === true });
  } catch (err) {
    if (err instanceof KeyringError) return fail(`server keys: ${err.message}`);
    throw err;
  }
  if (action === 'reseal' && !keyring)
    return fail('no server keys (BLOCKWIRE_SERVER_SECRET_KEYS unset and no keyring file): nothing to reseal');
  const handle = await openDatabase(config, { quiet: true, max: 2 });
  try {
    // The embedded quick-start database may be brand new: keys need the tenancy tables.
    if (!config.databaseUrl) await migrateToLatest(handle.db);
    if (action === 'create') {
      const created = await createApiKey(handle.db, {
        name: values.name!,
        ...(scopes ? { scopes } : {}),
        rateLimit,
        ...(values.secret && keyring ? { secret: { keyring } } : {}),
      });
      process.stdout.write(created.secret === undefined ? `${created.key}\n` : `${created.key}\n${created.secret}\n`);
      const what = created.secret === undefined ? 'it is' : 'access key and secret key; the secret is';
      process.stderr.write(
        `created key ${created.id} (${created.prefix}…, scopes ${created.scopes.join(',')}); ${what} shown only this once\n`,
      );
      return 0;
    }
    if (action === 'reseal') {
      const r = await resealSecrets(handle.db, keyring!);
      process.stderr.write(`resealed ${r.resealed} secret${r.resealed === 1 ? '' : 's'} under server key ${keyring!.current.id}\n`);
      if (r.unopened.length === 0) return 0;
      process.stderr.write(
        `blockwire keys: the secrets of keys ${r.unopened.join(', ')} open with no server key given: keep the key that sealed them\n`,
      );
      return 1;
    }
    if (action === 'list') {
      process.stdout.write(`${KEY_COLUMNS.join('\t')}\n`);
      for (const k of await listApiKeys(handle.db)) {
        const cols = [
          String(k.id),
          k.prefix,
          k.name,
          k.scopes.join(','),
          k.rate_limit ?? '-',
          k.created_at.toISOString(),
          k.revoked_at ? `revoked ${k.revoked_at.toISOString()}` : 'active',
        ];
        process.stdout.write(`${cols.join('\t')}\n`);
      }
      return 0;
    }
    const n = await revokeApiKey(handle.db, positionals[0]!);
    if (n === 0) {
      process.stderr.write(`blockwire keys: no active key matches '${positionals[0]}'\n`);
      return 1;
    }
    process.stderr.write(`revoked ${n} key${n === 1 ? '' : 's'}\n`);
    return 0;
  } finally {
    await handle.close();
  }
}
