/**
 * Noisy neighbour: 100 hanging webhook receivers on one key (key A: 100 hooks to a server that
 * accepts TCP and never answers, each with a chain subscription) must not stall another key's
 * webhooks (key B: one hook, a chain subscription). A real relay and worker (one child process,
 * the default BLOCKWIRE_WEBHOOK_CONCURRENCY of 64 and the default 10 s webhook timeout),
 * PostgreSQL, Redis and HTTP receivers on 127.0.0.1; blocks recorded in the outbox as the
 * indexer records them: 8 blocks 500 ms apart without the neighbour, then 25 blocks 1 s apart
 * with it (long enough for A's attempts to time out and its hooks' breakers to move).
 *
 * The bound, relative to the same run without the neighbour: B's slowest delivery (block
 * recorded → B's receiver has it) while A's 100 hooks hang is at most four times B's slowest
 * without them, plus 1.5 s — well under one webhook timeout: B never waits on a hanging
 * attempt. (Before fair shares, A's hanging deliveries held every worker slot and B's
 * deliveries did not arrive within 3 minutes.) And B's books: every block delivered, nothing
 * else, repeats only with the same webhook-id and body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createStreamsFixture, insertEvents, spawnRole, startReceiver, type Child, type Receiver, type StreamsFixture } from '../streams/harness.js';
import { waitFor } from '../../support/wait.js';

const NEIGHBOUR_HOOKS = 100;

/** A server that accepts connections and never answers (nor closes them). */
async function startHangingServer(): Promise<{ url: string; accepted: () => number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((s) => {
    accepted += 1;
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    accepted: () => accepted,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

describe('noisy neighbour: 100 hanging webhook receivers on one key', () => {
  let f: StreamsFixture;
  let child: Child | undefined;
  let receiver: Receiver;
  let hanging: Awaited<ReturnType<typeof startHangingServer>>;
  let height = 0;
  beforeAll(async () => {
    f = await createStreamsFixture();
    receiver = await startReceiver();
    hanging = await startHangingServer();
    child = await spawnRole('both', f, { relayPollMs: 20, deliveryRescueMs: 3_600_000 });
  });
  afterAll(async () => {
    await child?.kill();
    await receiver?.close();
    await hanging?.close();
    await f?.drop();
  });

  /** `n` blocks recorded `everyMs` apart; B's latency of each once its receiver has them all. */
  async function blocks(sub: string, n: number, everyMs: number): Promise<number[]> {
    const recordedAt = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const [seq] = await insertEvents(f.t.db, [{ type: 'block.connected', height: ++height }]);
      recordedAt.set(`${sub}-${seq}`, Date.now());
      await new Promise((r) => setTimeout(r, everyMs));
    }
    const firstAt = () => {
      const m = new Map<string, number>();
      for (const w of receiver.received) if (!m.has(w.id)) m.set(w.id, w.at);
      return m;
    };
    await waitFor(`B's ${n} deliveries`, () => [...recordedAt.keys()].every((id) => firstAt().has(id)), 180_000, 100);
    const got = firstAt();
    return [...recordedAt].map(([id, at]) => got.get(id)! - at);
  }

  it("keeps another key's webhook latency within its bound", async () => {
    const b = await f.newKey();
    const bHook = await f.httpHook(b.id, receiver.url);
    const bSub = await f.subscribe(b.id, { chain: true, hookId: bHook.id });

    const quiet = await blocks(bSub, 8, 500);

    const a = await f.newKey();
    for (let i = 0; i < NEIGHBOUR_HOOKS; i++) {
      const h = await f.httpHook(a.id, `${hanging.url}/hook/${i}`);
      await f.subscribe(a.id, { chain: true, hookId: h.id });
    }
    const noisy = await blocks(bSub, 25, 1000);
    // The neighbour was there: its receivers were being tried meanwhile.
    expect(hanging.accepted()).toBeGreaterThanOrEqual(8);

    const bound = 4 * Math.max(...quiet) + 1500;
    console.log(`B's webhook latency without the neighbour: max ${Math.max(...quiet)} ms; with 100 hanging hooks on key A: max ${Math.max(...noisy)} ms, median ${[...noisy].sort((x, y) => x - y)[noisy.length >> 1]} ms (bound ${bound} ms; in order: ${noisy.join(" ")})`);
    expect(Math.max(...noisy)).toBeLessThanOrEqual(bound);

    // B's books: its blocks, nothing else; a repeat only with the same id and body.
    const events = await f.t.db.selectFrom('deliveries').select(['id']).where('subscription_id', '=', bSub).execute();
    expect(new Set(receiver.received.map((w) => w.id))).toEqual(new Set(events.map((e) => e.id)));
    expect(events).toHaveLength(quiet.length + noisy.length);
    const bodies = new Map<string, string>();
    for (const w of receiver.received) {
      expect(bodies.get(w.id) ?? w.body).toBe(w.body);
      bodies.set(w.id, w.body);
    }
  });
});
