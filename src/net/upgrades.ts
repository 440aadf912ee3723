/**
 * WebSocket upgrades of one HTTP server shared by several endpoints: the stream (`/v1/stream`)
 * and the Coinstack sockets (`/sock`, `/websocket`) attach to the API's server in the
 * all-in-one process. Node hands every upgrade request to the server's `upgrade` listeners, so
 * two listeners would both answer it: here there is one listener per server, which offers the
 * request to each handler in turn (a handler claims it by returning true) and answers 404 with
 * the API's error body when none does — except on a path reserved for a handler still starting
 * (the stream, attached after the API listens in the all-in-one process, and gone while it
 * stops): 503 `ERR_STARTING` with `Retry-After: 1`, which clients retry, rather than a 404 they
 * would take as final.
 * @module
 */
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { ServiceError } from '../errors.js';

/** Takes an upgrade request (returns true) or leaves it to the next handler (false). */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

type Router = {
  handlers: UpgradeHandler[];
  reserved: Set<string>;
  listener: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
};
const routers = new WeakMap<Server, Router>();

/** Answers an upgrade request with a plain HTTP response and closes the socket. */
export function answerUpgrade(socket: Duplex, status: number, headers: Record<string, string>, body: string): void {
  const lines = Object.entries({ ...headers, 'Content-Length': String(Buffer.byteLength(body)) }).map(([k, v]) => `${k}: ${v}\r\n`);
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nConnection: close\r\n${lines.join('')}\r\n${body}`);
}

function routerOf(server: Server): Router {
  let r = routers.get(server);
  if (!r) {
    const handlers: UpgradeHandler[] = [];
    const reserved = new Set<string>();
    const listener = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => undefined);
      for (const h of handlers) if (h(req, socket, head)) return;
      const path = new URL(req.url ?? '/', 'http://upgrade.invalid').pathname.replace(/\/$/, '');
      const starting = reserved.has(path);
      answerUpgrade(
        socket,
        starting ? 503 : 404,
        { 'Content-Type': 'application/json; charset=utf-8', ...(starting ? { 'Retry-After': '1' } : {}) },
        JSON.stringify(new ServiceError(starting ? 'ERR_STARTING' : 'ERR_ROUTE_NOT_FOUND').toBody()),
      );
    };
    r = { handlers, reserved, listener };
    routers.set(server, r);
    server.on('upgrade', listener);
  }
  return r;
}

/**
 * Reserves upgrade paths for a handler that attaches later (or has stopped): while none takes
 * them, they answer 503 `ERR_STARTING` instead of 404.
 */
export function reserveUpgradePaths(server: Server, paths: readonly string[]): void {
  const r = routerOf(server);
  for (const p of paths) r.reserved.add(p);
}

/** Adds `handler` to `server`'s upgrade handlers; returns its removal. */
export function addUpgradeHandler(server: Server, handler: UpgradeHandler): () => void {
  const router = routerOf(server);
  router.handlers.push(handler);
  return () => {
    const i = router.handlers.indexOf(handler);
    if (i >= 0) router.handlers.splice(i, 1);
    if (router.handlers.length === 0 && router.reserved.size === 0) {
      server.off('upgrade', router.listener);
      routers.delete(server);
    }
  };
}
