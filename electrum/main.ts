/**
 * The Electrum role: an Electrum protocol server (1.4 to 1.6) over TCP and TLS (either or both, on the
 * ports the settings give) answering from the index, with notifications from the outbox and
 * the indexed mempool (tracker.ts). `startElectrum` listens and returns the ports and `stop()`;
 * nothing runs at import.
 * @module
 */
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import type { Kysely } from 'kysely';
import { createPreparedDb } from '../src/db/prepared-pool.js';
import type { Config } from '../src/config.js';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import { createMethods, type ElectrumNode, type MethodSettings } from './methods.js';
import { Session, type SessionLimits } from './session.js';
import { Tracker, type TrackerStats } from './tracker.js';
import { loadTlsMaterial } from './tls-cert.js';
import { ConnectionCaps } from './connection-limits.js';
import { SyncGate } from './sync-gate.js';

export type ElectrumDeps = {
  config: Config;
  log: Logger;
  db: Kysely<Database>;
  /**
   * With it, the methods read through a pool of their own with prepared statements
   * (src/db/prepared-pool.ts): a transaction found by txid is otherwise planned anew on every call.
   */
  databaseUrl?: string;
  node: ElectrumNode;
  /** Software version string answered by server.version (default `blockwire/<version>`). */
  serverVersion?: string;
};

export type ElectrumHandle = {
  /** Listening ports (undefined when that listener is off). */
  tcpPort: number | undefined;
  tlsPort: number | undefined;
  /** The TLS certificate in use (PEM file), when TLS is on. */
  tlsCertFile: string | undefined;
  /** Open connections. */
  connections(): number;
  stats(): TrackerStats & { connections: number; refusedConnections: number };
  stop(): Promise<void>;
};

/** Starts the listeners ELECTRUM_TCP_PORT / ELECTRUM_TLS_PORT ask for (none: nothing listens). */
export async function startElectrum(deps: ElectrumDeps): Promise<ElectrumHandle> {
  const { config, db } = deps;
  const log = deps.log.child({ component: 'electrum' });
  const tracker = new Tracker(db, log, {
    pollMs: config.electrumPollMs,
    mempoolPollMs: config.electrumMempoolPollMs,
    maxHistory: config.electrumMaxHistory,
    batchSize: 500,
  });
  await tracker.start();
  // Answers that read the index wait for it to reach the node's tip (the node read before the listeners open).
  const gate = new SyncGate({
    nodeHeight: () => deps.node.call<number>('getblockcount'),
    indexHeight: () => tracker.tip()?.height ?? -1,
    maxLagBlocks: config.electrumMaxLagBlocks,
    pollMs: config.pollIntervalMs,
    log,
  });
  await gate.start();
  tracker.nodeHeight = () => gate.nodeHeightNow();

  const hosts: MethodSettings['hosts'] = {};
  const settings: MethodSettings = {
    serverVersion: deps.serverVersion ?? 'blockwire/0.1',
    banner: config.electrumBanner,
    donationAddress: config.electrumDonationAddress,
    hosts,
    maxHistory: config.electrumMaxHistory,
    maxSubscriptions: config.electrumMaxSubscriptions,
    maxSubscriptionsTotal: config.electrumMaxSubscriptionsTotal,
    maxHeaders: 2016,
    requireApiKey: config.electrumRequireApiKey,
  };
  const reads = deps.databaseUrl ? createPreparedDb(deps.databaseUrl, { max: 10, applicationName: 'blockwire-electrum' }) : db;
  const closeReads = async () => {
    if (reads !== db) await reads.destroy();
  };
  const methods = createMethods({ db: reads, node: deps.node, tracker, settings, syncing: () => gate.behind() });
  const limits: SessionLimits = {
    maxRequestBytes: config.electrumMaxRequestBytes,
    rateLimit: config.electrumRateLimit,
    rateWindowMs: config.electrumRateWindowMs,
    idleTimeoutMs: config.electrumIdleTimeoutMs,
    requestTimeoutMs: config.electrumRequestTimeoutMs,
    maxInFlight: 64,
    maxBufferedBytes: 16 * 1024 * 1024,
  };
  const sessions = new Set<Session>();
  const caps = new ConnectionCaps({ maxTotal: config.electrumMaxConnections, maxPerAddress: config.electrumMaxConnectionsPerIp });
  /** A connection becomes a session (a plain-TCP one once the caps admit it; a TLS one was admitted before its handshake). */
  const accept = (socket: Socket, admitted: boolean) => {
    if (!admitted && !caps.admit(socket, true)) return;
    const session = new Session({
      socket,
      limits,
      log,
      call: (s, method, params) => methods.call(s, method, params),
      onClose: (s) => {
        sessions.delete(s);
        tracker.drop(s, s.subscribed);
        methods.release(s);
      },
    });
    sessions.add(session);
  };

  const servers: Server[] = [];
  const listen = (server: Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, config.electrumHost, () => {
        server.off('error', reject);
        servers.push(server);
        resolve((server.address() as { port: number }).port);
      });
    });
  let tcpPort: number | undefined;
  let tlsPort: number | undefined;
  let tlsCertFile: string | undefined;
  try {
    if (config.electrumTcpPort !== undefined) {
      tcpPort = await listen(
        createTcpServer((socket) => accept(socket, false)),
        config.electrumTcpPort,
      );
      hosts[config.electrumHost] = { ...hosts[config.electrumHost], tcp_port: tcpPort };
    }
    if (config.electrumTlsPort !== undefined) {
      const tls = await loadTlsMaterial({ certFile: config.electrumTlsCert, keyFile: config.electrumTlsKey, dataDir: config.dataDir });
      if (tls.generated) log.info({ cert: tls.certFile }, 'self-signed Electrum TLS certificate generated');
      tlsCertFile = tls.certFile;
      const server = createTlsServer({ cert: tls.cert, key: tls.key }, (socket) => accept(socket, true));
      // counted from the TCP accept, before the handshake costs anything
      server.on('connection', (raw: Socket) => void caps.admit(raw, false));
      server.on('tlsClientError', () => {});
      tlsPort = await listen(server, config.electrumTlsPort);
      hosts[config.electrumHost] = { ...hosts[config.electrumHost], ssl_port: tlsPort };
    }
  } catch (err) {
    for (const s of servers) s.close();
    gate.stop();
    await tracker.stop();
    await closeReads();
    throw err;
  }
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const s of sessions) s.closeIfIdle(now);
    },
    Math.min(10_000, Math.max(100, Math.floor(config.electrumIdleTimeoutMs / 4))),
  );
  sweep.unref();
  log.info({ tcpPort, tlsPort, host: config.electrumHost }, 'Electrum server listening');

  return {
    tcpPort,
    tlsPort,
    tlsCertFile,
    connections: () => sessions.size,
    stats: () => ({ ...tracker.stats, connections: sessions.size, refusedConnections: caps.refused.total + caps.refused.perAddress }),
    async stop() {
      clearInterval(sweep);
      gate.stop();
      const closed = servers.map((s) => new Promise<void>((r) => s.close(() => r())));
      for (const s of sessions) s.close('server stopping');
      await Promise.all(closed);
      await tracker.stop();
      await closeReads();
    },
  };
}
