/**
 * bench/events: event delivery. A server process (bench/events-server.ts: a
 * devnode, the indexer, the relay + WebSocket stream, the delivery workers) and this process
 * (the clients, the clock; a webhook receiver in a process of its own, bench/webhook-receiver.ts)
 * measure:
 * 1. block arrival → WebSocket: `generatetoaddress 1` on the devnode until each of N clients
 *    (one key each, a chain subscription) has the block's block.connected — p50/p99/max;
 * 2. outbox → WebSocket fan-out: the same, from the commit of an outbox row (no indexer);
 * 3. events/s through relay → WebSocket: E events for one address, C subscribed clients;
 * 4. webhook deliveries/s: W events for one address whose subscription pushes to a local
 *    receiver answering 200 (signed POSTs through BullMQ, delivery log in PostgreSQL);
 * 5. their floor: the same signed POSTs from the worker's transport alone (bench/webhook-floor.ts),
 *    no queue, no log, no relay.
 * Run: `node --import tsx bench/events.ts [--clients N] [--blocks B] [--events E]
 * [--stream-clients C] [--webhooks W] [--worker-processes P] [--relay-apart] [--floor F] [--no-devnode]` (DATABASE_URL / REDIS_URL optional:
 * an ephemeral PostgreSQL and a redis-server are started otherwise). `npm run bench` runs it with
 * 10,000 clients, and stops at once when the limit of open files is too low for them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import { readFileSync, readdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { WebSocket } from 'ws';
import pg from 'pg';
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { startPostgres } from '../cli/embedded/postgres.js';
import { startRedis } from '../cli/embedded/redis.js';
import { createDb } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createApiKey } from '../src/auth/keys.js';
import { insertHook } from '../src/db/queries/tenancy-hooks.js';
import { insertSubscription } from '../api/queries/tenancy-subscriptions.js';
import { lockOutbox } from '../src/db/outbox-lock.js';
import { Redis } from 'ioredis';
import { sql } from 'kysely';

const { values: opts } = benchArgs(import.meta.url, {
  options: {
    clients: { type: 'string', default: '1000' },
    blocks: { type: 'string', default: '20' },
    events: { type: 'string', default: '20000' },
    'stream-clients': { type: 'string', default: '10' },
    webhooks: { type: 'string', default: '20000' },
    'no-devnode': { type: 'boolean', default: false },
    'worker-processes': { type: 'string', default: '1' },
    floor: { type: 'string', default: '16' },
    'relay-apart': { type: 'boolean', default: false },
  },
});
const CLIENTS = Number(opts.clients);
const BLOCKS = Number(opts.blocks);
const EVENTS = Number(opts.events);
const STREAM_CLIENTS = Number(opts['stream-clients']);
const WEBHOOKS = Number(opts.webhooks);
const WORKER_PROCESSES = Number(opts['worker-processes']);
/** The relay (and stream) in a process without a delivery worker: then WORKER_PROCESSES processes of workers alone besides. */
const RELAY_APART = opts['relay-apart'];
/** Requests in flight in the floor phase (5); 0 skips it. */
const FLOOR = Number(opts.floor);

/**
 * Each WebSocket client is a socket here and one in the server process. Node raises its soft
 * limit of open files to the hard limit when it starts (and the server process inherits it), so
 * the hard limit is what counts: below what the run needs, it stops at once and says so
 * (raising it needs root: `ulimit -Hn`, or LimitNOFILE in a systemd unit).
 */
function ensureOpenFiles(clients: number): void {
  const need = clients + 2048; // (PostgreSQL, Redis, the devnode and the stream clients besides)
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  if (!m) return;
  const soft = m[1] === 'unlimited' ? Infinity : Number(m[1]);
  if (soft < need)
    throw new Error(
      `${clients} clients need ${need} open files; this process may open ${soft} (hard limit ${m[2]}): raise it (ulimit -n) or run fewer --clients`,
    );
}
ensureOpenFiles(Number(opts.clients));

