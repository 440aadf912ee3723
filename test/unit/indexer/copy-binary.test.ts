/**
 * BinaryCopy (DataView numbers, byteas copied byte by byte or with TypedArray#set) against the
 * straightforward encoding of PostgreSQL's binary COPY written with Buffer's own methods:
 * random rows of every field kind, byteas on both sides of the short-copy limit and taken as
 * ranges, negative and large numbers, bigints, int8s from little-endian bytes, and growth of the
 * buffer from a small hint.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BinaryCopy, CopyRowReader, eachCopyRow } from '../../../indexer/writer/copy-binary.js';
import { seededRandom } from '../../support/chain-crash.js';
import { uuidHex } from '../../../src/db/address-key.js';
import { restOf } from '../../../src/db/history-entries.js';

/** The reference encoder: each field with Buffer's write methods, concatenated. */
class Reference {
  parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0', 'latin1')];
  private num(bytes: number, write: (b: Buffer) => void) {
    const b = Buffer.alloc(4 + bytes);
    b.writeInt32BE(bytes, 0);
    write(b);
    this.parts.push(b);
  }
  row(n: number) {
    const b = Buffer.alloc(2);
    b.writeInt16BE(n, 0);
    this.parts.push(b);
  }
  int2 = (v: number) => this.num(2, (b) => b.writeInt16BE(v, 4));
  int4 = (v: number) => this.num(4, (b) => b.writeInt32BE(v, 4));
  int8 = (v: number | bigint) => this.num(8, (b) => b.writeBigInt64BE(BigInt(v), 4));
  bool = (v: boolean) => this.num(1, (b) => (b[4] = v ? 1 : 0));
  uuid16 = (v: Uint8Array) => this.num(16, (b) => b.set(v.subarray(0, 16), 4));
  bytea = (v: Uint8Array) => this.num(v.length, (b) => b.set(v, 4));
  null() {
    const b = Buffer.alloc(4);
    b.writeInt32BE(-1, 0);
    this.parts.push(b);
  }
  text = (s: string) => this.bytea(Buffer.from(s, 'utf8'));
  finish() {
    return Buffer.concat([...this.parts, Buffer.from([0xff, 0xff])]);
  }
}

