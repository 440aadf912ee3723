/**
 * WebSocket upgrades of one HTTP server shared by several endpoints: the stream (`/v1/stream`)
 * and the Coinstack sockets (`/sock`, `/websocket`) attach to the API's server in the
 * all-in-one process. Node hands every upgrade request to the server's `upgrade` listeners, so
 * two listeners would both answer it: here there is one listener per server, which offers the
 * request to each handler in turn (a handler claims it by returning true) and answers 404 with
 * the API's error body when none does.
 * @module
 */
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { ServiceError } from '../errors.js';

/** Takes an upgrade request (returns true) or leaves it to the next handler (false). */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

const routers = new WeakMap<
  Server,
  { handlers: UpgradeHandler[]; listener: (req: IncomingMessage, socket: Duplex, head: Buffer) => void }
>();

/** Answers an upgrade request with a plain HTTP response and closes the socket. */
export function answerUpgrade(socket: Duplex, status: number, headers: Record<string, string>, body: string): void {
  const lines = Object.entries({ ...headers, 'Content-Length': String(Buffer.byteLength(body)) }).map(([k, v]) => `${k}: ${v}\r\n`);
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nConnection: close\r\n${lines.join('')}\r\n${body}`);
}

/** Adds `handler` to `server`'s upgrade handlers; returns its removal. */
export function addUpgradeHandler(server: Server, handler: UpgradeHandler): () => void {
  let r = routers.get(server);
  if (!r) {
    const handlers: UpgradeHandler[] = [];
    const listener = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => undefined);
      for (const h of handlers) if (h(req, socket, head)) return;
      answerUpgrade(
        socket,
        404,
        { 'Content-Type': 'application/json; charset=utf-8' },
        JSON.stringify(new ServiceError('ERR_ROUTE_NOT_FOUND').toBody()),
      );
    };
    r = { handlers, listener };
    routers.set(server, r);
    server.on('upgrade', listener);
  }
  const router = r;
  router.handlers.push(handler);
  return () => {
    const i = router.handlers.indexOf(handler);
    if (i >= 0) router.handlers.splice(i, 1);
    if (router.handlers.length === 0) {
      server.off('upgrade', router.listener);
      routers.delete(server);
    }
  };
}
