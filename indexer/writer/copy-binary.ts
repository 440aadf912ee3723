/**
 * PostgreSQL binary COPY (https://www.postgresql.org/docs/current/sql-copy.html, "Binary
 * Format") for the bulk path: rows are encoded straight into one growing buffer (no text, no
 * hex: bytea and uuid travel as raw bytes) and streamed with pg-copy-streams (read back row by
 * row by copy-out.ts). Binary COPY halves the bytes of hash-heavy rows and skips Postgres's text
 * parsing.
 * @module
 */
import type pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { uuidHex } from '../../src/db/address-key.js';
import { writeUuidBytes } from '../../src/db/uuid-bytes.js';
import { ENTRY_BYTES, writeEntry } from '../../src/db/history-entries.js';

/** 2000-01-01T00:00:00Z, PostgreSQL's epoch for timestamps, in Unix milliseconds. */
const PG_EPOCH_MS = 946_684_800_000;

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/** Byteas up to this length are copied byte by byte (a TypedArray#set call costs more for them). */
const SHORT_BYTES = 64;

/**
 * Encodes rows of one COPY in binary format. The hot path of the bulk load (a dozen fields per
 * transaction): big-endian numbers go through a DataView, which the JIT inlines, and short
 * byteas are copied in a loop, so a field costs no call into the runtime.
 */
export class BinaryCopy {
  private buf: Buffer;
  private dv: DataView;
  private len = 0;
  rows = 0;

