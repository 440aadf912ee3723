/**
 * The fault matrix (docs/operations.md "Faults"): every dependency (the node, PostgreSQL, Redis,
 * a webhook receiver, an SNS endpoint) and every role (indexer, api, streams with its relay,
 * worker, electrum) killed or stalled in turn UNDER TRAFFIC — payments to a subscribed address mined block
 * after block, REST requests in a loop, a readiness probe, two stream clients, a webhook and an
 * SNS subscription, an Electrum wallet subscribed to the headers and to the paid address's script
 * hash — and what the docs promise checked row by row:
 * - the answers served meanwhile: 200, or 503 with the error body naming the cause (never a
 *   500, never a body outside the dialect), and no answer at all only while the API itself is
 *   dead;
 * - readiness (`/readyz`) false naming the dependency while it is down, true again after;
 * - recovery without a hand: no Blockwire process restarted except the one a row kills (as the
 *   container runtime would);
 * - after each row, the books: every outbox event of the subscriptions up to that moment reached
 *   the webhook receiver, the SNS topic and both stream clients, nothing else did, and a
 *   duplicate only as the documented at-least-once (same id, same body);
 * - after each row, the Electrum wallet: connected (again), its status of the script hash the one
 *   the index's history gives, its tip the node's, and a payment and a block made then notified.
 * Then the noisy-neighbour rows, under the same traffic: one tenant (a key of its own) creates
 * huge wallets, hangs 100 webhook receivers, floods Electrum with connections or /websocket with
 * upgrades, and the matrix's key (its REST answers, its webhook latency) and another Electrum
 * client's ping stay within bounds relative to the window just before (see "noisy-neighbour
 * rows" below).
 * Real parts: PostgreSQL and redis-server owned by this file (so they can be killed), the devnode
 * as a child process (SIGKILL and SIGSTOP of the node), `blockwire start --role …` children. The
 * receiver and the SNS endpoint live in this process behind a TCP proxy that plays their death
 * (connections reset, port closed) or their stall (accepted, never answered).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { createServer, get, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { HDKey } from '@scure/bip32';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import pgClient from 'pg';
import { startPostgres, type PostgresServer } from '../../../cli/embedded/postgres.js';
import { startRedis, type RedisServer } from '../../../cli/embedded/redis.js';
import { freePort } from '../../../cli/embedded/free-port.js';
import { createDb } from '../../../src/db/connect.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { getIndexTip } from '../../../api/queries/chain.js';
import { hashToHex, sha256d } from '../../../src/bitcoin/hash.js';
import { addressToScript, Key } from '../../../client/keys.js';
import { connectElectrum, electrumScriptHash, ElectrumRpcError, type ElectrumTestClient } from '../../support/electrum-client.js';
import { startSnsEndpoint, type SnsEndpoint } from '../../support/sns-endpoint.js';
import { startFaultProxy, type FaultProxy } from '../../support/fault-proxy.js';
import { continueTree, stopTree } from '../../support/process-tree.js';
import { portOf, processEnv, spawnBlockwire, type BlockwireProcess } from './processes.js';
import { waitFor } from '../../support/wait.js';
import { nominalDelay, RETRY_JITTER } from '../../../streams/retry.js';

type Answer = { at: number; ms: number; route: string; status?: number; code?: string; error?: string };
type Ready = { at: number; status: number; state: string };
type Received = { id: string; body: string; at: number };

/** BLOCKWIRE_DELIVERY_RETRY_BASE_MS of the stack. */
const RETRY_BASE_MS = 1000;
const TOPIC = 'arn:aws:sns:us-east-1:123456789012:fault-matrix';
const CONFIRMATIONS = 1;

let dir: string;
let pg: PostgresServer;
let redis: RedisServer;
let db: ReturnType<typeof createDb>;
let sns: SnsEndpoint;
let hookServer: Server;
let hookProxy: FaultProxy;
let snsProxy: FaultProxy;
let env: Record<string, string>;
let devnode: BlockwireProcess;
let devnodeArgs: string[];
let rpcUrl: string;
const roles: Record<'indexer' | 'api' | 'streamsA' | 'streamsB' | 'worker' | 'electrum', BlockwireProcess | undefined> = {
  indexer: undefined,
  api: undefined,
  streamsA: undefined,
  streamsB: undefined,
  worker: undefined,
  electrum: undefined,
};
const ports = { api: 0, streamsA: 0, streamsB: 0, electrum: 0 };
let key: string;
const address = Key.random('regtest').address('p2wpkh');
const subs = { hook: '', sns: '' };
const webhooks: Received[] = [];
const published: Received[] = [];
const answers: Answer[] = [];
/** The other Electrum client's pings. */
const pings: { at: number; ms: number; error?: string }[] = [];
const readiness: Ready[] = [];
let traffic = true;
let paying = true;
/** Payments and blocks held (the Electrum check wants a still index for a moment). */
let held = false;
const scriptHash = electrumScriptHash(Buffer.from(addressToScript(address, 'regtest')).toString('hex'));
/** The Electrum wallet: reconnects as wallets do, then subscribes again to the headers and the script hash. */
const wallet: {
  client: ElectrumTestClient | undefined;
  connections: number;
  header: { hex: string; height: number } | undefined;
  status: string | null | undefined;
  stopped: boolean;
} = {
  client: undefined,
  connections: 0,
  header: undefined,
  status: undefined,
  stopped: false,
};
const loops: Promise<void>[] = [];
const clients: { name: string; events: { id: number; sub: string; body: string }[]; stop(): void }[] = [];

async function rpc<T>(method: string, params: unknown[] = []): Promise<T> {
  const u = new URL(rpcUrl);
  const res = await fetch(`${u.protocol}//${u.host}/`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ jsonrpc: '1.0', id: 1, method, params }),
    signal: AbortSignal.timeout(5000),
  });
  const j = (await res.json()) as { result: T; error: { message: string } | null };
  if (j.error) throw new Error(`${method}: ${j.error.message}`);
  return j.result;
}

/** One GET on a new connection with a time limit: status and error code, or the socket error. */
function getOnce(url: string, headers: Record<string, string> = {}): Promise<{ status?: number; body?: string; error?: string }> {
  return new Promise((resolve) => {
    const req = get(url, { agent: false, headers, timeout: 20_000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += String(d)));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ status: res.statusCode ?? 0, error: err.code ?? err.message }));
    });
    req.on('timeout', () => req.destroy(new Error('client timeout')));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
  });
}

const nap = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The devnode child; the first start mines 101 blocks, a restart continues the chain in its data dir. */
function spawnDevnode(first = false): BlockwireProcess {
  return spawnBlockwire('devnode', [...devnodeArgs, ...(first ? ['--initial-blocks', '101'] : [])], {});
}

async function devnodeReady(p: BlockwireProcess): Promise<void> {
  await waitFor('the devnode ready', () => /devnode ready/.test(p.output()) || p.child.exitCode !== null, 120_000);
  if (p.child.exitCode !== null) throw new Error(`devnode exited: ${p.output().slice(-2000)}`);
}

const ROLE_ARGS: Record<keyof typeof roles, string> = {
  indexer: 'indexer',
  api: 'api',
  streamsA: 'streams',
  streamsB: 'streams',
  worker: 'worker',
  electrum: 'electrum',
};
const READY_LOG: Record<keyof typeof roles, string> = {
  indexer: 'indexer started',
  api: 'api listening',
  streamsA: 'streams started',
  streamsB: 'streams started',
  worker: 'delivery workers started',
  electrum: 'Electrum server listening',
};

/** Starts (or starts again, as a container runtime would) one role process on its fixed port. */
async function startRole(name: keyof typeof roles): Promise<BlockwireProcess> {
  const extra: Record<string, string> =
    name === 'api'
      ? { PORT: String(ports.api) }
      : name === 'streamsA' || name === 'streamsB'
        ? { BLOCKWIRE_STREAM_PORT: String(ports[name]) }
        : name === 'electrum'
          ? { ELECTRUM_TCP_PORT: String(ports.electrum) }
          : {};
  const p = spawnBlockwire(name, ['start', '--role', ROLE_ARGS[name]], { ...env, ...extra });
  roles[name] = p;
  await p.waitForLog(READY_LOG[name], 120_000);
  return p;
}

