/**
 * What the streams integration tests share: a migrated database, real Redis under a unique
 * prefix, keys, hooks and subscriptions written through the tenancy queries, outbox rows
 * inserted the way the indexer inserts them (ordering lock, one transaction), a recording HTTP
 * receiver with programmable answers, and a WebSocket client that records what it is sent.
 */
import { inject } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Server, Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { WebSocket } from 'ws';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { insertHook, type HookRow } from '../../../src/db/queries/tenancy-hooks.js';
import { insertSubscription } from '../../../api/queries/tenancy-subscriptions.js';
import { lockOutbox } from '../../../src/db/outbox-lock.js';
import type { Database, EventType } from '../../../src/db/schema.js';
import { testConfig, type Config } from '../../../src/config.js';
import { newHookSecret, newId } from '../../../api/routes/hooks.js';
import { projectRoot } from '../../support/fixtures.js';
import type { RelaySettings } from '../../../streams/relay.js';
import { feedChannel } from '../../../streams/feed-message.js';
import { waitFor } from '../../support/wait.js';

/**
 * Config for tests: loopback hooks allowed, fast polling, short rescue. The circuit breaker
 * opens only after 1,000 failures in a row (tests of the retry schedule fail one receiver on
 * purpose); streams/breaker.test.ts sets it.
 */
export function streamsConfig(over: Partial<Config> = {}): Config {
  return testConfig({
    allowPrivateHooks: true,
    relayPollMs: 20,
    deliveryRescueMs: 2000,
    workerLockMs: 2000,
    webhookTimeoutMs: 2000,
    webhookBreakerFailures: 1000,
    streamPort: 0,
    ...over,
  });
}

/** A random address key and a display address for it. */
export function newAddress(): { addrKey: string; address: string } {
  const h = randomBytes(16).toString('hex');
  return {
    addrKey: `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`,
    address: `bcrt1q${randomBytes(19).toString('hex')}`,
  };
}

export type OutboxInput = {
  type: EventType;
  addrKey?: string;
  address?: string;
  confirmations?: number;
  received?: bigint;
  height?: number;
  keyId?: bigint;
};

/** Inserts events as the indexer does (ordering lock, one transaction); returns their seqs. */
export async function insertEvents(db: Kysely<Database>, events: readonly OutboxInput[]): Promise<bigint[]> {
  return db.transaction().execute(async (trx) => {
    await lockOutbox(trx);
    const rows = await trx
      .insertInto('outbox')
      .values(
        events.map((e) => ({
          type: e.type,
          key_id: e.keyId ?? null,
          addr_key: e.addrKey ?? null,
          address: e.address ?? null,
          txid: e.type.startsWith('tx.') || e.type === 'stamp.confirmed' ? randomBytes(32) : null,
          block_hash: e.height !== undefined ? randomBytes(32) : null,
          height: e.height ?? null,
          confirmations: e.confirmations ?? (e.type.startsWith('tx.') ? 0 : null),
          received: e.type.startsWith('tx.') ? (e.received ?? 1000n) : null,
          sent: e.type.startsWith('tx.') ? 0n : null,
          replaced_by: null,
          data: null,
        })),
      )
      .returning('seq')
      .execute();
    return rows.map((r) => r.seq);
  });
}

/** `n` tx.unconfirmed events for one address. */
export function txEvents(addr: { addrKey: string; address: string }, n: number): OutboxInput[] {
  return Array.from({ length: n }, (_, i) => ({ type: 'tx.unconfirmed' as const, ...addr, received: BigInt(1000 + i) }));
}

export type StreamsFixture = {
  t: TestDatabase;
  redisUrl: string;
  prefix: string;
  newKey(): Promise<{ id: bigint; key: string }>;
  httpHook(keyId: bigint, url: string): Promise<{ id: string; secret: string }>;
  snsHook(keyId: bigint, topicArn: string): Promise<{ id: string }>;
  subscribe(
    keyId: bigint,
    opts: { addrKey?: string; address?: string; hookId?: string | null; confirmations?: number; chain?: boolean },
  ): Promise<string>;
  drop(): Promise<void>;
};

