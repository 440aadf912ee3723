/**
 * `COPY (<query>) TO STDOUT (FORMAT binary)` read straight off the connection's socket: the
 * finish reads the whole loaded history back this way (tens of millions of rows), where
 * pg-copy-streams' reader copied each row's message into a buffer list, then every socket
 * chunk's rows into one more buffer, and passed each through a stream. Here each socket chunk
 * is cut into the server's messages in place; a CopyData message (one row each: the header
 * comes with the first, the trailer alone) goes to a `CopyRowReader` as a range of the chunk,
 * and only a message that a chunk's end cuts is copied (its bytes and the rest of it, no more).
 *
 * As pg-copy-streams does, the query takes the socket from node-postgres while the COPY runs
 * (node-postgres's own `data` listener is set aside) and hands it back at `CopyDone`, or at an
 * `ErrorResponse`, with the bytes that follow: node-postgres then reads the command's end (or
 * the error) and `ReadyForQuery` and settles the query. Notices and parameter changes sent
 * during the COPY are dropped (pg-copy-streams drops them too). A row the reader rejects stops
 * the rows, not the COPY: the rest is read and dropped, and the query fails with that error once
 * the connection is ready again, so the client stays usable.
 * @module
 */
import type { Duplex } from 'node:stream';
import type pg from 'pg';
import type { CopyRowReader } from './copy-binary.js';

/** Message types (https://www.postgresql.org/docs/current/protocol-message-formats.html). */
const COPY_DATA = 0x64; // 'd'
const COPY_DONE = 0x63; // 'c'
const COPY_OUT_RESPONSE = 0x48; // 'H'
const NOTICE = 0x4e; // 'N'
const PARAMETER_STATUS = 0x53; // 'S'
const NOTIFICATION = 0x41; // 'A'

type DataListener = (chunk: Buffer) => void;

/** What the query needs of node-postgres's connection (its socket and its simple query). */
interface Connection {
  stream: Duplex;
  query(text: string): void;
}

class CopyOutQuery {
  private connection: Connection | null = null;
  private pgData: DataListener | null = null;
  /** The first bytes of a message that the last chunk's end cut. */
  private tail: Buffer | null = null;
  private failed: unknown = null;
  private settled = false;
  readonly done: Promise<number>;
  private resolve!: (rows: number) => void;
  private reject!: (err: unknown) => void;

  constructor(
    private readonly text: string,
    private readonly reader: CopyRowReader,
    /** Awaited after each chunk, the socket paused meanwhile (the caller's own writes keep pace). */
    private readonly after?: () => Promise<void>,
  ) {
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /** node-postgres's Submittable: called when the query's turn comes (an error returned fails the query). */
  submit(connection: Connection): Error | undefined {
    const stream = connection.stream;
    const listeners = stream.listeners('data') as DataListener[];
    if (listeners.length !== 1)
      return new Error(`copy out: the connection has ${listeners.length} data listeners, expected node-postgres's one`);
    this.connection = connection;
    this.pgData = listeners[0]!;
    stream.removeListener('data', this.pgData);
    stream.on('data', this.onData);
    connection.query(this.text);
    return undefined;
  }

  private readonly onData = (chunk: Buffer): void => {
    let p = 0;
    if (this.tail !== null) {
      // Complete the cut message with the bytes it still needs, then go on in the chunk.
      let t = this.tail;
      if (t.length < 5) {
        const take = Math.min(5 - t.length, chunk.length);
        t = Buffer.concat([t, chunk.subarray(0, take)]);
        p = take;
        if (t.length < 5) {
          this.tail = t;
          return;
        }
      }
      const total = 1 + t.readInt32BE(1);
      const take = Math.min(total - t.length, chunk.length - p);
      const m = Buffer.concat([t, chunk.subarray(p, p + take)]);
      p += take;
      if (m.length < total) {
        this.tail = m;
        return;
      }
      this.tail = null;
      if (!this.message(m, 0, total)) {
        this.handBack(m[0] === COPY_DONE ? chunk.subarray(p) : Buffer.concat([m, chunk.subarray(p)]));
        return;
      }
    }
    while (p < chunk.length) {
      if (chunk.length - p < 5 || p + 1 + chunk.readInt32BE(p + 1) > chunk.length) {
        this.tail = Buffer.from(chunk.subarray(p));
        break;
      }
      const total = 1 + chunk.readInt32BE(p + 1);
      if (!this.message(chunk, p, total)) {
        this.handBack(chunk.subarray(chunk[p] === COPY_DONE ? p + total : p));
        return;
      }
      p += total;
    }
    if (this.after && this.failed === null) {
      const stream = this.connection!.stream;
      stream.pause();
      this.after().then(
        () => stream.resume(),
        (err: unknown) => {
          this.failed ??= err;
          stream.resume();
        },
      );
    }
  };

  /** One whole message at `buf[p..p + total)`; false when the COPY is over (done, an error, or a message it does not expect: the socket goes back). */
  private message(buf: Buffer, p: number, total: number): boolean {
    switch (buf[p]) {
      case COPY_DATA:
        if (this.failed === null) {
          try {
            this.reader.message(buf, p + 5, p + total);
          } catch (err) {
            this.failed = err;
          }
        }
        return true;
      case COPY_OUT_RESPONSE:
      case NOTICE:
      case PARAMETER_STATUS:
      case NOTIFICATION:
        return true;
      default:
        // CopyDone ends the COPY here; an ErrorResponse, or anything else, goes back to
        // node-postgres with the socket, and it reads it (handBack's caller).
        return false;
    }
  }

  /** Gives the socket back to node-postgres with the bytes after the COPY's data. */
  private handBack(rest: Buffer): void {
    const stream = this.connection!.stream;
    stream.removeListener('data', this.onData);
    stream.on('data', this.pgData!);
    stream.resume();
    if (rest.length > 0) this.pgData!(rest);
  }

  handleError(err: unknown): void {
    if (this.connection !== null && this.connection.stream.listeners('data').includes(this.onData)) this.handBack(Buffer.alloc(0));
    this.settle(err);
  }

  handleCommandComplete(): void {}

  handleReadyForQuery(): void {
    if (this.failed !== null) {
      this.settle(this.failed);
      return;
    }
    try {
      this.settle(null, this.reader.end());
    } catch (err) {
      this.settle(err);
    }
  }

  private settle(err: unknown, rows = 0): void {
    if (this.settled) return;
    this.settled = true;
    if (err !== null) this.reject(err);
    else this.resolve(rows);
  }
}

/**
 * Streams `COPY (<query>) TO STDOUT (FORMAT binary)` on `client` into `reader`, awaiting `after`
 * (if any) after each chunk of the socket; the number of rows.
 */
export async function copyOutInto(
  client: pg.ClientBase,
  query: string,
  reader: CopyRowReader,
  after?: () => Promise<void>,
): Promise<number> {
  const q = new CopyOutQuery(`COPY (${query}) TO STDOUT (FORMAT binary)`, reader, after);
  await client.query(q as unknown as pg.Submittable);
  return q.done;
}