/** SIGKILL, and the exit seen. */
async function sigkill(p: BlockwireProcess): Promise<void> {
  p.child.kill('SIGKILL');
  await p.exited;
}

/** The PostgreSQL postmaster (its backends are its children). */
async function postmasterPid(): Promise<number> {
  return Number((await readFile(join(pg.dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
}
async function redisPid(): Promise<number> {
  return Number((await readFile(join(dir, 'redis', 'child.pid'), 'utf8')).trim().split(' ')[0]);
}

/** A stream client that reconnects with `?after=` the last id it got, as the docs tell clients to. */
function streamClient(name: 'streamsA' | 'streamsB') {
  const events: { id: number; sub: string; body: string }[] = [];
  let stopped = false;
  let ws: WebSocket | undefined;
  const connect = () => {
    if (stopped) return;
    const last = events.length ? events[events.length - 1]!.id : 0;
    ws = new WebSocket(`ws://127.0.0.1:${ports[name]}/v1/stream?after=${last}`, { headers: { apiKey: key } });
    ws.on('message', (m: Buffer) => {
      const msg = JSON.parse(String(m)) as { id?: number; subscription_id?: string };
      if (typeof msg.id === 'number' && msg.subscription_id) events.push({ id: msg.id, sub: msg.subscription_id, body: String(m) });
    });
    ws.on('error', () => undefined);
    ws.on('close', () => setTimeout(connect, 300));
  };
  connect();
  const c = { name, events, stop: () => ((stopped = true), ws?.close()) };
  clients.push(c);
  return c;
}

/** The wallet's connection loop: connect, negotiate, subscribe; on a cut, again after 300 ms. */
async function electrumWallet(): Promise<void> {
  while (!wallet.stopped) {
    try {
      const c = await connectElectrum(ports.electrum);
      try {
        await c.request('server.version', ['fault-matrix', '1.4']);
        wallet.header = await c.request<{ hex: string; height: number }>('blockchain.headers.subscribe');
        wallet.status = await c.request<string | null>('blockchain.scripthash.subscribe', [scriptHash]);
        wallet.client = c;
        wallet.connections += 1;
      } catch {
        c.close();
      }
      await c.closed;
    } catch {
      // refused while the role is dead
    }
    wallet.client = undefined;
    await nap(300);
  }
}

/**
 * Another Electrum client, from another address (127.0.0.2): a `server.ping` every 100 ms, each
 * timed (an error or a cut is a sample too); it reconnects after 300 ms.
 */
async function electrumPinger(): Promise<void> {
  while (!wallet.stopped) {
    try {
      const c = await connectElectrum(ports.electrum, { localAddress: '127.0.0.2' });
      try {
        await c.request('server.version', ['fault-matrix-pinger', '1.4']);
        while (!wallet.stopped) {
          const at = Date.now();
          const t = performance.now();
          const error = await within(c.request('server.ping'), 20_000, 'ping').then(
            () => undefined,
            (err: Error) => err.message,
          );
          pings.push({ at, ms: performance.now() - t, ...(error ? { error } : {}) });
          if (error) break;
          await nap(100);
        }
      } finally {
        c.close();
      }
    } catch {
      // refused while the role is dead
    }
    await nap(300);
  }
}

/** The wallet's latest view: the subscription's answer, or a notification after it. */
function walletView(c: ElectrumTestClient): {
  status: string | null | undefined;
  header: { hex: string; height: number } | undefined;
  notified: number;
} {
  const statuses = c.notifications.filter((n) => n.method === 'blockchain.scripthash.subscribe' && n.params[0] === scriptHash);
  const headers = c.notifications.filter((n) => n.method === 'blockchain.headers.subscribe');
  return {
    status: statuses.length ? (statuses[statuses.length - 1]!.params[1] as string | null) : wallet.status,
    header: headers.length ? (headers[headers.length - 1]!.params[0] as { hex: string; height: number }) : wallet.header,
    notified: statuses.length,
  };
}

/** `p`, or a rejection after `ms` (a request that gets no answer is itself a finding). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, nap(ms).then(() => Promise.reject(new Error(`${what}: no answer within ${ms} ms`)))]);
}

/** Status as the protocol defines it, from a history (computed here, not by the server). */
function statusOf(history: { tx_hash: string; height: number }[]): string | null {
  return history.length
    ? createHash('sha256')
        .update(history.map((h) => `${h.tx_hash}:${h.height}:`).join(''))
        .digest('hex')
    : null;
}

/**
 * After a row, with payments held: the wallet is connected, its status is the one the index's
 * history gives and its tip the node's; then a payment and a block made now are notified.
 */
async function electrumAgrees(row: string): Promise<void> {
  held = true;
  try {
    let last = '';
    const agree = async () => {
      const c = wallet.client;
      if (!c) throw new Error('the wallet is not connected');
      const history = await within(
        c.request<{ tx_hash: string; height: number }[]>('blockchain.scripthash.get_history', [scriptHash]),
        20_000,
        'get_history',
      );
      const view = walletView(c);
      const [count, indexTip] = [await rpc<number>('getblockcount'), (await getIndexTip(db)).height];
      const hash = view.header ? hashToHex(sha256d(Buffer.from(view.header.hex, 'hex'))) : '';
      last = `status ${view.status} vs history ${statusOf(history)}; wallet tip ${view.header?.height} node ${count} index ${indexTip}`;
      if (view.status !== statusOf(history) || view.header?.height !== count || indexTip !== count) throw new Error(last);
      expect(hash, `${row}: the wallet's tip header is the node's block ${count}`).toBe(await rpc<string>('getblockhash', [count]));
      return { c, history, notified: view.notified };
    };
    const { c, history } = await waitFor(
      `${row}: the Electrum wallet's status and tip agree with the index and the node`,
      agree,
      120_000,
      300,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${last}`);
    });
    expect(history.length, `${row}: the paid script hash has a history`).toBeGreaterThan(0);
    // The event log path: a payment and a block now are notified to the same connection.
    const txid = await rpc<string>('sendtoaddress', [address, 0.0007]);
    await waitFor(
      `${row}: the wallet notified of payment ${txid}`,
      async () => {
        const h = await within(
          c.request<{ tx_hash: string; height: number }[]>('blockchain.scripthash.get_history', [scriptHash]),
          20_000,
          'get_history',
        );
        return h.some((x) => x.tx_hash === txid) && walletView(c).status === statusOf(h);
      },
      60_000,
      300,
    );
    const [hash] = await rpc<string[]>('generatetoaddress', [1, await rpc<string>('getnewaddress')]);
    await waitFor(
      `${row}: the wallet notified of block ${hash}`,
      () => {
        const h = walletView(c).header;
        return h !== undefined && hashToHex(sha256d(Buffer.from(h.hex, 'hex'))) === hash;
      },
      60_000,
      200,
    );
    expect(wallet.client, `${row}: the same connection throughout`).toBe(c);
  } finally {
    held = false;
  }
}

/** While a dependency is down or stalled: an Electrum request gets the protocol's error, in time — not a hang, not a cut. */
async function electrumRefuses(row: string): Promise<void> {
  const c = await connectElectrum(ports.electrum);
  try {
    await within(c.request('server.version', ['fault-matrix-probe', '1.4']), 20_000, `${row}: server.version`);
    const err = await within(
      c.request('blockchain.scripthash.get_history', [scriptHash]).then(
        () => undefined,
        (e: unknown) => e,
      ),
      30_000,
      `${row}: get_history`,
    );
    expect(err, `${row}: get_history answered an error`).toBeInstanceOf(ElectrumRpcError);
    // -32603 (internal error, or the request's time limit), or 1 when the node has mined on
    // meanwhile and the index, held by the fault, is behind it (the sync gate: docs/electrum.md).
    expect([-32603, 1], `${row}: get_history's error code`).toContain((err as ElectrumRpcError).code);
    expect(
      await within(c.request('server.ping'), 20_000, `${row}: ping after the error`),
      `${row}: the connection stays usable`,
    ).toBeNull();
  } finally {
    c.close();
  }
}

/** The outbox events of `sub` up to seq `upTo`, as the matching rules pick them (docs/events.md). */
async function expectedIds(sub: string, upTo: bigint): Promise<number[]> {
  const s = await db.selectFrom('subscriptions').select('start_seq').where('id', '=', sub).executeTakeFirstOrThrow();
  const rows = await db
    .selectFrom('outbox')
    .select(['seq', 'type', 'confirmations'])
    .where('address', '=', address)
    .where('seq', '>', s.start_seq)
    .where('seq', '<=', upTo)
    .orderBy('seq')
    .execute();
  return rows.filter((r) => !(r.type === 'tx.confirmations' && (r.confirmations ?? 0) > CONFIRMATIONS)).map((r) => Number(r.seq));
}

/** Every delivery of `got` is an outbox event of `sub` (nothing invented), a duplicate is the same bytes, and all of `want` arrived. */
function books(
  what: string,
  got: { id: number; sub: string; body: string }[],
  sub: string,
  want: number[],
  known: Set<number>,
): { missing: number[]; duplicates: number } {
  const mine = got.filter((g) => g.sub === sub);
  const bodies = new Map<number, string>();
  let duplicates = 0;
  for (const g of mine) {
    expect(known.has(g.id), `${what}: event ${g.id} is not an outbox event of the subscription`).toBe(true);
    const seen = bodies.get(g.id);
    if (seen !== undefined) {
      duplicates += 1;
      if (what.startsWith('stream')) expect(JSON.parse(g.body)).toEqual(JSON.parse(seen));
      else expect(g.body, `${what}: a duplicate of ${g.id} differs`).toBe(seen);
    }
    bodies.set(g.id, g.body);
  }
  return { missing: want.filter((id) => !bodies.has(id)), duplicates };
}

const asDeliveries = (list: Received[]) =>
  list.map((r) => {
    const dash = r.id.lastIndexOf('-');
    return { id: Number(r.id.slice(dash + 1)), sub: r.id.slice(0, dash), body: r.body };
  });

/** After a row: every event up to now reached every channel, once or as a same-id duplicate. */
async function balanceBooks(row: string): Promise<{ events: number; duplicates: Record<string, number> }> {
  const upTo = BigInt(
    (
      await db
        .selectFrom('outbox')
        .select((eb) => eb.fn.max('seq').as('m'))
        .executeTakeFirstOrThrow()
    ).m ?? 0,
  );
  const wantHook = await expectedIds(subs.hook, upTo);
  const wantSns = await expectedIds(subs.sns, upTo);
  expect(wantHook.length, `${row}: no events to check`).toBeGreaterThan(0);
  let last = '';
  const check = () => {
    const knownHook = new Set(wantHook);
    const knownSns = new Set(wantSns);
    // (events after upTo may arrive too: the next row checks them)
    const result = [
      [
        'webhook',
        books(
          'webhook',
          asDeliveries(webhooks).filter((d) => d.id <= upTo),
          subs.hook,
          wantHook,
          knownHook,
        ),
      ],
      [
        'sns',
        books(
          'sns',
          asDeliveries(published).filter((d) => d.id <= upTo),
          subs.sns,
          wantSns,
          knownSns,
        ),
      ],
      ...clients.flatMap((c) => [
        [
          `stream ${c.name} (hook sub)`,
          books(
            `stream ${c.name}`,
            c.events.filter((e) => e.id <= upTo),
            subs.hook,
            wantHook,
            knownHook,
          ),
        ],
        [
          `stream ${c.name} (sns sub)`,
          books(
            `stream ${c.name}`,
            c.events.filter((e) => e.id <= upTo),
            subs.sns,
            wantSns,
            knownSns,
          ),
        ],
      ]),
    ] as [string, { missing: number[]; duplicates: number }][];
    last = result
      .map(
        ([n, r]) =>
          `${n}: ${r.missing.length} missing${r.missing.length ? ` (${r.missing.slice(0, 5).join(',')}…)` : ''}, ${r.duplicates} duplicates`,
      )
      .join('; ');
    return result.every(([, r]) => r.missing.length === 0) ? result : false;
  };
  const result = await waitFor(`${row}: every event up to ${upTo} on every channel`, check, 120_000, 200).catch((err: Error) => {
    throw new Error(`${err.message}\n${last}`);
  });
  // The delivery log agrees: every delivery of these events recorded delivered (the record follows the receiver's 200).
  const undelivered = () =>
    db
      .selectFrom('deliveries')
      .select(['id', 'status', 'attempts', 'last_error'])
      .where('subscription_id', 'in', [subs.hook, subs.sns])
      .where('event_id', '<=', upTo)
      .where('status', '!=', 'delivered')
      .execute();
  await waitFor(
    `${row}: the delivery log all delivered`,
    async () => {
      const left = await undelivered();
      if (left.length) throw new Error(JSON.stringify(left.slice(0, 3)));
      return true;
    },
    60_000,
  );
  return { events: wantHook.length + wantSns.length, duplicates: Object.fromEntries(result.map(([n, r]) => [n, r.duplicates])) };
}

/** Every answer in [from, to): 200, or 503 with the error body and one of `codes`. */
function answersBetween(from: number, to = Date.now()): Answer[] {
  return answers.filter((a) => a.at >= from && a.at < to);
}

/** Answers and readiness samples counted by kind, for failure messages. */
function summary(list: (Answer | Ready)[]): string {
  const counts = new Map<string, number>();
  for (const a of list) {
    const k =
      'route' in a
        ? `${a.route.replace(address, 'ADDR')} ${a.status ?? ''} ${a.code ?? ''} ${a.error ?? ''}`
        : `readyz ${a.status} ${a.state}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => `${n}× ${k.replace(/\s+/g, ' ').trim()}`).join('; ');
}

function bad(list: Answer[], allowed503: string[], allowErrors = false): Answer[] {
  return list.filter((a) => {
    if (a.error !== undefined) return !allowErrors;
    if (a.status === 200) return false;
    return !(a.status === 503 && a.code !== undefined && allowed503.includes(a.code));
  });
}

async function waitReady(row: string, timeoutMs = 120_000): Promise<void> {
  const t = Date.now();
  await waitFor(
    `${row}: /readyz 200 again`,
    () => {
      const last = readiness[readiness.length - 1];
      if (last && last.status === 200 && Date.now() - last.at < 2000) return true;
      throw new Error(summary(readiness.filter((r) => r.at >= t - 5000)));
    },
    timeoutMs,
  );
}

/** A readiness answer since `from` with 503 and this state. */
function sawNotReady(from: number, state: string): boolean {
  if (readiness.some((r) => r.at >= from && r.status === 503 && r.state === state)) return true;
  throw new Error(`no /readyz 503 ${state} yet: ${summary(readiness.filter((r) => r.at >= from))}`);
}

function sawAnswer(from: number, pred: (a: Answer) => boolean): boolean {
  if (answers.some((a) => a.at >= from && pred(a))) return true;
  throw new Error(`not the answer awaited yet: ${summary(answersBetween(from))}`);
}

/** No answer outside the promise: every one 200, or 503 with one of the codes (connection errors only when allowed). */
function expectNoBadAnswers(row: string, from: number, allowed503: string[], allowErrors = false): void {
  const wrong = bad(answersBetween(from), allowed503, allowErrors);
  expect(wrong.length, `${row}: answers outside the promise: ${summary(wrong)}`).toBe(0);
}

/** A failed attempt of `sub` recorded since `since`. */
const failedAttemptSince = async (sub: string, since: number) =>
  db
    .selectFrom('deliveries')
    .select(['attempts', 'last_error', 'next_attempt_at', 'updated_at'])
    .where('subscription_id', '=', sub)
    .where('status', '=', 'pending')
    .where('last_error', 'is not', null)
    .where('updated_at', '>', new Date(since))
    .executeTakeFirst();

function livingRolesUnchanged(before: Record<string, BlockwireProcess | undefined>, except: string[] = []): void {
  for (const [name, p] of Object.entries(before)) {
    if (except.includes(name)) continue;
    expect(p!.child.exitCode, `${name} exited: ${p!.output().slice(-1500)}`).toBeNull();
    expect(roles[name as keyof typeof roles], `${name} was replaced`).toBe(p);
  }
}

/** Whether this streams process holds the relay lock now (its blockwire_relay_active gauge). */
async function relayActive(p: BlockwireProcess): Promise<boolean> {
  const port = portOf(await p.waitForLog('operations listener (/metrics, /healthz)'));
  const r = await getOnce(`http://127.0.0.1:${port}/metrics`);
  return /^blockwire_relay_active 1$/m.test(r.body ?? '');
}
async function activeRelay(): Promise<'streamsA' | 'streamsB'> {
  return waitFor(
    'one active relay',
    async () => {
      const [a, b] = await Promise.all([relayActive(roles.streamsA!), relayActive(roles.streamsB!)]);
      if (a && b) throw new Error('two active relays');
      return a ? ('streamsA' as const) : b ? ('streamsB' as const) : undefined;
    },
    60_000,
  );
}

type Row = { dependency: string; fault: string; promise: string; run(row: string): Promise<void> };

const rows: Row[] = [];
let lastDuplicates: Record<string, number> = {};

describe('fault matrix', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bw-fault-matrix-'));
    [pg, redis, sns] = await Promise.all([
      // Durable, as in production (fsync and synchronous commit on): an ephemeral server loses
      // commits to a kill -9, which then hands an event id already delivered to another event.
      startPostgres({ dataDir: join(dir, 'pg') }),
      startRedis({ dir: join(dir, 'redis'), persist: true }),
      startSnsEndpoint(),
    ]);
    sns.createTopic(TOPIC);
    const admin = new pgClient.Client({ connectionString: pg.url });
    await admin.connect();
    await admin.query('CREATE DATABASE faults');
    await admin.end();
    db = createDb(pg.urlFor('faults'), { max: 4 });
    await migrateToLatest(db);

    hookServer = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += String(d)));
      req.on('end', () => {
        webhooks.push({ id: String(req.headers['webhook-id']), body, at: Date.now() });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => hookServer.listen(0, '127.0.0.1', r));
    hookProxy = await startFaultProxy((hookServer.address() as { port: number }).port);
    snsProxy = await startFaultProxy(Number(new URL(sns.url).port));

    const [rpcPort, zmqPort] = [await freePort(), await freePort()];
    devnodeArgs = [
      'devnode',
      '--rpc-port',
      String(rpcPort),
      '--zmq-port',
      String(zmqPort),
      '--data-dir',
      join(dir, 'devnode'),
      '--no-samples',
    ];
    devnode = spawnDevnode(true);
    await devnodeReady(devnode);
    rpcUrl = /rpc {3}(\S+)/.exec(devnode.output())![1]!;
    for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();

    env = {
      ...processEnv({
        databaseUrl: pg.urlFor('faults'),
        redisUrl: redis.url,
        redisPrefix: 'faults',
        rpcUrl,
        zmqUrl: `tcp://127.0.0.1:${zmqPort}`,
      }),
      BITCOIN_NETWORK: 'regtest',
      BLOCKWIRE_WEBHOOK_TIMEOUT_MS: '2000',
      BLOCKWIRE_WORKER_LOCK_MS: '3000',
      BLOCKWIRE_DELIVERY_RESCUE_MS: '5000',
      // Retries from 1 s, not 10 s: each receiver row waits for one (the schedule's doubling,
      // jitter and attempts as at the default; the rows check the delivery log's next attempt).
      BLOCKWIRE_DELIVERY_RETRY_BASE_MS: String(RETRY_BASE_MS),
      API_REQUEST_TIMEOUT_MS: '3000',
      API_RATE_LIMIT: '10000000',
      ELECTRUM_REQUEST_TIMEOUT_MS: '3000',
      BLOCKWIRE_SNS_ENDPOINT: `http://127.0.0.1:${snsProxy.port}`,
      AWS_ACCESS_KEY_ID: sns.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: sns.credentials.secretAccessKey,
      AWS_REGION: 'us-east-1',
    };
    await Promise.all((Object.keys(roles) as (keyof typeof roles)[]).map((r) => startRole(r)));

    key = (await createApiKey(db, { name: 'faults' })).key;
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`http://127.0.0.1:${ports.api}${path}`, {
        method: 'POST',
        headers: { apiKey: key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const j = (await res.json()) as { id: string };
      if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(j)}`);
      return j;
    };
    const hook = await post('/v1/hooks', { type: 'http', url: `http://127.0.0.1:${hookProxy.port}/hook` });
    const snsHook = await post('/v1/hooks', { type: 'sns', topic_arn: TOPIC });
    subs.hook = (await post('/v1/subscriptions', { address, action: hook.id, confirmations: CONFIRMATIONS })).id;
    subs.sns = (await post('/v1/subscriptions', { address, action: snsHook.id, confirmations: CONFIRMATIONS })).id;
    streamClient('streamsA');
    streamClient('streamsB');
    loops.push(electrumWallet());
    loops.push(electrumPinger());

    // SNS messages as deliveries (id from the webhook-id attribute).
    loops.push(
      (async () => {
        let seen = 0;
        while (traffic) {
          for (; seen < sns.messages.length; seen++) {
            const m = sns.messages[seen]!;
            published.push({ id: m.attributes['webhook-id']!, body: m.message, at: Date.now() });
          }
          await nap(50);
        }
      })(),
    );
    // Payments: one every ~300 ms, a block every ~1.5 s (the node may be down: then nothing).
    const miner = await rpc<string>('getnewaddress');
    loops.push(
      (async () => {
        for (let i = 0; paying; i++) {
          try {
            if (!held) {
              await rpc('sendtoaddress', [address, 0.001 + i / 1e8]);
              if (i % 5 === 4) await rpc('generatetoaddress', [1, miner]);
            }
          } catch {
            // the node is down or stalled: the row is about that
          }
          await nap(300);
        }
      })(),
    );
    // REST traffic: an address read (the index) and the chain summary, back to back.
    for (const route of [`/v1/addresses/${address}/balance`, '/v1/blockchain']) {
      loops.push(
        (async () => {
          while (traffic) {
            const at = Date.now();
            const t = performance.now();
            const r = await getOnce(`http://127.0.0.1:${ports.api}${route}`, { apiKey: key });
            const ms = performance.now() - t;
            let code: string | undefined;
            if (r.status !== undefined && r.status !== 200) {
              try {
                code = (JSON.parse(r.body ?? '') as { error_code?: string }).error_code;
              } catch {
                code = undefined;
              }
            }
            answers.push({
              at,
              ms,
              route,
              ...(r.status !== undefined ? { status: r.status } : {}),
              ...(code ? { code } : {}),
              ...(r.error ? { error: r.error } : {}),
            });
            if (r.error) await nap(100);
          }
        })(),
      );
    }
    // Readiness, every 200 ms.
    loops.push(
      (async () => {
        while (traffic) {
          const at = Date.now();
          const r = await getOnce(`http://127.0.0.1:${ports.api}/readyz`);
          let state = r.error ?? '';
          if (r.status !== undefined) {
            try {
              state = (JSON.parse(r.body ?? '') as { status: string }).status;
            } catch {
              state = `unparsable: ${(r.body ?? '').slice(0, 80)}`;
            }
          }
          readiness.push({ at, status: r.status ?? 0, state });
          await nap(200);
        }
      })(),
    );
    await activeRelay();
    await waitReady('start');
    await waitFor('the first events delivered', () => webhooks.length > 2 && published.length > 2, 120_000);
    await waitFor('the Electrum wallet subscribed', () => wallet.client !== undefined, 60_000);
  }, 300_000);

  afterAll(async () => {
    traffic = false;
    paying = false;
    wallet.stopped = true;
    wallet.client?.close();
    for (const c of clients) c.stop();
    await Promise.allSettled(loops);
    await Promise.allSettled(Object.values(roles).map((p) => p?.stop()));
    await devnode?.stop();
    await hookProxy?.close();
    await snsProxy?.close();
    await new Promise((r) => hookServer?.close(r));
    await sns?.close();
    await db?.destroy();
    await redis?.stop();
    await pg?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 180_000);

  for (const row of rows) {
    it(`${row.dependency} × ${row.fault}: ${row.promise}`, async () => {
      const name = `${row.dependency} × ${row.fault}`;
      // Each row starts from a steady state: ready, the index at the node's tip.
      await waitReady(`${name} (before)`);
      const tip = await rpc<number>('getblockcount');
      await waitFor(`${name} (before): the index at the node's tip`, async () => (await getIndexTip(db)).height >= tip, 120_000);
      const t0 = Date.now();
      await row.run(name);
      const books = await balanceBooks(name);
      await electrumAgrees(name);
      const dup = Object.entries(books.duplicates)
        .map(([n, d]) => `${n} +${d - (lastDuplicates[n] ?? 0)}`)
        .join(', ');
      lastDuplicates = books.duplicates;
      console.info(
        `fault matrix | ${name} | ${Math.round((Date.now() - t0) / 100) / 10} s | ${books.events} events in the books; duplicates (same id, same body): ${dup}`,
      );
    }, 300_000);
  }
});

// ————————————————————————————————————————————— the rows —————————————————————————————————————————————

const DB_DOWN = ['ERR_DATABASE_UNAVAILABLE', 'ERR_REQUEST_TIMEOUT'];

rows.push({
  dependency: 'PostgreSQL',
  fault: 'kill',
  promise: '503 ERR_DATABASE_UNAVAILABLE and /readyz database_unreachable meanwhile; everything reconnects once it is back',
  async run(row) {
    const before = { ...roles };
    const t = Date.now();
    await pg.kill();
    await waitFor(
      `${row}: /readyz database_unreachable and a 503 ERR_DATABASE_UNAVAILABLE`,
      () => sawNotReady(t, 'database_unreachable') && sawAnswer(t, (a) => a.code === 'ERR_DATABASE_UNAVAILABLE'),
      60_000,
    );
    await electrumRefuses(row);
    await pg.restart();
    await waitReady(row);
    await waitFor(
      `${row}: REST 200 again`,
      () => sawAnswer(Date.now() - 1000, (a) => a.status === 200 && a.route.includes('balance')),
      60_000,
    );
    expectNoBadAnswers(row, t, DB_DOWN);
    expect(readiness.filter((r) => r.at >= t && ![200, 503].includes(r.status))).toEqual([]);
    livingRolesUnchanged(before);
  },
});

rows.push({
  dependency: 'PostgreSQL',
  fault: 'stall',
  promise: '503 within the request time limit and /readyz database_unreachable meanwhile; nothing to do once it answers again',
  async run(row) {
    const before = { ...roles };
    const t = Date.now();
    const stopped = stopTree(await postmasterPid());
    try {
      await waitFor(
        `${row}: /readyz database_unreachable and a 503 on an address read`,
        () => sawNotReady(t, 'database_unreachable') && sawAnswer(t, (a) => a.status === 503 && a.route.includes('balance')),
        60_000,
      );
      await electrumRefuses(row);
    } finally {
      continueTree(stopped);
    }
    await waitReady(row);
    expectNoBadAnswers(row, t, DB_DOWN);
    livingRolesUnchanged(before);
  },
});

rows.push({
  dependency: 'Redis',
  fault: 'kill',
  promise:
    'REST still 200 (local rate allowance), /readyz redis_unreachable; queued deliveries survive (append-only file) or are re-created from the delivery log',
  async run(row) {
    const before = { ...roles };
    const t = Date.now();
    await redis.kill();
    await waitFor(`${row}: /readyz redis_unreachable`, () => sawNotReady(t, 'redis_unreachable'), 60_000);
    await waitFor(`${row}: REST answers while Redis is down`, () => answersBetween(t).filter((a) => a.status === 200).length >= 5, 60_000);
    await redis.restart();
    await waitReady(row);
    expectNoBadAnswers(row, t, []);
    livingRolesUnchanged(before);
  },
});

rows.push({
  dependency: 'Redis',
  fault: 'stall',
  promise: 'REST still 200, /readyz redis_unreachable within its 2 s probe; nothing to do once it answers again',
  async run(row) {
    const before = { ...roles };
    const pid = await redisPid();
    const t = Date.now();
    process.kill(pid, 'SIGSTOP');
    try {
      await waitFor(`${row}: /readyz redis_unreachable`, () => sawNotReady(t, 'redis_unreachable'), 60_000);
      await waitFor(
        `${row}: REST answers while Redis is stalled`,
        () => answersBetween(t).filter((a) => a.status === 200).length >= 5,
        60_000,
      );
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await waitReady(row);
    expectNoBadAnswers(row, t, []);
    livingRolesUnchanged(before);
  },
});

const NODE_DOWN = ['ERR_NODE_UNAVAILABLE', 'ERR_REQUEST_TIMEOUT'];

rows.push({
  dependency: 'node',
  fault: 'kill',
  promise: 'index reads still 200, /readyz node_unreachable; the indexer follows the restarted node by itself',
  async run(row) {
    const before = { ...roles };
    const t = Date.now();
    devnode.child.kill('SIGKILL');
    await devnode.exited;
    await waitFor(`${row}: /readyz node_unreachable`, () => sawNotReady(t, 'node_unreachable'), 60_000);
    await waitFor(
      `${row}: address reads answer while the node is down`,
      () => answersBetween(t).filter((a) => a.status === 200 && a.route.includes('balance')).length >= 3,
      60_000,
    );
    devnode = spawnDevnode();
    await devnodeReady(devnode);
    await waitReady(row);
    const tip = await rpc<number>('getblockcount');
    await waitFor(`${row}: the index at the node's tip ${tip}`, async () => (await getIndexTip(db)).height >= tip, 60_000);
    expectNoBadAnswers(row, t, NODE_DOWN);
    livingRolesUnchanged(before);
  },
});

rows.push({
  dependency: 'node',
  fault: 'stall',
  promise: 'index reads still 200, /readyz node_unreachable within a poll time limit; nothing to do once it answers again',
  async run(row) {
    const before = { ...roles };
    const pid = devnode.child.pid!;
    const t = Date.now();
    process.kill(pid, 'SIGSTOP');
    try {
      await waitFor(`${row}: /readyz node_unreachable`, () => sawNotReady(t, 'node_unreachable'), 30_000);
      await waitFor(
        `${row}: address reads answer while the node is stalled`,
        () => answersBetween(t).filter((a) => a.status === 200 && a.route.includes('balance')).length >= 3,
        30_000,
      );
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await waitReady(row);
    expectNoBadAnswers(row, t, NODE_DOWN);
    livingRolesUnchanged(before);
  },
});

/** A receiver fault: deliveries fail (attempt recorded), readiness and REST untouched, retried on schedule. */
function receiverRow(dependency: string, which: () => FaultProxy, sub: () => string, fault: 'kill' | 'stall'): Row {
  return {
    dependency,
    fault,
    promise: `REST and /readyz untouched; the failed attempts are retried on the schedule and every event arrives once it is back`,
    async run(row) {
      const before = { ...roles };
      const t = Date.now();
      const proxy = which();
      if (fault === 'kill') await proxy.kill();
      else proxy.stall();
      try {
        const failed = await waitFor(`${row}: a failed attempt recorded`, () => failedAttemptSince(sub(), t), 60_000);
        // Its next attempt on the stack's schedule (BLOCKWIRE_DELIVERY_RETRY_BASE_MS, doubling, +20 % at most).
        expect(failed.next_attempt_at, `${row}: the next attempt scheduled`).not.toBeNull();
        expect(
          failed.next_attempt_at!.getTime() - failed.updated_at.getTime(),
          `${row}: the retry delay after attempt ${failed.attempts}`,
        ).toBeLessThanOrEqual(Math.ceil(nominalDelay(failed.attempts, RETRY_BASE_MS) * (1 + RETRY_JITTER)));
      } finally {
        await proxy.restore();
      }
      await waitFor(`${row}: 200s meanwhile`, () => answersBetween(t).filter((a) => a.status === 200).length >= 3, 30_000);
      expectNoBadAnswers(row, t, []);
      expect(readiness.filter((r) => r.at >= t && r.status !== 200)).toEqual([]);
      livingRolesUnchanged(before);
    },
  };
}
rows.push(
  receiverRow(
    'webhook receiver',
    () => hookProxy,
    () => subs.hook,
    'kill',
  ),
);
rows.push(
  receiverRow(
    'webhook receiver',
    () => hookProxy,
    () => subs.hook,
    'stall',
  ),
);
rows.push(
  receiverRow(
    'SNS endpoint',
    () => snsProxy,
    () => subs.sns,
    'kill',
  ),
);
rows.push(
  receiverRow(
    'SNS endpoint',
    () => snsProxy,
    () => subs.sns,
    'stall',
  ),
);

rows.push({
  dependency: 'indexer role',
  fault: 'kill',
  promise:
    'REST 200 (or 503 ERR_INDEX_SYNCING once the lag passes API_MAX_LAG_BLOCKS); the restarted indexer resumes from its last whole block',
  async run(row) {
    const before = { ...roles };
    const t = Date.now();
    await sigkill(roles.indexer!);
    const height = (await getIndexTip(db)).height;
    await waitFor(`${row}: a block the index has not got`, async () => (await rpc<number>('getblockcount')) > height, 60_000);
    await startRole('indexer');
    const tip = await rpc<number>('getblockcount');
    await waitFor(`${row}: the index at the node's tip ${tip}`, async () => (await getIndexTip(db)).height >= tip, 120_000);
    await waitReady(row);
    expectNoBadAnswers(row, t, ['ERR_INDEX_SYNCING']);
    livingRolesUnchanged(before, ['indexer']);
  },
});

rows.push({
  dependency: 'api role',
  fault: 'kill',
  promise: 'connections refused while it is dead, nothing else stops: deliveries go on; the restarted API answers',
  async run(row) {
    const before = { ...roles };
    const t = Date.now();
    await sigkill(roles.api!);
    const hooksBefore = webhooks.length;
    await waitFor(`${row}: webhooks delivered while the API is dead`, () => webhooks.length > hooksBefore, 60_000);
    await startRole('api');
    await waitReady(row);
    expectNoBadAnswers(row, t, [], true);
    livingRolesUnchanged(before, ['api']);
  },
});

rows.push({
  dependency: 'streams role (the active relay)',
  fault: 'kill',
  promise: 'the standby takes the relay over; its stream clients reconnect with ?after= and miss nothing',
  async run(row) {
    const before = { ...roles };
    const active = await activeRelay();
    const other = active === 'streamsA' ? 'streamsB' : 'streamsA';
    const t = Date.now();
    await sigkill(roles[active]!);
    await waitFor(`${row}: the standby relays`, () => relayActive(roles[other]!), 60_000);
    const hooksBefore = webhooks.length;
    await waitFor(`${row}: webhooks relayed by the standby`, () => webhooks.length > hooksBefore, 60_000);
    await startRole(active);
    expectNoBadAnswers(row, t, []);
    livingRolesUnchanged(before, [active]);
  },
});

rows.push({
  dependency: 'streams role (the active relay)',
  fault: 'stall',
  promise: 'the standby takes the relay over within a bounded time; the stalled one, resumed, stands by',
  async run(row) {
    const before = { ...roles };
    const active = await activeRelay();
    const other = active === 'streamsA' ? 'streamsB' : 'streamsA';
    const pid = roles[active]!.child.pid!;
    const t = Date.now();
    process.kill(pid, 'SIGSTOP');
    try {
      await waitFor(`${row}: the standby relays`, () => relayActive(roles[other]!), 60_000);
      const hooksBefore = webhooks.length;
      await waitFor(`${row}: webhooks relayed by the standby`, () => webhooks.length > hooksBefore, 60_000);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expectNoBadAnswers(row, t, []);
    livingRolesUnchanged(before);
  },
});

rows.push({
  dependency: 'worker role',
  fault: 'kill',
  promise: 'deliveries in flight run again on the restarted worker, under the same webhook-id',
  async run(row) {
    const before = { ...roles };
    const t = Date.now();
    hookProxy.stall();
    const n = webhooks.length;
    // A delivery in flight: the receiver took the request, the answer is held.
    await waitFor(
      `${row}: a delivery in flight`,
      async () =>
        (await db
          .selectFrom('deliveries')
          .select('id')
          .where('subscription_id', '=', subs.hook)
          .where('status', '=', 'pending')
          .executeTakeFirst()) !== undefined,
      60_000,
    );
    await nap(300);
    await sigkill(roles.worker!);
    await hookProxy.restore();
    await startRole('worker');
    await waitFor(`${row}: webhooks again`, () => webhooks.length > n, 60_000);
    expectNoBadAnswers(row, t, []);
    livingRolesUnchanged(before, ['worker']);
  },
});

rows.push({
  dependency: 'worker role',
  fault: 'stall',
  promise: 'deliveries wait; once resumed the worker delivers them (a job whose lock lapsed may run twice, same webhook-id)',
  async run(row) {
    const before = { ...roles };
    const pid = roles.worker!.child.pid!;
    const t = Date.now();
    const n = webhooks.length;
    process.kill(pid, 'SIGSTOP');
    try {
      await waitFor(
        `${row}: events relayed meanwhile`,
        async () =>
          (await db
            .selectFrom('deliveries')
            .select('id')
            .where('subscription_id', '=', subs.hook)
            .where('status', '=', 'pending')
            .where('created_at', '>', new Date(t))
            .executeTakeFirst()) !== undefined,
        60_000,
      );
      await nap(4000);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await waitFor(`${row}: webhooks again`, () => webhooks.length > n, 60_000);
    expectNoBadAnswers(row, t, []);
    livingRolesUnchanged(before);
  },
});

rows.push({
  dependency: 'electrum role',
  fault: 'kill',
  promise:
    "its wallets are cut, nothing else stops; the restarted server takes them back: they subscribe again, get the index's status and the node's tip, and are notified again",
  async run(row) {
    const before = { ...roles };
    const t = Date.now();
    const n = wallet.connections;
    await sigkill(roles.electrum!);
    await waitFor(`${row}: the wallet cut`, () => wallet.client === undefined, 60_000);
    await startRole('electrum');
    await waitFor(`${row}: the wallet connected and subscribed again`, () => wallet.connections > n && wallet.client !== undefined, 60_000);
    expectNoBadAnswers(row, t, []);
    expect(readiness.filter((r) => r.at >= t && r.status !== 200)).toEqual([]);
    livingRolesUnchanged(before, ['electrum']);
  },
});

rows.push({
  dependency: 'electrum role',
  fault: 'stall',
  promise:
    'its wallets wait on an open connection; once resumed the server answers what they asked and notifies what happened meanwhile, no reconnect needed',
  async run(row) {
    const before = { ...roles };
    const pid = roles.electrum!.child.pid!;
    const c = wallet.client!;
    const n = wallet.connections;
    const t = Date.now();
    process.kill(pid, 'SIGSTOP');
    let asked: Promise<unknown>;
    try {
      asked = c.request('blockchain.scripthash.get_history', [scriptHash]);
      asked.catch(() => undefined);
      const blocks = await rpc<number>('getblockcount');
      await waitFor(`${row}: blocks mined while it is stopped`, async () => (await rpc<number>('getblockcount')) >= blocks + 2, 60_000);
      // (and indexed, no block after them: resumed with the index two blocks behind the node, the
      // server rightly answers "still catching up" (ELECTRUM_MAX_LAG_BLOCKS), not this row's case)
      held = true;
      await waitFor(
        `${row}: the blocks indexed`,
        async () => (await getIndexTip(db)).height >= (await rpc<number>('getblockcount')),
        60_000,
      );
    } finally {
      process.kill(pid, 'SIGCONT');
      held = false;
    }
    expect(Array.isArray(await within(asked, 60_000, `${row}: the request made while stopped`))).toBe(true);
    expect(wallet.connections, `${row}: no reconnect`).toBe(n);
    expect(wallet.client).toBe(c);
    expectNoBadAnswers(row, t, []);
    livingRolesUnchanged(before);
  },
});

// ——————————————————————————————————————— noisy-neighbour rows ———————————————————————————————————————
// One tenant (key A, made for the row) loads the stack while the matrix's traffic runs; the
// matrix's key is "another key". Its REST answers (the traffic's loop), its webhook latency
// (outbox event recorded → the receiver has it) and another Electrum client's ping (from another
// address) are compared with the window just before, the same traffic without the neighbour —
// bounds relative to the same run, never an absolute speed:
// - REST p99 and ping p99 within NOISY_FACTOR × the quiet p99 + NOISY_SLACK_MS (the slack: one
//   scheduling quantum of a loaded 2-core machine over a baseline of a few milliseconds);
// - its webhook latency p90 within HOOK_FACTOR × the quiet p90 + HOOK_SLACK_MS (well under one
//   webhook timeout: another key never waits on a hanging attempt). A starved key's deliveries
//   all wait (the defect this guards against made them wait 25 s to 4 minutes), so the p90 over
//   at least WINDOW.hook of them shows it; the slowest one alone also moves with whatever else
//   the machine runs in one window and not the other (CI runs the benchmarks beside the suite);
// - every ping answered, every REST answer a 200.

const NOISY_FACTOR = 10;
const NOISY_SLACK_MS = 250;
const HOOK_FACTOR = 4;
const HOOK_SLACK_MS = 1500;
/** Samples each window gathers at least (a sentinel, not a duration). */
const WINDOW = { rest: 100, ping: 50, hook: 20 };

const quantile = (xs: readonly number[], q: number) => [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil(xs.length * q) - 1)] ?? 0;
const p99 = (xs: readonly number[]) => quantile(xs, 0.99);
const p90 = (xs: readonly number[]) => quantile(xs, 0.9);

type Window = { rest: number[]; ping: number[]; pingErrors: string[]; hook: number[] };

/** The other key's and the other client's figures in [from, to). */
async function windowFigures(from: number, to: number): Promise<Window> {
  const rest = answers.filter((a) => a.at >= from && a.at < to && a.status === 200).map((a) => a.ms);
  const inWindow = pings.filter((p) => p.at >= from && p.at < to);
  // Webhook latency: the first arrival of each event of the matrix's hook against its outbox row.
  const first = new Map<number, number>();
  for (const d of webhooks) {
    if (d.at < from || d.at >= to) continue;
    const dash = d.id.lastIndexOf('-');
    if (d.id.slice(0, dash) !== subs.hook) continue;
    const seq = Number(d.id.slice(dash + 1));
    if (!first.has(seq)) first.set(seq, d.at);
  }
  const recorded = first.size
    ? await db
        .selectFrom('outbox')
        .select(['seq', 'created_at'])
        .where('seq', 'in', [...first.keys()].map(BigInt))
        .execute()
    : [];
  const hook = recorded.map((r) => first.get(Number(r.seq))! - r.created_at.getTime());
  return {
    rest,
    ping: inWindow.filter((p) => !p.error).map((p) => p.ms),
    pingErrors: inWindow.flatMap((p) => (p.error ? [p.error] : [])),
    hook,
  };
}

/** Waits until the window opened at `from` holds enough samples (and `also` holds). */
async function fillWindow(what: string, from: number, also: () => boolean | Promise<boolean> = () => true): Promise<number> {
  let last = '';
  await waitFor(
    what,
    async () => {
      const w = await windowFigures(from, Date.now());
      last = `${w.rest.length} REST, ${w.ping.length} pings, ${w.hook.length} webhooks`;
      return w.rest.length >= WINDOW.rest && w.ping.length >= WINDOW.ping && w.hook.length >= WINDOW.hook && (await also());
    },
    240_000,
    200,
  ).catch((err: Error) => {
    throw new Error(`${err.message} (${last})`);
  });
  return Date.now();
}

type Neighbour = {
  name: string;
  promise: string;
  start(row: string): Promise<{ on(): boolean | Promise<boolean>; stop(): Promise<void>; check?(): void }>;
};

function noisyRow(n: Neighbour): Row {
  return {
    dependency: 'noisy neighbour',
    fault: n.name,
    promise: `${n.promise}; meanwhile another key's REST p99 and another Electrum client's ping p99 stay within ${NOISY_FACTOR} × their quiet p99 + ${NOISY_SLACK_MS} ms and its webhook latency p90 within ${HOOK_FACTOR} × the quiet p90 + ${HOOK_SLACK_MS} ms`,
    async run(row) {
      const before = { ...roles };
      const t0 = Date.now();
      const t1 = await fillWindow(`${row}: the quiet window`, t0);
      const neighbour = await n.start(row);
      let t2: number;
      try {
        t2 = await fillWindow(`${row}: the window with the neighbour`, t1, () => neighbour.on());
        neighbour.check?.();
      } finally {
        await neighbour.stop();
      }
      const [quiet, noisy] = [await windowFigures(t0, t1), await windowFigures(t1, t2)];
      const figures = {
        restP99: [quiet.rest, noisy.rest].map((x) => Math.round(p99(x))),
        pingP99: [quiet.ping, noisy.ping].map((x) => Math.round(p99(x))),
        hookP90: [quiet.hook, noisy.hook].map((x) => p90(x)),
        hookMax: [quiet.hook, noisy.hook].map((x) => Math.max(...x)),
        samples: [noisy.rest.length, noisy.ping.length, noisy.hook.length],
      };
      console.info(`fault matrix | ${row} | quiet → with the neighbour: ${JSON.stringify(figures)}`);
      expect(noisy.pingErrors, `${row}: pings not answered`).toEqual([]);
      expect(p99(noisy.rest), `${row}: REST p99 ${JSON.stringify(figures)}`).toBeLessThanOrEqual(
        NOISY_FACTOR * p99(quiet.rest) + NOISY_SLACK_MS,
      );
      expect(p99(noisy.ping), `${row}: ping p99 ${JSON.stringify(figures)}`).toBeLessThanOrEqual(
        NOISY_FACTOR * p99(quiet.ping) + NOISY_SLACK_MS,
      );
      expect(p90(noisy.hook), `${row}: webhook latency p90 ${JSON.stringify(figures)}`).toBeLessThanOrEqual(
        HOOK_FACTOR * p90(quiet.hook) + HOOK_SLACK_MS,
      );
      expectNoBadAnswers(row, t0, []);
      expect(readiness.filter((r) => r.at >= t0 && r.status !== 200)).toEqual([]);
      livingRolesUnchanged(before);
    },
  };
}

/** A REST call of key A (the neighbour) on the API role. */
async function asNeighbour(
  apiKey: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: { id?: string; error_code?: string } }> {
  const res = await fetch(`http://127.0.0.1:${ports.api}${path}`, {
    method,
    headers: { apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as { id?: string; error_code?: string }) : {} };
}

const versions = bip32Versions('regtest');
const tpubs = Array.from(
  { length: 16 },
  (_, i) => HDKey.fromMasterSeed(new Uint8Array(32).fill(i + 1), versions).derive("m/48'/1'/0'/2'").publicExtendedKey,
);
const multisig = (keys: readonly string[]) => `wsh(sortedmulti(1,${keys.map((k) => `${k}/<0;1>/*`).join(',')}))`;

rows.push(
  noisyRow({
    name: 'huge wallet creations',
    promise:
      "key A creates, back to back, the largest wallet API_WALLET_MAX_DERIVATIONS allows (16-key multisig, 2 chains, gap 600: 19,200 child keys; each ends created or at the request's time limit), one over the cap is refused at once",
    async start(row) {
      const a = (await createApiKey(db, { name: 'noisy-wallets' })).key;
      const over = await asNeighbour(a, 'POST', '/v1/wallets', { descriptors: [multisig(tpubs)], gap_limit: 1000 });
      expect([over.status, over.body.error_code], `${row}: over the cap`).toEqual([422, 'ERR_WALLET_TOO_LARGE']);
      const outcomes: string[] = [];
      let running = true;
      const loop = (async () => {
        while (running) {
          const r = await asNeighbour(a, 'POST', '/v1/wallets', { descriptors: [multisig(tpubs)], gap_limit: 600 });
          outcomes.push(r.status === 201 ? 'created' : `${r.status} ${r.body.error_code ?? ''}`);
        }
      })();
      return {
        on: () => outcomes.length >= 1,
        check: () =>
          expect(
            outcomes.filter((o) => o !== 'created' && o !== '503 ERR_REQUEST_TIMEOUT'),
            `${row}: the creations' answers`,
          ).toEqual([]),
        async stop() {
          running = false;
          await loop;
        },
      };
    },
  }),
);

rows.push(
  noisyRow({
    name: '100 hanging webhook receivers',
    promise:
      'key A has 100 hooks, each with a chain subscription, to a receiver that accepts and never answers; the worker tries them (and their breakers open)',
    async start(row) {
      const a = (await createApiKey(db, { name: 'noisy-hooks' })).key;
      const sockets = new Set<import('node:net').Socket>();
      let accepted = 0;
      const hanging = createNetServer((sock) => {
        accepted += 1;
        sockets.add(sock);
        sock.on('error', () => undefined);
        sock.on('close', () => sockets.delete(sock));
      });
      await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', () => r()));
      const url = `http://127.0.0.1:${(hanging.address() as { port: number }).port}`;
      const made: { hook: string; sub: string }[] = [];
      for (let i = 0; i < 100; i++) {
        const hook = await asNeighbour(a, 'POST', '/v1/hooks', { type: 'http', url: `${url}/hook/${i}` });
        expect(hook.status, `${row}: hook ${i}`).toBe(201);
        const sub = await asNeighbour(a, 'POST', '/v1/subscriptions', { type: 'chain', action: hook.body.id });
        expect([200, 201], `${row}: subscription ${i}: ${sub.status}`).toContain(sub.status);
        made.push({ hook: hook.body.id!, sub: sub.body.id! });
      }
      return {
        // On once the worker has tried them: every hook's first attempt reached the hanging receiver.
        on: () => accepted >= 100,
        async stop() {
          // (after the window: ten pairs at a time, each subscription before its hook)
          for (let i = 0; i < made.length; i += 10)
            await Promise.all(
              made.slice(i, i + 10).map(async (m) => {
                await asNeighbour(a, 'DELETE', `/v1/subscriptions/${m.sub}`);
                await asNeighbour(a, 'DELETE', `/v1/hooks/${m.hook}`);
              }),
            );
          for (const sock of sockets) sock.destroy();
          await new Promise<void>((r) => hanging.close(() => r()));
        },
      };
    },
  }),
);

/**
 * The flooder, a process of its own: `count` sockets from 127.0.0.1, each reopened 100 ms after
 * it closes; each asks `server.ping` at once. It prints "held refused": sockets the server
 * serves (their ping answered, no refusal), and refusals so far (error -32000, then the close).
 * Held means answered, not merely open: on a loaded machine a connection can wait in the
 * kernel's accept queue for seconds before the server sees it and refuses it.
 */
const FLOODER = `
const net = require('node:net');
const [port, count] = process.argv.slice(1).map(Number);
const open = new Map();
let refused = 0;
const connect = () => {
  const s = net.connect({ host: '127.0.0.1', port, localAddress: '127.0.0.1' });
  const state = { served: false, refused: false };
  open.set(s, state);
  s.on('connect', () => s.write('{"jsonrpc":"2.0","id":1,"method":"server.ping"}\\n'));
  s.on('data', (d) => {
    const text = String(d);
    if (text.includes('too many connections')) { if (!state.refused) refused++; state.refused = true; }
    else if (text.includes('"result"')) state.served = true;
  });
  s.on('error', () => {});
  s.on('close', () => { open.delete(s); setTimeout(connect, 100); });
};
for (let i = 0; i < count; i++) connect();
setInterval(() => {
  let held = 0;
  for (const v of open.values()) if (v.served && !v.refused) held++;
  process.stdout.write(held + ' ' + refused + '\\n');
}, 200);
`;

rows.push(
  noisyRow({
    name: 'Electrum connection flood',
    promise:
      'a process opens 400 Electrum connections from one address and reopens each as soon as it closes; the server holds ELECTRUM_MAX_CONNECTIONS_PER_IP of them and refuses the rest',
    async start() {
      const flooder = spawn(process.execPath, ['-e', FLOODER, String(ports.electrum), '400'], { stdio: ['ignore', 'pipe', 'inherit'] });
      const state = { held: 0, refused: 0, most: 0 };
      flooder.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        const last = chunk.trim().split('\n').pop();
        if (last) [state.held, state.refused] = last.split(' ').map(Number) as [number, number];
        state.most = Math.max(state.most, state.held);
      });
      const exited = new Promise((r) => flooder.once('exit', r));
      return {
        // On once the flood holds its address's cap (50, the wallet's connection among them) and is refused.
        on: () => state.held >= 40 && state.refused >= 100,
        check: () => expect(state.most, "the flood never holds more than its address's cap").toBeLessThanOrEqual(50),
        async stop() {
          flooder.kill('SIGKILL');
          await exited;
        },
      };
    },
  }),
);

rows.push(
  noisyRow({
    name: '/websocket flood',
    promise:
      'key A opens Coinstack /websocket connections, 20 at a time, keeping each it gets: API_MAX_SOCKETS_PER_KEY (100) are held, the rest refused',
    async start(row) {
      const a = (await createApiKey(db, { name: 'noisy-websocket' })).key;
      const held: WebSocket[] = [];
      const refused: number[] = [];
      let flooding = true;
      const upgrade = () =>
        new Promise<WebSocket | number>((resolve) => {
          const ws = new WebSocket(`ws://127.0.0.1:${ports.api}/websocket?apikey=${a}`);
          ws.once('open', () => resolve(ws));
          ws.once('unexpected-response', (_req, res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          ws.once('error', () => resolve(0));
        });
      const flood = Promise.all(
        Array.from({ length: 20 }, async () => {
          while (flooding) {
            const r = await upgrade();
            if (typeof r === 'number') {
              refused.push(r);
              await nap(20);
            } else held.push(r);
          }
        }),
      );
      return {
        on: () => held.length >= 100 && refused.length > 0,
        check() {
          expect(held.length, `${row}: key A holds its cap`).toBe(100);
          expect(new Set(refused), `${row}: the refusals`).toEqual(new Set([400]));
        },
        async stop() {
          flooding = false;
          await flood;
          for (const ws of held) ws.terminate();
        },
      };
    },
  }),
);
