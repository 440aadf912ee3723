/**
 * Zero-copy transaction decoder (legacy and BIP144 segwit serialization), the hot path of sync.
 * Decoding walks and validates every byte once, allocating nothing per field; `inputs`,
 * `outputs`, witness stacks, `txid` and `wtxid` are built on first access and cached. Scripts,
 * outpoints and witness items are views into the input bytes: keep them alive and unchanged while
 * the result is in use. `OutputCursor` and `InputCursor` walk the outputs and inputs in place,
 * with no object, view or array per output or input (the bulk sync's path). Parsing follows
 * Core's UnserializeTransaction, including its errors for a superfluous witness record and
 * unknown optional data.
 * @module
 */
import { sha256Into } from './hash.js';
import { byteCount, compactSizeLength, need, ParseError, readCompactSize, u32le } from './wire.js';

/** An output: `value` in satoshis (Core's int64 CAmount) and its scriptPubKey. */
export interface TxOutput {
  readonly value: bigint;
  readonly script: Uint8Array;
}

/** The fields of an input. `prevTxid` is in internal byte order (use hashToHex to show it). */
export interface TxInputData {
  readonly prevTxid: Uint8Array;
  readonly vout: number;
  readonly scriptSig: Uint8Array;
  readonly sequence: number;
  /** Witness stack items; absent or empty for none. */
  readonly witness?: readonly Uint8Array[];
}

/** A decoded input: its witness is always present (empty for an input without witness). */
export interface TxInput extends TxInputData {
  readonly witness: readonly Uint8Array[];
}

const NO_WITNESS: readonly Uint8Array[] = Object.freeze([]);
const NO_BYTES = new Uint8Array(0);

/** Smallest serialized input (outpoint 36 + script length 1 + sequence 4) and output (8 + 1). */
const MIN_INPUT_BYTES = 41;
const MIN_OUTPUT_BYTES = 9;

/** Reads a compact size that the decoder already validated (no bounds or canonical checks). */
function validatedCompactSize(b: Uint8Array, p: number): number {
  const first = b[p]!;
  if (first < 0xfd) return first;
  if (first === 0xfd) return b[p + 1]! | (b[p + 2]! << 8);
  return u32le(b, p + 1);
}

/**
 * A decoded input: its outpoint txid, scriptSig and witness stack are views built from the
 * bytes on first access (the bulk sync reads the outpoint in place, `outpointAt`, and never
 * the others).
 */
export class DecodedInput implements TxInput {
  #prevTxid: Uint8Array | undefined = undefined;
  #scriptSig: Uint8Array | undefined = undefined;
  #witness: readonly Uint8Array[] | undefined = undefined;

  constructor(
    /** The bytes the input was decoded from (the transaction's, or its block's). */
    readonly src: Uint8Array,
    /** Where in `src` the outpoint starts: the txid's 32 bytes, then the vout. */
    readonly outpointAt: number,
    readonly vout: number,
    private readonly scriptAt: number,
    private readonly scriptLength: number,
    readonly sequence: number,
    private readonly witnessAt: number,
  ) {}