/** CPU ms (user + system) of a process from /proc (of one of its threads: `/proc/<pid>/task/<tid>`), 0 when it is gone. */
function cpuMs(pid: number, tid?: number): number {
  try {
    const f = readFileSync(`/proc/${pid}${tid === undefined ? '' : `/task/${tid}`}/stat`, 'utf8')
      .split(') ')[1]!
      .split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/**
 * CPU ms of a process's threads other than its main (JavaScript) thread: V8's garbage collector
 * and compiler threads, libuv's pool. The cost of allocation shows here rather than in a profile
 * of the main thread.
 */
const offMainCpuMs = (pid: number): number => cpuMs(pid) - cpuMs(pid, pid);

/** Processes whose command line contains every needle, and their children. */
function processTree(...needles: string[]): number[] {
  const procs = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
  const info = procs.map((pid) => {
    try {
      return {
        pid,
        cmd: readFileSync(`/proc/${pid}/cmdline`, 'utf8'),
        ppid: Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]),
      };
    } catch {
      return { pid, cmd: '', ppid: -1 };
    }
  });
  const roots = new Set(info.filter((p) => needles.every((n) => p.cmd.includes(n))).map((p) => p.pid));
  return info.filter((p) => roots.has(p.pid) || roots.has(p.ppid)).map((p) => p.pid);
}

/** CPU ms of groups of processes (or what `read` says of each), between two calls. */
function cpuMeter(groups: Record<string, () => number[]>, read: (pid: number) => number = cpuMs): () => Record<string, number> {
  const snap = () => Object.fromEntries(Object.entries(groups).map(([k, pids]) => [k, pids().reduce((a, p) => a + read(p), 0)]));
  const before = snap();
  return () => {
    const after = snap();
    return Object.fromEntries(Object.keys(groups).map((k) => [k, after[k]! - before[k]!]));
  };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const ms = (n: number) => n.toFixed(1);
const sleep = (n: number) => new Promise((r) => setTimeout(r, n));
const newId = (p: string) => `${p}_${randomBytes(10).toString('hex')}`;

type Client = {
  ws: WebSocket;
  onEvent: (e: { id: number; type: string; block: { height: number } | null }, at: number) => void;
  live: Promise<void>;
};

function connect(url: string, key: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { apiKey: key } });
    let markLive: () => void = () => undefined;
    const client: Client = { ws, onEvent: () => undefined, live: new Promise<void>((r) => (markLive = r)) };
    ws.on('message', (data) => {
      const at = performance.now();
      const m = JSON.parse(String(data)) as { id?: number; type: string; block: { height: number } | null };
      if (m.type === 'stream.live') markLive();
      else if (typeof m.id === 'number') client.onEvent(m as { id: number; type: string; block: { height: number } | null }, at);
    });
    ws.once('open', () => resolve(client));
    ws.once('error', reject);
  });
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const u = new URL(url);
  const auth = Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64');
  const res = await fetch(`${u.protocol}//${u.host}/`, {
    method: 'POST',
    headers: { authorization: `Basic ${auth}`, 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '1.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result: unknown; error: unknown };
  if (body.error) throw new Error(`rpc ${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

async function insertOutbox(
  db: Kysely<Database>,
  rows: { type: 'block.connected' | 'tx.unconfirmed'; height?: number; addrKey?: string; address?: string }[],
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await lockOutbox(trx);
    await trx
      .insertInto('outbox')
      .values(
        rows.map((r) => ({
          type: r.type,
          key_id: null,
          addr_key: r.addrKey ?? null,
          address: r.address ?? null,
          txid: r.type === 'tx.unconfirmed' ? randomBytes(32) : null,
          block_hash: r.height !== undefined ? randomBytes(32) : null,
          height: r.height ?? null,
          confirmations: r.type === 'tx.unconfirmed' ? 0 : null,
          received: r.type === 'tx.unconfirmed' ? 1000n : null,
          sent: r.type === 'tx.unconfirmed' ? 0n : null,
          replaced_by: null,
          data: null,
        })),
      )
      .execute();
  });
}

/**
 * Latencies of each "block" to every client (sorted), and to the first client that had it (one
 * per block, sorted): waits until all have it.
 */
async function fanOut(clients: Client[], fire: () => Promise<number>, label: string): Promise<number[] & { first: number[] }> {
  const latencies: number[] = [];
  const first: number[] = [];
  let target = -1;
  let t0 = 0;
  let got = 0;
  let done: () => void = () => undefined;
  for (const c of clients) {
    c.onEvent = (e, at) => {
      if (e.type === 'block.connected' && e.block?.height === target) {
        latencies.push(at - t0);
        if (got === 0) first.push(at - t0);
        if (++got === clients.length) done();
      }
    };
  }
  for (let b = 0; b < BLOCKS; b++) {
    got = 0;
    const all = new Promise<void>((r) => (done = r));
    t0 = performance.now();
    target = await fire();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${label}: block ${target} reached ${got}/${clients.length} clients in 30 s`)), 30_000);
    });
    // (cleared once every client has it: a pending 30 s timer kept the finished bench alive)
    await Promise.race([all, timeout]).finally(() => clearTimeout(timer));
    await sleep(300);
  }
  return Object.assign(
    latencies.sort((a, b) => a - b),
    { first: first.sort((a, b) => a - b) },
  );
}

