/**
 * A process that opens a session (DATABASE_URL) — the bulk sync's own (`connectBulk`), or with
 * BULK_SESSION=plain a plain pg client — prints its backend's pid and its client check interval,
 * then runs a statement that lasts ten minutes: the importer killed mid-statement of
 * bulk-orphan.test.ts.
 */
import pg from 'pg';
import { connectBulk } from '../../../indexer/writer/bulk.js';

const url = process.env.DATABASE_URL!;
const client =
  process.env.BULK_SESSION === 'plain'
    ? await (async () => {
        const c = new pg.Client({ connectionString: url, application_name: 'plain' });
        await c.connect();
        return c;
      })()
    : await connectBulk(url);
const r = await client.query<{ pid: number; check: string }>(
  "SELECT pg_backend_pid() AS pid, current_setting('client_connection_check_interval') AS check",
);
process.stdout.write(`${JSON.stringify(r.rows[0])}\n`);
await client.query('SELECT pg_sleep(600)');
