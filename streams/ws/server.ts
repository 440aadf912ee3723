/**
 * The WebSocket endpoint `/v1/stream` (and the bare `/stream`): authenticates the upgrade with
 * the API's key check (`apiKey` header, or `?apiKey=` for browsers, which cannot set headers),
 * or, for browser pages that must keep the key out of URLs (server logs, the console), the
 * subprotocols `blockwire.v1` and `blockwire.key.<key>`: the server answers `blockwire.v1` and
 * never echoes the key), validates `?after=<event id>`, and hands the socket to the hub. Each upgrade is counted against
 * the key's rate limit (the API's window in Redis: an upgrade is a request), and a key holds at
 * most `maxConnectionsPerKey` streams on this process (upgrades in progress included, so
 * concurrent ones cannot pass it). Refusals are plain HTTP answers with the API's error body
 * (401, 403, 400, 404, 429 with Retry-After). It takes any http.Server's upgrades for its paths
 * (src/net/upgrades.ts): the API's in the all-in-one process, its own in the streams role.
 * @module
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import type { Logger } from '../../src/log.js';
import { authenticate, presentedKey } from '../../src/auth/authenticate.js';
import type { ApiKeyPrincipal } from '../../src/auth/keys.js';
import type { RateLimiter } from '../../src/auth/rate-limit.js';
import type { FailureLimiter } from '../../src/auth/failure-limit.js';
import { ServiceError } from '../../src/errors.js';
import type { StreamHub } from './hub.js';
import { readNewestEventId } from '../outbox.js';
import { addUpgradeHandler, answerUpgrade } from '../../src/net/upgrades.js';

/** Paths served. */
/** The stream's upgrade paths (/v1 and the bare dialect's). */
export const STREAM_PATHS = ['/v1/stream', '/stream'] as const;

/** The subprotocol a browser offers with `blockwire.key.<key>`, and the one the server answers. */
const STREAM_PROTOCOL = 'blockwire.v1';
const KEY_PROTOCOL_PREFIX = 'blockwire.key.';

/** The key a client offered as a subprotocol (`Sec-WebSocket-Protocol: blockwire.v1, blockwire.key.<key>`), if any. */
function protocolKey(req: IncomingMessage): string | undefined {
  const offered = req.headers['sec-websocket-protocol'];
  if (offered === undefined) return undefined;
  const p = offered
    .split(',')
    .map((x) => x.trim())
    .find((x) => x.startsWith(KEY_PROTOCOL_PREFIX));
  return p?.slice(KEY_PROTOCOL_PREFIX.length);
}

/** Largest message a client may send (clients have nothing to say but pongs). */
const MAX_CLIENT_MESSAGE = 4096;

function refuse(socket: Duplex, err: ServiceError): void {
  answerUpgrade(socket, err.status, { 'Content-Type': 'application/json; charset=utf-8', ...err.headers }, JSON.stringify(err.toBody()));
}

/** `after` as an event id, undefined when absent; throws ServiceError 400 when malformed. */
function parseAfter(raw: string | null): bigint | undefined {
  if (raw === null) return undefined;
  if (!/^\d{1,18}$/.test(raw))
    throw new ServiceError('ERR_INVALID_PARAMETER', { message: 'after must be an event id (a non-negative integer)' });
  return BigInt(raw);
}

export type StreamServer = {
  /** Handles an upgrade if its path is a stream path; false otherwise (someone else's). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Takes `server`'s upgrades for its paths (src/net/upgrades.ts: those no handler takes are answered 404). */
  attach(server: Server): void;
  close(): void;
};

