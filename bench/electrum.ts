/**
 * bench/electrum: the Electrum protocol server (electrum/) under many subscriptions. A server
 * process (bench/electrum-server.ts: devnode, indexer, Electrum role) and this process (the
 * clients) measure:
 * 1. one connection subscribing to S script hashes (pipelined): subscriptions/s, server RSS;
 * 2. block → last status notification on that connection: P of the scripts are paid (one
 *    mempool notification each), then a block confirms them: time from the devnode having the
 *    block to the last of the P status notifications (and to the header notification);
 * 3. C connections subscribing to S/C script hashes each: the same latency for one paid script
 *    per connection, and the server's memory per connection (RSS growth / C).
 * Run: `node --import tsx bench/electrum.ts [--subs S] [--connections C] [--paid P] [--blocks B]`
 * (DATABASE_URL optional: an ephemeral PostgreSQL is started otherwise). Figures from a shared
 * machine vary with its load; the load average is printed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { startPostgres } from '../cli/embedded/postgres.js';
import { createDb } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { machine, pct, round, say } from './harness.js';

const { values: opts } = benchArgs(import.meta.url, {
  options: {
    subs: { type: 'string', default: '10000' },
    connections: { type: 'string', default: '1000' },
    paid: { type: 'string', default: '200' },
    blocks: { type: 'string', default: '5' },
  },
});
const SUBS = Number(opts.subs);
const CONNECTIONS = Number(opts.connections);
const PAID = Number(opts.paid);
const BLOCKS = Number(opts.blocks);
const now = () => performance.timeOrigin + performance.now();

/** A P2WPKH-shaped script and its Electrum script hash. */
function script(): { hex: string; sh: string } {
  const s = Buffer.concat([Buffer.from([0x00, 0x14]), randomBytes(20)]);
  return { hex: s.toString('hex'), sh: Buffer.from(createHash('sha256').update(s).digest()).reverse().toString('hex') };
}

/** A bare Electrum connection: pipelined requests, notifications timestamped on arrival. */
class Conn {
  private buf = '';
  private next = 1;
  private pending = new Map<number, (v: unknown) => void>();
  readonly statusAt = new Map<string, number>();
  headerAt = 0;
  private constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      this.buf += d;
      let nl: number;
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        const m = JSON.parse(this.buf.slice(0, nl)) as {
          id?: number;
          result?: unknown;
          error?: unknown;
          method?: string;
          params?: unknown[];
        };
        this.buf = this.buf.slice(nl + 1);
        if (m.method === 'blockchain.scripthash.subscribe') this.statusAt.set(m.params![0] as string, now());
        else if (m.method === 'blockchain.headers.subscribe') this.headerAt = now();
        else if (m.id !== undefined) {
          if (m.error) throw new Error(JSON.stringify(m.error));
          this.pending.get(m.id)?.(m.result);
          this.pending.delete(m.id);
        }
      }
    });
  }
  static open(port: number): Promise<Conn> {
    return new Promise((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port }, () => resolve(new Conn(s)));
      s.once('error', reject);
    });
  }
  request(method: string, params: unknown[] = []): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.socket.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }
  close(): void {
    this.socket.destroy();
  }
}

