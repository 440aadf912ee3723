/**
 * The packed-outputs and packed-inputs formats of `txs` rows (docs/schema.md), JS only:
 * - outs, in one of two forms: the tagged form (`encodeOutTags`, `PackedWriter.packTaggedOut`),
 *   what the writer writes in `txs.outs`: the two bytes 0x80 0x00 (a non-minimal LEB128 zero,
 *   which no script-form row starts with: its first varint is minimal) then for each output
 *   its value and tag (`PackedWriter.packOutTag`); or the script form, for each output
 *   LEB128(value) LEB128(script length) script: `block_undo` rows, and `txs` rows written
 *   before migration 0053_tagged_outs. The readers of tags (`decodeOutTags`, `decodeOutTag`,
 *   `outCount`) accept both; `decodeOuts` and `decodeOut` need scripts and refuse a tagged row;
 * - ins: for each input, LEB128(prevout tx_num) LEB128(prevout vout) (empty for a coinbase).
 * (History entries have their own module, history-entries.ts.) No SQL reads these columns apart:
 * statements move them whole.
 * Decoders reject truncated or trailing bytes with a RangeError.
 * @module
 */
import { outTagOf, TAG_BYTES, type OutTag } from './out-tags.js';

export type PackedOut = { value: bigint; script: Uint8Array };
export type PackedIn = { txNum: bigint; vout: number };
/** An input reference to encode (tx_num as a bigint or a safe integer). */
export type PackedInInput = { txNum: bigint | number; vout: number };

/**
 * An append-only byte writer for the packed formats; `view(start, end)` hands out views of the
 * final buffer, so one writer can pack many rows (take views only after the last write).
 */
export class PackedWriter {
  buf: Uint8Array;
  len = 0;
  constructor(size = 64) {
    this.buf = new Uint8Array(size);
  }
  private ensure(n: number) {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }
  /** LEB128 of a non-negative integer; numbers and bigints up to 2^53 take the fast path. */
  uleb(v: bigint | number) {
    this.ensure(10);
    if (typeof v === 'bigint' && v >= 0n && v <= 9007199254740991n) v = Number(v);
    if (typeof v === 'number') {
      if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`cannot encode ${v} as an unsigned varint`);
      while (v >= 0x80000000) {
        this.buf[this.len++] = (v % 0x80) | 0x80;
        v = Math.floor(v / 0x80);
      }
      while (v >= 0x80) {
        this.buf[this.len++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      this.buf[this.len++] = v;
      return;
    }
    let b = v;
    if (b < 0n) throw new RangeError(`cannot encode negative value ${b}`);
    while (b >= 0x80n) {
      this.buf[this.len++] = Number(b & 0x7fn) | 0x80;
      b >>= 7n;
    }
    this.buf[this.len++] = Number(b);
  }
  /** One output of the outs format. */
  packOut(value: bigint, script: Uint8Array) {
    this.uleb(value);
    this.uleb(script.length);
    this.bytes(script);
  }
  /**
   * One output of the tagged outs format (the layout `txs.outs` moves to: docs/sync.md):
   * LEB128(value) LEB128(n << 2 | kind) then n bytes: kind 0 no tag (n = 0), 1 the whole script
   * (an Open Assets marker), 2 the script's own 8 bytes then, for a P2PK output, its key's 8,
   * 3 a bare multisig's own 8 then each key's 8 (src/db/out-tags.ts).
   */
  packOutTag(value: bigint, tag: OutTag) {
    this.uleb(value);
    if (tag.script !== null) {
      this.uleb((tag.script.length << 2) | 1);
      this.bytes(tag.script);
    } else if (tag.own === null) this.uleb(0);
    else {
      this.uleb(((TAG_BYTES * (1 + tag.keys.length)) << 2) | (tag.multisig ? 3 : 2));
      this.bytes(Buffer.from(tag.own, 'hex'));
      for (const k of tag.keys) this.bytes(Buffer.from(k, 'hex'));
    }
  }
  /**
   * Output `vout` of a transaction's outs in the tagged form (the form the writer writes): its
   * value and its script's tag, the form's two first bytes before output 0.
   */
  packTaggedOut(vout: number, value: bigint, script: Uint8Array) {
    if (vout === 0) this.bytes(TAGGED);
    this.packOutTag(value, outTagOf(script));
  }
  /**
   * `packTaggedOut` of an output whose script is its own canonical script (no P2PK, multisig
   * or marker): its tag is the first TAG_BYTES of the script's SHA-256, given as `sha` (the
   * address key's bytes, which start with them).
   */
  packTaggedOwn(vout: number, value: bigint | number, sha: Uint8Array) {
    if (vout === 0) this.bytes(TAGGED);
    this.uleb(value);
    this.uleb((TAG_BYTES << 2) | 2);
    this.bytesRange(sha, 0, TAG_BYTES);
  }
  /** One input reference of the ins format. */
  packIn(prevTxNum: bigint | number, vout: number) {
    this.uleb(prevTxNum);
    this.uleb(vout);
  }
  bytes(b: Uint8Array) {
    this.ensure(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }
  /** Bytes [start, end) of `b` (no view of them is made; a short range is copied in a loop, cheaper than a set call). */
  bytesRange(b: Uint8Array, start: number, end: number) {
    const n = end - start;
    this.ensure(n);
    const buf = this.buf;
    const p = this.len;
    if (n <= 64) for (let i = 0; i < n; i++) buf[p + i] = b[start + i]!;
    else buf.set(b.subarray(start, end), p);
    this.len = p + n;
  }
  finish(): Buffer {
    return Buffer.from(this.buf.buffer, this.buf.byteOffset, this.len);
  }
  /** A Buffer view of bytes [start, end) written so far. */
  view(start: number, end: number): Buffer {
    return Buffer.from(this.buf.buffer, this.buf.byteOffset + start, end - start);
  }
}

const Writer = PackedWriter;

/** The first two bytes of a tagged-form outs (see the module's comment). */
const TAGGED = Uint8Array.of(0x80, 0x00);

class Reader {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}
  get done() {
    return this.pos >= this.buf.length;
  }
  uleb(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw new RangeError('packed data truncated in a varint');
      const byte = this.buf[this.pos++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 63n) throw new RangeError('packed varint longer than 64 bits');
    }
  }
  small(): number {
    const v = this.uleb();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`packed length ${v} too large`);
    return Number(v);
  }
  take(n: number): Uint8Array {
    if (this.pos + n > this.buf.length) throw new RangeError('packed data truncated in a script');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}

