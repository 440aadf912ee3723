/**
 * `blockwire keys create --name NAME [--scope read|write]… [--rate-limit N]` prints the new key
 * alone on stdout (once: only its digest is stored); `keys list` prints id, prefix, name, scopes,
 * rate limit, created and revoked times; `keys revoke ID|PREFIX`. The database is opened as
 * `blockwire start` does it: DATABASE_URL, or the embedded PostgreSQL under BLOCKWIRE_DATA_DIR.
 * @module
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/open.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createApiKey, listApiKeys, revokeApiKey, SCOPES, type Scope } from '../src/auth/keys.js';

const USAGE = `usage:
  blockwire keys create --name NAME [--scope read|write]... [--rate-limit N]
  blockwire keys list
  blockwire keys revoke ID|PREFIX
`;

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
  if (!['create', 'list', 'revoke'].includes(action)) return fail(`unknown action '${action}'`);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: { name: { type: 'string' }, scope: { type: 'string', multiple: true }, 'rate-limit': { type: 'string' } },
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
  const handle = await openDatabase(config, { quiet: true, max: 2 });
  try {
    // The embedded quick-start database may be brand new: keys need the tenancy tables.
    if (!config.databaseUrl) await migrateToLatest(handle.db);
    if (action === 'create') {
      const created = await createApiKey(handle.db, { name: values.name!, ...(scopes ? { scopes } : {}), rateLimit });
      process.stdout.write(`${created.key}\n`);
      process.stderr.write(`created key ${created.id} (${created.prefix}…, scopes ${created.scopes.join(',')}); it is shown only this once\n`);
      return 0;
    }
    if (action === 'list') {
      for (const k of await listApiKeys(handle.db)) {
        const cols = [String(k.id), k.prefix, k.name, k.scopes.join(','), k.rate_limit ?? '-', k.created_at.toISOString(), k.revoked_at ? `revoked ${k.revoked_at.toISOString()}` : 'active'];
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
