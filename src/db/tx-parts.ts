/**
 * Transaction parts (docs/lean-layout.md "Transaction parts: the plan", step 2): the indexed
 * columns of up to 64 consecutive transactions of one block in one row, so that a transaction
 * costs its content and not a row and two B-tree entries. Part `tx_num >> PART_BITS` holds the
 * transactions of its slots `tx_num & (PART_TXS − 1)` from 0 up (a block's last part may hold
 * fewer; positions are 20 bits, so a part never spans two blocks). Its columns:
 * - `txids`: the 32-byte txids (internal order) back to back, slot by slot: a txid is one
 *   `substring` away, in SQL too;
 * - `outs`, `ins`: the transactions' packed columns (src/db/packed.ts), unchanged, concatenated;
 * - `ends`: a width byte w (2, or 4 when a concatenation passes 64 KB: a transaction of thousands
 *   of outputs), then per slot the end of its `outs` and the end of its `ins` in them, w bytes
 *   each, little-endian.
 * - `seen`: the transactions that have a `first_seen` (when the mempool saw them), as 9-byte
 *   pairs: the slot (1 byte), then the time in µs since 1970 (int8, big-endian); null when none
 *   has one (most parts: a block's transactions seen in the mempool are those since the start);
 * Who spent what among them is a GIN on `spent_tx_groups(ins)` (the spends keys of the part's
 * inputs, src/db/spent-groups.ts; migrations/0063_tx_parts_lean.ts): a superset of a
 * transaction's spenders, which the reader settles from its own `ins`.
 * `SQL_PARTS` reads a slot in SQL; the tests hold it to `decodePartTx` and `seenAt`. The writer
 * folds `txs` rows into parts (indexer/writer/tx-parts-fold.ts); tx-reads.ts reads both.
 * @module
 */

/** Bits of a tx_num that name its slot in its part. */
const PART_BITS = 6;
/** Transactions a part holds at most. */
export const PART_TXS = 2 ** PART_BITS;
const TXID_BYTES = 32;

/** One transaction's columns in a part. */
export type PartTx = { txid: Uint8Array; outs: Uint8Array; ins: Uint8Array };

/** A part's columns, as stored. */
export type PartColumns = { txids: Buffer; ends: Buffer; outs: Buffer; ins: Buffer };

/** The part holding `txNum`. */
export function partOf(txNum: bigint): bigint {
  return txNum >> BigInt(PART_BITS);
}

/** The slot of `txNum` in its part. */
export function slotOf(txNum: bigint): number {
  return Number(txNum & BigInt(PART_TXS - 1));
}

/** The tx_num of slot `slot` of the part `part` (numbers: a tx_num is below 2^53). */
export function txNumAtSlot(part: number, slot: number): number {
  return part * PART_TXS + slot;
}

/**
 * Builds one part at a time, slot by slot from slot 0 (`add`), without a copy per transaction:
 * the bulk batches pack their transactions straight into it. `take` gives the part's columns as
 * views of the writer's buffers (valid until the next `add` after it), then starts the next part.
 */
export class PartWriter {
  private readonly txids = new Uint8Array(PART_TXS * TXID_BYTES);
  private outs: Uint8Array = new Uint8Array(1 << 12);
  private ins: Uint8Array = new Uint8Array(1 << 11);
  private readonly outsEnds = new Uint32Array(PART_TXS);
  private readonly insEnds = new Uint32Array(PART_TXS);
  private outsLen = 0;
  private insLen = 0;
  /** The transactions added to the part being built. */
  count = 0;

  private static grow(buf: Uint8Array, need: number): Uint8Array {
    if (need <= buf.length) return buf;
    let size = buf.length * 2;
    while (size < need) size *= 2;
    const next = new Uint8Array(size);
    next.set(buf);
    return next;
  }

