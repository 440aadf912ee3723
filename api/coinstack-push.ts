/**
 * coinstackd's push feed, `/websocket` (restserver.go): every block that joins the main chain and
 * every transaction that enters the mempool, pushed to every connection as a binary frame holding
 * `{"Type": 0 | 1, "Payload": …}` (model.go `WebSocketPayload`, no JSON tags, hence the
 * capitalized keys). A block's payload is model.go's `Block` as coinstackd's block event fills it
 * (`block_hash`, `height`, `confirmation_time`, `parent`, `transaction_list: null`; no
 * `children`); a transaction's is its `Transaction` with only the hash and times set (`block_hash`,
 * `inputs`, `outputs`, `addresses` null, `coinbase` and `is_deleted` false, `time` =
 * `broadcast_time`). A binary frame from the client is answered `{"Type":3,"Payload":{}}` (binary):
 * coinstackd compares the frame type with its PingMessage constant, 2, which is the binary opcode;
 * text frames are ignored. There is nothing to subscribe to: every connection gets everything.
 *
 * The pushes come from the event log: the outbox's `block.connected` and `mempool.added` rows,
 * read in order after a cursor, so no event is skipped or repeated and a block and the
 * transactions around it keep their order. The read is woken by the relay's feed message (the
 * Redis channel every relayed batch is published on), and every `pollMs` without one (a lost
 * message, a deployment without the streams role); the cursor, not the message, says what is new.
 * The outbox is only followed while connections are open; a connection gets the events recorded
 * after its upgrade (`open()` fixes the position before the handshake completes).
 * @module
 */
import type { Kysely } from 'kysely';
import type { Redis } from 'ioredis';
import { WebSocket } from 'ws';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { isoFromUnix } from '../src/time.js';
import { readChainEvents, readNewestSeq } from '../src/db/queries/electrum-chain.js';
import { findBlockByHash } from './queries/chain.js';

export const WEBSOCKET_PATH = '/websocket';

/** model.go's message types. */
const BLOCK_MESSAGE = 0;
const TX_MESSAGE = 1;
const PONG_MESSAGE = 3;

/** Outbox rows read per query. */
const PAGE = 1000;

export type PushDeps = {
  db: Kysely<Database>;
  log: Logger;
  /** A connection of the push's own, put in subscriber mode on `channel` (none: `pollMs` only). */
  subscriber?: Redis;
  /** The relay's feed channel. */
  channel: string;
  /** Read the outbox at least this often while connections are open. */
  pollMs: number;
  /** Unsent bytes a connection may pile up before it is closed (1008). */
  maxBufferedBytes: number;
};

/**
 * Go's `time.Time` as encoding/json writes it (RFC 3339 with the fraction's trailing zeros cut),
 * in UTC, to the millisecond a Date holds.
 */