  get prevTxid(): Uint8Array {
    return (this.#prevTxid ??= new Uint8Array(this.src.buffer, this.src.byteOffset + this.outpointAt, 32));
  }

  get scriptSig(): Uint8Array {
    return (this.#scriptSig ??= new Uint8Array(this.src.buffer, this.src.byteOffset + this.scriptAt, this.scriptLength));
  }

  get witness(): readonly Uint8Array[] {
    if (this.#witness !== undefined) return this.#witness;
    const pos = this.witnessAt;
    if (pos < 0) return NO_WITNESS;
    const b = this.src;
    const n = validatedCompactSize(b, pos);
    let p = pos + compactSizeLength(b[pos]!);
    const items = new Array<Uint8Array>(n);
    for (let i = 0; i < n; i++) {
      const len = validatedCompactSize(b, p);
      p += compactSizeLength(b[p]!);
      items[i] = new Uint8Array(b.buffer, b.byteOffset + p, len);
      p += len;
    }
    this.#witness = items;
    return items;
  }
}

let scratch = new Uint8Array(0);
/** Views of `scratch`'s first n bytes by n (up to 64 KiB), made once: hashing needs a whole view. */
let scratchViews: Uint8Array[] = [];

/** `scratch` holding at least `n` bytes (a new one forgets what the old held). */
function scratchFor(n: number): Uint8Array {
  if (scratch.length < n) {
    scratch = new Uint8Array(Math.max(n, 2 * scratch.length, 1 << 16));
    scratchViews = [];
  }
  return scratch;
}

/** The view of `scratch`'s first `n` bytes. */
function scratchView(n: number): Uint8Array {
  return n <= 1 << 16 ? (scratchViews[n] ??= scratch.subarray(0, n)) : scratch.subarray(0, n);
}

const firstRound = new Uint8Array(32);

/** Double SHA-256 into a new array, through no Buffer (hash.ts `sha256Into`). */
function sha256dView(bytes: Uint8Array): Uint8Array {
  sha256Into(bytes, firstRound, 0);
  const id = new Uint8Array(32);
  sha256Into(firstRound, id, 0);
  return id;
}

function readValue(b: Uint8Array, p: number): bigint {
  const lo = u32le(b, p);
  const hi = u32le(b, p + 4);
  // Real amounts (≤ 21e14 sat) fit a double exactly; only odd values (tx_invalid) take the slow path.
  if (hi < 0x200000) return BigInt(hi * 0x100000000 + lo);
  return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo));
}

/**
 * A decoded transaction. Obtain it from `decodeTx`, `decodeTxAt` or `decodeBlock`.
 * Sizes follow BIP141: `weight = 3 * baseSize + size`, `vsize = ceil(weight / 4)`.
 * Its private positions are relative to the start of `bytes`; `inputsAt`, `outputsAt` and
 * `witnessAt` give them in `src`.
 */
export class DecodedTx {
  #inputsPos: number;
  #outputsPos: number;
  #witnessStart: number;
  #witnessEnd: number;
  #inputs: readonly TxInput[] | undefined = undefined;
  #outputs: readonly TxOutput[] | undefined = undefined;
  #txid: Uint8Array | undefined = undefined;
  #wtxid: Uint8Array | undefined = undefined;
  #bytes: Uint8Array | undefined = undefined;
  #size: number;

  /** @internal use the decode functions. */
  constructor(
    /** nVersion (signed 32-bit, as Core). */
    readonly version: number,
    /** nLockTime (unsigned 32-bit). */
    readonly locktime: number,
    /** The bytes given to the decoder (the block's, for a transaction of a decoded block). */
    readonly src: Uint8Array,
    /** Where the transaction starts in `src` (its offset in the block). */
    readonly offset: number,
    size: number,
    /** Number of inputs. */
    readonly inputCount: number,
    /** Number of outputs. */
    readonly outputCount: number,
    inputsPos: number,
    outputsPos: number,
    witnessStart: number,
    witnessEnd: number,
  ) {
    this.#size = size;
    this.#inputsPos = inputsPos;
    this.#outputsPos = outputsPos;
    this.#witnessStart = witnessStart;
    this.#witnessEnd = witnessEnd;
  }