async function main(): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), 'bench-events-'));
  const started: { stop(): Promise<void> }[] = [];
  let server: ChildProcess | undefined;
  const extras: ChildProcess[] = [];
  const clients: Client[] = [];
  let dbUrl = process.env.DATABASE_URL;
  let redisUrl = process.env.REDIS_URL;
  const pgDir = join(scratch, 'pg');
  try {
    if (!dbUrl) {
      const s = await startPostgres({ dataDir: pgDir, settings: { max_connections: 200 } });
      started.push(s);
      const c = new pg.Client({ connectionString: s.url });
      await c.connect();
      await c.query('CREATE DATABASE bench_events');
      await c.end();
      dbUrl = s.urlFor('bench_events');
    }
    if (!redisUrl) {
      const r = await startRedis({ dir: join(scratch, 'redis') });
      started.push(r);
      redisUrl = r.url;
    }
    const db = createDb(dbUrl, { max: 8 });
    started.push({ stop: () => db.destroy() });
    await migrateToLatest(db);

    const devnode = !opts['no-devnode'];
    const spawnServer = (args: Record<string, unknown>) => {
      const child = spawn(
        process.execPath,
        [
          ...(process.env.BENCH_SERVER_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_SERVER_PROF}`] : []),
          '--import',
          'tsx',
          'bench/events-server.ts',
          JSON.stringify({ databaseUrl: dbUrl, redisUrl, ...args }),
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const ready = new Promise<{ port: number; rpcUrl: string | null; address: string | null }>((resolve, reject) => {
        let buf = '';
        child.stdout!.on('data', (d: Buffer) => {
          buf += d.toString();
          // (the server's own line, not a log line its roles printed before it)
          const line = buf.split('\n').find((l) => l.startsWith('{"port"'));
          if (line) resolve(JSON.parse(line));
        });
        child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
      });
      return { child, ready };
    };
    const main = spawnServer({ devnode, noWorker: RELAY_APART });
    server = main.child;
    const info = await main.ready;
    for (let i = RELAY_APART ? 0 : 1; i < WORKER_PROCESSES; i++) {
      const extra = spawnServer({ devnode: false, workerOnly: true });
      extras.push(extra.child);
      await extra.ready;
    }
    const url = `ws://127.0.0.1:${info.port}/v1/stream`;
    const redisPort = new URL(redisUrl).port;
    const meter = (more: Record<string, () => number[]> = {}) =>
      cpuMeter({
        // (the process with the relay and the stream, and a worker unless --relay-apart; each workers-only process apart)
        server: () => [server!.pid!],
        ...Object.fromEntries(extras.map((e, i) => [`worker${i + 1}`, () => [e.pid!]])),
        bench: () => [process.pid],
        redis: () => processTree('redis-server', `:${redisPort}`),
        postgres: () => processTree('postgres', pgDir),
        ...more,
      });
    /** The same for the server and worker processes, off their main threads (offMainCpuMs). */
    const offMainMeter = () =>
      cpuMeter(
        { server: () => [server!.pid!], ...Object.fromEntries(extras.map((e, i) => [`worker${i + 1}`, () => [e.pid!]])) },
        offMainCpuMs,
      );
    // PostgreSQL transactions (every process's) and Redis commands, between two calls: what a
    // delivery costs in round trips, beside its CPU.
    const redisStats = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redisStats.connect();
    started.push({ stop: async () => void redisStats.disconnect() });
    const countOps = async () => {
      const pgTx = await sql<{
        n: string;
      }>`SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = current_database()`.execute(db);
      const redisCmds = /^total_commands_processed:(\d+)/m.exec(await redisStats.info('stats'))?.[1];
      return { pg: Number(pgTx.rows[0]?.n ?? 0), redis: Number(redisCmds ?? 0) };
    };
    const cpuLine = (m: Record<string, number>, n: number) =>
      Object.entries(m)
        .map(([k, v]) => `${k} ${(v / n).toFixed(3)}`)
        .join(', ');
    const results: string[] = [];

    // 1 and 2: N clients, one key each, each with a chain subscription.
    const t = performance.now();
    for (let i = 0; i < CLIENTS; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, CLIENTS - i) }, async () => {
          const k = await createApiKey(db, { name: 'bench' });
          await insertSubscription(db, {
            id: newId('sub'),
            keyId: k.id,
            kind: 'chain',
            address: null,
            addrKey: null,
            hookId: null,
            confirmations: 6,
          });
          return connect(url, k.key);
        }),
      );
      clients.push(...batch);
    }
    await Promise.all(clients.map((c) => c.live));
    process.stdout.write(`${CLIENTS} clients connected and live in ${ms(performance.now() - t)} ms\n`);

    if (devnode && info.rpcUrl && info.address) {
      // Warm up: the index must have the node's tip before the clock starts.
      const height = (await rpc(info.rpcUrl, 'getblockcount', [])) as number;
      const deadline = Date.now() + 120_000;
      while ((await db.selectFrom('chain_tip').select('height').executeTakeFirst())?.height !== height) {
        if (Date.now() > deadline) throw new Error('the indexer did not reach the node tip in 120 s');
        await sleep(100);
      }
      // A chain subscription pushing to a local receiver as well: block → first webhook delivered.
      const hookAt = new Map<number, number>();
      const blockReceiver = createServer((req, res) => {
        let body = '';
        req.on('data', (d: Buffer) => (body += d.toString('utf8')));
        req.on('end', () => {
          const at = performance.now();
          try {
            const e = JSON.parse(body) as { type?: string; block?: { height?: number } | null };
            if (e.type === 'block.connected' && typeof e.block?.height === 'number' && !hookAt.has(e.block.height))
              hookAt.set(e.block.height, at);
          } catch {
            // (not an event)
          }
          res.writeHead(200);
          res.end();
        });
      });
      await new Promise<void>((r) => blockReceiver.listen(0, '127.0.0.1', () => r()));
      started.push({ stop: () => new Promise<void>((r) => (blockReceiver.closeAllConnections(), blockReceiver.close(() => r()))) });
      const hookKey = await createApiKey(db, { name: 'bench-block-hook' });
      const blockHook = await insertHook(db, {
        id: newId('hook'),
        keyId: hookKey.id,
        type: 'http',
        url: `http://127.0.0.1:${(blockReceiver.address() as AddressInfo).port}/block`,
        secret: `whsec_${randomBytes(32).toString('base64')}`,
      });
      await insertSubscription(db, {
        id: newId('sub'),
        keyId: hookKey.id,
        kind: 'chain',
        address: null,
        addrKey: null,
        hookId: blockHook.id,
        confirmations: 6,
      });
      const firedAt = new Map<number, number>();
      const lat = await fanOut(
        clients,
        async () => {
          const t0 = performance.now();
          await rpc(info.rpcUrl!, 'generatetoaddress', [1, info.address]);
          const h = (await rpc(info.rpcUrl!, 'getblockcount', [])) as number;
          firedAt.set(h, t0);
          return h;
        },
        'block arrival',
      );
      results.push(
        `| block arrival (devnode → indexer → relay → WebSocket) | ${CLIENTS} | ${BLOCKS} | ${ms(pct(lat, 50))} | ${ms(pct(lat, 99))} | ${ms(lat[lat.length - 1]!)} | ${ms(pct(lat.first, 50))} | ${ms(pct(lat.first, 99))} |`,
      );
      const hooksBy = Date.now() + 30_000;
      while ([...firedAt.keys()].some((h) => !hookAt.has(h)) && Date.now() < hooksBy) await sleep(100);
      const hookLat = [...firedAt]
        .filter(([h]) => hookAt.has(h))
        .map(([h, t0]) => hookAt.get(h)! - t0)
        .sort((a, b) => a - b);
      const missing = firedAt.size - hookLat.length;
      if (hookLat.length > 0) {
        results.push(
          `| block arrival → webhook delivered (1 chain subscription, local receiver${missing ? `; ${missing} block(s) not delivered in 30 s` : ''}) | 1 | ${hookLat.length} | ${ms(pct(hookLat, 50))} | ${ms(pct(hookLat, 99))} | ${ms(hookLat[hookLat.length - 1]!)} | ${ms(pct(hookLat, 50))} | ${ms(pct(hookLat, 99))} |`,
        );
      }
    }
    let fake = 50_000_000;
    const lat2 = await fanOut(
      clients,
      async () => {
        fake += 1;
        await insertOutbox(db, [{ type: 'block.connected', height: fake }]);
        return fake;
      },
      'outbox',
    );
    results.push(
      `| outbox commit → relay → WebSocket | ${CLIENTS} | ${BLOCKS} | ${ms(pct(lat2, 50))} | ${ms(pct(lat2, 99))} | ${ms(lat2[lat2.length - 1]!)} | ${ms(pct(lat2.first, 50))} | ${ms(pct(lat2.first, 99))} |`,
    );
    for (const c of clients) c.onEvent = () => undefined;

    // 3: events/s through relay → WebSocket.
    const addrKey = `${randomBytes(4).toString('hex')}-0000-4000-8000-${randomBytes(6).toString('hex')}`;
    const address = `bcrt1q${randomBytes(19).toString('hex')}`;
    const streamClients: Client[] = [];
    for (let i = 0; i < STREAM_CLIENTS; i++) {
      const k = await createApiKey(db, { name: 'bench-stream' });
      await insertSubscription(db, { id: newId('sub'), keyId: k.id, kind: 'address', address, addrKey, hookId: null, confirmations: 6 });
      streamClients.push(await connect(url, k.key));
    }
    await Promise.all(streamClients.map((c) => c.live));
    let received = 0;
    let allIn: () => void = () => undefined;
    const allReceived = new Promise<void>((r) => (allIn = r));
    for (const c of streamClients) {
      c.onEvent = () => {
        if (++received === EVENTS * STREAM_CLIENTS) allIn();
      };
    }
    const m3 = meter();
    const t3 = performance.now();
    for (let i = 0; i < EVENTS; i += 1000)
      await insertOutbox(
        db,
        Array.from({ length: Math.min(1000, EVENTS - i) }, () => ({ type: 'tx.unconfirmed' as const, addrKey, address })),
      );
    const inserted3 = performance.now() - t3;
    await allReceived;
    const took3 = performance.now() - t3;
    const cpu3 = m3();
    results.push(
      `| events through relay → WebSocket (${STREAM_CLIENTS} clients) | ${EVENTS} events in ${ms(took3)} ms (inserted in ${ms(inserted3)} ms) | **${Math.round(EVENTS / (took3 / 1000))} events/s**, ${Math.round((EVENTS * STREAM_CLIENTS) / (took3 / 1000))} messages/s | ${cpuLine(cpu3, EVENTS)} |`,
    );
    for (const c of streamClients) c.ws.close();

    // 4: webhook deliveries/s to a local receiver (a process of its own: bench/webhook-receiver.ts).
    const startReceiver = async () => {
      const receiver = spawn(process.execPath, ['--import', 'tsx', 'bench/webhook-receiver.ts', String(WEBHOOKS)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      started.push({ stop: async () => void receiver.kill('SIGKILL') });
      const receiverLines: ((line: { port?: number; requests?: number }) => void)[] = [];
      let receiverBuf = '';
      receiver.stdout!.on('data', (d: Buffer) => {
        receiverBuf += d.toString();
        const lines = receiverBuf.split('\n');
        receiverBuf = lines.pop()!;
        for (const l of lines) if (l.startsWith('{')) for (const f of receiverLines) f(JSON.parse(l));
      });
      const exit = new Promise<never>((_, reject) =>
        receiver.once('exit', (code) => reject(new Error(`webhook receiver exited with ${code}`))),
      );
      exit.catch(() => undefined);
      const port = await Promise.race([new Promise<number>((r) => receiverLines.push((l) => l.port !== undefined && r(l.port))), exit]);
      const done = new Promise<number>((r) => receiverLines.push((l) => l.requests !== undefined && r(l.requests)));
      return { pid: receiver.pid!, port, done: Promise.race([done, exit]), stop: () => receiver.kill('SIGKILL') };
    };
    const receiver = await startReceiver();
    const receiverPort = receiver.port;
    const k = await createApiKey(db, { name: 'bench-hooks' });
    const hook = await insertHook(db, {
      id: newId('hook'),
      keyId: k.id,
      type: 'http',
      url: `http://127.0.0.1:${receiverPort}/hook`,
      secret: `whsec_${randomBytes(32).toString('base64')}`,
    });
    const hookAddrKey = `${randomBytes(4).toString('hex')}-0000-4000-8000-${randomBytes(6).toString('hex')}`;
    await insertSubscription(db, {
      id: newId('sub'),
      keyId: k.id,
      kind: 'address',
      address,
      addrKey: hookAddrKey,
      hookId: hook.id,
      confirmations: 6,
    });
    const m4 = meter({ receiver: () => [receiver.pid] });
    const off4 = offMainMeter();
    const ops4 = await countOps();
    const t4 = performance.now();
    for (let i = 0; i < WEBHOOKS; i += 1000)
      await insertOutbox(
        db,
        Array.from({ length: Math.min(1000, WEBHOOKS - i) }, () => ({ type: 'tx.unconfirmed' as const, addrKey: hookAddrKey, address })),
      );
    const requests = await receiver.done;
    const took4 = performance.now() - t4;
    const cpu4 = m4();
    const offMain4 = off4();
    // (PostgreSQL's counts reach its statistics up to a second late)
    await sleep(1500);
    const ops = await countOps();
    const perDelivery = (n: number) => (n / WEBHOOKS).toFixed(3);
    results.push(
      `| webhook deliveries to a local receiver (${WORKER_PROCESSES} worker process${WORKER_PROCESSES > 1 ? 'es' : ''}${RELAY_APART ? ', relay apart' : ''}) | ${WEBHOOKS} deliveries in ${ms(took4)} ms (${requests - WEBHOOKS} repeated) | **${Math.round(WEBHOOKS / (took4 / 1000))} deliveries/s** | ${cpuLine(cpu4, WEBHOOKS)}, all ${(Object.values(cpu4).reduce((a, b) => a + b, 0) / WEBHOOKS).toFixed(3)}; per delivery ${perDelivery(ops.pg - ops4.pg)} PostgreSQL transactions, ${perDelivery(ops.redis - ops4.redis)} Redis commands; off the main thread (GC, compiler) ${cpuLine(offMain4, WEBHOOKS)} |`,
    );

    // 5: the floor of (4): the same POSTs, signed, through the same transport and to a receiver
    // like it, from a process of its own (bench/webhook-floor.ts) with as many in flight as the
    // workers' share of one hook, but no queue, no delivery log, no relay.
    if (FLOOR) {
      receiver.stop();
      const { payload } = await db
        .selectFrom('deliveries')
        .select('payload')
        .where('hook_id', '=', hook.id)
        .limit(1)
        .executeTakeFirstOrThrow();
      const floorReceiver = await startReceiver();
      const m5 = meter({ receiver: () => [floorReceiver.pid] });
      const floor = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          'bench/webhook-floor.ts',
          JSON.stringify({ url: `http://127.0.0.1:${floorReceiver.port}/hook`, count: WEBHOOKS, concurrency: FLOOR, payload }),
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      started.push({ stop: async () => void floor.kill('SIGKILL') });
      let floorOut = '';
      floor.stdout!.on('data', (d: Buffer) => (floorOut += d.toString()));
      const floorExit = new Promise<void>((resolve, reject) =>
        floor.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`webhook floor exited with ${code}`)))),
      );
      await Promise.all([floorReceiver.done, floorExit]);
      const cpu5 = m5();
      const f = JSON.parse(floorOut.trim().split('\n').pop()!) as { ms: number; cpuMs: number };
      // (the sender's own CPU over its sends, from process.cpuUsage: its start-up is not counted; the receiver's from /proc over the phase)
      const groups = { sender: f.cpuMs, receiver: cpu5.receiver! };
      results.push(
        `| floor of the webhook deliveries: the same signed POSTs, ${FLOOR} in flight, no queue, no log | ${WEBHOOKS} POSTs in ${ms(f.ms)} ms | **${Math.round(WEBHOOKS / (f.ms / 1000))} POSTs/s** | ${cpuLine(groups, WEBHOOKS)}, all ${((f.cpuMs + cpu5.receiver!) / WEBHOOKS).toFixed(3)} |`,
      );
    }

    const [l1, l5] = readFileSync('/proc/loadavg', 'utf8').split(' ');
    process.stdout.write(
      [
        `load average ${l1} (1 min), ${l5} (5 min) on ${(await import('node:os')).cpus().length} CPUs`,
        '',
        '| fan-out | clients | blocks | p50 ms | p99 ms | max ms | first client p50 ms | first client p99 ms |',
        '|---|---|---|---|---|---|---|---|',
        ...results.filter((r) => r.split('|').length === 10),
        '',
        '| throughput | volume | rate | CPU ms per event (per process) |',
        '|---|---|---|---|',
        ...results.filter((r) => r.split('|').length !== 10),
        '',
      ].join('\n'),
    );
  } finally {
    for (const c of clients) c.ws.terminate();
    // (SIGTERM first: a server process exits at once on it, writing its --cpu-prof profile)
    await Promise.all(
      [server, ...extras].map(async (p) => {
        if (!p || p.exitCode !== null) return;
        const exited = new Promise((r) => p.once('exit', r));
        p.kill('SIGTERM');
        let grace: NodeJS.Timeout | undefined;
        await Promise.race([exited, new Promise((r) => (grace = setTimeout(r, 5000)))]).finally(() => clearTimeout(grace));
        if (p.exitCode === null) p.kill('SIGKILL');
      }),
    );
    for (const s of started.reverse()) await s.stop().catch(() => undefined);
    await rm(scratch, { recursive: true, force: true });
  }
}

await main();
