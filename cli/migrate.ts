/**
 * `blockwire migrate [latest|down|status]`: applies or reverts migrations on DATABASE_URL
 * (or the embedded PostgreSQL under BLOCKWIRE_DATA_DIR when DATABASE_URL is unset).
 * @module
 */
import { loadConfig } from '../src/config.js';
import { openDatabase } from './open-database.js';
import { migrateDown, migrateToLatest, migrationStatus } from '../src/db/migrate.js';

const USAGE = `usage: blockwire migrate [latest|down|status]

Applies every pending migration (latest, the default), reverts the last one (down) or lists them
(status), on DATABASE_URL or, when it is unset, the embedded PostgreSQL under BLOCKWIRE_DATA_DIR.
`;

export async function run(argv: string[]): Promise<number> {
  const action = argv[0] ?? 'latest';
  if (action === '--help' || action === '-h') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!['latest', 'down', 'status'].includes(action) || argv.length > 1) {
    process.stderr.write(USAGE);
    return 2;
  }
  const config = loadConfig(process.env);
  const handle = await openDatabase(config, { quiet: true });
  try {
    if (action === 'status') {
      for (const s of await migrationStatus(handle.db)) {
        process.stdout.write(`${s.executedAt ? 'applied' : 'pending'}  ${s.name}\n`);
      }
    } else {
      const ran = action === 'latest' ? await migrateToLatest(handle.db) : await migrateDown(handle.db);
      process.stdout.write(ran.length ? `${ran.join('\n')}\n` : 'nothing to do\n');
    }
    return 0;
  } finally {
    await handle.close();
  }
}
