/**
 * Slow consumer and heartbeat: a client that stops reading is closed
 * with the slow-consumer code (4008) once its send buffer passes the bound, and the server's
 * buffer for it never grows far past that bound; a client that stops answering pings is
 * terminated within two heartbeat intervals; a reading client next to them is unaffected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.js';
import { startStreams, type StreamsHandle } from '../../../streams/main.js';
import { connectStream, createStreamsFixture, insertEvents, newAddress, streamsConfig, txEvents, type StreamsFixture } from './harness.js';
import { waitFor } from '../../support/wait.js';

const MAX_BUFFERED = 256 * 1024;
const HEARTBEAT_MS = 300;

describe('slow consumers and heartbeats', () => {
  let f: StreamsFixture;
  const started: StreamsHandle[] = [];
  /** A stream process with these limits (a paused client cannot answer pings either: each test sets the heartbeat it needs). */
  async function streams(wsHeartbeatMs: number): Promise<{ s: StreamsHandle; url: string }> {
    const s = await startStreams({
      config: streamsConfig({ wsMaxBufferedBytes: MAX_BUFFERED, wsHeartbeatMs, relayBatchSize: 2000 }),
      log: silentLogger(),
      db: f.t.db,
      redisUrl: f.redisUrl,
      redisPrefix: f.prefix,
    });
    started.push(s);
    return { s, url: `ws://127.0.0.1:${s.port}/v1/stream` };
  }

  beforeAll(async () => {
    f = await createStreamsFixture();
  });
  afterAll(async () => {
    for (const s of started) await s.stop();
    await f?.drop();
  });

  it('closes a client that stops reading with 4008, keeping its buffer bounded', async () => {
    const { s, url } = await streams(60_000);
    const k = await f.newKey();
    const addr = newAddress();
    await f.subscribe(k.id, addr);
    const slow = await connectStream(url, k.key);
    const fast = await connectStream(url, k.key);
    await waitFor(
      'both streams live',
      () => slow.messages.some((m) => m.type === 'stream.live') && fast.messages.some((m) => m.type === 'stream.live'),
      30_000,
    );
    // Stop reading: the kernel buffers fill, then the server's send buffer grows.
    slow.ws.pause();

    let sent = 0;
    while (s.stats().slowConsumerDisconnects === 0 && sent < 100_000) {
      await insertEvents(f.t.db, txEvents(addr, 2000));
      sent += 2000;
      await waitFor('fast client keeps up', () => fast.events().length >= sent, 20_000);
    }
    expect(s.stats().slowConsumerDisconnects).toBe(1);
    // Bounded: the largest buffer seen is the bound plus at most one message.
    expect(s.stats().maxBufferedSeen).toBeLessThan(MAX_BUFFERED + 2048);

    slow.ws.resume();
    const closed = await slow.closed;
    expect(closed.code).toBe(4008);
    expect(closed.reason).toBe(`slow consumer: more than ${MAX_BUFFERED} bytes unread`);
    // What it did get is an in-order prefix: it can resume from its last id.
    const ids = slow.events().map((e) => e.id);
    expect(ids).toEqual(
      fast
        .events()
        .slice(0, ids.length)
        .map((e) => e.id),
    );
    expect(fast.ws.readyState).toBe(fast.ws.OPEN);
    fast.close();
  });

  it('terminates a client that stops answering pings', async () => {
    const { s, url } = await streams(HEARTBEAT_MS);
    const k = await f.newKey();
    const before = s.stats().heartbeatTimeouts;
    const mute = await connectStream(url, k.key, { autoPong: false });
    const polite = await connectStream(url, k.key);
    const start = Date.now();
    const closed = await mute.closed;
    const took = Date.now() - start;
    expect(closed.code).toBe(1006);
    expect(took).toBeGreaterThanOrEqual(HEARTBEAT_MS);
    expect(s.stats().heartbeatTimeouts).toBe(before + 1);
    // The client that answers pings stays: three more heartbeats (pings it answered), still open.
    let pings = 0;
    polite.ws.on('ping', () => void (pings += 1));
    await waitFor('three more heartbeats', () => pings >= 3 || polite.ws.readyState !== polite.ws.OPEN, 30_000);
    expect(polite.ws.readyState).toBe(polite.ws.OPEN);
    expect(pings).toBeGreaterThanOrEqual(3);
    polite.close();
  });
});
