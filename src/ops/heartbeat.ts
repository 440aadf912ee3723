/**
 * The indexer's heartbeat: the process running the indexer role writes its view (mode, index
 * tip, node tip, lag, last error) to `sync_state` under key `ops.indexer` every few seconds, so
 * that `blockwire status` and the /metrics of every other process know the node's tip and can
 * tell a quiet chain from a dead indexer (a stale heartbeat). Not part of the index: nothing
 * reads it to decide what to index.
 * @module
 */
import { hostname } from 'node:os';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Logger } from '../log.js';

/** sync_state key of the heartbeat. */
export const HEARTBEAT_KEY = 'ops.indexer';

/** What the heartbeat records (JSON in sync_state.value). */
export type Heartbeat = {
  pid: number;
  host: string;
  mode: string;
  indexHeight: number;
  nodeHeight: number | null;
  nodeHash: string | null;
  lag: number | null;
  lastError: string | null;
  startedAt: string;
  /** The ZMQ endpoint when it has let blocks pass without a message (unset when fine or not configured). */
  zmqSilent?: { url: string; blocks: number };
};

/** The indexer handle as the heartbeat reads it (indexer/main.ts IndexerHandle, structurally). */
export type HeartbeatSource = {
  status(): {
    mode: string;
    tip: { height: number };
    nodeTip: { height: number; hash: string } | null;
    lag: number | null;
    lastError: string | null;
    zmq?: { url: string; silent: boolean; unannouncedBlocks: number } | null;
  };
};

export type HeartbeatHandle = { stop(): Promise<void> };

/** Writes one heartbeat now. */
async function writeHeartbeat(db: Kysely<Database>, beat: Heartbeat): Promise<void> {
  await sql`
    INSERT INTO sync_state (key, value, updated_at) VALUES (${HEARTBEAT_KEY}, ${JSON.stringify(beat)}::jsonb, now())
    ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = now()
  `.execute(db);
}

/** Starts writing heartbeats every `intervalMs` (default 5 s); `stop()` writes a last one with mode `stopped`. */
export function startHeartbeat(deps: {
  db: Kysely<Database>;
  log: Logger;
  indexer: HeartbeatSource;
  intervalMs?: number;
}): HeartbeatHandle {
  const log = deps.log.child({ component: 'ops.heartbeat' });
  const startedAt = new Date().toISOString();
  const every = deps.intervalMs ?? 5000;
  let failing = false;
  let inFlight: Promise<void> = Promise.resolve();
  const beat = (mode?: string): Heartbeat => {
    const s = deps.indexer.status();
    return {
      pid: process.pid,
      host: hostname(),
      mode: mode ?? s.mode,
      indexHeight: s.tip.height,
      nodeHeight: s.nodeTip?.height ?? null,
      nodeHash: s.nodeTip?.hash ?? null,
      lag: s.lag,
      lastError: s.lastError,
      startedAt,
      ...(s.zmq?.silent ? { zmqSilent: { url: s.zmq.url, blocks: s.zmq.unannouncedBlocks } } : {}),
    };
  };
  // A standby indexer (waiting for the writer lock) says nothing: the heartbeat is the active one's.
  const write = (mode?: string) =>
    (inFlight = inFlight.then(() =>
      (deps.indexer.status().mode === 'standby' ? Promise.resolve() : writeHeartbeat(deps.db, beat(mode))).then(
        () => {
          if (failing) log.info('heartbeat written again');
          failing = false;
        },
        (err: unknown) => {
          if (!failing) log.warn({ err }, 'cannot write the indexer heartbeat (Postgres down?)');
          failing = true;
        },
      ),
    ));
  void write();
  const timer = setInterval(() => void write(), every);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await write('stopped');
    },
  };
}