export function createStreamServer(deps: {
  db: Kysely<Database>;
  hub: StreamHub;
  log: Logger;
  /** The key notifications' generation (src/auth/key-events.ts): a key changing during an upgrade is checked again once accepted. */
  keyGeneration?: () => number;
  /** Verifies a presented key (default: a database lookup each time; the streams role passes its cached verifier). */
  verifyKey?: (presented: string) => Promise<ApiKeyPrincipal | null>;
  /** Counts each upgrade against the key's limit per window (`rateLimit` for keys without one). */
  limiter?: RateLimiter;
  rateLimit?: number;
  /** Most streams one key holds open on this process (default: no bound). */
  maxConnectionsPerKey?: number;
  /** Invalid keys per client address (src/auth/failure-limit.ts); `peekKey` tells a key this process verified before. */
  failures?: FailureLimiter;
  peekKey?: (presented: string) => ApiKeyPrincipal | undefined;
}): StreamServer {
  const log = deps.log.child({ component: 'streams.ws' });
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_CLIENT_MESSAGE,
    perMessageDeflate: false,
    clientTracking: false,
    // A browser fails the connection unless the server picks one of the subprotocols it offered.
    handleProtocols: (offered) => (offered.has(STREAM_PROTOCOL) ? STREAM_PROTOCOL : false),
  });
  const attached: (() => void)[] = [];
  const maxPerKey = deps.maxConnectionsPerKey ?? Infinity;
  /** Upgrades past authentication not yet held by the hub, per key. */
  const opening = new Map<bigint, number>();
  const release = (keyId: bigint) => {
    const n = (opening.get(keyId) ?? 1) - 1;
    if (n > 0) opening.set(keyId, n);
    else opening.delete(keyId);
  };

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> {
    let keyId: bigint;
    let after: bigint | undefined;
    const generation = deps.keyGeneration?.();
    try {
      after = parseAfter(url.searchParams.get('after'));
      const presented = req.headers['apikey'] ?? url.searchParams.get('apiKey') ?? protocolKey(req);
      const peer = req.socket.remoteAddress ?? '';
      const token = presentedKey(presented);
      const wait = token !== undefined && !deps.peekKey?.(token) ? deps.failures?.blocked(peer) : undefined;
      if (wait !== undefined) {
        throw new ServiceError('ERR_RATE_LIMITED', {
          message: 'too many requests with invalid API keys from this address',
          headers: { 'Retry-After': String(Math.max(1, Math.ceil(wait / 1000))) },
        });
      }
      const principal = await authenticate(deps.db, presented, 'read', deps.verifyKey).catch((err: unknown) => {
        if (err instanceof ServiceError && err.code === 'ERR_API_KEY_INVALID') deps.failures?.note(peer);
        throw err;
      });
      keyId = principal.id;
      if (deps.limiter) {
        const d = await deps.limiter.take(keyId, principal.rateLimit ?? deps.rateLimit ?? Infinity);
        if (!d.allowed)
          throw new ServiceError('ERR_RATE_LIMITED', { headers: { 'Retry-After': String(Math.max(1, Math.ceil(d.resetMs / 1000))) } });
      }
      if (after !== undefined) {
        // A resume point from the future would wait, silently, for events that are not its own.
        const newest = await readNewestEventId(deps.db);
        if (after > newest) {
          throw new ServiceError('ERR_INVALID_CURSOR', {
            message: `after ${after} is beyond the newest event, ${newest}: resume from an event id you received, or connect without after`,
            errorCause: String(newest),
          });
        }
      }
    } catch (err) {
      if (err instanceof ServiceError) return refuse(socket, err);
      log.warn({ err }, 'stream upgrade failed');
      return refuse(socket, new ServiceError('ERR_DATABASE_UNAVAILABLE'));
    }
    if (socket.destroyed) return;
    // Checked and counted in one synchronous step: concurrent upgrades of a key cannot pass the bound.
    const held = deps.hub.connections(keyId) + (opening.get(keyId) ?? 0);
    if (held >= maxPerKey) {
      return refuse(
        socket,
        new ServiceError('ERR_TOO_MANY_STREAMS', {
          message: `this key already has ${maxPerKey} streams open here (BLOCKWIRE_WS_MAX_CONNECTIONS_PER_KEY): close one first`,
        }),
      );
    }
    opening.set(keyId, (opening.get(keyId) ?? 0) + 1);
    let handed = false;
    socket.once('close', () => {
      if (!handed) release(keyId);
    });
    wss.handleUpgrade(req, socket, head, (ws) => {
      handed = true;
      release(keyId);
      deps.hub.accept(ws, keyId, after);
      // Revoked after it was read and before the hub held the socket: the notification found nothing to close.
      if (generation !== deps.keyGeneration?.())
        void deps.hub.checkKeys([keyId]).catch((err: unknown) => log.warn({ err }, 'stream key check failed'));
    });
  }

  function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://stream.invalid');
    if (!(STREAM_PATHS as readonly string[]).includes(url.pathname.replace(/\/$/, ''))) return false;
    socket.on('error', () => undefined);
    void upgrade(req, socket, head, url);
    return true;
  }

  return {
    handleUpgrade,
    attach(server) {
      attached.push(addUpgradeHandler(server, handleUpgrade));
    },
    close() {
      for (const detach of attached) detach();
      wss.close();
    },
  };
}
