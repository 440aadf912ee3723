/**
 * A real all-in-one `blockwire start` process under traffic, then SIGTERM (docs/operations.md
 * "Graceful shutdown"): API requests in flight, a WebSocket client, a webhook receiver and the
 * devnode mining payments to a subscribed address while the signal arrives. The process exits 0
 * with nothing left holding it after "stopped",
 * every API answer it gave was whole (200, or 503 while closing; afterwards connections are
 * refused), `blockwire status` turns unhealthy ("the indexer stopped"), and after a restart
 * nothing is lost: the balance equals what was paid, every event of the subscription reaches the
 * resuming stream client and the webhook exactly once. /metrics and `blockwire status` are
 * checked on the live process.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { execFile } from 'node:child_process';
import { get } from 'node:http';
import { promisify } from 'node:util';
import { join } from 'node:path';
import WebSocket from 'ws';
import { createMigratedDatabase, uniqueRedisPrefix, type TestDatabase } from '../../support/db.js';
import { projectRoot } from '../../support/fixtures.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { getIndexTip } from '../../../api/queries/chain.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { Key } from '../../../client/keys.js';
import { portOf, processEnv, spawnBlockwire, startHookReceiver, type BlockwireProcess } from './processes.js';
import { waitFor } from '../../support/wait.js';

const execFileP = promisify(execFile);
type StreamEvent = { id: number; type: string; subscription_id: string; transaction_hash?: string };

let devnode: Devnode;
let db: TestDatabase;
let receiver: Awaited<ReturnType<typeof startHookReceiver>>;
let proc: BlockwireProcess | undefined;

/** One GET on a new connection: the status, or the error code when no answer came. */
function getOnce(url: string, key: string): Promise<{ status?: number; error?: string; complete: boolean }> {
  return new Promise((resolve) => {
    const req = get(url, { agent: false, headers: { apiKey: key } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += String(d)));
      res.on('end', () => {
        let complete = true;
        try {
          JSON.parse(body);
        } catch {
          complete = false;
        }
        resolve({ status: res.statusCode ?? 0, complete });
      });
      res.on('error', (err: NodeJS.ErrnoException) =>
        resolve({ status: res.statusCode ?? 0, error: err.code ?? err.message, complete: false }),
      );
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message, complete: false }));
  });
}

