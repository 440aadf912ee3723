/**
 * Where a per-block apply's wall time goes besides PostgreSQL's CPU (bench/live-ab.ts
 * `--timeline`): the time the server waited for the writer on its connection, and the time the
 * server's processes and this process's threads were runnable but waited for a core.
 *
 * node-postgres sends a connection's next statement only once it has read the last one's
 * ReadyForQuery ('Z'), and encodes a statement's parameters between writing its Parse and its
 * Bind. So the server waits from a 'Z' (or a COPY's CopyInResponse 'G') to the next write, and
 * from a statement's first write to its last: `ServerWaits` records both on every socket of this
 * process (it wraps `net.Socket`'s `write` and `emit`: a bench-only instrument).
 * @module
 */
import { readFileSync, readdirSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { round } from './harness.js';

interface SocketState {
  /** When the last statement's 'Z' or 'G' was read, until the next write. */
  ready: number | null;
  /** The current statement's first and last writes. */
  first: number | null;
  lastWrite: number;
  /** Waited since the reset, ms. */
  ms: number;
  /** The server's time on statements since the reset (last write to 'Z' or 'G'), ms. */
  busy: number;
  writes: number;
  /**
   * Per statement since the reset: its wait, the server's time on it (until this process read the
   * answer: a busy event loop adds to it), and a label (its number, the wait before it, its first bytes).
   */
  statements: { ms: number; busy: number; label: string }[];
  /** Bytes of a message that continues in the next read, and a header split across reads. */
  skip: number;
  carry: Buffer;
}

export class ServerWaits {
  private readonly sockets = new Map<Socket, SocketState>();

  constructor() {
    const wrote = (socket: Socket, data: unknown) => this.wrote(socket, data);
    const read = (socket: Socket, chunk: Buffer) => this.read(socket, chunk);
    const write = Socket.prototype.write as (this: Socket, ...a: unknown[]) => boolean;
    Socket.prototype.write = function (this: Socket, ...args: unknown[]) {
      wrote(this, args[0]);
      return write.apply(this, args);
    } as typeof Socket.prototype.write;
    const emit = Socket.prototype.emit as (this: Socket, e: string | symbol, ...a: unknown[]) => boolean;
    Socket.prototype.emit = function (this: Socket, event: string | symbol, ...args: unknown[]) {
      if (event === 'data' && Buffer.isBuffer(args[0])) read(this, args[0]);
      return emit.call(this, event, ...args);
    } as typeof Socket.prototype.emit;
  }

  private of(s: Socket): SocketState {
    let x = this.sockets.get(s);
    if (!x) {
      x = { ready: null, first: null, lastWrite: 0, ms: 0, busy: 0, writes: 0, statements: [], skip: 0, carry: Buffer.alloc(0) };
      this.sockets.set(s, x);
    }
    return x;
  }

  private wrote(socket: Socket, data: unknown): void {
    const s = this.of(socket);
    const now = performance.now();
    if (s.first === null) {
      s.first = now;
      const before = s.ready === null ? 0 : now - s.ready;
      const head = Buffer.isBuffer(data)
        ? data
            .subarray(0, 48)
            .toString('latin1')
            .replace(/[^ -~]/g, '.')
            .replace(/\s+/g, ' ')
        : '';
      s.statements.push({ ms: before, busy: 0, label: `#${s.statements.length} (${round(before, 1)} ms before it) ${head.trim()}` });
    }
    s.lastWrite = now;
    s.writes++;
  }

  /** Walks the server's messages across reads: a 'Z' or 'G' that ends a read ends the statement. */
  private read(socket: Socket, chunk: Buffer): void {
    const s = this.of(socket);
    let data = chunk;
    let at = s.skip;
    if (s.carry.length > 0) {
      data = Buffer.concat([s.carry, chunk]);
      at = 0;
      s.carry = Buffer.alloc(0);
    }
    let last = 0;
    while (at < data.length) {
      if (at + 5 > data.length) {
        s.carry = data.subarray(at);
        break;
      }
      last = data[at]!;
      at += 1 + data.readUInt32BE(at + 1);
    }
    s.skip = at > data.length ? at - data.length : 0;
    if (at !== data.length || s.carry.length > 0 || (last !== 0x5a && last !== 0x47) || s.first === null) return;
    const statement = s.statements[s.statements.length - 1]!;
    statement.ms += s.lastWrite - s.first;
    s.ms += statement.ms;
    s.ready = performance.now();
    statement.busy = s.ready - s.lastWrite;
    s.busy += statement.busy;
    s.first = null;
  }

  /** Starts counting again on every socket. */
  reset(): void {
    for (const s of this.sockets.values()) {
      s.ms = 0;
      s.busy = 0;
      s.writes = 0;
      s.statements = [];
      s.ready = null;
    }
  }

  /** The busiest socket's wait since the reset (the writer's connection), with its longest waits. */
  waited(): { ms: number; busy: number; longest: string[]; busiest: string[] } {
    let best: SocketState | null = null;
    for (const s of this.sockets.values()) if (!best || s.writes > best.writes) best = s;
    const top = (by: (x: SocketState['statements'][number]) => number, n: number) =>
      [...(best?.statements ?? [])]
        .sort((a, b) => by(b) - by(a))
        .slice(0, n)
        .map((x) => `${round(by(x), 1)} ms at ${x.label}`);
    return { ms: best?.ms ?? 0, busy: best?.busy ?? 0, longest: top((x) => x.ms, 3), busiest: top((x) => x.busy, 8) };
  }

  /** One line: the server's wait for the writer, and each side's run-queue wait between two `runQueueMs` readings. */
  describe(before: RunQueue, after: RunQueue): string {
    const w = this.waited();
    return `PostgreSQL ran the writer's statements for ${round(w.busy, 0)} ms and waited for the writer ${round(w.ms, 1)} ms (longest: ${w.longest.join('; ')}); its longest statements: ${w.busiest.join('; ')}; waited for a core: PostgreSQL ${round(after.postgres - before.postgres, 0)} ms, writer ${round(after.self - before.self, 0)} ms`;
  }
}

/** Run-queue wait so far (ms, /proc schedstat): the PostgreSQL under `dataDir` (postmaster and children) and this process's threads. */
export interface RunQueue {
  postgres: number;
  self: number;
}

const queuedMs = (path: string): number => {
  try {
    return Number(readFileSync(path, 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return 0; // gone
  }
};

export function runQueueMs(dataDir: string): RunQueue {
  const pm = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]!;
  let postgres = queuedMs(`/proc/${pm}/schedstat`);
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1] === pm) postgres += queuedMs(`/proc/${pid}/schedstat`);
    } catch {
      // gone
    }
  }
  let self = 0;
  for (const t of readdirSync('/proc/self/task')) self += queuedMs(`/proc/self/task/${t}/schedstat`);
  return { postgres, self };
}
