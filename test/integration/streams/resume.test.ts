/**
 * WebSocket resume: a client that disconnects after event N and comes
 * back with `?after=N` while 1,000 events happened (and more keep coming during its catch-up)
 * receives exactly N+1… in order, then live events, with nothing lost or repeated at the seam.
 * A cursor older than the retention gets "cursor expired". Two stream processes behind one
 * Redis deliver the same events; refused upgrades answer the API's error body, a cursor beyond
 * the newest event included.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.js';
import { startStreams, type StreamsHandle } from '../../../streams/main.js';
import { pruneOutbox } from '../../../streams/outbox.js';
import { connectStream, createStreamsFixture, insertEvents, newAddress, streamsConfig, txEvents, type StreamsFixture } from './harness.js';
import { waitFor } from '../../support/wait.js';

describe('stream resume', () => {
  let f: StreamsFixture;
  let a: StreamsHandle;
  let b: StreamsHandle;
  let urlA: string;
  let urlB: string;

  beforeAll(async () => {
    f = await createStreamsFixture();
    const deps = { config: streamsConfig(), log: silentLogger(), db: f.t.db, redisUrl: f.redisUrl, redisPrefix: f.prefix };
    a = await startStreams(deps);
    // A second stream process on the same Redis; it runs a relay too, which stands by.
    b = await startStreams(deps);
    urlA = `ws://127.0.0.1:${a.port}/v1/stream`;
    urlB = `ws://127.0.0.1:${b.port}/stream`;
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
    await f?.drop();
  });

  it('replays exactly the missed events, then continues live without gap or duplicate', async () => {
    const k = await f.newKey();
    const addr = newAddress();
    const noise = newAddress();
    await f.subscribe(k.id, addr);
    const first = await connectStream(urlA, k.key);
    await waitFor('stream live', () => first.messages.some((m) => m.type === 'stream.live'), 30_000);
    await insertEvents(f.t.db, txEvents(addr, 5));
    await waitFor('first 5 events', () => first.events().length === 5, 10_000);
    const n = first.events()[4]!.id;
    first.close();
    await first.closed;

    // 1,000 events for the address while away, interleaved with events for nobody.
    const missed: bigint[] = [];
    for (let i = 0; i < 10; i++) {
      const seqs = await insertEvents(f.t.db, [...txEvents(addr, 100), ...txEvents(noise, 20)]);
      missed.push(...seqs.slice(0, 100));
    }
    await waitFor('relay caught up', () => (a.relay?.active ? a : b).relay!.relayed >= 1205, 20_000);

    const back = await connectStream(urlB, k.key, { after: n });
    // Events keep coming while it catches up.
    const live: bigint[] = [];
    for (let i = 0; i < 5; i++) live.push(...(await insertEvents(f.t.db, txEvents(addr, 20))));
    // The sentinel: one more event after them; frames come in event order, so a repeat or a
    // stray frame would come before it.
    const [sentinel] = await insertEvents(f.t.db, txEvents(addr, 1));
    await waitFor(`the sentinel event (got ${back.events().length})`, () => back.events().some((e) => e.id === Number(sentinel)), 20_000);
    const ids = back.events().map((e) => e.id);
    expect(ids).toEqual([...missed, ...live, sentinel].map(Number));
    expect(new Set(ids).size).toBe(ids.length);
    expect(back.messages.filter((m) => m.type === 'stream.live')).toHaveLength(1);
    back.close();
  });

  it('delivers the same live events through both stream processes', async () => {
    const k = await f.newKey();
    const addr = newAddress();
    await f.subscribe(k.id, addr);
    const ca = await connectStream(urlA, k.key);
    const cb = await connectStream(urlB, k.key);
    await waitFor(
      'both streams live',
      () => ca.messages.some((m) => m.type === 'stream.live') && cb.messages.some((m) => m.type === 'stream.live'),
      30_000,
    );
    const seqs = await insertEvents(f.t.db, txEvents(addr, 50));
    await waitFor('both processes', () => ca.events().length === 50 && cb.events().length === 50, 10_000);
    expect(ca.events().map((e) => e.id)).toEqual(seqs.map(Number));
    expect(cb.events()).toEqual(ca.events());
    // Exactly one relay is active.
    expect([a.relay!.active, b.relay!.active].filter(Boolean)).toHaveLength(1);
    ca.close();
    cb.close();
  });

  it('answers "cursor expired" for a cursor older than the retention', async () => {
    const k = await f.newKey();
    const addr = newAddress();
    await f.subscribe(k.id, addr);
    const old = await insertEvents(f.t.db, txEvents(addr, 3));
    await waitFor(
      'relay past the old events',
      () =>
        (a.relay?.active ? a : b).relay!.relayed >= 1 &&
        f.t.db
          .selectFrom('stream_state')
          .select('seq')
          .where('name', '=', 'relay')
          .executeTakeFirst()
          .then((r) => r!.seq >= old[2]!),
      10_000,
    );
    await f.t.db
      .updateTable('outbox')
      .set({ created_at: new Date(Date.now() - 8 * 86_400_000) })
      .where('seq', '<=', old[1]!)
      .execute();
    expect(await pruneOutbox(f.t.db, new Date(Date.now() - 7 * 86_400_000))).toBeGreaterThanOrEqual(2);

    const c = await connectStream(urlA, k.key, { after: old[0]! - 1n });
    const closed = await c.closed;
    expect(closed).toEqual({ code: 4410, reason: 'cursor expired' });
    expect(c.messages[0]).toMatchObject({ type: 'stream.error', error_code: 'ERR_CURSOR_EXPIRED' });
    expect(c.events()).toEqual([]);
    // From the pruning watermark on, resuming works and gets what is left.
    const ok = await connectStream(urlA, k.key, { after: old[1]! });
    await waitFor('stream live', () => ok.messages.some((m) => m.type === 'stream.live'), 30_000);
    expect(ok.events().map((e) => e.id)).toEqual([Number(old[2])]);
    ok.close();
  });

  it('refuses upgrades without a valid key or with a malformed cursor, with the API error body', async () => {
    const k = await f.newKey();
    await expect(connectStream(urlA, 'bw_nope')).rejects.toMatchObject({
      status: 401,
      body: expect.stringContaining('"error_code":"ERR_API_KEY_INVALID"'),
    });
    await expect(connectStream(urlA, '', { query: true })).rejects.toMatchObject({
      status: 401,
      body: expect.stringContaining('ERR_API_KEY_MISSING'),
    });
    await expect(connectStream(urlA, k.key, { after: 'x' as unknown as number })).rejects.toMatchObject({
      status: 400,
      body: expect.stringContaining('after must be an event id'),
    });
    await expect(connectStream(urlA.replace('/v1/stream', '/v1/other'), k.key)).rejects.toMatchObject({ status: 404 });
  });

  it('refuses a cursor from the future with 400 and the newest event id; the newest id itself is fine', async () => {
    const k = await f.newKey();
    const [newest] = (await insertEvents(f.t.db, [{ type: 'tx.unconfirmed', ...newAddress() }])).slice(-1);
    for (const url of [urlA, urlB]) {
      const refused = await connectStream(url, k.key, { after: newest! + 1000n }).then(
        () => undefined,
        (err: { status: number; body: string }) => err,
      );
      expect(refused?.status, url).toBe(400);
      expect(JSON.parse(refused!.body)).toEqual({
        error_type: 'invalid_request',
        error_code: 'ERR_INVALID_CURSOR',
        error_message: `after ${newest! + 1000n} is beyond the newest event, ${newest}: resume from an event id you received, or connect without after`,
        retry: false,
        error_cause: String(newest),
      });
    }
    const ok = await connectStream(urlA, k.key, { after: newest! });
    await waitFor('stream live', () => ok.messages.some((m) => m.type === 'stream.live'), 10_000);
    ok.close();
  });
});