  /** The whole serialized transaction (a view into `src`, made on first access). */
  get bytes(): Uint8Array {
    return (this.#bytes ??= new Uint8Array(this.src.buffer, this.src.byteOffset + this.offset, this.#size));
  }

  /** The inputs, built on first access. */
  get inputs(): readonly TxInput[] {
    if (this.#inputs !== undefined) return this.#inputs;
    const b = this.bytes;
    const n = this.inputCount;
    const inputs = new Array<TxInput>(n);
    let p = this.#inputsPos;
    let w = this.#witnessStart;
    for (let i = 0; i < n; i++) {
      const outpointAt = p;
      const vout = u32le(b, p + 32);
      p += 36;
      const len = validatedCompactSize(b, p);
      p += compactSizeLength(b[p]!);
      const scriptAt = p;
      p += len;
      let witnessPos = -1;
      if (w >= 0) {
        // Skip this input's stack to find the next one; an empty stack stays NO_WITNESS.
        const items = validatedCompactSize(b, w);
        if (items !== 0) witnessPos = w;
        w += compactSizeLength(b[w]!);
        for (let j = 0; j < items; j++) {
          const l = validatedCompactSize(b, w);
          w += compactSizeLength(b[w]!) + l;
        }
      }
      inputs[i] = new DecodedInput(b, outpointAt, vout, scriptAt, len, u32le(b, p), witnessPos);
      p += 4;
    }
    this.#inputs = inputs;
    return inputs;
  }

  /** The outputs, built on first access. */
  get outputs(): readonly TxOutput[] {
    if (this.#outputs !== undefined) return this.#outputs;
    const b = this.bytes;
    const ab = b.buffer;
    const base = b.byteOffset;
    const n = this.outputCount;
    const outputs = new Array<TxOutput>(n);
    let p = this.#outputsPos;
    for (let i = 0; i < n; i++) {
      const value = readValue(b, p);
      p += 8;
      const len = validatedCompactSize(b, p);
      p += compactSizeLength(b[p]!);
      outputs[i] = { value, script: new Uint8Array(ab, base + p, len) };
      p += len;
    }
    this.#outputs = outputs;
    return outputs;
  }

  /** True when serialized with the segwit marker and witness data. */
  get hasWitness(): boolean {
    return this.#witnessStart >= 0;
  }

  /** Serialized size in bytes, witness included. */
  get size(): number {
    return this.#size;
  }

  /** Size without the marker, flag and witness data (the bytes the txid covers). */
  get baseSize(): number {
    const ws = this.#witnessStart;
    return ws < 0 ? this.#size : this.#size - 2 - (this.#witnessEnd - ws);
  }

  get weight(): number {
    return this.baseSize * 3 + this.#size;
  }

  get vsize(): number {
    return Math.ceil(this.weight / 4);
  }

  /** Transaction id (double SHA-256 of the non-witness serialization), internal byte order. */
  get txid(): Uint8Array {
    if (this.#txid !== undefined) return this.#txid;
    const ws = this.#witnessStart;
    if (ws < 0) {
      this.#txid = sha256dView(this.bytes);
    } else {
      // Copy version | inputs and outputs | locktime from the decoder's input into a scratch
      // buffer and hash it in one call: one-shot hashing beats incremental updates by ~35 %.
      const b = this.src;
      const o = this.offset;
      const we = this.#witnessEnd;
      const n = this.baseSize;
      const s = scratchFor(n);
      // The 4-byte version and locktime byte by byte: a view and a set call each cost more.
      for (let i = 0; i < 4; i++) {
        s[i] = b[o + i]!;
        s[ws - 2 + i] = b[o + we + i]!;
      }
      s.set(b.subarray(o + 6, o + ws), 4);
      this.#txid = sha256dView(scratchView(n));
    }
    return this.#txid;
  }

  /** Witness transaction id (BIP141): equal to txid for a transaction without witness. */
  get wtxid(): Uint8Array {
    if (this.#wtxid !== undefined) return this.#wtxid;
    this.#wtxid = this.#witnessStart < 0 ? this.txid : sha256dView(this.bytes);
    return this.#wtxid;
  }

  /** Where the first input starts in `src` (for `InputCursor`). */
  get inputsAt(): number {
    return this.offset + this.#inputsPos;
  }

  /** Where the first output starts in `src` (for `OutputCursor`). */
  get outputsAt(): number {
    return this.offset + this.#outputsPos;
  }

  /** Where the witness data starts in `src`, -1 without (for `InputCursor`). */
  get witnessAt(): number {
    return this.#witnessStart < 0 ? -1 : this.offset + this.#witnessStart;
  }

  /** True for a coinbase: one input spending the null outpoint (all-zero txid, vout 0xffffffff). */
  get isCoinbase(): boolean {
    if (this.inputCount !== 1) return false;
    const b = this.src;
    const p = this.offset + this.#inputsPos;
    if (u32le(b, p + 32) !== 0xffffffff) return false;
    for (let i = p; i < p + 32; i++) if (b[i] !== 0) return false;
    return true;
  }
}

/**
 * The outputs of a decoded transaction read in place, one at a time: `start(tx)`, then `next()`
 * until it answers false; the current output is number `vout`, its script
 * `bytes[scriptAt, scriptAt + scriptLength)`. Moving makes no object, view or bigint: `script`
 * and `value` make them on request (once per output), so a reader that needs only positions
 * (the bulk sync) allocates nothing per output. A view taken from `script` stays valid after
 * the cursor moves on.
 */
export class OutputCursor implements TxOutput {
  /** The bytes the transaction was decoded from (its `src`: its block's); positions are in them. */
  bytes: Uint8Array = NO_BYTES;
  vout = -1;
  /** Where the current output's 8-byte value starts in `bytes`. */
  valueAt = 0;
  scriptAt = 0;
  scriptLength = 0;
  /** Outputs of the transaction. */
  count = 0;
  private at = 0;
  #script: Uint8Array | undefined = undefined;
  #value: bigint | undefined = undefined;

  /** Points before the first output of `tx`. */
  start(tx: DecodedTx): this {
    this.bytes = tx.src;
    this.count = tx.outputCount;
    this.vout = -1;
    this.at = tx.outputsAt;
    return this;
  }

  /** Moves to the next output; false (and stays) after the last. */
  next(): boolean {
    if (this.vout + 1 >= this.count) return false;
    const b = this.bytes;
    let p = this.at;
    this.valueAt = p;
    p += 8;
    const len = validatedCompactSize(b, p);
    p += compactSizeLength(b[p]!);
    this.scriptAt = p;
    this.scriptLength = len;
    this.at = p + len;
    this.vout++;
    this.#script = undefined;
    this.#value = undefined;
    return true;
  }

  get value(): bigint {
    return (this.#value ??= readValue(this.bytes, this.valueAt));
  }

  /** The value as a number when it is one exactly (0 to 2^53 - 1 sat: every real amount), else -1. */
  get sats(): number {
    const b = this.bytes;
    const p = this.valueAt;
    const hi = u32le(b, p + 4);
    return hi < 0x200000 ? hi * 0x100000000 + u32le(b, p) : -1;
  }

  get script(): Uint8Array {
    return (this.#script ??= new Uint8Array(this.bytes.buffer, this.bytes.byteOffset + this.scriptAt, this.scriptLength));
  }

  /** The script's first byte, -1 for an empty script. */
  get firstByte(): number {
    return this.scriptLength === 0 ? -1 : this.bytes[this.scriptAt]!;
  }

  /** The script's last byte, -1 for an empty script. */
  get lastByte(): number {
    return this.scriptLength === 0 ? -1 : this.bytes[this.scriptAt + this.scriptLength - 1]!;
  }
}

/**
 * The inputs of a decoded transaction read in place, one at a time (`start(tx)`, then `next()`
 * until false), as `OutputCursor` reads outputs: the outpoint lies at `src[outpointAt..+36)`;
 * `prevTxid`, `scriptSig` and `witness` are made on request (a new view each time, valid after
 * the cursor moves on).
 */
export class InputCursor implements TxInput {
  /** The bytes the transaction was decoded from (its `src`: its block's); positions are in them. */
  src: Uint8Array = NO_BYTES;
  /** Where the current input's outpoint starts in `src`: the txid's 32 bytes, then the vout. */
  outpointAt = 0;
  vout = 0;
  sequence = 0;
  /** Inputs of the transaction, and the number of the current one (-1 before the first). */
  count = 0;
  index = -1;
  private scriptAt = 0;
  private scriptLength = 0;
  private at = 0;
  private witnessStart = -1;

  /** Points before the first input of `tx`. */
  start(tx: DecodedTx): this {
    this.src = tx.src;
    this.count = tx.inputCount;
    this.index = -1;
    this.at = tx.inputsAt;
    this.witnessStart = tx.witnessAt;
    return this;
  }

  /** Moves to the next input; false (and stays) after the last. */
  next(): boolean {
    if (this.index + 1 >= this.count) return false;
    const b = this.src;
    let p = this.at;
    this.outpointAt = p;
    this.vout = u32le(b, p + 32);
    p += 36;
    const len = validatedCompactSize(b, p);
    p += compactSizeLength(b[p]!);
    this.scriptAt = p;
    this.scriptLength = len;
    p += len;
    this.sequence = u32le(b, p);
    this.at = p + 4;
    this.index++;
    return true;
  }

  get prevTxid(): Uint8Array {
    return new Uint8Array(this.src.buffer, this.src.byteOffset + this.outpointAt, 32);
  }

  get scriptSig(): Uint8Array {
    return new Uint8Array(this.src.buffer, this.src.byteOffset + this.scriptAt, this.scriptLength);
  }

  /** The current input's witness stack (its position is found by walking the stacks before it). */
  get witness(): readonly Uint8Array[] {
    let w = this.witnessStart;
    if (w < 0) return NO_WITNESS;
    const b = this.src;
    for (let i = 0; i < this.index; i++) {
      const items = validatedCompactSize(b, w);
      w += compactSizeLength(b[w]!);
      for (let j = 0; j < items; j++) {
        const l = validatedCompactSize(b, w);
        w += compactSizeLength(b[w]!) + l;
      }
    }
    const n = validatedCompactSize(b, w);
    if (n === 0) return NO_WITNESS;
    w += compactSizeLength(b[w]!);
    const items = new Array<Uint8Array>(n);
    for (let j = 0; j < n; j++) {
      const l = validatedCompactSize(b, w);
      w += compactSizeLength(b[w]!);
      items[j] = new Uint8Array(b.buffer, b.byteOffset + w, l);
      w += l;
    }
    return items;
  }
}

/**
 * Decodes the transaction that starts at `offset` in `bytes` and ends at or before `end`
 * (default: the end of `bytes`). The result's `offset + size` is where it ended.
 * @throws ParseError on malformed or truncated data.
 */
export function decodeTxAt(bytes: Uint8Array, offset: number, end: number = bytes.length): DecodedTx {
  const b = bytes;
  const start = offset;
  let p = start;
  need(p, 4, end, 'transaction version');
  const version = u32le(b, p) | 0;
  p += 4;

  let nIn = readCompactSize(b, p, end, 'input count');
  p += compactSizeLength(b[p]!);
  let flags = 0;
  let readOutputs = true;
  if (nIn === 0) {
    // An empty input vector is the segwit marker; the next byte holds the flags.
    need(p, 1, end, 'segwit flag');
    flags = b[p]!;
    p += 1;
    if (flags !== 0) {
      nIn = readCompactSize(b, p, end, 'input count');
      p += compactSizeLength(b[p]!);
    } else {
      readOutputs = false; // Core reads neither inputs nor outputs after a zero flag byte.
    }
  }
  if (nIn * MIN_INPUT_BYTES > end - p) {
    throw new ParseError(`input count ${nIn} needs at least ${byteCount(nIn * MIN_INPUT_BYTES)} at offset ${p}, ${end - p} left`, p);
  }
  const inputsPos = p;
  // The loops below read one-byte compact sizes inline (the common case) and fall back to
  // readCompactSize for the others; every position is checked against `end` before use.
  for (let i = 0; i < nIn; i++) {
    if (p + 37 > end) need(p, 37, end, 'input');
    p += 36;
    let len = b[p]!;
    if (len < 0xfd) p += 1;
    else {
      len = readCompactSize(b, p, end, 'input script length');
      p += compactSizeLength(b[p]!);
    }
    if (p + len + 4 > end) need(p, len + 4, end, 'input script and sequence');
    p += len + 4;
  }

  let nOut = 0;
  if (readOutputs) {
    nOut = readCompactSize(b, p, end, 'output count');
    p += compactSizeLength(b[p]!);
  }
  if (nOut * MIN_OUTPUT_BYTES > end - p) {
    throw new ParseError(`output count ${nOut} needs at least ${byteCount(nOut * MIN_OUTPUT_BYTES)} at offset ${p}, ${end - p} left`, p);
  }
  const outputsPos = p;
  for (let i = 0; i < nOut; i++) {
    if (p + 9 > end) need(p, 9, end, 'output');
    p += 8;
    let len = b[p]!;
    if (len < 0xfd) p += 1;
    else {
      len = readCompactSize(b, p, end, 'output script length');
      p += compactSizeLength(b[p]!);
    }
    if (p + len > end) need(p, len, end, 'output script');
    p += len;
  }

  let witnessStart = -1;
  let witnessEnd = -1;
  const flagByte = flags;
  if (flags & 1) {
    witnessStart = p;
    let any = false;
    for (let i = 0; i < nIn; i++) {
      const n = readCompactSize(b, p, end, 'witness item count');
      p += compactSizeLength(b[p]!);
      if (n > end - p) {
        throw new ParseError(`witness item count ${n} needs at least ${byteCount(n)} at offset ${p}, ${end - p} left`, p);
      }
      if (n !== 0) any = true;
      for (let j = 0; j < n; j++) {
        if (p >= end) need(p, 1, end, 'witness item length');
        let len = b[p]!;
        if (len < 0xfd) p += 1;
        else {
          len = readCompactSize(b, p, end, 'witness item length');
          p += compactSizeLength(b[p]!);
        }
        if (p + len > end) need(p, len, end, 'witness item');
        p += len;
      }
    }
    if (!any) throw new ParseError(`superfluous witness record (every witness stack is empty) at offset ${witnessStart}`, witnessStart);
    witnessEnd = p;
    flags ^= 1;
  }
  if (flags !== 0) {
    throw new ParseError(
      `unknown transaction optional data (flags 0x${flagByte.toString(16).padStart(2, '0')}) at offset ${start + 5}`,
      start + 5,
    );
  }
  need(p, 4, end, 'transaction locktime');
  const locktime = u32le(b, p);
  p += 4;
  return new DecodedTx(
    version,
    locktime,
    b,
    start,
    p - start,
    nIn,
    nOut,
    inputsPos - start,
    outputsPos - start,
    witnessStart < 0 ? -1 : witnessStart - start,
    witnessEnd < 0 ? -1 : witnessEnd - start,
  );
}

/** A plain Uint8Array view of `bytes` (Buffer#subarray would hand out Buffers). */
export function asPlainBytes(bytes: Uint8Array, what: string): Uint8Array {
  if (!(bytes instanceof Uint8Array)) throw new TypeError(`${what} must be a Uint8Array`);
  return Object.getPrototypeOf(bytes) === Uint8Array.prototype ? bytes : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Decodes one serialized transaction that fills `bytes` exactly.
 * @throws ParseError on malformed, truncated or trailing data; TypeError if `bytes` is not bytes.
 */
export function decodeTx(data: Uint8Array): DecodedTx {
  const b = asPlainBytes(data, 'transaction');
  const tx = decodeTxAt(b, 0, b.length);
  if (tx.size !== b.length) {
    throw new ParseError(`${byteCount(b.length - tx.size)} of trailing data after the transaction at offset ${tx.size}`, tx.size);
  }
  return tx;
}