/** Settings of a relay started by a test alone: hour-long retention, rescue and housekeeping unless `over` says otherwise. */
export function relaySettings(prefix: string, over: Partial<RelaySettings> = {}): RelaySettings {
  return {
    batchSize: 100,
    deliveryBatchSize: 50,
    pollMs: 100,
    standbyMs: 200,
    channel: feedChannel(prefix),
    retentionMs: 3_600_000,
    deliveryLogRetentionMs: 3_600_000,
    rescueAfterMs: 3_600_000,
    housekeepingMs: 3_600_000,
    ...over,
  };
}

export async function createStreamsFixture(redisUrl: string = inject('redisUrl')): Promise<StreamsFixture> {
  const t = await createMigratedDatabase('streams');
  return {
    t,
    redisUrl,
    prefix: uniqueRedisPrefix('st'),
    async newKey() {
      const k = await createApiKey(t.db, { name: 'streams-test' });
      return { id: k.id, key: k.key };
    },
    async httpHook(keyId, url) {
      const secret = newHookSecret();
      const h = await insertHook(t.db, { id: newId('hook'), keyId, type: 'http', url, secret });
      return { id: h.id, secret };
    },
    async snsHook(keyId, topicArn) {
      const h = await insertHook(t.db, { id: newId('hook'), keyId, type: 'sns', topicArn, region: topicArn.split(':')[3]! });
      return { id: h.id };
    },
    async subscribe(keyId, o) {
      const s = await insertSubscription(t.db, {
        id: newId('sub'),
        keyId,
        kind: o.chain ? 'chain' : 'address',
        address: o.chain ? null : o.address!,
        addrKey: o.chain ? null : o.addrKey!,
        hookId: o.hookId ?? null,
        confirmations: o.confirmations ?? 6,
      });
      return s.id;
    },
    drop: () => t.drop(),
  };
}

/** An http hook's row as the worker reads it, without a database (tests of the transport alone). */
export function httpHookRow(url: string): HookRow {
  return {
    id: 'hook_0123456789abcdef0123',
    key_id: 1n,
    type: 'http',
    url,
    secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
    topic_arn: null,
    region: null,
    disabled_at: null,
    disabled_reason: null,
    created_at: new Date(),
    deleted_at: null,
    previous_secret: null,
    previous_secret_until: null,
    breaker_state: 'closed',
    breaker_until: null,
  };
}