  /** The next slot's transaction: its txid and its packed outs and ins (the first `outsEnd`, `insEnd` bytes of each buffer). */
  add(txid: Uint8Array, outs: Uint8Array, outsEnd: number, ins: Uint8Array, insEnd: number): void {
    if (txid.length !== TXID_BYTES) throw new RangeError(`a txid is ${TXID_BYTES} bytes, got ${txid.length}`);
    if (this.count === PART_TXS) throw new RangeError(`a part holds at most ${PART_TXS} transactions`);
    this.txids.set(txid, this.count * TXID_BYTES);
    this.outs = PartWriter.grow(this.outs, this.outsLen + outsEnd);
    this.outs.set(outs.subarray(0, outsEnd), this.outsLen);
    this.outsLen += outsEnd;
    this.ins = PartWriter.grow(this.ins, this.insLen + insEnd);
    this.ins.set(ins.subarray(0, insEnd), this.insLen);
    this.insLen += insEnd;
    this.outsEnds[this.count] = this.outsLen;
    this.insEnds[this.count] = this.insLen;
    this.count++;
  }

  /** The part's columns (views), and the writer emptied for the next part. */
  take(): { txids: Uint8Array; ends: Uint8Array; outs: Uint8Array; ins: Uint8Array } {
    const n = this.count;
    if (n === 0) throw new RangeError(`a part holds 1 to ${PART_TXS} transactions, got 0`);
    const width = Math.max(this.outsLen, this.insLen) < 2 ** 16 ? 2 : 4;
    const ends = new Uint8Array(1 + n * 2 * width);
    ends[0] = width;
    for (let slot = 0; slot < n; slot++) {
      const at = 1 + slot * 2 * width;
      for (let b = 0; b < width; b++) {
        ends[at + b] = (this.outsEnds[slot]! >>> (8 * b)) & 0xff;
        ends[at + width + b] = (this.insEnds[slot]! >>> (8 * b)) & 0xff;
      }
    }
    const out = {
      txids: this.txids.subarray(0, n * TXID_BYTES),
      ends,
      outs: this.outs.subarray(0, this.outsLen),
      ins: this.ins.subarray(0, this.insLen),
    };
    this.count = 0;
    this.outsLen = 0;
    this.insLen = 0;
    return out;
  }
}

/** The part of `txs`, in slot order from slot 0 (1 to PART_TXS of them). */
export function encodePart(txs: readonly PartTx[]): PartColumns {
  if (txs.length === 0 || txs.length > PART_TXS) throw new RangeError(`a part holds 1 to ${PART_TXS} transactions, got ${txs.length}`);
  const w = new PartWriter();
  for (const t of txs) w.add(t.txid, t.outs, t.outs.length, t.ins, t.ins.length);
  const c = w.take();
  return { txids: Buffer.from(c.txids), ends: Buffer.from(c.ends), outs: Buffer.from(c.outs), ins: Buffer.from(c.ins) };
}

/** How many transactions part `p` holds. */
export function partCount(p: Pick<PartColumns, 'txids'>): number {
  return p.txids.length / TXID_BYTES;
}

/** The end of entry `k` of `ends` (2 × slot: the outs', 2 × slot + 1: the ins'). */
function endAt(ends: Buffer, k: number): number {
  const width = ends[0]!;
  return ends.readUIntLE(1 + k * width, width);
}

/** Slot `slot` of part `p`, or undefined past its transactions. */
export function decodePartTx(p: PartColumns, slot: number): PartTx | undefined {
  if (!Number.isInteger(slot) || slot < 0 || slot >= partCount(p)) return undefined;
  const outsFrom = slot === 0 ? 0 : endAt(p.ends, 2 * slot - 2);
  const insFrom = slot === 0 ? 0 : endAt(p.ends, 2 * slot - 1);
  return {
    txid: p.txids.subarray(slot * TXID_BYTES, (slot + 1) * TXID_BYTES),
    outs: p.outs.subarray(outsFrom, endAt(p.ends, 2 * slot)),
    ins: p.ins.subarray(insFrom, endAt(p.ends, 2 * slot + 1)),
  };
}

