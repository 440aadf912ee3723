/**
 * The WebSocket hub of one stream process: its authenticated connections, grouped by API key.
 * A connection resuming with `after` first catches up from Postgres (matched exactly as the relay
 * matches, paced by its send buffer) until it reaches the feed's position, then turns live in the
 * same tick — so no event falls between replay and live, and none comes twice. Live batches go to
 * live connections only. Heartbeat: a ping every interval; a connection that has not answered
 * the previous one is terminated. A live connection whose send buffer passes the bound is closed
 * (4008 "slow consumer") instead of growing memory. A key that is revoked (or deleted) has its
 * connections closed (4401 "key revoked"): `checkKeys` is called on every key notification
 * (src/auth/key-events.ts) and, as a fallback, every `keyCheckMs` for the keys connected.
 * @module
 */
import type { WebSocket } from 'ws';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import type { Logger } from '../../src/log.js';
import { decodeOutboxRows } from '../events.js';
import { deliveryJson, indexSubscriptions, matchEvents } from '../match.js';
import { readOutboxForKey, readStreamState } from '../outbox.js';
import { loadKeySubscriptions } from '../subscriptions.js';
import { liveApiKeyIds } from '../../src/db/queries/api-keys.js';
import type { FeedBatch } from '../feed-message.js';

/** WebSocket close codes of the stream (docs/events.md). */
const CLOSE_CODES = { slowConsumer: 4008, keyRevoked: 4401, cursorExpired: 4410, shutdown: 1001 } as const;

export type HubSettings = {
  heartbeatMs: number;
  /** Send-buffer bound per connection, in bytes. */
  maxBufferedBytes: number;
  /** Outbox rows per catch-up query. */
  catchUpPage: number;
  /** After a close frame is queued, how long before the socket is destroyed. */
  closeGraceMs: number;
  /** How often the connected keys are checked for revocation without a notification. */
  keyCheckMs: number;
};

export type HubStats = {
  connections: number;
  live: number;
  sent: number;
  slowConsumerDisconnects: number;
  heartbeatTimeouts: number;
  expiredCursors: number;
  revokedKeyDisconnects: number;
  /** Largest send buffer seen on a live connection, in bytes. */
  maxBufferedSeen: number;
};

type Conn = {
  ws: WebSocket;
  keyId: bigint;
  /** Highest event id sent (or skipped as not matching) to this connection. */
  cursor: bigint;
  live: boolean;
  alive: boolean;
  closing: boolean;
};

export type HubDeps = {
  db: Kysely<Database>;
  log: Logger;
  settings: HubSettings;
  /** The feed's position (every event up to it has been handed to `onBatch`). */
  position: () => bigint;
};

export type StreamHub = {
  /** Takes a new authenticated connection; `after` = resume point, undefined = live from now. */
  accept(ws: WebSocket, keyId: bigint, after: bigint | undefined): void;
  /** The feed's batches, in order. */
  onBatch(batch: FeedBatch): void;
  /** Closes the connections of the given keys (default: every connected key) that are revoked or gone. */
  checkKeys(keyIds?: readonly bigint[]): Promise<void>;
  stats(): HubStats;
  /** The key's connections held by this process. */
  connections(keyId: bigint): number;
  /** Closes every connection (1001) and stops the heartbeat. */
  close(): Promise<void>;
};

