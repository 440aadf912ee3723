/**
 * One upgrade router per HTTP server (src/net/upgrades.ts): a path reserved for a handler that
 * attaches later (the stream, after the API listens in the all-in-one process) answers 503
 * ERR_STARTING with Retry-After until the handler takes it, and again once it is removed; an
 * unknown path answers 404 ERR_ROUTE_NOT_FOUND. The SDK's stream takes a 404 as final and
 * retries a 503, so a client reconnecting during a restart must see the 503. Real sockets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { addUpgradeHandler, reserveUpgradePaths } from '../../../src/net/upgrades.js';

type Answer = { status: number; retryAfter?: string | undefined; body: unknown } | { status: 101 };

describe('upgrade paths of one server', () => {
  let server: Server;
  let url: string;
  const wss = new WebSocketServer({ noServer: true });

  beforeAll(async () => {
    server = createServer((_req, res) => res.end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    wss.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const ask = (path: string) =>
    new Promise<Answer>((resolve, reject) => {
      const ws = new WebSocket(`${url}${path}`);
      ws.once('open', () => {
        ws.close();
        resolve({ status: 101 });
      });
      ws.once('unexpected-response', (_req, res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += String(c)));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body: JSON.parse(text) }));
      });
      ws.once('error', (err) => {
        if (!/Unexpected server response/.test(String(err))) reject(err);
      });
    });

  it('answers 503 ERR_STARTING on a reserved path until its handler attaches, 404 elsewhere, and 503 again once it leaves', async () => {
    const other = addUpgradeHandler(server, (req) => req.url === '/other' && false);
    reserveUpgradePaths(server, ['/v1/stream']);

    const starting = await ask('/v1/stream');
    expect(starting).toMatchObject({ status: 503, retryAfter: '1', body: { error_code: 'ERR_STARTING' } });
    expect(await ask('/v1/stream/')).toMatchObject({ status: 503 });
    expect(await ask('/nowhere')).toMatchObject({ status: 404, body: { error_code: 'ERR_ROUTE_NOT_FOUND' } });

    const detach = addUpgradeHandler(server, (req, socket, head) => {
      if (!req.url?.startsWith('/v1/stream')) return false;
      wss.handleUpgrade(req, socket, head, (ws) => ws.close());
      return true;
    });
    expect(await ask('/v1/stream')).toEqual({ status: 101 });
    expect(await ask('/nowhere')).toMatchObject({ status: 404 });

    detach();
    expect(await ask('/v1/stream')).toMatchObject({ status: 503, body: { error_code: 'ERR_STARTING' } });
    other();
    // still reserved: the router stays while a path is reserved
    expect(await ask('/v1/stream')).toMatchObject({ status: 503 });
  });
});