/** A TCP or HTTP(S) server listening on 127.0.0.1, its connections counted; `close()` ends it and every connection. */
export async function listenLocal(server: Server): Promise<{ port: number; connections: () => number; close: () => void }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  server.on('connection', (s: Socket) => {
    connections += 1;
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** One request the receiver got; `port` = the sender's end of the connection (one per kept-alive socket). */
export type ReceivedWebhook = {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  headers: IncomingHttpHeaders;
  at: number;
  port: number;
};

export type Receiver = {
  url: string;
  received: ReceivedWebhook[];
  /** Decides each answer; default 200. May delay. */
  respond: (req: ReceivedWebhook, res: ServerResponse) => void | Promise<void>;
  close(): Promise<void>;
};

/** A local webhook receiver recording every request it gets. */
export async function startReceiver(): Promise<Receiver> {
  const r: Receiver = {
    url: '',
    received: [],
    respond: (_req, res) => {
      res.writeHead(200);
      res.end('ok');
    },
    close: async () => undefined,
  };
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const w: ReceivedWebhook = {
        id: String(req.headers['webhook-id']),
        timestamp: String(req.headers['webhook-timestamp']),
        signature: String(req.headers['webhook-signature']),
        body: Buffer.concat(chunks).toString('utf8'),
        headers: req.headers,
        at: Date.now(),
        port: req.socket.remotePort ?? 0,
      };
      r.received.push(w);
      void Promise.resolve(r.respond(w, res)).catch(() => res.destroy());
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  r.close = () =>
    new Promise<void>((res) => {
      server.closeAllConnections();
      server.close(() => res());
    });
  return r;
}

export type StreamClient = {
  ws: WebSocket;
  /** Parsed messages in arrival order (events and control messages). */
  messages: Record<string, unknown>[];
  events(): { id: number; type: string; subscription_id: string | null; [k: string]: unknown }[];
  closed: Promise<{ code: number; reason: string }>;
  close(): void;
};

/** Connects a stream client; resolves once open (rejects with the HTTP status on refusal). */
export function connectStream(
  url: string,
  key: string,
  opts: { after?: bigint | number; query?: boolean; protocol?: boolean; autoPong?: boolean } = {},
): Promise<StreamClient> {
  const u = new URL(url);
  if (opts.after !== undefined) u.searchParams.set('after', String(opts.after));
  if (opts.query) u.searchParams.set('apiKey', key);
  // (`protocol`: the key as a subprotocol, as browser pages send it)
  const ws = new WebSocket(u, opts.protocol ? ['blockwire.v1', `blockwire.key.${key}`] : [], {
    headers: opts.query || opts.protocol ? {} : { apiKey: key },
    autoPong: opts.autoPong ?? true,
  });
  const messages: Record<string, unknown>[] = [];
  ws.on('message', (data) => messages.push(JSON.parse(String(data)) as Record<string, unknown>));
  const closed = new Promise<{ code: number; reason: string }>((res) =>
    ws.on('close', (code, reason) => res({ code, reason: String(reason) })),
  );
  return new Promise((resolve, reject) => {
    ws.once('open', () =>
      resolve({
        ws,
        messages,
        events: () => messages.filter((m) => typeof m.id === 'number') as ReturnType<StreamClient['events']>,
        closed,
        close: () => ws.close(),
      }),
    );
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        reject(
          Object.assign(new Error(`HTTP ${res.statusCode}`), {
            status: res.statusCode,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        ),
      );
    });
    ws.once('error', reject);
  });
}

/**
 * Runs delayed delivery jobs now (time travel for the retry schedule): waits until `count`
 * jobs are delayed, promotes them, and returns their delays in ms.
 */
export async function promoteDelayed(redisUrl: string, prefix: string, queue: 'webhooks' | 'sns', count: number): Promise<number[]> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const q = new Queue(queue, { connection, prefix });
  try {
    const jobs = await waitFor(
      `${count} delayed ${queue} job(s)`,
      async () => {
        const d = await q.getDelayed();
        return d.length >= count ? d : undefined;
      },
      15_000,
    );
    const delays = jobs.map((j) => Number(j.delay));
    for (const j of jobs) await j.promote();
    return delays;
  } finally {
    await q.close();
    connection.disconnect();
  }
}

export type Child = { pid: number; kill(): Promise<void> };

let childCommand: Promise<string[]> | undefined;

/** child-role.ts bundled once with esbuild (a start in a fraction of tsx's time), else through tsx. */
function roleChildCommand(): Promise<string[]> {
  childCommand ??= (async () => {
    const entry = new URL('./child-role.ts', import.meta.url).pathname;
    try {
      const esbuild = await import('esbuild');
      const out = join(projectRoot, 'node_modules', '.cache', 'blockwire', `streams-child-${process.pid}.mjs`);
      await mkdir(dirname(out), { recursive: true });
      await esbuild.build({
        entryPoints: [entry],
        bundle: true,
        platform: 'node',
        format: 'esm',
        packages: 'external',
        outfile: out,
        target: 'node20',
        logLevel: 'silent',
      });
      return [out];
    } catch {
      return ['--import', 'tsx', entry];
    }
  })();
  return childCommand;
}

/** Starts a streams role in a child process (child-role.ts) and waits for it to be ready. */
export async function spawnRole(role: 'streams' | 'worker' | 'both', f: StreamsFixture, config: Partial<Config>): Promise<Child> {
  const arg = JSON.stringify({
    role,
    databaseUrl: f.t.url,
    redisUrl: f.redisUrl,
    prefix: f.prefix,
    config: { allowPrivateHooks: true, streamPort: 0, ...config },
  });
  const child = spawn(process.execPath, [...(await roleChildCommand()), arg], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`child ${role} not ready in 20 s: ${err}`)), 20_000);
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`child ${role} exited with ${code}: ${err}`));
    });
  });
  return {
    pid: child.pid!,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
