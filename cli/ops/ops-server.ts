/**
 * The operations listener of a process (BLOCKWIRE_METRICS_PORT): GET /metrics (Prometheus text)
 * and GET /healthz (200 with what this process runs while it is up, 503 once it is stopping), for
 * roles that have no API port — the indexer, stream-only and worker containers — and for
 * container healthchecks. Plain node:http: it must answer even when the API is not running.
 * @module
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../src/log.js';
import type { Metrics } from './metrics.js';

export type OpsServerDeps = {
  host: string;
  port: number;
  metrics: Metrics;
  log: Logger;
  /** What /healthz reports about this process (roles, indexer mode…). */
  health: () => Record<string, unknown>;
  /** True once the process is shutting down: /healthz answers 503. */
  stopping: () => boolean;
};

export type OpsServer = { port: number; url: string; close(): Promise<void> };

/** Starts the listener; resolves once it is bound. */
export async function startOpsServer(deps: OpsServerDeps): Promise<OpsServer> {
  const log = deps.log.child({ component: 'ops.server' });
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      deps.metrics.render().then(
        (body) => res.writeHead(200, { 'content-type': deps.metrics.contentType }).end(body),
        (err: unknown) => {
          log.error({ err }, 'metrics rendering failed');
          res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
        },
      );
      return;
    }
    if (path === '/healthz') {
      const stopping = deps.stopping();
      const body = JSON.stringify({ status: stopping ? 'stopping' : 'ok', pid: process.pid, ...deps.health() });
      res.writeHead(stopping ? 503 : 200, { 'content-type': 'application/json; charset=utf-8' }).end(body);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('GET /metrics or /healthz\n');
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.port, deps.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = deps.host === '0.0.0.0' || deps.host === '::' ? '127.0.0.1' : deps.host.includes(':') ? `[${deps.host}]` : deps.host;
  const url = `http://${host}:${port}`;
  log.info({ url }, 'operations listener (/metrics, /healthz)');
  return {
    port,
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