async function main() {
  const scratch = await mkdtemp(join(tmpdir(), 'bw-bench-electrum-'));
  const stops: (() => Promise<unknown>)[] = [];
  let server: ChildProcess | undefined;
  try {
    let dbUrl = process.env.DATABASE_URL;
    if (!dbUrl) {
      const p = await startPostgres({ dataDir: join(scratch, 'pg'), settings: { max_connections: 100 } });
      stops.push(() => p.stop());
      const c = new pg.Client({ connectionString: p.url });
      await c.connect();
      await c.query('CREATE DATABASE bench_electrum');
      await c.end();
      dbUrl = p.urlFor('bench_electrum');
    }
    const db = createDb(dbUrl, { max: 2 });
    await migrateToLatest(db);
    await db.destroy();

    server = spawn(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', 'bench/electrum-server.ts', JSON.stringify({ databaseUrl: dbUrl })],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    type Reply = { port: number; pid: number; at: number; indexedAt: number; rss: number; heapUsed: number };
    const lines: ((v: Reply) => void)[] = [];
    let ready: (v: Reply) => void = () => {};
    const first = new Promise<Reply>((r) => (ready = r));
    let buf = '';
    server.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.startsWith('{')) continue;
        const v = JSON.parse(line) as Reply;
        const waiter = lines.shift();
        if (waiter) waiter(v);
        else ready(v);
      }
    });
    const { port } = await first;
    const command = (cmd: Record<string, unknown>) =>
      new Promise<Reply>((resolve) => {
        lines.push(resolve);
        server!.stdin!.write(`${JSON.stringify(cmd)}\n`);
      });
    const waitUntil = async (check: () => boolean, what: string, ms = 300_000) => {
      const deadline = Date.now() + ms;
      while (!check()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 2));
      }
    };
    const base = await command({ cmd: 'mem' });
    say(
      `# bench/electrum: ${SUBS} script hashes on 1 connection and on ${CONNECTIONS} connections; ${PAID} paid per block; load ${machine()
        .loadavg.map((x) => x.toFixed(2))
        .join(' ')} (shared machine: 2 cores, other work running)`,
    );

    // 1. one connection, S subscriptions
    const scripts = Array.from({ length: SUBS }, script);
    const one = await Conn.open(port);
    await one.request('server.version', ['bench', '1.4']);
    await one.request('blockchain.headers.subscribe');
    let t0 = performance.now();
    await Promise.all(scripts.map((s) => one.request('blockchain.scripthash.subscribe', [s.sh])));
    const subMs = performance.now() - t0;
    const afterOne = await command({ cmd: 'mem' });

    // 2. block → last status notification, one connection
    const lat1: number[] = [];
    const head1: number[] = [];
    const mem1: number[] = [];
    for (let b = 0; b < BLOCKS; b++) {
      const paid = scripts.slice(b * PAID, (b + 1) * PAID);
      one.statusAt.clear();
      const payAt = await command({ cmd: 'pay', scripts: paid.map((s) => s.hex) });
      await waitUntil(() => paid.every((s) => one.statusAt.has(s.sh)), 'mempool notifications');
      mem1.push(Math.max(...paid.map((s) => one.statusAt.get(s.sh)!)) - payAt.at!);
      one.statusAt.clear();
      const mined = await command({ cmd: 'mine' });
      await waitUntil(() => paid.every((s) => one.statusAt.has(s.sh)) && one.headerAt >= mined.at!, 'block notifications');
      lat1.push(Math.max(...paid.map((s) => one.statusAt.get(s.sh)!)) - mined.at!);
      head1.push(one.headerAt - mined.at!);
    }
    one.close();
    await new Promise((r) => setTimeout(r, 500));

    // 3. C connections, S/C subscriptions each
    const before = await command({ cmd: 'mem' });
    const per = Math.ceil(SUBS / CONNECTIONS);
    const conns: { c: Conn; scripts: ReturnType<typeof script>[] }[] = [];
    t0 = performance.now();
    for (let i = 0; i < CONNECTIONS; i++) {
      const c = await Conn.open(port);
      conns.push({ c, scripts: Array.from({ length: per }, script) });
    }
    await Promise.all(
      conns.map(async ({ c, scripts: ss }) => {
        await c.request('server.version', ['bench', '1.4']);
        await c.request('blockchain.headers.subscribe');
        await Promise.all(ss.map((s) => c.request('blockchain.scripthash.subscribe', [s.sh])));
      }),
    );
    const connMs = performance.now() - t0;
    const afterMany = await command({ cmd: 'mem' });
    const latC: number[] = [];
    const headC: number[] = [];
    for (let b = 0; b < BLOCKS; b++) {
      // one paid script per connection (at most PAID connections' worth per block, cycling)
      const batch = conns.map((x) => x.scripts[b % per]!);
      for (const x of conns) x.c.statusAt.clear();
      await command({ cmd: 'pay', scripts: batch.map((s) => s.hex) });
      await waitUntil(() => conns.every((x) => x.c.statusAt.has(x.scripts[b % per]!.sh)), 'mempool notifications (many)');
      for (const x of conns) x.c.statusAt.clear();
      const mined = await command({ cmd: 'mine' });
      await waitUntil(
        () => conns.every((x) => x.c.statusAt.has(x.scripts[b % per]!.sh) && x.c.headerAt >= mined.at!),
        'block notifications (many)',
      );
      latC.push(Math.max(...conns.map((x) => x.c.statusAt.get(x.scripts[b % per]!.sh)!)) - mined.at!);
      headC.push(Math.max(...conns.map((x) => x.c.headerAt)) - mined.at!);
    }
    for (const x of conns) x.c.close();

    const mb = (b: number) => round(b / 1048576, 1);
    say('');
    say(
      '| run | subscribe | server RSS | block → last header notification p50 / max | block → last status notification p50 / max | payment → last mempool notification p50 |',
    );
    say('|---|---|---|---|---|---|');
    say(
      `| ${SUBS} script hashes, 1 connection | ${round(subMs)} ms (${round((SUBS / subMs) * 1000)}/s) | ${mb(base.rss!)} → ${mb(afterOne.rss!)} MB | ${round(pct(head1, 50))} / ${round(Math.max(...head1))} ms | ${round(pct(lat1, 50))} / ${round(Math.max(...lat1))} ms (${PAID} statuses) | ${round(pct(mem1, 50))} ms |`,
    );
    say(
      `| ${CONNECTIONS * per} script hashes, ${CONNECTIONS} connections | ${round(connMs)} ms (${round(((CONNECTIONS * per) / connMs) * 1000)}/s, connecting included) | ${mb(before.rss!)} → ${mb(afterMany.rss!)} MB | ${round(pct(headC, 50))} / ${round(Math.max(...headC))} ms | ${round(pct(latC, 50))} / ${round(Math.max(...latC))} ms (${CONNECTIONS} statuses) | — |`,
    );
    say('');
    say('| memory per connection (RSS growth / connections, each with its subscriptions) | heap growth / connections |');
    say('|---|---|');
    say(
      `| ${round((afterMany.rss! - before.rss!) / CONNECTIONS / 1024, 1)} KB | ${round((afterMany.heapUsed! - before.heapUsed!) / CONNECTIONS / 1024, 1)} KB |`,
    );
    say(
      `RESULT ${JSON.stringify({
        subscribePerSec: round((SUBS / subMs) * 1000),
        oneConnBlockToLastStatusP50Ms: round(pct(lat1, 50)),
        manyConnBlockToLastStatusP50Ms: round(pct(latC, 50)),
        rssPerConnectionKb: round((afterMany.rss! - before.rss!) / CONNECTIONS / 1024, 1),
      })}`,
    );
  } finally {
    server?.kill('SIGTERM');
    for (const s of stops.reverse()) await s().catch(() => {});
    await rm(scratch, { recursive: true, force: true });
  }
}

await main();
