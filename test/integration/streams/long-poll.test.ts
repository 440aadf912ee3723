/**
 * GET /v1/events (long polling) over the streams' event log: a poll waiting when events arrive
 * answers them once the relay has passed them, the same events (ids, order, JSON) as the
 * WebSocket stream of the same key; following `next` pages through a thousand events with other
 * addresses' events between them, nothing lost or repeated; bad cursors are refused as the
 * stream refuses them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.js';
import { startStreams, type StreamsHandle } from '../../../streams/main.js';
import { createEventPoll, type EventPoll } from '../../../streams/poll.js';
import { connectStream, createStreamsFixture, insertEvents, newAddress, streamsConfig, txEvents, type StreamsFixture } from './harness.js';
import { createApiHarness, type ApiHarness } from '../api/harness.js';
import { waitFor } from '../../support/wait.js';
import { BlockwireClient } from '../../../client/index.js';

type Poll = { events: { id: number; type: string; address: string }[]; next: number };

describe('GET /v1/events: long polling', () => {
  let f: StreamsFixture;
  let s: StreamsHandle;
  let poll: EventPoll;
  let h: ApiHarness;

  beforeAll(async () => {
    f = await createStreamsFixture();
    s = await startStreams({ config: streamsConfig(), log: silentLogger(), db: f.t.db, redisUrl: f.redisUrl, redisPrefix: f.prefix });
    poll = createEventPoll({ db: f.t.db, log: silentLogger(), tickMs: 100 });
    h = await createApiHarness({ events: poll, settings: { rateLimit: 10_000_000 } }, f.t);
  });
  afterAll(async () => {
    poll?.stop();
    await h?.close();
    await s?.stop();
    await f?.drop();
  });

  const get = async (k: string, query: string) => {
    const r = await h.get(`/v1/events?${query}`, k);
    expect(r.statusCode, r.body).toBe(200);
    return r.json() as Poll;
  };

  it('a waiting poll answers the events the relay passes, as the WebSocket stream carries them', async () => {
    const k = await f.newKey();
    const addr = newAddress();
    await f.subscribe(k.id, addr);
    const start = await get(k.key, 'wait=0');
    expect(start.events).toEqual([]);
    const ws = await connectStream(`ws://127.0.0.1:${s.port}/v1/stream`, k.key, { after: start.next });
    await waitFor('stream live', () => ws.messages.some((m) => m.type === 'stream.live'), 10_000);
    // (the poll is sent first and waits; the events are written while it waits)
    const waiting = get(k.key, `after=${start.next}&wait=50`);
    await new Promise((r) => setTimeout(r, 300));
    const seqs = await insertEvents(f.t.db, [...txEvents(newAddress(), 2), ...txEvents(addr, 3)]);
    const got = await waiting;
    expect(got.events.length).toBeGreaterThan(0);
    // the relay may pass the rows in more than one batch: the rest comes with the next poll
    const all = [...got.events];
    let next = got.next;
    while (all.length < 3) {
      const more = await get(k.key, `after=${next}&wait=20`);
      all.push(...more.events);
      next = more.next;
    }
    expect(all.map((e) => e.id)).toEqual(seqs.slice(2).map(Number));
    expect(next).toBe(Number(seqs[4]));
    await waitFor('the stream to carry them', () => ws.events().length === 3, 10_000);
    expect(all).toEqual(ws.events());
    ws.close();
  });

  it('following next pages through every event of the key, in order, once', async () => {
    const k = await f.newKey();
    const addr = newAddress();
    await f.subscribe(k.id, addr);
    const from = (await get(k.key, 'wait=0')).next;
    const mine: bigint[] = [];
    for (let i = 0; i < 10; i++) {
      const seqs = await insertEvents(f.t.db, [...txEvents(addr, 100), ...txEvents(newAddress(), 30)]);
      mine.push(...seqs.slice(0, 100));
    }
    const ids: number[] = [];
    let after = from;
    while (ids.length < mine.length) {
      const r = await get(k.key, `after=${after}&wait=20&limit=150`);
      ids.push(...r.events.map((e) => e.id));
      expect(r.next).toBeGreaterThanOrEqual(after);
      after = r.next;
    }
    expect(ids).toEqual(mine.map(Number));
    // at the end: nothing more, at once with wait=0
    expect(await get(k.key, `after=${after}&wait=0`)).toEqual({ events: [], next: after });
  });

  it("the SDK's pollEvents: waits for the key's next events and resumes with next", async () => {
    const k = await f.newKey();
    const addr = newAddress();
    await f.subscribe(k.id, addr);
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = h.app.server.address() as { port: number };
    const client = new BlockwireClient({ url: `http://127.0.0.1:${port}`, apiKey: k.key, network: 'regtest' });
    const { next } = await client.pollEvents();
    const waiting = client.pollEvents({ after: next, wait: 50 });
    await new Promise((r) => setTimeout(r, 300));
    const seqs = await insertEvents(f.t.db, txEvents(addr, 2));
    const got = await waiting;
    const rest = got.events.length < 2 ? await client.pollEvents({ after: got.next, wait: 20 }) : { events: [], next: got.next };
    expect([...got.events, ...rest.events].map((e) => [e.id, e.type, e.address])).toEqual(
      seqs.map((s) => [Number(s), 'tx.unconfirmed', addr.address]),
    );
  });

  it('refuses a cursor beyond the newest event (with it in error_cause), a malformed one and too long a wait', async () => {
    const k = await f.newKey();
    const [newest] = (await insertEvents(f.t.db, txEvents(newAddress(), 1))).slice(-1);
    const beyond = await h.get(`/v1/events?after=${newest! + 10n}`, k.key);
    expect(beyond.statusCode).toBe(400);
    expect(beyond.json()).toMatchObject({ error_code: 'ERR_INVALID_CURSOR', error_cause: String(newest) });
    expect((await h.get('/v1/events?after=x', k.key)).statusCode).toBe(400);
    expect((await h.get('/v1/events?wait=61', k.key)).statusCode).toBe(400);
    expect((await h.get('/v1/events', null)).statusCode).toBe(401);
  });
});
