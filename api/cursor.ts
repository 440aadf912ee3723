/**
 * Opaque paging cursors for history and unspent outputs. A cursor names the last item of the
 * previous page: in the mempool part (first-seen time in µs, txid, vout) or in the chain part
 * (tx_num, vout, and for history the chunk and index where that entry sat, a hint checked before
 * use). Pages are keyset seeks below it, so new blocks and new mempool transactions
 * never shift a page; a transaction confirmed while a client pages through the mempool part
 * reappears in the chain part (seen twice, never lost). Encoded as base64url text.
 * @module
 */
import { ServiceError } from '../src/errors.js';

export type CursorKind = 'h' | 'u';

export type Cursor =
  | { kind: CursorKind; phase: 'm'; firstSeenUs: bigint; txid: Buffer; vout: number }
  | { kind: CursorKind; phase: 'c'; txNum: bigint; vout: number; chunk?: ChunkPosition };

/**
 * Where a history entry sat: the first tx_num of its chunk and its index there. Lets the next
 * page read just the slice of the chunk it needs; checked against the entry before use, since
 * chunks can be rewritten (reorg truncation, re-index).
 */
export type ChunkPosition = { first: bigint; index: number };

/** Encodes a cursor for a Link header. */
export function encodeCursor(c: Cursor): string {
  const text =
    c.phase === 'm'
      ? `${c.kind}m.${c.firstSeenUs}.${c.txid.toString('hex')}.${c.vout}`
      : `${c.kind}c.${c.txNum}.${c.vout}${c.chunk ? `.${c.chunk.first}.${c.chunk.index}` : ''}`;
  return Buffer.from(text, 'utf8').toString('base64url');
}

const M_RE = /^([hu])m\.(\d{1,20})\.([0-9a-f]{64})\.(\d{1,10})$/;
const C_RE = /^([hu])c\.(\d{1,20})\.(\d{1,10})(?:\.(\d{1,20})\.(\d{1,7}))?$/;
const MAX_I64 = (1n << 63n) - 1n;

/** Decodes a cursor of the given kind, or throws 400 ERR_INVALID_CURSOR. */
export function decodeCursor(raw: string, kind: CursorKind): Cursor {
  const bad = () => new ServiceError('ERR_INVALID_CURSOR');
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(raw)) throw bad();
  const text = Buffer.from(raw, 'base64url').toString('utf8');
  let m = M_RE.exec(text);
  if (m) {
    const [, k, us, txid, vout] = m;
    if (k !== kind || BigInt(us!) > MAX_I64 || Number(vout) > 0x7fffffff) throw bad();
    return { kind, phase: 'm', firstSeenUs: BigInt(us!), txid: Buffer.from(txid!, 'hex'), vout: Number(vout) };
  }
  m = C_RE.exec(text);
  if (m) {
    const [, k, n, vout, first, index] = m;
    if (k !== kind || BigInt(n!) > MAX_I64 || Number(vout) > 0x7fffffff) throw bad();
    if (first !== undefined && BigInt(first) > MAX_I64) throw bad();
    return {
      kind,
      phase: 'c',
      txNum: BigInt(n!),
      vout: Number(vout),
      ...(first !== undefined ? { chunk: { first: BigInt(first), index: Number(index) } } : {}),
    };
  }
  throw bad();
}
