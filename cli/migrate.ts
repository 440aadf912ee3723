/**
 * `blockwire migrate [latest|down|status]`: applies or reverts migrations on DATABASE_URL
 * (or the embedded PostgreSQL under BLOCKWIRE_DATA_DIR when DATABASE_URL is unset).
 * @module
 */
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/open.js';
import { migrateDown, migrateToLatest, migrationStatus } from '../src/db/migrate.js';

export async function run(argv: string[]): Promise<number> {
  const action = argv[0] ?? 'latest';
  if (!['latest', 'down', 'status'].includes(action)) {
    process.stderr.write(`usage: blockwire migrate [latest|down|status]\n`);
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
