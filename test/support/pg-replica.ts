/**
 * A real PostgreSQL streaming replica of a server started with cli/embedded/postgres.ts, from the
 * same (embedded) binaries. The base backup is PostgreSQL's low-level one: `pg_backup_start` on a
 * session of the primary, a copy of the data directory (without pg_wal, the replication slots and
 * the postmaster files), `pg_backup_stop`, whose label file goes into the copy; then
 * `standby.signal` and `primary_conninfo` / `primary_slot_name`, so the copy starts as a hot
 * standby streaming from the primary through a physical slot created before the backup (the slot
 * keeps every WAL segment the replica still needs). Debian's pg_basebackup would do the same
 * over the replication protocol, but it is older than the embedded server and refuses it.
 */
import { execFileSync } from 'node:child_process';
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { userInfo } from 'node:os';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../../cli/embedded/postgres.js';

/** Files and directories of a data directory a base backup leaves out (PostgreSQL's list, abridged). */
const LEFT_OUT = new Set([
  'postmaster.pid',
  'postmaster.opts',
  'blockwire.owner',
  'pg_wal',
  'pg_replslot',
  'pg_stat_tmp',
  'pg_dynshmem',
  'pg_notify',
  'pg_serial',
  'pg_snapshots',
  'pg_subtrans',
]);

export type Replica = PostgresServer & {
  /** The slot on the primary this replica streams through. */
  slot: string;
  /** Pauses / resumes the replay of the WAL it receives (a lagging replica, for real). */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
};

async function query(url: string, text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text, values);
  } finally {
    await c.end();
  }
}

/** Makes `dataDir` a base backup of `primary` and starts it as its streaming replica named `name`. */
export async function startReplica(primary: PostgresServer, dataDir: string, name: string): Promise<Replica> {
  const slot = name.replace(/[^a-z0-9_]/g, '_');
  await query(primary.url, 'SELECT pg_create_physical_replication_slot($1, true)', [slot]);
  const session = new pg.Client({ connectionString: primary.url });
  await session.connect();
  try {
    await session.query('SELECT pg_backup_start($1, true)', [`replica ${name}`]);
    await rm(dataDir, { recursive: true, force: true });
    await cp(primary.dataDir, dataDir, {
      recursive: true,
      filter: (src) => src === primary.dataDir || !LEFT_OUT.has(basename(src)) || !isTopLevel(primary.dataDir, src),
    });
    for (const d of [
      'pg_wal/archive_status',
      'pg_replslot',
      'pg_stat_tmp',
      'pg_dynshmem',
      'pg_notify',
      'pg_serial',
      'pg_snapshots',
      'pg_subtrans',
    ])
      await mkdir(join(dataDir, d), { recursive: true });
    const stop = await session.query<{ labelfile: string }>('SELECT labelfile FROM pg_backup_stop(true)');
    await writeFile(join(dataDir, 'backup_label'), stop.rows[0]!.labelfile);
  } finally {
    await session.end();
  }
  await writeFile(join(dataDir, 'standby.signal'), '');
  // The server runs as `postgres` when we are root: the copy must be its.
  if (userInfo().uid === 0) execFileSync('chown', ['-R', 'postgres:postgres', dataDir]);
  execFileSync('chmod', ['0700', dataDir]);
  const primaryUrl = new URL(primary.url);
  const server = await startPostgres({
    dataDir,
    ephemeral: true,
    settings: {
      primary_conninfo: `host=127.0.0.1 port=${primary.port} user=${decodeURIComponent(primaryUrl.username)} password=${decodeURIComponent(primaryUrl.password)} application_name=${slot}`,
      primary_slot_name: slot,
      hot_standby: 'on',
      // Reads on the replica are not cancelled by the replay of what the primary vacuumed.
      hot_standby_feedback: 'on',
    },
  });
  return {
    ...server,
    slot,
    pauseReplay: async () => void (await query(server.url, 'SELECT pg_wal_replay_pause()')),
    resumeReplay: async () => void (await query(server.url, 'SELECT pg_wal_replay_resume()')),
  };
}

function isTopLevel(root: string, path: string): boolean {
  return join(root, basename(path)) === path;
}