/** Whether packed outs are in the tagged form. */
export function isTaggedOuts(data: Uint8Array): boolean {
  return data.length >= 2 && data[0] === TAGGED[0] && data[1] === TAGGED[1];
}

function refuseTagged(data: Uint8Array): void {
  if (isTaggedOuts(data)) throw new RangeError('packed outs in the tagged form hold no scripts');
}

/** Packs a transaction's outputs in the tagged form: each output's value and tag (src/db/out-tags.ts). */
export function encodeOutTags(outs: readonly PackedOut[]): Buffer {
  const w = new Writer(outs.length * 16 + 8);
  outs.forEach((o, vout) => w.packTaggedOut(vout, o.value, o.script));
  return w.finish();
}

/** Packs a transaction's outputs. */
export function encodeOuts(outs: readonly PackedOut[]): Buffer {
  const w = new Writer(outs.length * 40 + 8);
  for (const o of outs) w.packOut(o.value, o.script);
  return w.finish();
}

/** Unpacks every output (scripts are views into `data`). @throws RangeError on tagged-form outs. */
export function decodeOuts(data: Uint8Array): PackedOut[] {
  refuseTagged(data);
  const r = new Reader(data);
  const outs: PackedOut[] = [];
  while (!r.done) {
    const value = r.uleb();
    const script = r.take(r.small());
    outs.push({ value, script });
  }
  return outs;
}

/** Unpacks output `vout` only, or undefined when out of range. @throws RangeError on tagged-form outs. */
export function decodeOut(data: Uint8Array, vout: number): PackedOut | undefined {
  refuseTagged(data);
  const r = new Reader(data);
  for (let i = 0; !r.done; i++) {
    const value = r.uleb();
    const len = r.small();
    if (i === vout) return { value, script: r.take(len) };
    r.take(len);
  }
  return undefined;
}

/** Packs a transaction's input references (prevout tx_num and vout). */
export function encodeIns(ins: readonly PackedInInput[]): Buffer {
  const w = new Writer(ins.length * 8 + 8);
  for (const i of ins) w.packIn(i.txNum, i.vout);
  return w.finish();
}

export function decodeIns(data: Uint8Array): PackedIn[] {
  const r = new Reader(data);
  const ins: PackedIn[] = [];
  while (!r.done) ins.push({ txNum: r.uleb(), vout: r.small() });
  return ins;
}

/** An output as the readers of `txs` see it: its value and its tag (src/db/out-tags.ts). */
export type TaggedOut = { value: bigint; tag: OutTag };

/** Every output of packed outs (either form), tagged. */
export function decodeOutTags(data: Uint8Array): TaggedOut[] {
  if (isTaggedOuts(data)) return decodeTaggedOuts(data);
  return decodeOuts(data).map((o) => ({ value: o.value, tag: outTagOf(o.script) }));
}

/** Output `vout` of packed outs (either form), tagged, or undefined when out of range. */
export function decodeOutTag(data: Uint8Array, vout: number): TaggedOut | undefined {
  if (isTaggedOuts(data)) return decodeTaggedOuts(data)[vout];
  const o = decodeOut(data, vout);
  return o === undefined ? undefined : { value: o.value, tag: outTagOf(o.script) };
}

/** How many outputs packed outs (either form) hold. */
export function outCount(data: Uint8Array): number {
  const r = new Reader(data);
  if (isTaggedOuts(data)) r.take(TAGGED.length);
  let n = 0;
  while (!r.done) {
    r.uleb();
    const head = r.small();
    r.take(isTaggedOuts(data) ? head >> 2 : head);
    n++;
  }
  return n;
}

/** Unpacks outputs of the tagged form (its two first bytes, then PackedWriter.packOutTag each). */
export function decodeTaggedOuts(data: Uint8Array): TaggedOut[] {
  if (!isTaggedOuts(data)) throw new RangeError('packed outs not in the tagged form');
  const r = new Reader(data);
  r.take(TAGGED.length);
  const outs: TaggedOut[] = [];
  while (!r.done) {
    const value = r.uleb();
    const head = r.small();
    const body = r.take(head >> 2);
    const kind = head & 3;
    if (kind === 1) outs.push({ value, tag: { own: null, keys: [], multisig: false, script: body } });
    else if (kind === 0) outs.push({ value, tag: { own: null, keys: [], multisig: false, script: null } });
    else {
      if (body.length === 0 || body.length % TAG_BYTES !== 0) throw new RangeError(`packed tag of ${body.length} bytes`);
      const hex = Buffer.from(body.buffer, body.byteOffset, body.length).toString('hex');
      const parts: string[] = [];
      for (let i = 0; i < hex.length; i += 2 * TAG_BYTES) parts.push(hex.slice(i, i + 2 * TAG_BYTES));
      outs.push({ value, tag: { own: parts[0]!, keys: parts.slice(1), multisig: kind === 3, script: null } });
    }
  }
  return outs;
}