export function createStreamHub(deps: HubDeps): StreamHub {
  const { db, settings } = deps;
  const log = deps.log.child({ component: 'streams.hub' });
  const byKey = new Map<bigint, Set<Conn>>();
  const all = new Set<Conn>();
  const stats = {
    sent: 0,
    slowConsumerDisconnects: 0,
    heartbeatTimeouts: 0,
    expiredCursors: 0,
    revokedKeyDisconnects: 0,
    maxBufferedSeen: 0,
  };

  function closeConn(conn: Conn, code: number, reason: string): void {
    if (conn.closing) return;
    conn.closing = true;
    conn.ws.close(code, reason);
    setTimeout(() => conn.ws.terminate(), settings.closeGraceMs).unref();
  }

  function send(conn: Conn, data: string | Buffer): void {
    if (conn.closing) return;
    conn.ws.send(data, { binary: false });
    stats.sent += 1;
    const buffered = conn.ws.bufferedAmount;
    if (conn.live && buffered > stats.maxBufferedSeen) stats.maxBufferedSeen = buffered;
    if (conn.live && buffered > settings.maxBufferedBytes) {
      stats.slowConsumerDisconnects += 1;
      log.info({ key: conn.keyId.toString(), buffered }, 'slow consumer disconnected');
      closeConn(conn, CLOSE_CODES.slowConsumer, `slow consumer: more than ${settings.maxBufferedBytes} bytes unread`);
    }
  }

  function remove(conn: Conn): void {
    all.delete(conn);
    const set = byKey.get(conn.keyId);
    set?.delete(conn);
    if (set && set.size === 0) byKey.delete(conn.keyId);
  }

  async function waitForRoom(conn: Conn): Promise<void> {
    while (!conn.closing && conn.ws.bufferedAmount > settings.maxBufferedBytes / 2) {
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Replays (cursor, position] from Postgres, then turns the connection live. */
  async function catchUp(conn: Conn): Promise<void> {
    const subs = await loadKeySubscriptions(db, conn.keyId);
    const index = indexSubscriptions(subs);
    const filter = {
      keyId: conn.keyId,
      addrKeys: [...new Set(subs.flatMap((s) => (s.addrKey ? [s.addrKey] : [])))],
      chain: subs.some((s) => s.kind === 'chain'),
    };
    for (;;) {
      if (conn.closing) return;
      const target = deps.position();
      if (conn.cursor >= target) {
        conn.live = true;
        send(conn, JSON.stringify({ type: 'stream.live', after: Number(conn.cursor) }));
        return;
      }
      const rows = await readOutboxForKey(db, filter, { after: conn.cursor, upTo: target, limit: settings.catchUpPage });
      const events = decodeOutboxRows(rows, (row, err) => log.error({ seq: row.seq.toString(), err }, 'outbox row skipped'));
      for (const d of matchEvents(events, index)) if (d.keyId === conn.keyId) send(conn, deliveryJson(d));
      conn.cursor = rows.length < settings.catchUpPage ? target : rows[rows.length - 1]!.seq;
      await waitForRoom(conn);
    }
  }

  async function checkKeys(keyIds?: readonly bigint[]): Promise<void> {
    const ids = (keyIds ?? [...byKey.keys()]).filter((id) => byKey.has(id));
    if (ids.length === 0) return;
    const live = await liveApiKeyIds(db, ids);
    for (const id of ids) {
      if (live.has(id)) continue;
      for (const conn of byKey.get(id) ?? []) {
        if (conn.closing) continue;
        stats.revokedKeyDisconnects += 1;
        send(conn, JSON.stringify({ type: 'stream.error', error_code: 'ERR_API_KEY_INVALID', error_message: 'the API key was revoked' }));
        closeConn(conn, CLOSE_CODES.keyRevoked, 'API key revoked');
      }
      log.info({ key: id.toString() }, 'API key revoked: its stream connections closed');
    }
  }

  const sweep = setInterval(() => {
    checkKeys().catch((err: unknown) => log.warn({ err }, 'stream key check failed'));
  }, settings.keyCheckMs);
  sweep.unref();

  const heartbeat = setInterval(() => {
    for (const conn of all) {
      if (!conn.alive) {
        stats.heartbeatTimeouts += 1;
        log.info({ key: conn.keyId.toString() }, 'stream client missed a heartbeat: terminated');
        conn.ws.terminate();
        continue;
      }
      conn.alive = false;
      conn.ws.ping();
    }
  }, settings.heartbeatMs);
  heartbeat.unref();

  return {
    connections: (keyId) => byKey.get(keyId)?.size ?? 0,
    accept(ws, keyId, after) {
      const conn: Conn = { ws, keyId, cursor: after ?? deps.position(), live: false, alive: true, closing: false };
      all.add(conn);
      let set = byKey.get(keyId);
      if (!set) byKey.set(keyId, (set = new Set()));
      set.add(conn);
      ws.on('pong', () => {
        conn.alive = true;
      });
      ws.on('close', () => {
        conn.closing = true;
        remove(conn);
      });
      ws.on('error', () => undefined);
      void (async () => {
        if (after !== undefined) {
          const pruned = (await readStreamState(db)).pruned;
          if (after < pruned) {
            stats.expiredCursors += 1;
            send(
              conn,
              JSON.stringify({
                type: 'stream.error',
                error_code: 'ERR_CURSOR_EXPIRED',
                error_message: `cursor expired: events up to ${pruned} are past the retention; resume from ${pruned} or later, or reconnect without after`,
              }),
            );
            closeConn(conn, CLOSE_CODES.cursorExpired, 'cursor expired');
            return;
          }
        }
        await catchUp(conn);
      })().catch((err) => {
        log.warn({ err }, 'stream catch-up failed; closing the connection');
        closeConn(conn, 1011, 'catch-up failed, reconnect with after');
      });
    },
    onBatch(batch) {
      for (const item of batch.items) {
        const conns = byKey.get(item.keyId);
        if (!conns) continue;
        // Encoded once, however many connections of the key are live.
        let buf: Buffer | undefined;
        for (const conn of conns) {
          if (!conn.live || item.seq <= conn.cursor) continue;
          buf ??= Buffer.from(item.json);
          send(conn, buf);
        }
      }
      for (const conn of all) if (conn.live && conn.cursor < batch.to) conn.cursor = batch.to;
    },
    checkKeys,
    stats() {
      let live = 0;
      for (const c of all) if (c.live) live += 1;
      return { connections: all.size, live, ...stats };
    },
    async close() {
      clearInterval(heartbeat);
      clearInterval(sweep);
      const closed = [...all].map((c) => new Promise<void>((r) => (c.ws.readyState >= 2 ? r() : c.ws.once('close', () => r()))));
      for (const c of all) closeConn(c, CLOSE_CODES.shutdown, 'server shutting down');
      // The grace timer goes once every client has closed: left running, it held the process ~5 s after "stopped".
      let grace: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(closed), new Promise((r) => (grace = setTimeout(r, settings.closeGraceMs + 100)))]);
      clearTimeout(grace);
    },
  };
}