async function status(env: Record<string, string>, ...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await execFileP(process.execPath, [join(projectRoot, 'bin', 'blockwire.js'), 'status', ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      cwd: projectRoot,
    });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

describe('blockwire start as a real process: metrics, status, SIGTERM under traffic, restart', () => {
  beforeAll(async () => {
    devnode = await startDevnode({ initialBlocks: 101 });
    db = await createMigratedDatabase('life');
    receiver = await startHookReceiver();
  }, 120_000);

  afterAll(async () => {
    await proc?.stop();
    await receiver?.close();
    await devnode?.stop();
    await db?.drop();
  }, 120_000);

  it('exits 0 on SIGTERM with requests, deliveries and blocks in flight, and loses nothing', async () => {
    const env = {
      ...processEnv({
        databaseUrl: db.url,
        redisUrl: inject('redisUrl'),
        redisPrefix: uniqueRedisPrefix('life'),
        rpcUrl: devnode.rpcUrl,
        zmqUrl: devnode.zmqUrl,
      }),
      SHUTDOWN_DRAIN_MS: '1500',
    };
    proc = spawnBlockwire('all-in-one', ['start'], env);
    const port = portOf(await proc.waitForLog('api listening'));
    await proc.waitForLog('delivery workers started');
    const opsPort = portOf(await proc.waitForLog('operations listener (/metrics, /healthz)'));
    const base = `http://127.0.0.1:${port}`;
    const key = (await createApiKey(db.db, { name: 'life' })).key;
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { apiKey: key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.ok, path).toBe(true);
      return (await res.json()) as { id: string };
    };
    const address = Key.random('regtest').address('p2wpkh');
    const hook = await post('/v1/hooks', { type: 'http', url: receiver.url });
    const sub = await post('/v1/subscriptions', { address, action: hook.id, confirmations: 2 });

    const streamed: StreamEvent[] = [];
    const connect = (after: number) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/stream?after=${after}`, { headers: { apiKey: key } });
      ws.on('message', (m: Buffer) => {
        const msg = JSON.parse(String(m)) as StreamEvent;
        if (typeof msg.id === 'number' && msg.subscription_id) streamed.push(msg);
      });
      ws.on('error', () => undefined);
      return new Promise<WebSocket>(
        (resolve, reject) => (
          ws.once('open', () => resolve(ws)),
          ws.once('unexpected-response', () => reject(new Error('stream refused')))
        ),
      );
    };
    await connect(0);

    // Live: /metrics and `blockwire status` see the index at the node's tip.
    await waitFor('the index at the tip', async () => (await getIndexTip(db.db)).height === devnode.tip().height, 90_000);
    await waitFor('a heartbeat', async () => (await status(env)).code === 0, 30_000);
    const healthy = await status(env);
    expect(healthy.out).toContain(`index tip     ${devnode.tip().height}`);
    expect(healthy.out).toContain('status        HEALTHY');
    expect((await fetch(`${base}/v1/blockchain`, { headers: { apiKey: key } })).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`^blockwire_index_height ${devnode.tip().height}$`, 'm'));
    expect(metrics).toMatch(/^blockwire_index_lag_blocks 0$/m);
    expect(metrics).toMatch(/^blockwire_api_request_duration_seconds_count\{method="GET",route="\/v1\/blockchain",status="2xx"\} [1-9]/m);
    for (const name of [
      'blockwire_node_height',
      'blockwire_indexer_blocks_per_second',
      'blockwire_indexer_reorgs_total',
      'blockwire_indexer_zmq_missed_blocks_total',
      'blockwire_outbox_pending_events',
      'blockwire_deliveries{status="dead"}',
      'blockwire_stamps_queued',
      'blockwire_stream_clients 1',
    ]) {
      expect(metrics).toContain(name);
    }
    expect((await fetch(`http://127.0.0.1:${opsPort}/healthz`)).status).toBe(200);

    // Traffic: payments mined block after block, and four request loops.
    let paid = 0n;
    let mining = true;
    const miner = (async () => {
      for (let i = 0; mining; i++) {
        const sats = 10_000n + BigInt(i);
        await devnode.wallet.send(address, sats);
        paid += sats;
        await devnode.mine(1);
        await new Promise((r) => setTimeout(r, 150));
      }
    })();
    const answers: Awaited<ReturnType<typeof getOnce>>[] = [];
    // The clients stand for a load balancer: they stop sending once /healthz turns 503.
    let requesting = true;
    const balancer = (async () => {
      while (requesting) {
        const h = await getOnce(`http://127.0.0.1:${opsPort}/healthz`, key);
        if (h.status !== 200) requesting = false;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const loops = [0, 1, 2, 3].map(async (i) => {
      while (requesting) {
        answers.push(await getOnce(`${base}/v1/${i % 2 ? 'blockchain' : `addresses/${address}/history?limit=50`}`, key));
      }
    });
    await waitFor('a few blocks of payments', () => paid > 40_000n, 90_000);
    const webhooks = receiver.received;
    await waitFor('events delivered under load', () => webhooks.length > 3, 90_000);

    const code = await proc.stop();
    requesting = false;
    mining = false;
    await Promise.all([...loops, miner, balancer]);
    expect(code, proc.output().slice(-3000)).toBe(0);
    expect(proc.lines.some((l) => l.msg === 'stopped')).toBe(true);
    // Nothing held the process after "stopped" (the stream's close left a 5 s timer running, and
    // Ctrl-C took 7 s to give the shell back): had anything, it would say what.
    expect(proc.lines.filter((l) => /still held by/.test(l.msg))).toEqual([]);
    // Every request sent before the balancer saw 503 got a whole answer (a JSON body, no 5xx).
    // (History answers 404 until the first payment is indexed.)
    const bad = answers.filter((a) => !a.complete || a.error !== undefined || a.status! >= 500);
    expect(proc.lines.some((l) => /^draining/.test(l.msg))).toBe(true);
    expect(bad).toEqual([]);
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(10);

    // Stopped: status says so, and the tip is a whole block of the node's chain.
    const down = await status(env);
    expect(down.code).toBe(1);
    expect(down.out).toMatch(/the indexer stopped/);
    const tip = await getIndexTip(db.db);
    const row = await db.db.selectFrom('blocks').select(['height', 'hash']).orderBy('height', 'desc').limit(1).executeTakeFirstOrThrow();
    expect(row.height).toBe(tip.height);
    expect(hashToHex(row.hash)).toBe(hashToHex(tip.hash!));

    // Restart: it catches up, and everything missed arrives once.
    const before = streamed.length ? streamed[streamed.length - 1]!.id : 0;
    proc = spawnBlockwire('all-in-one-again', ['start'], env);
    const port2 = portOf(await proc.waitForLog('api listening'));
    const base2 = `http://127.0.0.1:${port2}`;
    await waitFor(
      'the index at the tip again',
      async () => {
        const t = await getIndexTip(db.db);
        return t.height === devnode.tip().height && t.hash !== null && hashToHex(t.hash) === devnode.tip().hash;
      },
      90_000,
    );
    const res = await fetch(`${base2}/v1/addresses/${address}/balance`, { headers: { apiKey: key } });
    expect(await res.json()).toEqual({ balance: Number(paid) });

    const ids = async () =>
      await db.db
        .selectFrom('deliveries')
        .select(['event_id', 'status'])
        .where('subscription_id', '=', sub.id)
        .orderBy('event_id')
        .execute();
    // The stream attaches just after the API listens: meanwhile its path answers 503 (retried,
    // as the SDK does), never the 404 a client would take as final.
    const open = () =>
      new Promise<WebSocket>((resolve, reject) => {
        const w = new WebSocket(`ws://127.0.0.1:${port2}/v1/stream?after=${before}`, { headers: { apiKey: key } });
        w.on('message', (m: Buffer) => {
          const msg = JSON.parse(String(m)) as StreamEvent;
          if (typeof msg.id === 'number' && msg.subscription_id) streamed.push(msg);
        });
        w.once('open', () => resolve(w));
        w.once('error', reject);
      });
    let ws: WebSocket | undefined;
    for (let i = 0; !ws; i++) {
      try {
        ws = await open();
      } catch (err) {
        if (i >= 20 || !/Unexpected server response: 503/.test(String(err))) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    // A sentinel, not a quiet spell: one more payment, whose event comes after everything the
    // restarted indexer had to catch up on (blocks, then its mempool sync). Stream frames come in
    // event order, so anything missed or sent twice shows before the sentinel's frame; the
    // webhooks are counted once every delivery up to the sentinel is recorded delivered.
    const sentinelTx = await devnode.wallet.send(address, 9_000n);
    const sentinel = (
      await waitFor('the stream to resume to the sentinel', () => streamed.find((e) => e.transaction_hash === sentinelTx), 90_000)
    ).id;
    await waitFor(
      'every delivery up to the sentinel delivered',
      async () => {
        const rows = (await ids()).filter((r) => Number(r.event_id) <= sentinel);
        return rows.some((r) => Number(r.event_id) === sentinel) && rows.every((r) => r.status === 'delivered');
      },
      90_000,
    );
    const expected = (await ids()).map((r) => Number(r.event_id)).filter((id) => id <= sentinel);
    ws.close();
    expect(streamed.map((e) => e.id).filter((id) => id <= sentinel)).toEqual(expected);
    expect(
      webhooks
        .map((w) => w.event.id)
        .filter((id) => id <= sentinel)
        .sort((a, b) => a - b),
    ).toEqual(expected);
    expect(new Set(webhooks.map((w) => w.webhookId)).size).toBe(webhooks.length);
    expect(await proc.stop()).toBe(0);
    proc = undefined;
  }, 240_000);
});