  constructor(sizeHint = 1 << 16) {
    this.buf = Buffer.allocUnsafe(Math.max(sizeHint, 64));
    this.dv = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length);
    this.reset();
  }

  /**
   * Empties the copy for new rows, keeping its buffer (at least `sizeHint` bytes): the bulk load
   * reuses a written batch's buffers for the batch after next, so that its hundreds of MB are
   * neither grown by doubling nor freshly faulted in by the kernel for every batch. Whatever
   * `finish` or `slice` returned before is overwritten.
   */
  reset(sizeHint = 0): this {
    this.len = 0;
    this.rows = 0;
    this.ensure(Math.max(sizeHint, 64));
    SIGNATURE.copy(this.buf, 0);
    this.dv.setInt32(11, 0); // flags
    this.dv.setInt32(15, 0); // header extension length
    this.len = 19;
    return this;
  }

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
    this.dv = new DataView(next.buffer, next.byteOffset, next.length);
  }

  /** Starts a row of `fields` columns. */
  row(fields: number): this {
    this.ensure(2);
    this.dv.setInt16(this.len, fields);
    this.len += 2;
    this.rows++;
    return this;
  }

  null(): this {
    this.ensure(4);
    this.dv.setInt32(this.len, -1);
    this.len += 4;
    return this;
  }

  bool(v: boolean): this {
    this.ensure(5);
    this.dv.setInt32(this.len, 1);
    this.buf[this.len + 4] = v ? 1 : 0;
    this.len += 5;
    return this;
  }

  int2(v: number): this {
    this.ensure(6);
    this.dv.setInt32(this.len, 2);
    this.dv.setInt16(this.len + 4, v);
    this.len += 6;
    return this;
  }

  int4(v: number): this {
    this.ensure(8);
    this.dv.setInt32(this.len, 4);
    this.dv.setInt32(this.len + 4, v);
    this.len += 8;
    return this;
  }

  /** An int8 from a safe integer (tx_num, sats) or a bigint. */
  int8(v: number | bigint): this {
    this.ensure(12);
    const dv = this.dv;
    const p = this.len;
    dv.setInt32(p, 8);
    if (typeof v === 'bigint') dv.setBigInt64(p + 4, v);
    else {
      const hi = Math.floor(v / 0x100000000);
      dv.setInt32(p + 4, hi | 0);
      dv.setUint32(p + 8, v - hi * 0x100000000);
    }
    this.len += 12;
    return this;
  }

  /** A timestamptz: microseconds since 2000-01-01 UTC. */
  timestamptz(d: Date): this {
    return this.int8(BigInt(d.getTime() - PG_EPOCH_MS) * 1000n);
  }

  /** An int8 from its 8 little-endian bytes at `b[at..at + 8)` (an amount as a block holds it). */
  int8LE(b: Uint8Array, at: number): this {
    this.ensure(12);
    this.dv.setInt32(this.len, 8);
    const buf = this.buf;
    const p = this.len + 4;
    for (let i = 0; i < 8; i++) buf[p + i] = b[at + 7 - i]!;
    this.len += 12;
    return this;
  }

  bytea(b: Uint8Array): this {
    return this.byteaRange(b, 0, b.length);
  }

  /** A bytea of bytes [start, end) of `b` (no view of them is made). */
  byteaRange(b: Uint8Array, start: number, end: number): this {
    const n = end - start;
    this.ensure(4 + n);
    this.dv.setInt32(this.len, n);
    const p = this.len + 4;
    if (n <= SHORT_BYTES) {
      const buf = this.buf;
      for (let i = 0; i < n; i++) buf[p + i] = b[start + i]!;
    } else this.buf.set(start === 0 && end === b.length ? b : b.subarray(start, end), p);
    this.len = p + n;
    return this;
  }

  /** A uuid from its 8-4-4-4-12 text (or 32 hex characters). */
  uuid(text: string): this {
    this.ensure(20);
    this.dv.setInt32(this.len, 16);
    // The usual text digit by digit (src/db/uuid-bytes.ts); anything else as Buffer#write reads it.
    if (!writeUuidBytes(this.buf, this.len + 4, text)) this.buf.write(uuidHex(text), this.len + 4, 16, 'hex');
    this.len += 20;
    return this;
  }

  /**
   * A bytea of history entries (src/db/history-entries.ts): `nums[from..]`, ascending tx_nums,
   * each as its entry; what `bytea(restOf(nums))` writes for `from` 1, with no Buffer between.
   */
  byteaEntries(nums: readonly number[], from: number): this {
    const n = (nums.length - from) * ENTRY_BYTES;
    this.ensure(4 + n);
    this.dv.setInt32(this.len, n);
    let p = this.len + 4;
    for (let i = from; i < nums.length; i++, p += ENTRY_BYTES) writeEntry(this.buf, p, nums[i]!);
    this.len = p;
    return this;
  }

  /** A uuid from its 16 bytes (the first 16 of `b`). */
  uuidBytes(b: Uint8Array): this {
    this.ensure(20);
    this.dv.setInt32(this.len, 16);
    const buf = this.buf;
    const p = this.len + 4;
    for (let i = 0; i < 16; i++) buf[p + i] = b[i]!;
    this.len += 20;
    return this;
  }

  /** A uuid from its 4 big-endian 32-bit words. */
  uuidWords(w0: number, w1: number, w2: number, w3: number): this {
    this.ensure(20);
    const dv = this.dv;
    const p = this.len;
    dv.setInt32(p, 16);
    dv.setInt32(p + 4, w0);
    dv.setInt32(p + 8, w1);
    dv.setInt32(p + 12, w2);
    dv.setInt32(p + 16, w3);
    this.len += 20;
    return this;
  }

  /** Bytes written so far (the next row starts here). */
  get length(): number {
    return this.len;
  }

  text(s: string): this {
    const n = Buffer.byteLength(s);
    this.ensure(4 + n);
    this.dv.setInt32(this.len, n);
    this.buf.write(s, this.len + 4, n, 'utf8');
    this.len += 4 + n;
    return this;
  }

  /** The complete COPY data (with the trailer). */
  finish(): Buffer {
    this.ensure(2);
    this.dv.setInt16(this.len, -1);
    this.len += 2;
    return this.buf.subarray(0, this.len);
  }
}

/** Runs `COPY <target> FROM STDIN (FORMAT binary)` with `data` on `client`. */
export async function copyIn(client: pg.ClientBase, target: string, data: Buffer): Promise<void> {
  const stream = client.query(copyFrom(`COPY ${target} FROM STDIN (FORMAT binary)`));
  await new Promise<void>((resolve, reject) => {
    stream.on('error', reject);
    stream.on('finish', resolve);
    // Large writes in slices so the socket's backpressure is honoured.
    const SLICE = 1 << 20;
    let off = 0;
    const pump = () => {
      while (off < data.length) {
        const part = data.subarray(off, Math.min(off + SLICE, data.length));
        off += part.length;
        if (!stream.write(part)) {
          stream.once('drain', pump);
          return;
        }
      }
      stream.end();
    };
    pump();
  });
}

/** Runs `COPY (<query>) TO STDOUT (FORMAT binary)` on `client` and returns its data whole. */
export async function copyOut(client: pg.ClientBase, query: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const b of client.query(copyTo(`COPY (${query}) TO STDOUT (FORMAT binary)`))) parts.push(b as Buffer);
  return Buffer.concat(parts);
}

