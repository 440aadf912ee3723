/**
 * An open-loop HTTP load: requests are sent on a fixed schedule (`rate` per second), whether or
 * not earlier ones were answered, and each latency counts from the request's scheduled time, so
 * a slow server cannot slow the load down and hide its queue (coordinated omission). autocannon's
 * `overallRate` cannot do this: each connection sends back to back until its share of the second
 * is spent and then waits for the next second, so the load comes in bursts at full speed.
 * Keep-alive connections on raw sockets, one request at a time each; responses must carry a
 * Content-Length (every Blockwire API response does).
 * @module
 */
import { connect, type Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';

export type OpenLoopOptions = {
  host: string;
  port: number;
  /** Requests per second, on a fixed schedule. */
  rate: number;
  durationMs: number;
  /** Connections kept open; a request due when all are busy waits for one (its wait counts). */
  connections: number;
  headers: Record<string, string>;
  /** The path of the next request. */
  path: () => string;
};

export type OpenLoopResult = {
  sent: number;
  answered: number;
  /** Requests answered before the schedule ended, per second of it. */
  served: number;
  non2xx: number;
  p50: number;
  p99: number;
  max: number;
  /** Longest the load generator's own event loop was late (ms): a stall here delays sends and shows as latency. */
  generatorLag: number;
};

type Conn = { socket: Socket; buf: Buffer; due: number; busy: boolean };

/** Runs the load and resolves when every request sent is answered (or 10 s after the schedule ends). */
export async function openLoop(o: OpenLoopOptions): Promise<OpenLoopResult> {
  const head = Object.entries({ host: `${o.host}:${o.port}`, connection: 'keep-alive', ...o.headers })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const latencies: number[] = [];
  let non2xx = 0;
  let sent = 0;
  let inTime = 0;
  const idle: Conn[] = [];
  const waiting: number[] = []; // scheduled times of requests due while every connection was busy
  const start = performance.now() + 50;
  const end = start + o.durationMs;
  let finished: () => void = () => {};
  const done = new Promise<void>((r) => (finished = r));

  const send = (c: Conn, due: number) => {
    c.busy = true;
    c.due = due;
    c.socket.write(`GET ${o.path()} HTTP/1.1\r\n${head}\r\n`);
  };
  const release = (c: Conn) => {
    c.busy = false;
    const due = waiting.shift();
    if (due !== undefined) send(c, due);
    else idle.push(c);
    if (performance.now() >= end && waiting.length === 0 && idle.length === conns.length) finished();
  };
  const onData = (c: Conn, d: Buffer) => {
    c.buf = c.buf.length === 0 ? d : Buffer.concat([c.buf, d]);
    for (;;) {
      const eoh = c.buf.indexOf('\r\n\r\n');
      if (eoh < 0) return;
      const header = c.buf.subarray(0, eoh).toString('latin1');
      const m = /\r\ncontent-length:\s*(\d+)/i.exec(header);
      if (!m) throw new Error(`open-loop: a response without Content-Length: ${header.split('\r\n')[0]}`);
      const total = eoh + 4 + Number(m[1]);
      if (c.buf.length < total) return;
      const status = Number(header.slice(9, 12));
      if (status < 200 || status > 299) non2xx++;
      const now = performance.now();
      latencies.push(now - c.due);
      if (now <= end) inTime++;
      c.buf = c.buf.subarray(total);
      release(c);
    }
  };

  const conns: Conn[] = await Promise.all(
    Array.from(
      { length: o.connections },
      () =>
        new Promise<Conn>((resolve, reject) => {
          const socket = connect({ host: o.host, port: o.port, noDelay: true });
          const c: Conn = { socket, buf: Buffer.alloc(0), due: 0, busy: false };
          socket.once('connect', () => resolve(c));
          socket.once('error', reject);
          socket.on('data', (d: Buffer) => onData(c, d));
        }),
    ),
  );
  idle.push(...conns);

  // The schedule: request i is due at start + i / rate; a 1 ms timer sends what has come due.
  const pump = () => {
    const now = Math.min(performance.now(), end);
    const dueCount = Math.floor(((now - start) * o.rate) / 1000);
    while (sent < dueCount) {
      const due = start + (sent * 1000) / o.rate;
      sent++;
      const c = idle.pop();
      if (c) send(c, due);
      else waiting.push(due);
    }
  };
  const lag = monitorEventLoopDelay({ resolution: 5 });
  lag.enable();
  const timer = setInterval(pump, 1);
  await new Promise((r) => setTimeout(r, end - performance.now() + 1));
  clearInterval(timer);
  lag.disable();
  pump();
  if (waiting.length > 0 || idle.length < conns.length) {
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([done, new Promise((r) => (grace = setTimeout(r, 10_000)))]).finally(() => clearTimeout(grace));
  }
  for (const c of conns) c.socket.destroy();

  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies.length === 0 ? NaN : latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;
  return {
    sent,
    answered: latencies.length,
    served: (inTime * 1000) / o.durationMs,
    non2xx,
    p50: pct(50),
    p99: pct(99),
    max: latencies[latencies.length - 1] ?? NaN,
    generatorLag: lag.max / 1e6,
  };
}