/** Every transaction of part `p`, in slot order. */
export function decodePart(p: PartColumns): PartTx[] {
  return Array.from({ length: partCount(p) }, (_, slot) => decodePartTx(p, slot)!);
}

const SEEN_BYTES = 9;

/** The `seen` column of the slots `seen` ([slot, µs since 1970]): null when empty. */
export function encodeSeen(seen: readonly (readonly [slot: number, micros: bigint])[]): Buffer | null {
  if (seen.length === 0) return null;
  const out = Buffer.alloc(seen.length * SEEN_BYTES);
  seen.forEach(([slot, us], i) => {
    if (!Number.isInteger(slot) || slot < 0 || slot >= PART_TXS) throw new RangeError(`a slot is in [0, ${PART_TXS}), got ${slot}`);
    out[i * SEEN_BYTES] = slot;
    out.writeBigInt64BE(us, i * SEEN_BYTES + 1);
  });
  return out;
}

/** The µs since 1970 the `seen` column holds for `slot`, or null. */
export function seenAt(seen: Buffer | null, slot: number): bigint | null {
  if (seen === null) return null;
  for (let at = 0; at + SEEN_BYTES <= seen.length; at += SEEN_BYTES) if (seen[at] === slot) return seen.readBigInt64BE(at + 1);
  return null;
}

/** SQL (text): the end of entry `k` (an int expression) of the ends column `e`, as int8. */
const sqlEndAt = (e: string, k: string) => {
  const at = `(1 + (${k}) * get_byte(${e}, 0))`;
  return (
    `(get_byte(${e}, ${at})::int8 | (get_byte(${e}, ${at} + 1)::int8 << 8)` +
    ` | CASE WHEN get_byte(${e}, 0) = 4 THEN (get_byte(${e}, ${at} + 2)::int8 << 16) | (get_byte(${e}, ${at} + 3)::int8 << 24) ELSE 0 END)`
  );
};

/** SQL (text): the start of the outs (`first` 0) or ins (1) of slot `s` of the ends column `e`. */
const sqlStartAt = (e: string, s: string, first: 0 | 1) =>
  `(CASE WHEN (${s}) = 0 THEN 0 ELSE ${sqlEndAt(e, `2 * (${s}) - ${2 - first}`)} END)`;

/**
 * SQL (text) reading slot `s` (an int expression) of the part row `p` (an alias with the
 * columns above): its txid, outs and ins, as `decodePartTx` reads them (null past the part's
 * transactions).
 */