/** A row of binary COPY data: `data`, and each field's start (−1 for NULL) and length (reused between rows: read them before returning). */
type CopyRow = (data: Buffer, at: Int32Array, len: Int32Array) => void;

/**
 * Reads binary COPY data (`COPY … TO STDOUT (FORMAT binary)`) as it arrives, in pieces cut
 * anywhere: `feed` calls `each` for every whole row, and keeps the bytes of a row cut short for
 * the next piece; `end` checks that the data ended with its trailer. Throws on data that is not
 * binary COPY or a row of another field count.
 */
export class CopyRowReader {
  private pending: Buffer = Buffer.alloc(0);
  private started = false;
  private ended = false;
  rows = 0;
  private readonly at: Int32Array;
  private readonly len: Int32Array;

  constructor(
    private readonly fields: number,
    private readonly each: CopyRow,
  ) {
    this.at = new Int32Array(fields);
    this.len = new Int32Array(fields);
  }

  feed(piece: Buffer): void {
    if (this.ended) throw new Error('binary COPY data after its trailer');
    const data = this.pending.length === 0 ? piece : Buffer.concat([this.pending, piece]);
    let p = 0;
    if (!this.started) {
      p = this.header(data, 0, data.length);
      if (p < 0) {
        // (the header, or its extension, cut across pieces)
        this.pending = data;
        return;
      }
      this.started = true;
    }
    for (;;) {
      if (this.ended) {
        if (p !== data.length) throw new Error('binary COPY data after its trailer');
        break;
      }
      const q = this.row(data, p, data.length);
      if (q < 0) break;
      p = q;
    }
    this.pending = p === data.length ? Buffer.alloc(0) : data.subarray(p);
  }

  /**
   * Reads one CopyData message's payload, `data[start..end)`: the server sends each row in a
   * message of its own (the header with the first, the trailer alone), so a row is never cut
   * here and nothing is copied (copy-out.ts reads the messages off the socket).
   */
  message(data: Buffer, start: number, end: number): void {
    if (this.ended) throw new Error('binary COPY data after its trailer');
    let q = start;
    if (!this.started) {
      q = this.header(data, q, end);
      if (q < 0) throw new Error('binary COPY message cut short');
      this.started = true;
      if (q === end) return;
    }
    const after = this.row(data, q, end);
    if (after < 0) throw new Error('binary COPY message cut short');
    if (after !== end) throw new Error(this.ended ? 'binary COPY data after its trailer' : 'binary COPY row does not fill its message');
  }

  /**
   * Checks the header at `data[p..]`, no further than `end`: returns where it ends (after its
   * extension area), or -1 when it does not end before `end`.
   */
  private header(data: Buffer, p: number, end: number): number {
    if (end - p < 19) return -1;
    if (!data.subarray(p, p + 11).equals(SIGNATURE)) throw new Error('not binary COPY data');
    const q = p + 19 + data.readInt32BE(p + 15);
    return q > end ? -1 : q;
  }

  /**
   * Reads the row (or the trailer) at `data[p..]`, no further than `end`, and gives it to `each`:
   * returns where it ends, or -1 when it does not end before `end` (nothing read).
   */
  private row(data: Buffer, p: number, end: number): number {
    if (p + 2 > end) return -1;
    const n = data.readInt16BE(p);
    if (n === -1) {
      this.ended = true;
      return p + 2;
    }
    const { at, len, fields } = this;
    if (n !== fields) throw new Error(`binary COPY row of ${n} fields, expected ${fields}`);
    let q = p + 2;
    for (let i = 0; i < fields; i++) {
      if (q + 4 > end) return -1;
      const l = data.readInt32BE(q);
      if (l < -1) throw new Error(`binary COPY field of length ${l}`);
      q += 4;
      at[i] = l < 0 ? -1 : q;
      len[i] = l;
      if (l > 0) q += l;
      if (q > end) return -1;
    }
    this.each(data, at, len);
    this.rows++;
    return q;
  }

  /** The number of rows, once the data has ended with its trailer. */
  end(): number {
    if (!this.ended) throw new Error('binary COPY data cut short');
    return this.rows;
  }
}

/** Every row of binary COPY data held whole (what `copyOut` returns); the number of rows. */
export function eachCopyRow(data: Buffer, fields: number, each: CopyRow): number {
  const r = new CopyRowReader(fields, each);
  r.feed(data);
  return r.end();
}
