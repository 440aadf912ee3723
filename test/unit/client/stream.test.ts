/**
 * The stream client against a loopback `ws` server playing the stream's contract (events with
 * increasing ids, `?after=` resume, close codes): reconnect with backoff, resume from the last
 * id, no duplicate ever delivered, fatal refusals, and flow control. The real stream is
 * exercised in test/integration/client/e2e.test.ts.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { EventStream, type StreamState, type WebSocketConstructor } from '../../../client/stream.js';
import type { StreamEvent } from '../../../client/types.js';

const WS: WebSocketConstructor = WebSocket;
let wss: WebSocketServer | undefined;
afterEach(async () => {
  await new Promise<void>((r) => (wss ? wss.close(() => r()) : r()));
  wss = undefined;
});

type Conn = { socket: WebSocket; after: string | null; apiKey: string | undefined; queryKey: string | null };
async function serve(onConn: (c: Conn) => void, verify?: (key: string | undefined) => boolean): Promise<string> {
  wss = new WebSocketServer({
    port: 0,
    host: '127.0.0.1',
    verifyClient: verify
      ? (info, cb) => (verify(info.req.headers['apikey'] as string | undefined) ? cb(true) : cb(false, 401, 'Unauthorized'))
      : undefined,
  });
  wss.on('connection', (socket, req) => {
    const u = new URL(req.url!, 'http://x');
    onConn({
      socket,
      after: u.searchParams.get('after'),
      apiKey: req.headers['apikey'] as string | undefined,
      queryKey: u.searchParams.get('apiKey'),
    });
  });
  await new Promise((r) => wss!.once('listening', r));
  return `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v1/stream`;
}

const ev = (id: number, sub = 's1'): StreamEvent => ({ id: String(id), type: 'tx.confirmed', subscription_id: sub });
const send = (s: WebSocket, ...events: StreamEvent[]) => events.forEach((e) => s.send(JSON.stringify({ ...e, id: Number(e.id) })));

async function collect(stream: EventStream, n: number): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of stream) {
    out.push(e);
    if (out.length === n) break;
  }
  return out;
}

describe('EventStream', () => {
  it('reconnects after a dropped connection, resumes after the last id, and never repeats one', async () => {
    const conns: Conn[] = [];
    const url = await serve((c) => {
      conns.push(c);
      if (conns.length === 1) {
        send(c.socket, ev(1), ev(2), ev(3));
        setTimeout(() => c.socket.terminate(), 20);
      } else {
        // The resumed connection overlaps: it repeats 3, then goes on. Event 5 matches two subscriptions.
        send(c.socket, ev(3), ev(4), ev(5, 's1'), ev(5, 's2'), ev(5, 's1'), ev(2), ev(6));
      }
    });
    const stream = new EventStream({ url, apiKey: 'bw_k', WebSocket: WS, reconnect: { initialDelayMs: 10 } });
    const got = await collect(stream, 7);
    expect(got.map((e) => `${e.id}/${e.subscription_id}`)).toEqual(['1/s1', '2/s1', '3/s1', '4/s1', '5/s1', '5/s2', '6/s1']);
    expect(conns.map((c) => c.after)).toEqual([null, '3']);
    expect(conns[0]!.apiKey).toBe('bw_k');
    expect(conns[0]!.queryKey).toBeNull();
    expect(stream.lastEventId).toBe('6');
    expect(stream.state).toBe('closed');
  });

  it('starts after a given id, and sends the key as a query parameter when asked (browsers)', async () => {
    const conns: Conn[] = [];
    const url = await serve((c) => {
      conns.push(c);
      send(c.socket, ev(41), ev(42), ev(43));
    });
    const got: StreamEvent[] = [];
    const states: StreamState[] = [];
    const stream = new EventStream({
      url,
      apiKey: 'bw_q',
      WebSocket: WS,
      auth: 'query',
      after: 42,
      onEvent: (e) => got.push(e),
      onStateChange: (s) => states.push(s),
    });
    await expect.poll(() => got.length).toBe(1);
    expect(got[0]!.id).toBe('43');
    expect(conns[0]).toMatchObject({ after: '42', queryKey: 'bw_q', apiKey: undefined });
    stream.close();
    await stream.closed;
    expect(states).toEqual(['open', 'closed']);
  });

  it('gives up on a refused key (HTTP 401) and on an expired cursor (4410), reconnects after a slow-consumer close (4008)', async () => {
    const refused = await serve(
      () => undefined,
      (k) => k === 'good',
    );
    const bad = new EventStream({ url: refused, apiKey: 'bad', WebSocket: WS, reconnect: { initialDelayMs: 5 } });
    await expect(collect(bad, 1)).rejects.toMatchObject({ code: 'ERR_STREAM_REFUSED' });
    await new Promise<void>((r) => wss!.close(() => r()));

    let n = 0;
    const url = await serve((c) => {
      if (++n === 1) return c.socket.close(4008, 'slow consumer');
      send(c.socket, ev(1));
      setTimeout(() => c.socket.close(4410, 'cursor expired'), 20);
    });
    const errors: Error[] = [];
    const s = new EventStream({ url, apiKey: 'k', WebSocket: WS, reconnect: { initialDelayMs: 5 }, onError: (e) => errors.push(e) });
    const got: StreamEvent[] = [];
    await expect(
      (async () => {
        for await (const e of s) got.push(e);
      })(),
    ).rejects.toThrow('The stream closed the connection: 4410 cursor expired');
    expect(got.map((e) => e.id)).toEqual(['1']);
    expect(errors.some((e) => /4008/.test(e.message))).toBe(true);
  });

  it('pauses its socket when the caller falls behind and resumes from the last queued id', async () => {
    const conns: Conn[] = [];
    const url = await serve((c) => {
      conns.push(c);
      const from = Number(c.after ?? 0);
      for (let i = from + 1; i <= 60; i++) send(c.socket, ev(i));
    });
    const states: StreamState[] = [];
    const stream = new EventStream({ url, apiKey: 'k', WebSocket: WS, highWaterMark: 10, onStateChange: (s) => states.push(s) });
    await expect.poll(() => states.includes('paused')).toBe(true);
    const got = await collect(stream, 60);
    expect(got.map((e) => Number(e.id))).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(conns.length).toBeGreaterThan(1);
    expect(conns[1]!.after).toBe('10');
  });

  it('needs a WebSocket implementation in Node 20', () => {
    const g = globalThis as { WebSocket?: unknown };
    const saved = g.WebSocket;
    delete g.WebSocket;
    try {
      expect(() => new EventStream({ url: 'ws://127.0.0.1:1', apiKey: 'k' })).toThrow(/No WebSocket implementation/);
    } finally {
      if (saved) g.WebSocket = saved;
    }
  });
});