export const SQL_PARTS = {
  /** The part (int8) of the tx_num `n`. */
  partOf: (n: string) => `((${n}) >> ${PART_BITS})`,
  /** The slot (int4) of the tx_num `n` in its part. */
  slotOf: (n: string) => `((${n}) & ${PART_TXS - 1})::int4`,
  /** The tx_num (int8) of slot `s` of the part row `p`. */
  txNumAt: (p: string, s: string) => `((${p}.part << ${PART_BITS}) + (${s}))`,
  txidAt: (p: string, s: string) =>
    `(CASE WHEN (${s}) < length(${p}.txids) / ${TXID_BYTES} THEN substring(${p}.txids FROM (${s}) * ${TXID_BYTES} + 1 FOR ${TXID_BYTES}) END)`,
  outsAt: (p: string, s: string) =>
    `(CASE WHEN (${s}) < length(${p}.txids) / ${TXID_BYTES} THEN substring(${p}.outs FROM ${sqlStartAt(`${p}.ends`, s, 0)}::int4 + 1 FOR (${sqlEndAt(`${p}.ends`, `2 * (${s})`)} - ${sqlStartAt(`${p}.ends`, s, 0)})::int4) END)`,
  insAt: (p: string, s: string) =>
    `(CASE WHEN (${s}) < length(${p}.txids) / ${TXID_BYTES} THEN substring(${p}.ins FROM ${sqlStartAt(`${p}.ends`, s, 1)}::int4 + 1 FOR (${sqlEndAt(`${p}.ends`, `2 * (${s}) + 1`)} - ${sqlStartAt(`${p}.ends`, s, 1)})::int4) END)`,
  /** The `first_seen` (timestamptz) of slot `s`, or null. */
  seenAt: (p: string, s: string) =>
    `(SELECT timestamptz 'epoch' + ('x' || encode(substring(${p}.seen FROM ${SEEN_BYTES} * bw_seen.i + 2 FOR 8), 'hex'))::bit(64)::int8 * interval '1 microsecond'
        FROM generate_series(0, length(${p}.seen) / ${SEEN_BYTES} - 1) AS bw_seen(i) WHERE get_byte(${p}.seen, ${SEEN_BYTES} * bw_seen.i) = (${s}) LIMIT 1)`,
  /**
   * The parts of the transactions `rows` gives (SQL text of a FROM item with the columns
   * tx_num, txid, outs, ins, seen_us: the `first_seen` in µs since 1970 or null), as a SELECT of
   * part, n (its transactions), top (its highest slot), txids, ends, outs, ins and seen: `encodePart` and
   * `encodeSeen` in one pass sorted by part, then tx_num. Whole parts only: a part whose slots
   * do not run from 0 without a gap has top + 1 ≠ n.
   */
  ofRows: (rows: string) => {
    const le = (v: string) =>
      `(CASE WHEN bw_r.total < 65536 THEN set_byte(set_byte('\\x0000'::bytea, 0, ((${v}) & 255)::int4), 1, (((${v}) >> 8) & 255)::int4)
             ELSE set_byte(set_byte(set_byte(set_byte('\\x00000000'::bytea, 0, ((${v}) & 255)::int4), 1, (((${v}) >> 8) & 255)::int4),
                                    2, (((${v}) >> 16) & 255)::int4), 3, (((${v}) >> 24) & 255)::int4) END)`;
    return `SELECT bw_r.part, count(*) AS n, max(bw_r.tx_num & ${PART_TXS - 1}) AS top,
        string_agg(bw_r.txid, ''::bytea ORDER BY bw_r.tx_num) AS txids,
        set_byte('\\x00'::bytea, 0, CASE WHEN max(bw_r.total) < 65536 THEN 2 ELSE 4 END) || string_agg(${le('bw_r.oe')} || ${le('bw_r.ie')}, ''::bytea ORDER BY bw_r.tx_num) AS ends,
        string_agg(bw_r.outs, ''::bytea ORDER BY bw_r.tx_num) AS outs,
        string_agg(bw_r.ins, ''::bytea ORDER BY bw_r.tx_num) AS ins,
        string_agg(CASE WHEN bw_r.seen_us IS NOT NULL THEN set_byte('\\x00'::bytea, 0, (bw_r.tx_num & ${PART_TXS - 1})::int4) || int8send(bw_r.seen_us) END,
                   ''::bytea ORDER BY bw_r.tx_num) AS seen
      FROM (SELECT bw_t.tx_num, bw_t.tx_num >> ${PART_BITS} AS part, bw_t.txid, bw_t.outs, bw_t.ins, bw_t.seen_us,
                   sum(length(bw_t.outs)) OVER bw_w AS oe, sum(length(bw_t.ins)) OVER bw_w AS ie,
                   greatest(sum(length(bw_t.outs)) OVER bw_a, sum(length(bw_t.ins)) OVER bw_a) AS total
              FROM (${rows}) AS bw_t
            WINDOW bw_w AS (PARTITION BY bw_t.tx_num >> ${PART_BITS} ORDER BY bw_t.tx_num), bw_a AS (PARTITION BY bw_t.tx_num >> ${PART_BITS})) AS bw_r
     GROUP BY bw_r.part`;
  },
  /** The number of transactions (int4) of the part row `p`. */
  count: (p: string) => `(length(${p}.txids) / ${TXID_BYTES})`,
} as const;