function goTime(d: Date): string {
  const iso = d.toISOString();
  const frac = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 19)}${frac ? `.${frac}` : ''}Z`;
}

/** The frame of a connected block. */
function blockMessage(b: { hash: Buffer; height: number; time: number; prevHash: Buffer }): string {
  const payload = {
    block_hash: hashToHex(b.hash),
    height: b.height,
    confirmation_time: isoFromUnix(b.time),
    parent: hashToHex(b.prevHash),
    transaction_list: null,
  };
  return JSON.stringify({ Type: BLOCK_MESSAGE, Payload: payload });
}

/** The frame of a transaction that entered the mempool at `at`. */
function txMessage(txid: Buffer, at: Date): string {
  const t = goTime(at);
  const payload = {
    transaction_hash: hashToHex(txid),
    block_hash: null,
    coinbase: false,
    is_deleted: false,
    inputs: null,
    outputs: null,
    time: t,
    broadcast_time: t,
    addresses: null,
  };
  return JSON.stringify({ Type: TX_MESSAGE, Payload: payload });
}

export type CoinstackPush = {
  /** Before an upgrade completes: the outbox is followed from now on (a connection then misses nothing recorded after it opened). */
  open(): Promise<void>;
  /** Serves an upgraded `/websocket` connection (after `open()`). */
  serve(ws: WebSocket): void;
  close(): Promise<void>;
};

export function startCoinstackPush(deps: PushDeps): CoinstackPush {
  const log = deps.log.child({ component: 'api.websocket' });
  const clients = new Set<WebSocket>();
  /** Events after this seq are still to push; undefined while nobody listens. */
  let cursor: bigint | undefined;
  let reading: Promise<void> = Promise.resolve();
  let again = false;
  let busy = false;
  let closed = false;
  /** Upgrades between open() and serve(). */
  let opening = 0;

  function broadcast(frame: string): void {
    const data = Buffer.from(frame);
    for (const ws of clients) {
      if (ws.readyState !== WebSocket.OPEN) continue;
      if (ws.bufferedAmount > deps.maxBufferedBytes) {
        ws.close(1008, 'slow consumer');
        continue;
      }
      ws.send(data, { binary: true });
    }
  }

  /** Pushes every event after the cursor, in order. */
  async function readNews(): Promise<void> {
    while (cursor !== undefined && !closed) {
      const r = await readChainEvents(deps.db, cursor, PAGE);
      for (const e of r.events) {
        if (e.type === 'mempool.added') broadcast(txMessage(e.txid, e.at));
        else if (e.type === 'block.connected') {
          const b = await findBlockByHash(deps.db, e.hash);
          // A block already undone again is left out (its header is gone with it).
          if (b) broadcast(blockMessage({ hash: b.hash, height: b.height, time: b.time, prevHash: b.prev_hash }));
        }
      }
      if (cursor !== undefined) cursor = r.upTo;
      if (r.read < PAGE) return;
    }
  }

  /** Runs a read now, or once more after the one under way. */
  function wake(): void {
    if (clients.size === 0 && opening === 0) cursor = undefined;
    if (cursor === undefined || closed) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    reading = (async () => {
      do {
        again = false;
        try {
          await readNews();
        } catch (err) {
          log.warn({ err }, 'reading the outbox for /websocket failed; the next wake-up retries');
        }
      } while (again && !closed);
      busy = false;
    })();
  }

  const onMessage = (channel: string) => {
    if (channel === deps.channel) wake();
  };
  if (deps.subscriber) {
    deps.subscriber.on('message', onMessage);
    // Not awaited: a Redis that is down must not hold the API's start (ioredis subscribes once it connects, and again after a reconnect).
    deps.subscriber.subscribe(deps.channel).catch((err: unknown) => log.warn({ err }, 'feed channel not subscribed; reading every pollMs'));
  }
  const timer = setInterval(wake, deps.pollMs);
  timer.unref();

  return {
    async open() {
      opening++;
      try {
        if (cursor === undefined) {
          const seq = await readNewestSeq(deps.db);
          if (cursor === undefined) cursor = seq;
        }
      } finally {
        opening--;
      }
    },
    serve(ws) {
      clients.add(ws);
      ws.on('error', () => undefined);
      ws.on('message', (_data, isBinary) => {
        if (isBinary && ws.readyState === WebSocket.OPEN)
          ws.send(Buffer.from(JSON.stringify({ Type: PONG_MESSAGE, Payload: {} })), { binary: true });
      });
      ws.on('close', () => {
        clients.delete(ws);
        if (clients.size === 0 && opening === 0) cursor = undefined;
      });
    },
    async close() {
      closed = true;
      clearInterval(timer);
      for (const ws of clients) ws.close(1001, 'server stopping');
      clients.clear();
      if (deps.subscriber) {
        deps.subscriber.off('message', onMessage);
        await deps.subscriber.unsubscribe(deps.channel).catch(() => undefined);
      }
      await reading;
    },
  };
}