describe('BinaryCopy', () => {
  it('encodes 5,000 random rows byte for byte as Buffer writes do', () => {
    const rand = seededRandom(5);
    const copy = new BinaryCopy(16);
    const ref = new Reference();
    const int = (bits: number) => Math.floor(rand() * 2 ** bits) - 2 ** (bits - 1);
    for (let r = 0; r < 5000; r++) {
      const fields = 1 + Math.floor(rand() * 8);
      copy.row(fields);
      ref.row(fields);
      for (let f = 0; f < fields; f++) {
        const kind = Math.floor(rand() * 10);
        if (kind === 0) {
          const v = int(16);
          copy.int2(v);
          ref.int2(v);
        } else if (kind === 1) {
          const v = int(32);
          copy.int4(v);
          ref.int4(v);
        } else if (kind === 2) {
          // Safe integers of either sign (tx_nums, amounts), and bigints beyond them.
          const v = rand() < 0.5 ? int(53) : BigInt.asIntN(64, BigInt(`0x${randomBytes(8).toString('hex')}`));
          if (rand() < 0.3) {
            // From its little-endian bytes, as a block holds an amount.
            const le = randomBytes(20);
            const at = Math.floor(rand() * 12);
            le.writeBigInt64LE(BigInt(v), at);
            copy.int8LE(le, at);
          } else copy.int8(v);
          ref.int8(v);
        } else if (kind === 3) {
          const v = rand() < 0.5;
          copy.bool(v);
          ref.bool(v);
        } else if (kind === 4) {
          const v = new Uint8Array(randomBytes(16 + Math.floor(rand() * 3)));
          if (rand() < 0.5) {
            copy.uuidBytes(v);
          } else {
            const w = Buffer.from(v);
            copy.uuidWords(w.readInt32BE(0), w.readInt32BE(4), w.readInt32BE(8), w.readInt32BE(12));
          }
          ref.uuid16(v);
        } else if (kind === 5) {
          copy.null();
          ref.null();
        } else if (kind === 6) {
          const s = randomBytes(Math.floor(rand() * 20)).toString('base64');
          copy.text(s);
          ref.text(s);
        } else {
          // Byteas short and long (the copy loop and TypedArray#set), whole or a range.
          const len = Math.floor(rand() * (rand() < 0.8 ? 80 : 3000));
          const v = new Uint8Array(randomBytes(len + 20));
          const s = Math.floor(rand() * 10);
          if (rand() < 0.5) copy.byteaRange(v, s, s + len);
          else copy.bytea(v.subarray(s, s + len));
          ref.bytea(v.subarray(s, s + len));
        }
      }
    }
    expect(copy.rows).toBe(5000);
    expect(Buffer.compare(copy.finish(), ref.finish())).toBe(0);
  });

  it('starts over on reset, in the buffer it has (a recycled batch)', () => {
    const copy = new BinaryCopy(16);
    copy.row(2).int8(5).bytea(Buffer.alloc(300, 9));
    copy.finish();
    copy.reset(1000).row(1).text('again');
    const ref = new Reference();
    ref.row(1);
    ref.text('again');
    expect(copy.rows).toBe(1);
    expect(Buffer.compare(copy.finish(), ref.finish())).toBe(0);
  });

  it('reads uuid texts digit by digit as Buffer#write reads their hex', () => {
    const rand = seededRandom(7);
    const texts: string[] = [];
    for (let i = 0; i < 2000; i++) {
      const hex = randomBytes(16).toString('hex');
      const text = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
      texts.push(rand() < 0.2 ? text.toUpperCase() : rand() < 0.1 ? hex : text);
    }
    const copy = new BinaryCopy(16);
    const ref = new Reference();
    for (const t of texts) {
      copy.row(1).uuid(t);
      ref.row(1);
      ref.uuid16(Buffer.from(uuidHex(t), 'hex'));
    }
    expect(Buffer.compare(copy.finish(), ref.finish())).toBe(0);
    // Not a uuid's text: written as Buffer#write writes it (the digits before the first non-digit).
    for (const bad of [
      '0123456-89ab-cdef-0123-456789abcdef',
      'g1234567-89ab-cdef-0123-456789abcdef',
      '01234567-89ab-cdef-0123-456789abcdeé',
    ]) {
      const c = new BinaryCopy(64).row(1).uuid(bad).finish();
      const want = Buffer.from(c); // the fallback's bytes, then checked against a direct write
      const direct = Buffer.from(want);
      direct.write(uuidHex(bad), 19 + 2 + 4, 16, 'hex');
      expect(Buffer.compare(want, direct)).toBe(0);
    }
  });

  it('writes history entries as bytea(restOf(entries)) does', () => {
    const rand = seededRandom(11);
    const copy = new BinaryCopy(16);
    const ref = new Reference();
    for (let i = 0; i < 500; i++) {
      const nums: number[] = [];
      let n = Math.floor(rand() * 2 ** 40);
      for (let k = Math.floor(rand() * 40) + 1; k > 0; k--) nums.push((n += 1 + Math.floor(rand() * 2 ** 20)));
      copy.row(1).byteaEntries(nums, 1);
      ref.row(1);
      ref.bytea(restOf(nums));
    }
    expect(Buffer.compare(copy.finish(), ref.finish())).toBe(0);
  });
});

describe('CopyRowReader', () => {
  /** 300 random rows (a uuid, an int8 or NULL, a bytea of 0–300 bytes) and their fields. */
  const rowsOf = (seed: number) => {
    const rand = seededRandom(seed);
    const copy = new BinaryCopy(16);
    const rows: [string, string | null, string][] = [];
    for (let i = 0; i < 300; i++) {
      const key = randomBytes(16);
      const n = rand() < 0.1 ? null : Math.floor(rand() * 2 ** 50);
      const b = randomBytes(Math.floor(rand() * 300));
      copy.row(3).uuidBytes(key);
      if (n === null) copy.null();
      else copy.int8(n);
      copy.bytea(b);
      rows.push([key.toString('hex'), n === null ? null : String(n), b.toString('hex')]);
    }
    return { data: Buffer.from(copy.finish()), rows };
  };
  const read = (pieces: Buffer[]) => {
    const got: [string, string | null, string][] = [];
    const r = new CopyRowReader(3, (d, at, len) =>
      got.push([
        d.subarray(at[0]!, at[0]! + len[0]!).toString('hex'),
        at[1]! < 0 ? null : String(d.readBigInt64BE(at[1]!)),
        d.subarray(at[2]!, at[2]! + len[2]!).toString('hex'),
      ]),
    );
    for (const p of pieces) r.feed(p);
    return { got, rows: r.end() };
  };

  it('reads the rows BinaryCopy wrote, whole or in pieces cut anywhere', () => {
    const { data, rows } = rowsOf(3);
    expect(read([data])).toEqual({ got: rows, rows: 300 });
    expect(eachCopyRow(data, 3, () => {})).toBe(300);
    const rand = seededRandom(5);
    for (let t = 0; t < 20; t++) {
      const pieces: Buffer[] = [];
      for (let at = 0; at < data.length;) {
        const n = 1 + Math.floor(rand() * (t < 10 ? 7 : 900));
        pieces.push(data.subarray(at, at + n));
        at += n;
      }
      expect(read(pieces).got).toEqual(rows);
    }
  });

  it('refuses data that is not binary COPY, rows of another width, data cut short or after the trailer', () => {
    const { data } = rowsOf(4);
    expect(() => read([Buffer.from('hello, not a copy stream at all')])).toThrow('not binary COPY data');
    expect(() => new CopyRowReader(2, () => {}).feed(data)).toThrow('binary COPY row of 3 fields, expected 2');
    expect(() => read([data.subarray(0, data.length - 1)])).toThrow('binary COPY data cut short');
    expect(() => read([data.subarray(0, 100)])).toThrow('binary COPY data cut short');
    expect(() => read([data, Buffer.from([0])])).toThrow('binary COPY data after its trailer');
    const bad = Buffer.from(data);
    bad.writeInt32BE(-2, 19 + 2);
    expect(() => read([bad])).toThrow('binary COPY field of length -2');
  });

  it('reads a header extension cut across pieces', () => {
    const { data, rows } = rowsOf(6);
    // The same rows after a header with a 6-byte extension area (flags, length, bytes).
    const withExt = Buffer.concat([data.subarray(0, 15), Buffer.from([0, 0, 0, 6, 1, 2, 3, 4, 5, 6]), data.subarray(19)]);
    expect(read([withExt]).got).toEqual(rows);
    for (const cut of [18, 20, 23, 25, 26]) expect(read([withExt.subarray(0, cut), withExt.subarray(cut)]).got).toEqual(rows);
  });

  /** `data` cut as the server sends it, one message per row (the header with the first, the trailer alone): each message's [start, end). */
  const messagesOf = (data: Buffer, fields: number): [number, number][] => {
    const out: [number, number][] = [];
    let start = 0;
    let p = 19 + data.readInt32BE(15);
    for (;;) {
      const n = data.readInt16BE(p);
      if (n === -1) break;
      p += 2;
      for (let i = 0; i < fields; i++) p += 4 + Math.max(0, data.readInt32BE(p));
      out.push([start, p]);
      start = p;
    }
    out.push([start, p + 2]);
    return out;
  };

  it('reads rows one message each, at any place of a larger buffer, as copy-out.ts hands them', () => {
    const { data, rows } = rowsOf(7);
    const got: string[] = [];
    const r = new CopyRowReader(3, (d, at, len) => got.push(d.subarray(at[0]!, at[0]! + len[0]!).toString('hex')));
    for (const [s, e] of messagesOf(data, 3)) {
      // Each message inside other bytes (the socket chunk's other messages).
      const padded = Buffer.concat([randomBytes(s % 13), data.subarray(s, e), randomBytes(5)]);
      r.message(padded, s % 13, (s % 13) + e - s);
    }
    expect(r.end()).toBe(300);
    expect(got).toEqual(rows.map((x) => x[0]));
  });

  it('refuses a message that is not binary COPY, holds two rows or part of one, a row of another width, or data after the trailer', () => {
    const { data } = rowsOf(8);
    const m = messagesOf(data, 3);
    const reader = () => new CopyRowReader(3, () => {});
    expect(() => reader().message(Buffer.from('hello, not a copy stream at all'), 0, 31)).toThrow('not binary COPY data');
    expect(() => reader().message(data, 0, m[1]![1])).toThrow('binary COPY row does not fill its message');
    expect(() => reader().message(data, 0, m[0]![1] - 1)).toThrow('binary COPY message cut short');
    expect(() => new CopyRowReader(2, () => {}).message(data, 0, m[0]![1])).toThrow('binary COPY row of 3 fields, expected 2');
    const r = reader();
    for (const [s, e] of m) r.message(data, s, e);
    expect(r.end()).toBe(300);
    expect(() => r.message(data, m[1]![0], m[1]![1])).toThrow('binary COPY data after its trailer');
    const cut = reader();
    cut.message(data, m[0]![0], m[0]![1]);
    expect(() => cut.end()).toThrow('binary COPY data cut short');
  });
});
